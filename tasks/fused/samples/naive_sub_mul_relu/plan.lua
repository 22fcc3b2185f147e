-- naive_sub_mul_relu: one thread per element of Y, 16x16 threads per block.
return {
  launches = {
    { kernel = "fused", grid = { cdiv(N, 16), cdiv(M, 16), 1 }, block = { 16, 16, 1 }, shared = 0,
      args = { buffer("X"), buffer("W"), buffer("bias"), buffer("Y"), u32(M), u32(N), u32(K) } },
  },
}
