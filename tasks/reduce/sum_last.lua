-- Row sums in fp32: Y[r] = sum over X[r, :].
-- See _family.lua for the shapes, inputs, tolerances and baseline.
local F = include "_family.lua"

name = "sum_last_f32"
family = "reduce"
kernel = "sum_last"
tags = { "reduce", "f32", "memory-bound" }
description = F.last_description("sum")

dims = F.last_dims
variants = F.last_variants
buffers = F.last_buffers
inputs = F.inputs
trials = F.trials
distributions = F.distributions("sum")

-- fp32 summation in any order passes, narrowed inputs fail: see
-- TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.sum,
}

reference = F.last_reference("sum")
baseline = F.last_baseline("sum")
flops = F.last_flops("sum")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = F.last_plan("sum")
