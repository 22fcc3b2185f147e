-- Transposed 2D convolution in NHWC, fp32 (the data gradient of a
-- convolution); cuDNN's backward-data convolution as the baseline, timed
-- with strict FP32 engines and with TF32 ones beside them. See _family.lua.
local cv = include "_family.lua"

name = "convt2d_f32"
family = "conv"
kernel = "conv_transpose2d"
tags = { "conv", "transposed", "f32" }
description = cv.convt_description(cv.F32_TEXT, "float")

dims = cv.dims
-- The bf16 task's layers at half the batch (30 GFLOP each), then the small
-- odd one.
variants = {
  cv.variant({ N = 16, H = 112, W = 112, C = 128, K = 256, R = 3, S = 3, P = 1, U = 2 }, { "main" }),
  cv.variant({ N = 16, H = 56, W = 56, C = 256, K = 512, R = 3, S = 3, P = 1, U = 2 }, { "main" }),
  cv.variant({ N = 2, H = 15, W = 17, C = 24, K = 40, R = 3, S = 3, P = 1, U = 2 }, { "odd", "small" }),
}

buffers = cv.convt_buffers("f32")
inputs = cv.inputs
trials = cv.trials
distributions = cv.distributions
-- Up to n ≈ 4K = 2048 products of N(0,1) values per element: the reasoning
-- of conv2d_f32 holds (an fp32 sum is off by about 5e-5, TF32 inputs by
-- about 4e-4·√n ≈ 0.02).
tolerance = {
  f32 = { atol = 2e-3, rtol = 1e-4, matched = 1.0 },
}

reference = cv.convt_reference
baseline = cv.convt_baseline("f32", { "fp32", "tf32" })
flops = cv.conv_flops
targets = {}
plan = cv.tile_plan("conv_transpose2d", "N * H * W", "C")

-- The KernelBench problems this task poses (docs/kernelbench.md).
kernelbench = {
  { level = 1, problem = 57, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
  { level = 1, problem = 65, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
  { level = 1, problem = 69, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
  { level = 1, problem = 71, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
  { level = 1, problem = 78, differs = "NHWC with KRSC filters; KernelBench's is NCHW; one padding for both axes where KernelBench's is (1, 3)" },
}
