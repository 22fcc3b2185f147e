-- Row maxima in fp32: Y[r] = max of X[r, :].
-- See _family.lua for the shapes, inputs, tolerances and baseline.
local F = include "_family.lua"

name = "max_last_f32"
family = "reduce"
kernel = "max_last"
tags = { "reduce", "f32", "memory-bound" }
description = F.last_description("max")

dims = F.last_dims
variants = F.last_variants
buffers = F.last_buffers
inputs = F.inputs
trials = F.trials
distributions = F.distributions("max")

-- A maximum is exact in any order: see TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.max,
}

reference = F.last_reference("max")
baseline = F.last_baseline("max")
flops = F.last_flops("max")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = F.last_plan("max")
