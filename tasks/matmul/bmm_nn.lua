-- Batched matrix products in fp32 with KernelBench's operands (Level 1,
-- problem 3, torch.bmm): C[b] = A[b]·B[b] with A[BATCH, M, K] and
-- B[BATCH, K, N] row-major (B N-major, as KernelBench stores it), C in fp32.
-- bmm_bf16 is the K-major (A·Bᵀ) bf16 relative. The reference is the
-- family's fp64 product; the baseline cuBLASLt's strided batched matmul,
-- strict FP32 timed with the candidate and TF32 beside it.
local mm = include "_family.lua"

name = "bmm_nn_f32"
family = "matmul"
kernel = "bmm_nn"
tags = { "matmul", "batched", "f32", "layout", "nn" }
description = mm.batched_description("bmm_nn", [[
C[b] = A[b]·B[b] for b = 0..BATCH-1: C[b][m,n] = sum_k A[b][m,k]·B[b][k,n],
with A[BATCH, M, K], B[BATCH, K, N] and C[BATCH, M, N] row-major and packed,
in fp32, as accurate as an fp32 dot product (TF32 tensor cores alone are
not).]], "float")

dims = { "BATCH", "M", "N", "K" }

-- 64 products at 1024 (137 GFLOP), KernelBench's current shape (128 of
-- 512 x 2048 x 1024) and an odd one.
variants = {
  { BATCH = 64, M = 1024, N = 1024, K = 1024, tags = { "main" } },
  { BATCH = 128, M = 512, N = 2048, K = 1024, tags = { "kernelbench" } },
  { BATCH = 3, M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}

buffers = {
  A = { role = "input", dtype = "f32", shape = { "BATCH", "M", "K" } },
  B = { role = "input", dtype = "f32", shape = { "BATCH", "K", "N" } },
  C = { role = "output", dtype = "f32", shape = { "BATCH", "M", "N" } },
}
inputs = mm.inputs { "A", "B" }
trials = mm.trials
distributions = mm.distributions("A", "B")
-- As matmul_nn_f32: KernelBench-Verified's fp32 tolerance, above any fp32
-- order's error at K = 1024 and far below TF32's.
tolerance = {
  f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 },
}

reference = mm.reference { a = "A", b = "B", c = "C", batch = "BATCH", a_layout = "mk", b_layout = "kn" }
baseline = mm.baseline { modes = { "fp32", "tf32" },
  spec = function(d) return { M = d.M, N = d.N, K = d.K, batch = d.BATCH, a_layout = "mk", b_layout = "kn" } end }
flops = mm.flops
work = mm.work
-- As the other fp32 products: tensor cores reach fp32 accuracy only
-- through split-TF32 schemes, so only TMA is a target.
targets = { sm_90a = { "tma" }, sm_100a = { "tma" } }
plan = mm.tile_plan("bmm_nn", "BATCH",
  'buffer("A"), buffer("B"), buffer("C"), u32(BATCH), u32(M), u32(N), u32(K)')

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 3, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.bmm(A, B)"
