-- LeakyReLU in fp32 (KernelBench Level 1, problem 20): Y = X for X > 0,
-- else 0.01 X. cuDNN has no single pointwise mode for it in klab's graph,
-- so the baseline is the kernel in baseline.cu.
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "leaky_relu_f32", op = "leaky_relu", dtype = "f32" })

-- One fp32 multiply (0.01 itself rounds to fp32, 2e-8 relative) puts an
-- honest kernel within 1e-7 of the fp64 reference; rtol = 1e-6 keeps a
-- margin of ten and fails any narrower intermediate (bf16: 4e-3). atol
-- only matters at zero, and follows the input's scale (tol_scale).
tolerance = {
  f32 = { atol = 1e-6, rtol = 1e-6, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 20, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.leaky_relu(X, 0.01)"
