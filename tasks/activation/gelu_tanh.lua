-- GELU in bf16, the tanh approximation (PyTorch's approximate='tanh',
-- cuDNN's GELU_APPROX_TANH_FWD), fp32 arithmetic inside.
-- See _family.lua for the shapes, inputs and baseline.
local A = include "_family.lua"

name = "gelu_tanh_bf16"
family = "activation"
kernel = A.kernel("gelu_tanh")
tags = { "activation", "bf16", "memory-bound" }
description = A.describe("gelu_tanh", "bf16")

dims = A.dims
variants = A.variants
buffers = A.buffers("bf16")
inputs = A.inputs
trials = A.trials
distributions = A.distributions("gelu_tanh")

-- bf16 outputs: see BF16_TOLERANCE in _family.lua (rtol 1e-2 for one
-- bf16 rounding, atol 1e-3 near zero).
tolerance = {
  bf16 = A.BF16_TOLERANCE,
}

reference = A.reference("gelu_tanh", "bf16")
baseline = A.baseline("gelu_tanh", "bf16")
flops = A.flops("gelu_tanh")
bytes = A.bytes("bf16")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = A.plan("gelu_tanh")
