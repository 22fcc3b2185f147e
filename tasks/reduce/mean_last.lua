-- Row means in fp32: Y[r] = mean of X[r, :].
-- See _family.lua for the shapes, inputs, tolerances and baseline.
local F = include "_family.lua"

name = "mean_last_f32"
family = "reduce"
kernel = "mean_last"
tags = { "reduce", "f32", "memory-bound" }
description = F.last_description("mean")

dims = F.last_dims
variants = F.last_variants
buffers = F.last_buffers
inputs = F.inputs
trials = F.trials
distributions = F.distributions("mean")

-- The sum's tolerance divided by the count: see TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.mean,
}

reference = F.last_reference("mean")
baseline = F.last_baseline("mean")
flops = F.last_flops("mean")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = F.last_plan("mean")
