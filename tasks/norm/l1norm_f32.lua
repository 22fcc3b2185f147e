-- L1 normalization of the rows of X[R, C] in fp32 (KernelBench Level 1,
-- problem 38): Y = X / (sum over the row of |X|). _rowscale.lua has what
-- the row scalings share.
local R = include "_rowscale.lua"

name = "l1norm_f32"
family = "norm"
kernel = "l1norm"
tags = { "norm", "l1norm", "f32", "memory-bound" }
description = R.description("l1norm", "sum of absolute values, sum_c |X[r,c]|")
dims, variants, buffers, inputs = R.dims, R.variants, R.buffers, R.inputs
trials = 2
distributions = R.distributions()

-- Outputs are about 1/C (1e-4 to 1e-3). An fp32 sum of C absolute values
-- in a block's order is within about 1e-6 relative of the fp64 one, and
-- the division adds an ulp: rtol = 1e-5 leaves a margin of ten; atol =
-- 1e-10 only matters at zero. A bf16 or fp16 sum, or a norm without the
-- absolute value, fails.
tolerance = {
  f32 = { atol = 1e-10, rtol = 1e-5, matched = 1.0 },
}

reference = R.reference("l1")
baseline = R.baseline("l1")
-- absolute value, add, scale: three operations per element (a convention).
flops = function(d) return 3 * d.R * d.C end
targets = R.targets
plan = R.plan("l1norm")
