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
description = mm.linear_description("linear_gelu", "C = gelu(A·Bᵀ + bias) with\n" ..
  "GELU in its tanh approximation (PyTorch's gelu(approximate='tanh')): with\n" ..
  "z = sum_k A[m,k]·B[n,k] + bias[n],\n" ..
  "  C[m,n] = 0.5·z·(1 + tanh(sqrt(2/pi)·(z + 0.044715·z^3))),")

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
-- atol is wider than linear_relu's: cuBLASLt's own GELU is off by up to
-- 0.02 (_family.lua).
tolerance = mm.linear_gelu_tolerance

reference = mm.linear_reference("gelu")
-- cuBLASLt's GELU_BIAS epilogue.
baseline = mm.linear_baseline("gelu")
-- The multiply-adds of the product; the bias and the activation (about ten
-- operations per element of C, against 2K for its dot product) are not
-- counted.
flops = mm.flops
work = mm.work
targets = mm.targets
plan = mm.linear_plan("linear_gelu")
