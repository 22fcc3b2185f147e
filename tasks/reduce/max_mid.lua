-- Maxima over the middle dimension in fp32: Y[b, d] = max of X[b, :, d].
-- See _family.lua for the shapes, inputs, tolerances and baseline.
local F = include "_family.lua"

name = "max_mid_f32"
family = "reduce"
kernel = "max_mid"
tags = { "reduce", "f32", "memory-bound" }
description = F.mid_description("max")

dims = F.mid_dims
variants = F.mid_variants
buffers = F.mid_buffers
inputs = F.inputs
trials = F.trials
distributions = F.distributions("max")

-- A maximum is exact in any order: see TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.max,
}

reference = F.mid_reference("max")
baseline = F.mid_baseline("max")
flops = F.mid_flops("max")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = F.mid_plan("max")
