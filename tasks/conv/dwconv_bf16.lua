-- Depthwise 2D convolution in NHWC (groups = C), bf16: fp32 accumulation,
-- bf16 in and out; cuDNN's forward convolution with a [C, 1, R, S] filter
-- as the baseline. See _family.lua.
local cv = include "_family.lua"

name = "dwconv2d_bf16"
family = "conv"
kernel = "dwconv2d"
tags = { "conv", "depthwise", "bf16", "memory-bound" }
description = cv.dw_description(cv.BF16_TEXT, "__nv_bfloat16")

dims = cv.dw_dims
-- MobileNet/EfficientNet-style depthwise layers: 3x3 over 512 channels and
-- 5x5 over 192 at 112x112, moving 390 and 290 MiB (about 100 and 75 us at
-- an H200's 4 TB/s), then the small odd one with stride 2.
variants = {
  cv.variant({ N = 64, H = 56, W = 56, C = 512, R = 3, S = 3, P = 1, U = 1 }, { "main" }),
  cv.variant({ N = 32, H = 112, W = 112, C = 192, R = 5, S = 5, P = 2, U = 1 }, { "main" }),
  cv.variant({ N = 2, H = 15, W = 17, C = 24, R = 3, S = 3, P = 1, U = 2 }, { "odd", "small" }),
}

buffers = cv.dw_buffers("bf16")
inputs = cv.inputs
trials = cv.trials
distributions = cv.distributions
-- R·S = 9 or 25 products per element: one bf16 ulp passes rtol, and fp32
-- accumulation differences (a few 1e-7) are nothing against atol.
tolerance = cv.bf16_tolerance

reference = cv.dw_reference
baseline = cv.dw_baseline("bf16", { "default" })
flops = cv.dw_flops
-- Memory-bound (R·S multiply-adds per element read): no instruction
-- family to verify.
targets = {}
plan = cv.dw_plan

-- Why the baseline stays short of the physical floor (docs/tasks.md gives
-- its fraction on an H200).
baseline.floor_note = "cuDNN's depthwise engine reaches 24% (5x5) and 48% (3x3) of the DRAM floor on an H200; no shipped kernel beside it yet"
