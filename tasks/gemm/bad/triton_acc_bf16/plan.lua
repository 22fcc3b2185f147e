-- One program (4 warps) per 128x128 tile of C, K 64 at a time.
return {
  launches = {
    { kernel = "gemm", grid = { cdiv(N, 128), cdiv(M, 128), 1 }, args = { "A", "B", "C", i32(M), i32(N), i32(K) },
      constexprs = { BM = 128, BN = 128, BK = 64 }, num_warps = 4 },
  },
}
