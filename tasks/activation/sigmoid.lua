-- The logistic sigmoid in bf16, fp32 arithmetic inside.
-- See _family.lua for the shapes, inputs and baseline.
local A = include "_family.lua"

name = "sigmoid_bf16"
family = "activation"
kernel = A.kernel("sigmoid")
tags = { "activation", "bf16", "memory-bound" }
description = A.describe("sigmoid", "bf16")

dims = A.dims
variants = A.variants
buffers = A.buffers("bf16")
inputs = A.inputs
trials = A.trials
distributions = A.distributions("sigmoid")

-- bf16 outputs: see BF16_TOLERANCE in _family.lua (rtol 1e-2 for one
-- bf16 rounding, atol 1e-3 near zero).
tolerance = {
  bf16 = A.BF16_TOLERANCE,
}

reference = A.reference("sigmoid", "bf16")
baseline = A.baseline("sigmoid", "bf16")
flops = A.flops("sigmoid")
bytes = A.bytes("bf16")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = A.plan("sigmoid")
