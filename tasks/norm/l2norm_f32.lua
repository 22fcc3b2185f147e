-- L2 normalization of the rows of X[R, C] in fp32 (KernelBench Level 1,
-- problem 39): Y = X / sqrt(sum over the row of X^2). _rowscale.lua has
-- what the row scalings share.
local R = include "_rowscale.lua"

name = "l2norm_f32"
family = "norm"
kernel = "l2norm"
tags = { "norm", "l2norm", "f32", "memory-bound" }
description = R.description("l2norm", "Euclidean norm, sqrt(sum_c X[r,c]^2)")
dims, variants, buffers, inputs = R.dims, R.variants, R.buffers, R.inputs
trials = 2
distributions = R.distributions()

-- Outputs are about 1/sqrt(C) (0.011 to 0.016). An fp32 sum of C squares
-- in a block's order is within about 1e-6 relative of the fp64 one, and
-- the square root and the division add an ulp each: rtol = 1e-5 leaves a
-- margin of ten; atol = 1e-8 only matters at zero. A sum of squares in
-- bf16 or fp16, or a norm without the square root, fails.
tolerance = {
  f32 = { atol = 1e-8, rtol = 1e-5, matched = 1.0 },
}

reference = R.reference("l2")
baseline = R.baseline("l2")
-- square, add, scale: three operations per element (a convention).
flops = function(d) return 3 * d.R * d.C end
targets = R.targets
plan = R.plan("l2norm")
