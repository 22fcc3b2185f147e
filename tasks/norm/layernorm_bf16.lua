-- LayerNorm over the rows of X[R, C], bf16 in and out, fp32 statistics:
-- Y = (X - mean) / sqrt(var + eps) * weight + bias, eps = 1e-5 (PyTorch's
-- default). Baseline: cuDNN's norm_fwd LAYER_NORM (see _family.lua).
local F = include "_family.lua"

local EPS = 1e-5

name = "layernorm_bf16"
family = "norm"
kernel = "layernorm"
tags = { "norm", "layernorm", "bf16", "memory-bound" }
description = F.row_description {
  kernel = "layernorm", op = "LayerNorm", words = "bf16 as __nv_bfloat16 bit patterns",
  formula = [[
  mean_r = (1/C) sum_c X[r,c],  var_r = (1/C) sum_c (X[r,c] - mean_r)^2  (biased),
  Y[r,c] = (X[r,c] - mean_r) / sqrt(var_r + eps) * weight[c] + bias[c],
with weight[C] and bias[C] in bf16 and eps = 1e-5.]],
  out_words = "bf16 (round to nearest even)",
  signature = [[
  extern "C" __global__ void layernorm(const __nv_bfloat16 *X, const __nv_bfloat16 *weight,
      const __nv_bfloat16 *bias, __nv_bfloat16 *Y, unsigned R, unsigned C, float eps)]],
}

dims = F.row_dims
variants = F.row_variants
buffers = F.row_buffers("bf16", true)
inputs = F.row_inputs
trials = 2
-- Rows shifted to 1000 (bf16 holds them in steps of 4): a one-pass
-- variance in fp32 misses by tens of percent there, a two-pass one by
-- about 3e-5 of a standard deviation.
distributions = F.row_distributions(1000)

-- bf16 outputs: PTXBench's rule, atol = rtol = 1e-2. A bf16 output holds 8
-- significant bits (rounding error up to 2^-9 = 0.2%), so any honest fp32
-- computation rounded once, or twice (the normalized value, then the
-- affine result), passes rtol; atol covers outputs near zero, where
-- weight * xhat and bias cancel. A kernel whose statistics are off (no
-- eps at x0.01, a one-pass variance on shifted rows, bf16 sums) misses by
-- percents on whole rows.
tolerance = {
  bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 },
}

reference = F.row_reference(0, EPS, true)
baseline = { lib = "cudnn", op = "graph", modes = { "default" }, spec = F.row_graph("LAYER_NORM", "bf16", EPS, true) }

-- mean, deviation, square, sum, scale, weight, bias: about 8 operations
-- per element (a convention: it only feeds the FLOP/s column).
flops = function(d) return 8 * d.R * d.C end
precision = "f32"
targets = F.targets
plan = F.row_plan("layernorm", EPS, true)

-- Why the baseline stays short of the physical floor (docs/tasks.md gives
-- its fraction on an H200).
baseline.floor_note = "cuDNN's LAYER_NORM engine reaches 58% of the DRAM floor on the 32768x4096 shape on an H200 (72% on the other); no shipped kernel beside it yet"
