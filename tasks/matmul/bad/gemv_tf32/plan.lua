-- gemv_tf32: a warp per row of A, 8 rows per block of 256 threads (as samples/naive_gemv).
return {
  launches = {
    { kernel = "gemv", grid = { cdiv(M, 8), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
      args = { buffer("A"), buffer("x"), buffer("y"), u32(M), u32(K) } },
  },
}
