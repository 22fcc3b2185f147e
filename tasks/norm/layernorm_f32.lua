-- LayerNorm over the rows of X[R, C], fp32 throughout: Y = (X - mean) /
-- sqrt(var + eps) * weight + bias, eps = 1e-5. Baseline: cuDNN's norm_fwd
-- LAYER_NORM in strict fp32 (see _family.lua).
local F = include "_family.lua"

local EPS = 1e-5

name = "layernorm_f32"
family = "norm"
kernel = "layernorm"
tags = { "norm", "layernorm", "f32", "memory-bound" }
description = F.row_description {
  kernel = "layernorm", op = "LayerNorm", words = "fp32",
  formula = [[
  mean_r = (1/C) sum_c X[r,c],  var_r = (1/C) sum_c (X[r,c] - mean_r)^2  (biased),
  Y[r,c] = (X[r,c] - mean_r) / sqrt(var_r + eps) * weight[c] + bias[c],
with weight[C] and bias[C] in fp32 and eps = 1e-5.]],
  out_words = "fp32, as accurate as fp32 sums in a tree allow",
  signature = [[
  extern "C" __global__ void layernorm(const float *X, const float *weight,
      const float *bias, float *Y, unsigned R, unsigned C, float eps)]],
}

dims = F.row_dims
variants = F.row_variants
buffers = F.row_buffers("f32", true)
inputs = F.row_inputs
trials = 2
-- Rows shifted to 100: a one-pass variance (E[x^2] - E[x]^2 in fp32) errs
-- by about 2e-3 of a standard deviation there, a two-pass one summed in a
-- tree (any block reduction) by under 1e-5.
distributions = F.row_distributions(100)

-- fp32 outputs of order 1: atol = rtol = 1e-4. An honest fp32 kernel
-- (two passes or Welford, block reductions) stays within about 2e-5 on
-- every distribution here, shifted rows included (measured in an fp32
-- emulation of both sums); a one-pass variance misses by 2e-3 on shifted
-- rows, and any bf16 or fp16 step (2^-9 or 2^-12 relative) misses outright.
-- There are no products to run on TF32 tensor cores here: the tolerance is
-- about fp32 statistics. One caveat: a single sequential chain of 4096 or
-- more additions (one thread per row) drifts by about 1.5e-4 on the
-- shifted rows and fails too; sum in a tree.
tolerance = {
  f32 = { atol = 1e-4, rtol = 1e-4, matched = 1.0 },
}

reference = F.row_reference(0, EPS, true)
-- cuDNN's norm engines have no TF32 path (no products): the baseline is
-- timed in strict fp32 only (engines with tensor-core or down-converting
-- notes refused).
baseline = { lib = "cudnn", op = "graph", modes = { "fp32" }, spec = F.row_graph("LAYER_NORM", "f32", EPS, true) }

-- About 8 operations per element (a convention, as for bf16).
flops = function(d) return 8 * d.R * d.C end
targets = F.targets
plan = F.row_plan("layernorm", EPS, true)

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 40, exact = true, note = "KernelBench's last three dimensions as one row" }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.layer_norm(X, (C,), weight, bias, 1e-5)"
