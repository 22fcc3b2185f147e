-- Depthwise 2D convolution in NHWC (groups = C), fp32; cuDNN's forward
-- convolution with a [C, 1, R, S] filter as the baseline, strict FP32.
-- See _family.lua.
local cv = include "_family.lua"

name = "dwconv2d_f32"
family = "conv"
kernel = "dwconv2d"
tags = { "conv", "depthwise", "f32", "memory-bound" }
description = cv.dw_description(cv.F32_TEXT, "float")

dims = cv.dw_dims
-- The bf16 task's shapes, moving twice the bytes (780 and 580 MiB).
variants = {
  cv.variant({ N = 64, H = 56, W = 56, C = 512, R = 3, S = 3, P = 1, U = 1 }, { "main" }),
  cv.variant({ N = 32, H = 112, W = 112, C = 192, R = 5, S = 5, P = 2, U = 1 }, { "main" }),
  cv.variant({ N = 2, H = 15, W = 17, C = 24, R = 3, S = 3, P = 1, U = 2 }, { "odd", "small" }),
}

buffers = cv.dw_buffers("f32")
inputs = cv.inputs
trials = cv.trials
distributions = cv.distributions
-- y is a sum of R·S = 9 or 25 products of N(0,1) values (|y| about 3 to
-- 5): an fp32 sum in any order is off by a few 1e-7, so atol = rtol = 1e-5
-- leave a wide margin. TF32 inputs put about 4e-4·√(R·S) ≈ 1.2e-3 on every
-- element (4e-4 relative): a TF32 kernel fails on nearly all of them.
tolerance = {
  f32 = { atol = 1e-5, rtol = 1e-5, matched = 1.0 },
}

reference = cv.dw_reference
-- Strict FP32 only: a depthwise convolution is memory-bound, so TF32 buys
-- nothing, and cuDNN's depthwise engines are not tensor-core ones (a "tf32"
-- mode keeps only engines with the TENSOR_CORE note, and would have none).
baseline = cv.dw_baseline("f32", { "fp32" })
flops = cv.dw_flops
-- Memory-bound: no instruction family to verify.
targets = {}
plan = cv.dw_plan

-- Why the baseline stays short of the physical floor (docs/tasks.md gives
-- its fraction on an H200).
baseline.floor_note = "cuDNN's depthwise engine reaches 25% (5x5) and 60% (3x3) of the DRAM floor on an H200; no shipped kernel beside it yet"

-- The KernelBench problems this task poses (docs/kernelbench.md).
kernelbench = {
  { level = 1, problem = 82, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
  { level = 1, problem = 83, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
  { level = 1, problem = 84, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
  { level = 1, problem = 85, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
}
