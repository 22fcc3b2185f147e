-- Block-scaled fp8 GEMM, 1D1D (a scale per row per 128 values of K on both
-- A and B, DeepGEMM's recipe for the backward pass); _gemm_fp8_blockscale.lua
-- defines every field but the shapes.
local F = include "_gemm_fp8_blockscale.lua"

-- PTXBench's fp8 GEMM shape (N = 4096, K = 7168; its problem is 1D2D) at 4096 and 128 rows, and a
-- small odd shape.
F.define(_ENV, "gemm_fp8_1d1d", 0, {
  { M = 4096, N = 4096, K = 7168, tags = { "main", "prefill", "DeepSeek-V3" } },
  { M = 128, N = 4096, K = 7168, tags = { "decode", "DeepSeek-V3" } },
  { M = 123, N = 200, K = 512, tags = { "odd", "small" } },
})
