-- Two blocks per 16x16 tile of C (blockIdx.x = 2 * tile + copy), 16x16 threads.
local M, N, K = dims.M, dims.N, dims.K
return {
  launches = {
    { kernel = "gemm",
      grid = { 2 * ((N + 15) // 16), (M + 15) // 16, 1 },
      block = { 16, 16, 1 },
      shared = 0,
      args = { { buffer = "A" }, { buffer = "B" }, { buffer = "C" },
               { u32 = M }, { u32 = N }, { u32 = K } } },
  },
}
