-- Softplus in bf16 (beta = 1, cuDNN's SOFTPLUS_FWD: log(1 + exp(x)) with
-- no linear threshold), fp32 arithmetic inside.
-- See _family.lua for the shapes, inputs and baseline.
local A = include "_family.lua"

name = "softplus_bf16"
family = "activation"
kernel = A.kernel("softplus")
tags = { "activation", "bf16", "memory-bound" }
description = A.describe("softplus", "bf16")

dims = A.dims
variants = A.variants
buffers = A.buffers("bf16")
inputs = A.inputs
trials = A.trials
distributions = A.distributions("softplus")

-- bf16 outputs: see BF16_TOLERANCE in _family.lua (rtol 1e-2 for one
-- bf16 rounding, atol 1e-3 near zero).
tolerance = {
  bf16 = A.BF16_TOLERANCE,
}

reference = A.reference("softplus", "bf16")
baseline = A.baseline("softplus", "bf16")
flops = A.flops("softplus")
bytes = A.bytes("bf16")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = A.plan("softplus")
