-- mma_sync: 128x128 output tile per block of 256 threads; any shape.
local M, N, K = dims.M, dims.N, dims.K
return {
  launches = {
    { kernel = "gemm",
      grid = { (N + 127) // 128, (M + 127) // 128, 1 },
      block = { 256, 1, 1 },
      shared = 0,
      args = { { buffer = "A" }, { buffer = "B" }, { buffer = "C" },
               { u32 = M }, { u32 = N }, { u32 = K } } },
  },
}
