-- Means over the middle dimension in fp32: Y[b, d] = mean of X[b, :, d].
-- _family.lua defines the shapes, inputs, tolerances, reference, baseline and plan.
local F = include "_family.lua"
F.define(_ENV, { name = "mean_mid_f32", op = "mean", axis = "mid" })

-- The sum's tolerance divided by the count: see TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.mean,
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 48, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.mean(X, dim=1)"
