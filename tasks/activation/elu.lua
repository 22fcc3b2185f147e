-- ELU in bf16 (alpha = 1, cuDNN's ELU_FWD), fp32 arithmetic inside.
-- See _family.lua for the shapes, inputs and baseline.
local A = include "_family.lua"

name = "elu_bf16"
family = "activation"
kernel = A.kernel("elu")
tags = { "activation", "bf16", "memory-bound" }
description = A.describe("elu", "bf16")

dims = A.dims
variants = A.variants
buffers = A.buffers("bf16")
inputs = A.inputs
trials = A.trials
distributions = A.distributions("elu")

-- bf16 outputs: see BF16_TOLERANCE in _family.lua (rtol 1e-2 for one
-- bf16 rounding, atol 1e-3 near zero).
tolerance = {
  bf16 = A.BF16_TOLERANCE,
}

reference = A.reference("elu", "bf16")
baseline = A.baseline("elu", "bf16")
flops = A.flops("elu")
bytes = A.bytes("bf16")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = A.plan("elu")
