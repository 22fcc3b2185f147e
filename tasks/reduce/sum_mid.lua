-- Sums over the middle dimension in fp32: Y[b, d] = sum over X[b, :, d].
-- _family.lua defines the shapes, inputs, tolerances, reference, baseline and plan.
local F = include "_family.lua"
F.define(_ENV, { name = "sum_mid_f32", op = "sum", axis = "mid" })

-- fp32 summation in any order passes, narrowed inputs fail: see
-- TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.sum,
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 47, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.sum(X, dim=1)"
