-- Matrix-vector product, bf16: y = A·x (the GEMV form of C = A·Bᵀ with
-- N = 1: a decode step's linear layer), fp32 accumulation, bf16 in and out.
-- See _family.lua.
local mm = include "_family.lua"

name = "gemv_bf16"
family = "matmul"
kernel = "gemv"
tags = { "matmul", "gemv", "bf16", "memory-bound" }
description = mm.gemv_description("in bf16 (__nv_bfloat16 bit patterns), accumulating in\n" ..
  "fp32 and writing y in bf16 (round to nearest even)", "__nv_bfloat16")

dims = mm.gemv_dims

-- Reading A is the whole cost: the main shapes move 512 MiB (about 150 us
-- at an H200's 4 TB/s), with many short rows and with few long ones; then a
-- small odd shape (rows 2046 bytes long, so no row after the first starts
-- 4-byte aligned).
variants = {
  { M = 32768, K = 8192, tags = { "main" } },
  { M = 8192, K = 32768, tags = { "main", "long_rows" } },
  { M = 1000, K = 1023, tags = { "odd", "small" } },
}

buffers = mm.gemv_buffers("bf16")
inputs = mm.inputs { "A", "x" }
trials = mm.trials
distributions = mm.distributions("A", "x")
-- As the other bf16 matmuls (_family.lua): one bf16 ulp passes rtol, and
-- fp32 accumulation-order differences (u·K/√6 ≈ 2e-4 at K = 8192, 8e-4 for
-- a sequential sum at K = 32768) stay far below atol.
tolerance = mm.bf16_tolerance

reference = mm.gemv_reference
baseline = mm.gemv_baseline()
flops = mm.gemv_flops
work = mm.work
-- Memory-bound: no instruction family to verify (a GEMV has nothing to
-- gain from tensor cores, and cuBLASLt's GEMV kernels use none).
targets = {}
plan = mm.gemv_plan
