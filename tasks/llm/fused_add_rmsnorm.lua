-- Fused residual add + RMSNorm, as vLLM's fused_add_rms_norm: the residual
-- stream is updated, residual_out = X + residual, and normalized, Y =
-- rmsnorm(X + residual) * weight with eps = 1e-6; bf16 in and out, fp32
-- arithmetic. vLLM updates its residual in place; here, as klab passes
-- every destination, the updated residual goes to its own buffer and the
-- inputs stay untouched.
local F = include "_family.lua"

local EPS = 1e-6

name = "fused_add_rmsnorm_bf16"
family = "llm"
kernel = "fused_add_rmsnorm"
tags = { "llm", "rmsnorm", "residual", "bf16", "memory-bound" }

description = [[
Write a CUDA kernel named `fused_add_rmsnorm`: the residual add and RMSNorm
before a decoder layer (vLLM's fused_add_rms_norm). Inputs X[T, H] (the
layer's output), residual[T, H] and weight[H], all bf16 (__nv_bfloat16 bit
patterns), row-major. For each token row t, with s = X[t,:] + residual[t,:]
(computed in fp32):
  residual_out[t,c] = s[c]  (bf16),
  Y[t,c] = s[c] / sqrt((1/H) sum_j s[j]^2 + eps) * weight[c]  (bf16),
with eps = 1e-6, fp32 statistics, round to nearest even. (Normalizing the
bf16-rounded s is fine.) Do not modify X or residual. Here T=${T}, H=${H}.
With the default launch plan the kernel is
  extern "C" __global__ void fused_add_rmsnorm(const __nv_bfloat16 *X,
      const __nv_bfloat16 *residual, const __nv_bfloat16 *weight, __nv_bfloat16 *Y, __nv_bfloat16 *residual_out,
      unsigned T, unsigned H, float eps)
launched with one block of 256 threads per token (grid (T, 1, 1)), no
dynamic shared memory and eps as the last argument. Send your own plan to
change any of this.]]

dims = { "T", "H" }
-- 16384 tokens of Llama-3-8B's 4096 and 8192 of Llama-3-70B's 8192 (each
-- 128 MiB per tensor, four tensors moved: 512 MiB, over 100 us on an
-- H200), and a small odd shape.
variants = {
  { T = 16384, H = 4096, tags = { "main" } },
  { T = 8192, H = 8192, tags = { "main" } },
  { T = 1000, H = 1023, tags = { "odd", "small" } },
}

buffers = {
  X = { role = "input", dtype = "bf16", shape = { "T", "H" } },
  residual = { role = "input", dtype = "bf16", shape = { "T", "H" } },
  weight = { role = "input", dtype = "bf16", shape = { "H" } },
  Y = { role = "output", dtype = "bf16", shape = { "T", "H" } },
  residual_out = { role = "output", dtype = "bf16", shape = { "T", "H" } },
}

inputs = {
  X = { dist = "normal", mean = 0, std = 1 },
  residual = { dist = "normal", mean = 0, std = 1 },
  weight = { dist = "normal", mean = 1, std = 0.5 },
}

-- KernelBench-Verified's scales multiply X, residual and weight: the
-- normalized row does not change with the scale of s, so Y scales like
-- weight and residual_out like s, both by the scale (tol_scale = scale).
-- Then PTXBench's spiky mix on both streams (outliers in a row, as the
-- residual streams of large models have them).
trials = 2
distributions = F.distributions(3, 0.01, {
  { name = "spiky", inputs = { X = F.SPIKY, residual = F.SPIKY } },
})

-- bf16 outputs: see _family.lua. residual_out is one rounded sum (exact in
-- fp32 for bf16 addends); Y from the rounded sum or the exact one differs
-- by a rounding.
tolerance = { bf16 = F.BF16 }

-- The reference (reference.cu): a block per token, s = x + r and the
-- statistics in fp64. A unit is a row: H elements of Y and of residual_out.
reference = {
  source = "reference.cu", accumulate = "f64", units = { Y = "H", residual_out = "H" },
  plan = ([[
local rows = nsample > 0 and nsample or T
return { launches = { { kernel = "add_rmsnorm_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("residual"), buffer("weight"), buffer("positions"), u64(nsample), buffer("Y"),
           buffer("residual_out"), u32(H), f32(%g) } } } }
]]):format(EPS),
}

-- A cuDNN graph cannot fuse the add into its normalization (norm_fwd takes
-- no pointwise producer, and the sum is an output as well): the task ships
-- a kernel (baseline.cu), a block per token that writes the sum once and
-- normalizes it from L2, 16-byte vectors where rows are aligned.
baseline = {
  source = "baseline.cu", name = "block-per-token fused add + RMSNorm",
  plan = ([[
return { launches = { { kernel = "add_rmsnorm_baseline", grid = { T, 1, 1 }, block = { 512, 1, 1 },
  args = { buffer("X"), buffer("residual"), buffer("weight"), buffer("Y"), buffer("residual_out"), u32(H),
           f32(%g) } } } }
]]):format(EPS),
}

-- add, square, sum, scale, weight: 5 operations per element (a convention).
flops = function(d) return 5 * d.T * d.H end
precision = "f32"
targets = F.targets

plan = ([[
-- Default plan: one block of 256 threads per token; eps as the last argument.
return { launches = { { kernel = "fused_add_rmsnorm", grid = { T, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("residual"), buffer("weight"), buffer("Y"), buffer("residual_out"),
           u32(T), u32(H), f32(%g) } } } }
]]):format(EPS)
