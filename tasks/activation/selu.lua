-- SELU in fp32 (KernelBench Level 1, problem 27): Y = s X for X > 0, else
-- s a (exp(X) - 1), with torch's constants. cuDNN has no single pointwise
-- mode for it in klab's graph, so the baseline is the kernel in
-- baseline.cu.
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "selu_f32", op = "selu", dtype = "f32" })

-- expm1f is accurate to 1 ulp and the constants round to fp32 (6e-8): an
-- honest kernel is within 3e-7 of the reference. atol = rtol = 1e-5, as
-- for GELU, leave a wide margin; exp(X) - 1 written out loses digits near
-- 0 (up to 1e-7 absolute, still inside atol) and a bf16 intermediate fails.
tolerance = {
  f32 = { atol = 1e-5, rtol = 1e-5, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 27, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.selu(X)"
