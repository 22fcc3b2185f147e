-- A linear layer with its activation fused, bf16: C = relu(A·Bᵀ + bias),
-- bias[N] added to every row (x·Wᵀ + b), fp32 accumulation, bf16 in and
-- out; cuBLASLt's RELU_BIAS epilogue. See _family.lua.
local mm = include "_family.lua"

name = "linear_relu_bf16"
family = "matmul"
kernel = "linear_relu"
tags = { "matmul", "epilogue", "relu", "bf16" }
description = [[
Write a CUDA kernel named `linear_relu` that computes C = relu(A·Bᵀ + bias):
C[m,n] = max(0, sum_k A[m,k]·B[n,k] + bias[n]), for row-major A[M,K],
B[N,K] and a bias vector bias[N] in bf16 (__nv_bfloat16 bit patterns),
accumulating in fp32, adding the bias and applying the ReLU in fp32, and
writing C[M,N] in bf16 (round to nearest even). Here M=${M}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void linear_relu(const bf16 *A, const bf16 *B,
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
distributions = mm.distributions("A", "B")
-- The ReLU moves no value by more than its input's error: the GEMM's
-- tolerance holds (_family.lua).
tolerance = mm.bf16_tolerance

reference = mm.reference { a = "A", b = "B", c = "C", bias = "bias", act = "relu" }
baseline = mm.baseline { spec = function(d) return { M = d.M, N = d.N, K = d.K, epilogue = "relu_bias", bias = "bias" } end }
-- The multiply-adds of the product; the bias and the activation (two
-- operations per element of C, under 0.1% of it) are not counted.
flops = mm.flops
work = mm.work
targets = mm.targets
plan = mm.tile_plan("linear_relu", "1",
  'buffer("A"), buffer("B"), buffer("bias"), buffer("C"), u32(M), u32(N), u32(K)')
