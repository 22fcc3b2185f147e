-- Batched GEMM, bf16: C[b] = A[b]·B[b]ᵀ for BATCH independent products
-- (torch.bmm(A, B.transpose(1, 2))), fp32 accumulation, bf16 in and out.
-- See _family.lua for what the matmul tasks share.
local mm = include "_family.lua"

name = "bmm_bf16"
family = "matmul"
kernel = "bmm"
tags = { "matmul", "batched", "bf16" }
description = mm.batched_description("bmm", [[
C[b] = A[b]·B[b]ᵀ for b = 0..BATCH-1, with A[BATCH, M, K], B[BATCH, N, K] and
C[BATCH, M, N] row-major and packed (member b of A starts at element b*M*K,
of B at b*N*K, of C at b*M*N), in bf16 (__nv_bfloat16 bit patterns),
accumulating in fp32 and writing C in bf16 (round to nearest even).]], "__nv_bfloat16")

dims = { "BATCH", "M", "N", "K" }

-- Two batches of squares (attention-like and MoE-like batched products;
-- 137 and 1100 GFLOP, a quarter to two milliseconds for cuBLASLt on an
-- H200) and a small odd one (no size a multiple of 16, so no member starts
-- 16-byte aligned).
variants = {
  { BATCH = 64, M = 1024, N = 1024, K = 1024, tags = { "main" } },
  { BATCH = 64, M = 2048, N = 2048, K = 2048, tags = { "main" } },
  { BATCH = 3, M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}

buffers = {
  A = { role = "input", dtype = "bf16", shape = { "BATCH", "M", "K" } },
  B = { role = "input", dtype = "bf16", shape = { "BATCH", "N", "K" } },
  C = { role = "output", dtype = "bf16", shape = { "BATCH", "M", "N" } },
}
inputs = mm.inputs { "A", "B" }
trials = mm.trials
distributions = mm.distributions("A", "B")
tolerance = mm.bf16_tolerance

reference = mm.reference { a = "A", b = "B", c = "C", batch = "BATCH" }
-- cuBLASLt's strided batched matmul (packed members: the default strides).
baseline = mm.baseline { spec = function(d) return { M = d.M, N = d.N, K = d.K, batch = d.BATCH } end }
flops = mm.flops
work = mm.work
targets = mm.targets
plan = mm.tile_plan("bmm", "BATCH",
  'buffer("A"), buffer("B"), buffer("C"), u32(BATCH), u32(M), u32(N), u32(K)')

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 3, differs = "A·Bᵀ (both operands K-major) in bf16; KernelBench's is A·B in fp32" }
