-- Means over the middle dimension in fp32: Y[b, d] = mean of X[b, :, d].
-- See _family.lua for the shapes, inputs, tolerances and baseline.
local F = include "_family.lua"

name = "mean_mid_f32"
family = "reduce"
kernel = "mean_mid"
tags = { "reduce", "f32", "memory-bound" }
description = F.mid_description("mean")

dims = F.mid_dims
variants = F.mid_variants
buffers = F.mid_buffers
inputs = F.inputs
trials = F.trials
distributions = F.distributions("mean")

-- The sum's tolerance divided by the count: see TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.mean,
}

reference = F.mid_reference("mean")
baseline = F.mid_baseline("mean")
flops = F.mid_flops("mean")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = F.mid_plan("mean")
