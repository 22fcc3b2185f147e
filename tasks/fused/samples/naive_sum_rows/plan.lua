-- naive_sum_rows: one block of 256 threads per row of Y.
return {
  launches = {
    { kernel = "fused", grid = { M, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
      args = { buffer("X"), buffer("W"), buffer("Y"), u32(M), u32(N), u32(K) } },
  },
}
