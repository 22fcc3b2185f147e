-- fp8_as_bf16: one warpgroup per 64x256 tile of C, fp8 tiles by TMA (no
-- swizzle), decoded to bf16 in shared memory. K must be a multiple of 16.
local M, N, K = dims.M, dims.N, dims.K
if K % 16 ~= 0 then error("fp8_as_bf16 needs K a multiple of 16, got " .. K) end
return {
  launches = { {
    kernel = "gemm",
    grid = { cdiv(N, 256), cdiv(M, 64), 1 },
    block = { 128, 1, 1 },
    -- bf16 A 64x64 and B 256x64 (40 KiB), fp8 staging (20 KiB), 1 KiB to align
    shared = 40960 + 20480 + 1024,
    args = { { tensormap = "tmA" }, { tensormap = "tmB" }, { buffer = "C" }, { buffer = "scale_a" },
             { buffer = "scale_b" }, { u32 = M }, { u32 = N }, { u32 = K } },
  } },
  tensormaps = {
    tmA = { buffer = "A", dtype = "fp8e4m3", dims = { K, M }, box = { 64, 64 } },
    tmB = { buffer = "B", dtype = "fp8e4m3", dims = { K, N }, box = { 64, 256 } },
  },
}
