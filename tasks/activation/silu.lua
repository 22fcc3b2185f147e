-- SiLU (swish, beta = 1) in bf16: Y = X·sigmoid(X), fp32 arithmetic inside
-- (cuDNN's SWISH_FWD with beta 1).
-- See _family.lua for the shapes, inputs and baseline.
local A = include "_family.lua"

name = "silu_bf16"
family = "activation"
kernel = A.kernel("silu")
tags = { "activation", "bf16", "memory-bound" }
description = A.describe("silu", "bf16")

dims = A.dims
variants = A.variants
buffers = A.buffers("bf16")
inputs = A.inputs
trials = A.trials
distributions = A.distributions("silu")

-- bf16 outputs: see BF16_TOLERANCE in _family.lua (rtol 1e-2 for one
-- bf16 rounding, atol 1e-3 near zero).
tolerance = {
  bf16 = A.BF16_TOLERANCE,
}

reference = A.reference("silu", "bf16")
baseline = A.baseline("silu", "bf16")
flops = A.flops("silu")
bytes = A.bytes("bf16")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = A.plan("silu")
