-- GELU in fp32, the exact form: Y = 0.5 X (1 + erf(X/√2)). Strict fp32;
-- no TF32 path exists for a pointwise operation, so cuDNN's baseline is
-- timed in fp32 only.
-- See _family.lua for the shapes, inputs and baseline.
local A = include "_family.lua"

name = "gelu_erf_f32"
family = "activation"
kernel = A.kernel("gelu_erf")
tags = { "activation", "f32", "memory-bound" }
description = A.describe("gelu_erf", "f32")

dims = A.dims
variants = A.variants
buffers = A.buffers("f32")
inputs = A.inputs
trials = A.trials
distributions = A.distributions("gelu_erf")

-- fp32 with erff is within a few 1e-7 of the fp64 reference: erff is
-- accurate to 2 ulp, and where 1 + erf cancels (X ≈ -5) the absolute error
-- is at most |X|/2 · 2.4e-7 ≈ 6e-7. atol = rtol = 1e-5 leave a margin of
-- ten and more, and fail what is not fp32 GELU: the tanh approximation
-- (up to 4.7e-4 away, at |X| ≈ 2.7), a bf16, fp16 or TF32 intermediate
-- (relative errors of 5e-4 and more). atol follows the input's scale
-- (tol_scale 3 for x3, 0.01 for x0.01: the output is proportional to X).
tolerance = {
  f32 = { atol = 1e-5, rtol = 1e-5, matched = 1.0 },
}

reference = A.reference("gelu_erf", "f32")
baseline = A.baseline("gelu_erf", "f32")
flops = A.flops("gelu_erf")
bytes = A.bytes("f32")

-- Memory-bound: no target instruction family to verify.
targets = {}
plan = A.plan("gelu_erf")
