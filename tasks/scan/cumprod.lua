-- Inclusive prefix products along the rows in fp32 (KernelBench Level 1,
-- problem 90), of factors near 1 (see _family.lua).
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local F = include "_family.lua"
F.define(_ENV, { name = "cumprod_f32", op = "cumprod" })

-- fp32 products in any sensible order pass: see PRODUCT_TOLERANCE in _family.lua.
tolerance = F.PRODUCT_TOLERANCE

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 90, exact = true, note = "factors drawn on [0.9, 1.1]: KernelBench's U(0, 1) factors underflow to 0" }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.cumprod(X, dim=1)"
