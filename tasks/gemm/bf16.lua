-- GEMM, bf16: C = A·Bᵀ with bf16 inputs, fp32 accumulation, bf16 output
-- (the PTXBench GEMM and its companion shapes; see _family.lua).
local gemm = include "_family.lua"

-- Inputs are drawn in fp32 and rounded to bf16; the reference sees exactly
-- the rounded values.
gemm.define(_ENV, { name = "gemm_bf16", dtype = "bf16", ctype = "__nv_bfloat16",
  words = "in bf16 (__nv_bfloat16 bit patterns), accumulating in fp32\n" ..
    "and writing C[M,N] in bf16 (round to nearest even)" })

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
