-- A matrix product in fp32 with KernelBench's operand layout for its Level 1
-- problem(s) 18 (Aᵀ·Bᵀ). _family.lua's define_layout sets every field
-- but the tolerance.
local mm = include "_family.lua"
mm.define_layout(_ENV, { layout = "tt" })

-- KernelBench-Verified's fp32 tolerance, as gemm_f32's: atol = rtol = 1e-3,
-- above the error of an fp32 sum in any order (a sequential sum at K = 4096
-- on N(0,1) inputs drifts by about u·K/√6 ≈ 1e-4), far below the error of
-- TF32 inputs (about 4e-4·√K ≈ 3e-2 here), so TF32 tensor cores alone fail.
-- atol scales with the inputs (tol_scale in _family.lua's distributions).
tolerance = {
  f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 18, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "A.T @ B.T"
