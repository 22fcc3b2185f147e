-- fenced_includes: 16x16 tiles, one thread per element of C; any shape.
local M, N, K = dims.M, dims.N, dims.K
return {
  launches = {
    { kernel = "gemm",
      grid = { (N + 15) // 16, (M + 15) // 16, 1 },
      block = { 16, 16, 1 },
      args = { { buffer = "A" }, { buffer = "B" }, { buffer = "C" },
               { u32 = M }, { u32 = N }, { u32 = K } } },
  },
}
