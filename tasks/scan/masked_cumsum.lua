-- Prefix sums of the masked elements along the rows in fp32 (KernelBench Level 1, problem 93).
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local F = include "_family.lua"
F.define(_ENV, { name = "masked_cumsum_f32", op = "masked_cumsum" })

-- fp32 sums in any sensible order pass: see TOLERANCE in _family.lua.
tolerance = F.TOLERANCE

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 93, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.cumsum(X * M, dim=1)"
