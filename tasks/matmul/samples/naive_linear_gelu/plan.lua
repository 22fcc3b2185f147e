-- naive_linear_gelu: one thread per element of C, 16x16 threads per block.
return {
  launches = {
    { kernel = "linear_gelu", grid = { cdiv(N, 16), cdiv(M, 16), 1 }, block = { 16, 16, 1 }, shared = 0,
      args = { buffer("A"), buffer("B"), buffer("bias"), buffer("C"), u32(M), u32(N), u32(K) } },
  },
}
