-- GEMM, bf16: C = A·Bᵀ with bf16 inputs, fp32 accumulation, bf16 output
-- (the PTXBench GEMM and its companion shapes; see _family.lua).
local gemm = include "_family.lua"

-- Inputs are drawn in fp32 and rounded to bf16; the reference sees exactly
-- the rounded values.
gemm.define(_ENV, { name = "gemm_bf16", dtype = "bf16", ctype = "__nv_bfloat16",
  words = "in bf16 (__nv_bfloat16 bit patterns), accumulating in fp32\n" ..
    "and writing C[M,N] in bf16 (round to nearest even)" })

-- PTXBench's bf16 GEMM problems (gemm-problems/gemm_n*_k* of
-- zhang677/PTXBench): N×K pairs captured from serving traces, each posed at
-- the largest M of its workloads (n7168_k5120 at M = 8192 is the family's
-- first shape already). Tagged `ptxbench` and with the problem's name.
local PTXBENCH = { -- { N, K, M }
  { 128, 2048, 8828 }, { 2048, 4096, 8828 }, { 2048, 5376, 8828 }, { 21504, 5376, 8828 }, { 256, 7168, 901 },
  { 28672, 4096, 8192 }, { 34816, 5120, 8192 }, { 4096, 14336, 8192 }, { 4096, 4096, 8192 }, { 4096, 5376, 8828 },
  { 5120, 17408, 8192 }, { 5120, 2048, 8828 }, { 5120, 5120, 8192 }, { 5376, 21504, 8828 }, { 5376, 4096, 8828 },
  { 6144, 4096, 8192 },
}
local all = {}
for _, v in ipairs(variants) do all[#all + 1] = v end
for _, s in ipairs(PTXBENCH) do
  all[#all + 1] = { M = s[3], N = s[1], K = s[2], tags = { "ptxbench", ("gemm_n%d_k%d"):format(s[1], s[2]) } }
end
variants = all

-- bf16 has 8 significant bits: one ulp is 2^-7 ≈ 7.8e-3 of the value at
-- worst, so a result that an fp32 sum in another order pushes across a
-- rounding boundary (one ulp off) still passes rtol = 1e-2. Near zero, rtol
-- cannot help; atol = 1e-2 covers fp32 accumulation-order differences
-- (about u·K/√6 ≈ 1.3e-4 for a sequential sum at K=5120 on N(0,1) inputs)
-- with a wide margin, while a kernel that accumulates in bf16 misses by
-- whole units. Every element must match (FlashInfer-Bench's default).
tolerance = {
  bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 },
}
