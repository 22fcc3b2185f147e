-- A linear layer with its activation fused, bf16: C = gelu(A·Bᵀ + bias)
-- with GELU in its tanh form, bias[N] added to every row, fp32
-- accumulation, bf16 in and out; cuBLASLt's GELU_BIAS epilogue, whose GELU
-- is the tanh approximation (docs/baselines.md), which is what the
-- reference computes. See _family.lua.
local mm = include "_family.lua"

name = "linear_gelu_bf16"
family = "matmul"
kernel = "linear_gelu"
tags = { "matmul", "epilogue", "gelu", "bf16" }
description = [[
Write a CUDA kernel named `linear_gelu` that computes C = gelu(A·Bᵀ + bias)
for row-major A[M,K], B[N,K] and a bias vector bias[N] in bf16
(__nv_bfloat16 bit patterns): with z = sum_k A[m,k]·B[n,k] + bias[n],
  C[m,n] = 0.5·z·(1 + tanh(sqrt(2/pi)·(z + 0.044715·z^3)))
(GELU in its tanh approximation, PyTorch's gelu(approximate='tanh')),
accumulating in fp32, adding the bias and applying the GELU in fp32, and
writing C[M,N] in bf16 (round to nearest even). Here M=${M}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void linear_gelu(const bf16 *A, const bf16 *B,
      const bf16 *bias, bf16 *C, unsigned M, unsigned N, unsigned K)
launched with a grid of (ceil(N/128), ceil(M/128), 1) blocks of 256 threads
and no dynamic shared memory: block (x, y) owns the 128x128 tile of C at rows
128*y and columns 128*x.
]] .. mm.own_plan

dims = { "M", "N", "K" }
variants = mm.linear_variants

buffers = mm.linear_buffers
inputs = mm.inputs { "A", "B", "bias" }
trials = mm.trials
-- The x3 set also breaks a GELU whose tanh is written as
-- (e^{2u} - 1)/(e^{2u} + 1) in fp32: pre-activations there reach the
-- hundreds, e^{2u} overflows and the quotient is Inf/Inf = NaN.
distributions = mm.distributions("A", "B")
-- GELU's slope lies in [-0.13, 1.13]: it grows an input error by at most
-- 13%, inside the GEMM's tolerance (_family.lua). A GELU computed with a
-- fast tanh (tanh.approx.f32, relative error about 2^-11) stays inside it
-- too; the erf form differs from the tanh form by at most 4.7e-4, so
-- the tolerance does not tell them apart: the task asks for the tanh form.
tolerance = mm.bf16_tolerance

reference = mm.reference { a = "A", b = "B", c = "C", bias = "bias", act = "gelu" }
baseline = mm.baseline { spec = function(d) return { M = d.M, N = d.N, K = d.K, epilogue = "gelu_bias", bias = "bias" } end }
-- The multiply-adds of the product; the bias and the activation are not
-- counted (a handful of operations per element of C, under 0.3% of it).
flops = mm.flops
work = mm.work
targets = mm.targets
plan = mm.tile_plan("linear_gelu", "1",
  'buffer("A"), buffer("B"), buffer("bias"), buffer("C"), u32(M), u32(N), u32(K)')
