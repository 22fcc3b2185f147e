-- Sums over the middle dimension in fp32: Y[b, d] = sum over X[b, :, d].
-- See _family.lua for the shapes, inputs, tolerances and baseline.
local F = include "_family.lua"

name = "sum_mid_f32"
family = "reduce"
kernel = "sum_mid"
tags = { "reduce", "f32", "memory-bound" }
description = F.mid_description("sum")

dims = F.mid_dims
variants = F.mid_variants
buffers = F.mid_buffers
inputs = F.inputs
trials = F.trials
distributions = F.distributions("sum")

-- fp32 summation in any order passes, narrowed inputs fail: see
-- TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.sum,
}

reference = F.mid_reference("sum")
baseline = F.mid_baseline("sum")
flops = F.mid_flops("sum")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = F.mid_plan("sum")
