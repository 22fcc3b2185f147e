-- naive_convt_scale_mean: one block of 256 threads per output channel plane.
return {
  launches = {
    { kernel = "fused", grid = { N * K, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
      args = { buffer("x"), buffer("w"), buffer("conv_bias"), buffer("y"), u32(N), u32(C), u32(H), u32(W), u32(K) } },
  },
}
