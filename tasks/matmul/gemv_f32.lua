-- Matrix-vector product, fp32: y = A·x (the GEMV form of C = A·Bᵀ with
-- N = 1), all fp32. As for the fp32 GEMM, the cuBLASLt baseline is timed in
-- strict FP32 and in TF32 (both recorded). See _family.lua.
local mm = include "_family.lua"

name = "gemv_f32"
family = "matmul"
kernel = "gemv"
tags = { "matmul", "gemv", "f32", "memory-bound" }
description = mm.gemv_description("in fp32, as accurate as an fp32 dot product (TF32\n" ..
  "inputs are not)", "float")

dims = mm.gemv_dims

-- The main shapes move 512 MiB (about 150 us at 4 TB/s); K stays at most
-- 8192 so that the tolerance below holds a sequential fp32 sum with a wide
-- margin. Then a small odd shape.
variants = {
  { M = 16384, K = 8192, tags = { "main" } },
  { M = 65536, K = 2048, tags = { "main", "short_rows" } },
  { M = 1000, K = 1023, tags = { "odd", "small" } },
}

buffers = mm.gemv_buffers("f32")
inputs = mm.inputs { "A", "x" }
trials = mm.trials
distributions = mm.distributions("A", "x")

-- y[m] is a sum of K products of N(0,1) values: |y| is about √K (45 to 90).
-- An fp32 sum in any order is off by at most about u·K/√6 ≈ 2e-4 (u = 2^-24,
-- a sequential sum at K = 8192; blocked sums far less): atol = 2e-3 is ten
-- times that, and rtol = 1e-4 is never what an fp32 kernel needs (its
-- relative error is about 2e-6). TF32 inputs (10 mantissa bits, a relative
-- error of about 4e-4 per product) put an error of about 4e-4·√K (0.018 to
-- 0.036) on every element, beyond atol, and 4e-4 relative, beyond rtol: a
-- TF32 kernel fails on nearly every element.
tolerance = {
  f32 = { atol = 2e-3, rtol = 1e-4, matched = 1.0 },
}

reference = mm.gemv_reference
baseline = mm.gemv_baseline { "fp32", "tf32" }
flops = mm.gemv_flops
work = mm.work
-- Memory-bound: no instruction family to verify.
targets = {}
plan = mm.gemv_plan

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 4, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "A @ x"
