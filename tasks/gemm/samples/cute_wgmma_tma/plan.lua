-- cute_wgmma_tma: a CTA of 256 threads (two warpgroups) per 128x256 tile of
-- C, 4 stages of A (128x64) and B (256x64) bf16 loaded by TMA. Any M, N >= 1;
-- K must be a multiple of 8 (a TMA row stride is a multiple of 16 bytes).
local M, N, K = dims.M, dims.N, dims.K
if M < 1 or N < 1 or K < 8 or K % 8 ~= 0 then
  error("cute_wgmma_tma needs M >= 1, N >= 1 and K a positive multiple of 8 (got M=" .. M ..
        " N=" .. N .. " K=" .. K .. ")")
end
local BM, BN, BK, STAGES = 128, 256, 64, 4
return {
  launches = {
    { kernel = "gemm",
      grid = { cdiv(N, BN), cdiv(M, BM), 1 },
      block = { 256, 1, 1 },
      -- the stages, plus 1 KiB to align them to 1024 bytes
      shared = STAGES * (BM + BN) * BK * 2 + 1024,
      args = { { tensormap = "tmA" }, { tensormap = "tmB" }, { buffer = "C" },
               { u32 = M }, { u32 = N }, { u32 = K } } },
  },
  tensormaps = {
    -- dims and box innermost first; 128-byte swizzle = one 64-element bf16 row of K
    tmA = { buffer = "A", dtype = "bf16", dims = { K, M }, box = { BK, BM }, swizzle = "128B" },
    tmB = { buffer = "B", dtype = "bf16", dims = { K, N }, box = { BK, BN }, swizzle = "128B" },
  },
}
