-- L1 normalization of the rows of X[R, C] in fp32 (KernelBench Level 1,
-- problem 38): Y = X / (mean over the row of |X|), as KernelBench's
-- x / torch.mean(torch.abs(x), dim=1). _rowscale.lua defines every field
-- but the tolerance.
local R = include "_rowscale.lua"
R.define(_ENV, { op = "l1", norm = "mean of absolute values, (1/C) sum_c |X[r,c]|" })

-- Outputs are about 1 (|x| over its mean). An fp32 sum of C absolute values
-- in a block's order is within about 1e-6 relative of the fp64 one, and
-- the division adds an ulp: rtol = 1e-5 leaves a margin of ten; atol =
-- 1e-10 only matters at zero. A bf16 or fp16 sum, or a norm without the
-- absolute value, fails.
tolerance = {
  f32 = { atol = 1e-10, rtol = 1e-5, matched = 1.0 },
}

-- Why the baseline stays short of the physical floor (docs/tasks.md gives
-- its fraction on an H200).
baseline.floor_note = "the row's norm comes before its outputs: a block per row reads the row twice (at most two thirds of a floor that counts it once); about 54% on an H200"

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 38, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "X / torch.mean(torch.abs(X), dim=1, keepdim=True)"
