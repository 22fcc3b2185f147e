-- ReLU in fp32: Y = max(X, 0). Strict fp32; no TF32 path exists for a
-- pointwise operation, so cuDNN's baseline is timed in fp32 only.
-- See _family.lua for the shapes, inputs and baseline.
local A = include "_family.lua"

name = "relu_f32"
family = "activation"
kernel = A.kernel("relu")
tags = { "activation", "f32", "memory-bound" }
description = A.describe("relu", "f32")

dims = A.dims
variants = A.variants
buffers = A.buffers("f32")
inputs = A.inputs
trials = A.trials
distributions = A.distributions("relu")

-- ReLU is exact in any precision: every output is an input or zero, so
-- an honest kernel matches the reference bit for bit (atol = rtol = 0).
-- Anything that rounds X on the way (a bf16 or TF32 intermediate, a half
-- copy) fails.
tolerance = {
  f32 = { atol = 0, rtol = 0, matched = 1.0 },
}

reference = A.reference("relu", "f32")
baseline = A.baseline("relu", "f32")
flops = A.flops("relu")
bytes = A.bytes("f32")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = A.plan("relu")
