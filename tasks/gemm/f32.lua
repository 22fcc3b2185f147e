-- GEMM, fp32: C = A·Bᵀ, all fp32 (the same shapes as bf16; see
-- _family.lua). As in KernelBench-Verified, the cuBLASLt baseline is timed
-- twice: strict FP32 (CUBLAS_COMPUTE_32F) and TF32
-- (CUBLAS_COMPUTE_32F_FAST_TF32, what PyTorch uses with
-- set_float32_matmul_precision('high')); both are recorded.
local gemm = include "_family.lua"

-- Tensor cores have no fp32 inputs; wgmma/tcgen05 reach fp32 accuracy only
-- through split-TF32 schemes, so only TMA is a target (tensor cores are
-- welcome, not required).
gemm.define(_ENV, {
  name = "gemm_f32", dtype = "f32", ctype = "float", modes = { "fp32", "tf32" },
  targets = { sm_90a = { "tma" }, sm_100a = { "tma" } },
  words = "in fp32, writing C[M,N] in fp32, as accurate as an fp32\n" ..
    "dot product (TF32 tensor cores alone are not)",
})

-- KernelBench-Verified's fp32 tolerance, atol = rtol = 1e-3: above the
-- error of an fp32 sum in any order (a sequential sum at K=5120 on N(0,1)
-- inputs drifts by about u·K/√6 ≈ 1.3e-4, blocked sums less), far below the
-- error of TF32 inputs (10-bit mantissas: about 4e-4·√K ≈ 3e-2 absolute
-- here). So TF32 tensor cores alone fail; split schemes such as 3xTF32 pass.
tolerance = {
  f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md): A·Bᵀ with
-- B stored [N, K], problem 17. (Its A·B problems are matmul_nn_f32's.)
kernelbench = { level = 1, problem = 17, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "A @ B.T"
