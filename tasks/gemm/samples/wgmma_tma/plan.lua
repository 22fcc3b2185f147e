-- wgmma_tma: 128x256 tiles, 384 threads (1 TMA producer + 2 wgmma consumer
-- warpgroups), 4 stages of 48 KiB, tiles on a 1-D grid, clusters of 2 along x
-- when the tile count is even. Any M, N >= 1; K must be a multiple of 8
-- (a TMA global stride must be a multiple of 16 bytes).
local M, N, K = dims.M, dims.N, dims.K
if M < 1 or N < 1 or K < 8 or K % 8 ~= 0 then
  error("wgmma_tma needs M >= 1, N >= 1 and K a positive multiple of 8 (got M=" .. M ..
        " N=" .. N .. " K=" .. K .. ")")
end
local BM, BN, BK, STAGES = 128, 256, 64, 4
local tiles = ((M + BM - 1) // BM) * ((N + BN - 1) // BN)
local launch = {
  kernel = "gemm",
  grid = { tiles, 1, 1 },
  block = { 384, 1, 1 },
  -- STAGES x (A 128x64 + B 256x64) bf16, plus 1 KiB to align the stages to 1024 bytes
  shared = STAGES * (BM + BN) * BK * 2 + 1024,
  args = { { tensormap = "tmA" }, { tensormap = "tmB" }, { buffer = "C" },
           { u32 = M }, { u32 = N }, { u32 = K } },
}
if tiles % 2 == 0 then
  launch.cluster = { 2, 1, 1 }
end
return {
  launches = { launch },
  tensormaps = {
    -- dims and box innermost first; 128-byte swizzle = one 64-element bf16 row of K
    tmA = { buffer = "A", dtype = "bf16", dims = { K, M }, box = { BK, BM }, swizzle = "128B" },
    tmB = { buffer = "B", dtype = "bf16", dims = { K, N }, box = { BK, BN }, swizzle = "128B" },
  },
}
