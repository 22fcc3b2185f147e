-- HardTanh in fp32 (KernelBench Level 1, problem 32): Y = min(max(X, -1), 1).
-- cuDNN has no single pointwise mode for it in klab's graph, so the
-- baseline is the kernel in baseline.cu.
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "hardtanh_f32", op = "hardtanh", dtype = "f32" })

-- Every output is an input or ±1: an honest kernel matches the reference
-- bit for bit, and anything that rounds X on the way fails.
tolerance = {
  f32 = { atol = 0, rtol = 0, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 32, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.hardtanh(X, -1.0, 1.0)"
