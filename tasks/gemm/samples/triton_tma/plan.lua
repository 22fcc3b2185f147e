-- triton_tma: one program (8 warps, two warpgroups) per 128 x 256 tile of C
-- on a 1-D grid, K 64 at a time, A and B through TMA in 3 stages. TMA needs
-- K a multiple of 8 (rows of A and B on 16 bytes).
local M, N, K = dims.M, dims.N, dims.K
if K % 8 ~= 0 then
  error("triton_tma reads A and B through TMA, whose rows must start on 16 bytes: K must be a multiple of 8 (got K="
    .. K .. ")")
end
local BM, BN = 128, 256
return {
  launches = {
    { kernel = "gemm", grid = cdiv(M, BM) * cdiv(N, BN), args = { "A", "B", "C", i32(M), i32(N), i32(K) },
      constexprs = { BM = BM, BN = BN, BK = 64, GROUP = 8 }, num_warps = 8, num_stages = 3 },
  },
}
