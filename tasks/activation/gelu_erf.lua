-- GELU in fp32, the exact form: Y = 0.5 X (1 + erf(X/√2)). Strict fp32;
-- no TF32 path exists for a pointwise operation, so cuDNN's baseline is
-- timed in fp32 only.
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "gelu_erf_f32", op = "gelu_erf", dtype = "f32" })

-- fp32 with erff is within a few 1e-7 of the fp64 reference: erff is
-- accurate to 2 ulp, and where 1 + erf cancels (X ≈ -5) the absolute error
-- is at most |X|/2 · 2.4e-7 ≈ 6e-7. atol = rtol = 1e-5 leave a margin of
-- ten and more, and fail what is not fp32 GELU: the tanh approximation
-- (up to 4.7e-4 away, at |X| ≈ 2.7), a bf16, fp16 or TF32 intermediate
-- (relative errors of 5e-4 and more). atol follows the input's scale
-- (tol_scale 3 for x3, 0.01 for x0.01: the output is proportional to X).
tolerance = {
  f32 = { atol = 1e-5, rtol = 1e-5, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 26, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.gelu(X)"
