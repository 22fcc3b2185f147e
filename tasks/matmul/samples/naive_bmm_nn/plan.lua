-- naive_bmm_nn: one thread per element of C, 16x16 threads per block,
-- grid.z over the batch; any shape with BATCH <= 65535.
return {
  launches = {
    { kernel = "bmm_nn",
      grid = { cdiv(N, 16), cdiv(M, 16), BATCH },
      block = { 16, 16, 1 },
      shared = 0,
      args = { buffer("A"), buffer("B"), buffer("C"), u32(BATCH), u32(M), u32(N), u32(K) } },
  },
}
