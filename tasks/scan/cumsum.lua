-- Inclusive prefix sums along the rows in fp32 (KernelBench Level 1, problem 89).
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local F = include "_family.lua"
F.define(_ENV, { name = "cumsum_f32", op = "cumsum" })

-- fp32 sums in any sensible order pass: see TOLERANCE in _family.lua.
tolerance = F.TOLERANCE

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 89, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.cumsum(X, dim=1)"
