-- Softplus in bf16 (beta = 1, cuDNN's SOFTPLUS_FWD: log(1 + exp(x)) with
-- no linear threshold), fp32 arithmetic inside.
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "softplus_bf16", op = "softplus", dtype = "bf16" })

-- bf16 outputs: see BF16_TOLERANCE in _family.lua (rtol 1e-2 for one
-- bf16 rounding, atol 1e-3 near zero).
tolerance = {
  bf16 = A.BF16_TOLERANCE,
}
