-- The product of two lower-triangular matrices in fp32 (KernelBench Level 1,
-- problem 15). _family.lua's define_triangular sets every field but the
-- tolerance.
local mm = include "_family.lua"
mm.define_triangular(_ENV, { upper = false })

-- KernelBench-Verified's fp32 tolerance, as gemm_f32's: atol = rtol = 1e-3,
-- above the error of an fp32 sum in any order (at most N = 4096 terms, u·K/√6
-- ≈ 1e-4), far below the error of TF32 inputs (about 4e-4·√K), so TF32
-- tensor cores alone fail. The zero triangle must be 0 to within atol.
tolerance = {
  f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 15, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.tril(A @ B)"
