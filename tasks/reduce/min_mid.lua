-- Minima over the middle dimension in fp32 (KernelBench Level 1, problem
-- 53, which reduces dimension 1 of [B, D1, D2]): Y[b, d] = min of X[b, :, d].
-- _family.lua defines the shapes, inputs, tolerances, reference, baseline and plan.
local F = include "_family.lua"
F.define(_ENV, { name = "min_mid_f32", op = "min", axis = "mid" })

-- A minimum is exact in any order: see TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.min,
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 53, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.amin(X, dim=1)"
