-- GEMM, fp8 e4m3 with per-tensor scales: C = sa·sb·(A·Bᵀ) with A[M,K],
-- B[N,K] in fp8 e4m3 (row-major), sa and sb one f32 each, fp32
-- accumulation, bf16 output C[M,N]. Same shape set as the bf16 task.
local gemm = include "_family.lua"

name = "gemm_fp8e4m3"
family = "gemm"
kernel = "gemm"
tags = { "gemm", "fp8" }

description = [[
Write a CUDA kernel named `gemm` that computes C = scale_a * scale_b * (A·Bᵀ)
for row-major A[M,K] and B[N,K] in fp8 e4m3 (__nv_fp8_e4m3 bit patterns, one
byte each), with per-tensor scales scale_a and scale_b (one float each, in
device memory), accumulating in fp32 and writing C[M,N] in bf16 (round to
nearest even). Here M=${M}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void gemm(const unsigned char *A, const unsigned char *B, __nv_bfloat16 *C,
                                  const float *scale_a, const float *scale_b,
                                  unsigned M, unsigned N, unsigned K)
launched with a grid of (ceil(N/128), ceil(M/128), 1) blocks of 256 threads
and no dynamic shared memory: block (x, y) owns the 128x128 tile of C at rows
128*y and columns 128*x. Send your own plan to change any of this (tensor
maps, clusters, dynamic shared memory, several launches).]]

dims = gemm.dims
-- The family's shapes less those whose K is not a multiple of 16: cuBLASLt's
-- e4m3 GEMM needs 16-byte aligned K-major rows (docs/baselines.md), so
-- there they would have no library baseline to be timed against (as
-- `klab tasks --check` says of them). Nor has cuBLASLt 13.0 an e4m3
-- algorithm for N = 7169 (bf16 rows of C not 16-byte aligned; measured on
-- an H200): N must be a multiple of 8 as well, and the odd shape's N is
-- 7176 here (8 x 897: not a multiple of 16).
variants = {}
for _, v in ipairs(gemm.variants) do
  if v.K % 16 == 0 and v.N == 7169 then
    variants[#variants + 1] = { M = v.M, N = 7176, K = v.K, tags = v.tags }
  elseif v.K % 16 == 0 and v.N % 8 == 0 then
    variants[#variants + 1] = v
  end
end

buffers = {
  A = { role = "input", dtype = "fp8e4m3", shape = { "M", "K" } },
  B = { role = "input", dtype = "fp8e4m3", shape = { "N", "K" } },
  scale_a = { role = "input", dtype = "f32", shape = { 1 } },
  scale_b = { role = "input", dtype = "f32", shape = { 1 } },
  C = { role = "output", dtype = "bf16", shape = { "M", "N" } },
}

-- A and B are drawn from `inputs` and rounded to e4m3 (saturating at 448).
-- The scales are fixed powers of two, different for A and B (0.5 and 0.25),
-- so that a kernel that ignores either one is off by a factor of 2 or 4
-- while every value stays exact. The reference reads the same scale
-- buffers and multiplies the same fp8 values.
inputs = gemm.inputs
scales = {
  A = { buffer = "scale_a", value = 0.5 },
  B = { buffer = "scale_b", value = 0.25 },
}

-- The scaled distributions scale A and B before rounding to e4m3, so C and
-- the accumulation error scale by scale^2: atol follows (tol_scale).
trials = gemm.trials
distributions = gemm.distributions

-- The inputs are exact (the reference sees the same fp8 values and scales,
-- and e4m3 products are exact in fp32), so the error budget is the
-- accumulation and the bf16 output. The bf16 rounding alone allows one ulp,
-- 2^-7 ≈ 7.8e-3. Hopper's fp8 tensor-core path keeps fewer accumulator bits
-- than fp32 unless partial sums are promoted to fp32 registers (the
-- DeepSeek-V3 report measured about 14 bits and relative errors near 2% at
-- K=4096 without promotion); rtol = 2e-2 (GPU MODE's fp8-mm value) leaves
-- room for promotion every few hundred K, not for none at all. atol = 5e-2
-- covers the same error near zero; it is under 0.1% of |C|'s standard
-- deviation (about 72 at K=5120), so a wrong result cannot hide in it.
tolerance = {
  bf16 = { atol = 5e-2, rtol = 2e-2, matched = 1.0 },
}

reference = gemm.reference(true)
baseline = gemm.baseline(nil, { scale_a = "scale_a", scale_b = "scale_b" })

flops = gemm.flops
work = gemm.work
bytes = function(d) return d.M * d.K + d.N * d.K + 2 * d.M * d.N + 8 end

targets = gemm.targets
-- The targets run on fp8 operands: at least `work` of the FLOPs must go
-- through fp8 tensor-core instructions (QGMMA on sm_90a, the fp8 kind of
-- tcgen05.mma on sm_100a). A kernel that decodes fp8 to bf16 and runs bf16
-- wgmma meets wgmma and TMA but not this (tasks/gemm/bad/fp8_as_bf16).
tensor_type = "fp8"
plan = gemm.plan("\n               { buffer = \"scale_a\" }, { buffer = \"scale_b\" },")
