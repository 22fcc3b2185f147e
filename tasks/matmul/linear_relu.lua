-- A linear layer with its activation fused, bf16: C = relu(A·Bᵀ + bias),
-- bias[N] added to every row (x·Wᵀ + b), fp32 accumulation, bf16 in and
-- out; cuBLASLt's RELU_BIAS epilogue. See _family.lua.
local mm = include "_family.lua"

name = "linear_relu_bf16"
family = "matmul"
kernel = "linear_relu"
tags = { "matmul", "epilogue", "relu", "bf16" }
description = mm.linear_description("linear_relu", "C = relu(A·Bᵀ + bias):\n" ..
  "C[m,n] = max(0, sum_k A[m,k]·B[n,k] + bias[n]),")

dims = { "M", "N", "K" }
variants = mm.linear_variants

buffers = mm.linear_buffers
inputs = mm.inputs { "A", "B", "bias" }
trials = mm.trials
distributions = mm.distributions("A", "B")
-- The ReLU moves no value by more than its input's error: the GEMM's
-- tolerance holds (_family.lua).
tolerance = mm.linear_tolerance

reference = mm.linear_reference("relu")
-- cuBLASLt's RELU_BIAS epilogue.
baseline = mm.linear_baseline("relu")
-- The multiply-adds of the product; the bias and the activation (two
-- operations per element of C, against 2K for its dot product) are not
-- counted.
flops = mm.flops
work = mm.work
targets = mm.targets
plan = mm.linear_plan("linear_relu")
