-- triton_wgmma: one program (8 warps, two warpgroups) per 128 x BN tile of
-- C on a 1-D grid, K 64 at a time through 3 cp.async stages. With K a
-- multiple of 8 the loads are 16 bytes wide and BN = 256; otherwise they
-- are element by element, and BN = 128 keeps the registers from spilling.
local M, N, K = dims.M, dims.N, dims.K
local k8 = K % 8 == 0
local BM, BN = 128, k8 and 256 or 128
return {
  launches = {
    { kernel = "gemm", grid = cdiv(M, BM) * cdiv(N, BN), args = { "A", "B", "C", i32(M), i32(N), i32(K) },
      constexprs = { BM = BM, BN = BN, BK = 64, GROUP = 8, K8 = k8 }, num_warps = 8, num_stages = 3 },
  },
}
