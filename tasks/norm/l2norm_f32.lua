-- L2 normalization of the rows of X[R, C] in fp32 (KernelBench Level 1,
-- problem 39): Y = X / sqrt(sum over the row of X^2). _rowscale.lua defines
-- every field but the tolerance.
local R = include "_rowscale.lua"
R.define(_ENV, { op = "l2", norm = "Euclidean norm, sqrt(sum_c X[r,c]^2)" })

-- Outputs are about 1/sqrt(C) (0.011 to 0.016). An fp32 sum of C squares
-- in a block's order is within about 1e-6 relative of the fp64 one, and
-- the square root and the division add an ulp each: rtol = 1e-5 leaves a
-- margin of ten; atol = 1e-8 only matters at zero. A sum of squares in
-- bf16 or fp16, or a norm without the square root, fails.
tolerance = {
  f32 = { atol = 1e-8, rtol = 1e-5, matched = 1.0 },
}

-- Why the baseline stays short of the physical floor (docs/tasks.md gives
-- its fraction on an H200).
baseline.floor_note = "the row's norm comes before its outputs: a block per row reads the row twice (at most two thirds of a floor that counts it once); about 54% on an H200"

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 39, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "X / torch.linalg.vector_norm(X, dim=1, keepdim=True)"
