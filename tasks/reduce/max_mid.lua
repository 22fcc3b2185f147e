-- Maxima over the middle dimension in fp32: Y[b, d] = max of X[b, :, d].
-- _family.lua defines the shapes, inputs, tolerances, reference, baseline and plan.
local F = include "_family.lua"
F.define(_ENV, { name = "max_mid_f32", op = "max", axis = "mid" })

-- A maximum is exact in any order: see TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.max,
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 49, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.amax(X, dim=1)"
