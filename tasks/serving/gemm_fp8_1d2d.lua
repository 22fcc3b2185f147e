-- Block-scaled fp8 GEMM, 1D2D (DeepSeek-V3's recipe: a scale per row of A
-- per 128 values of K, a scale per 128x128 block of B); _gemm_fp8_blockscale.lua
-- defines every field but the shapes.
local F = include "_gemm_fp8_blockscale.lua"

-- PTXBench's fp8_gemm_nt_1d2d_n4096_k7168 at M = 4096 (its problem) and at a
-- decode batch of 128, DeepSeek-V3's fused q_a/kv_a projection (N = 2112,
-- not a multiple of 128) and down projection (N = 7168, K = 16384) at
-- 4096 tokens, and a small odd shape.
F.define(_ENV, "gemm_fp8_1d2d", 1, {
  { M = 4096, N = 4096, K = 7168, tags = { "main", "prefill", "ptxbench", "fp8_gemm_nt_1d2d_n4096_k7168", "DeepSeek-V3" } },
  { M = 128, N = 4096, K = 7168, tags = { "decode", "DeepSeek-V3" } },
  { M = 4096, N = 2112, K = 7168, tags = { "main", "DeepSeek-V3" } },
  { M = 4096, N = 7168, K = 16384, tags = { "DeepSeek-V3" } },
  { M = 123, N = 200, K = 512, tags = { "odd", "small" } },
})
