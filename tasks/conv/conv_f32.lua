-- 2D convolution in NHWC, fp32: y = conv2d(x, w), all fp32; cuDNN's forward
-- convolution as the baseline, timed with strict FP32 engines and with TF32
-- ones beside them (both recorded). See _family.lua.
local cv = include "_family.lua"

name = "conv2d_f32"
family = "conv"
kernel = "conv2d"
tags = { "conv", "f32" }
description = cv.conv_description(cv.F32_TEXT, "float")

dims = cv.dims
-- A padding of 0 is a padding (the pointwise variant below).
zero_dims = { "P" }
-- ResNet-like 3x3 convolutions (30 and 15 GFLOP: near a millisecond for
-- strict FP32 engines on an H200), then the small odd one.
variants = {
  cv.variant({ N = 32, H = 56, W = 56, C = 128, K = 128, R = 3, S = 3, P = 1, U = 1 }, { "main" }),
  cv.variant({ N = 16, H = 28, W = 28, C = 256, K = 256, R = 3, S = 3, P = 1, U = 1 }, { "main" }),
  cv.variant({ N = 2, H = 15, W = 17, C = 24, K = 40, R = 3, S = 3, P = 1, U = 2 }, { "odd", "small" }),
  -- A pointwise (1x1, unpadded) convolution, KernelBench Level 1's problem
  -- 87: a GEMM over the pixels in all but name (13 GFLOP).
  cv.variant({ N = 32, H = 56, W = 56, C = 256, K = 256, R = 1, S = 1, P = 0, U = 1 }, { "pointwise" }),
}

buffers = cv.conv_buffers("f32")
inputs = cv.inputs
trials = cv.trials
distributions = cv.distributions
-- y is a sum of up to n = C·R·S = 2304 products of N(0,1) values: |y| is
-- about √n (up to 48). An fp32 sum in any order is off by about u·n/√6 ≈
-- 6e-5 (u = 2^-24, a sequential sum; blocked sums less), a Winograd or FFT
-- engine by some times that: atol = 2e-3 leaves a wide margin, and rtol =
-- 1e-4 is never what an fp32 computation needs (its relative error is about
-- 1e-6). TF32 inputs (10 mantissa bits: about 4e-4 relative error per
-- product) put about 4e-4·√n on every element (6e-3 on the small shape,
-- 0.02 on the main ones), beyond atol, and 4e-4 relative, beyond rtol: a
-- TF32 kernel fails on most elements.
tolerance = {
  f32 = { atol = 2e-3, rtol = 1e-4, matched = 1.0 },
}

reference = cv.conv_reference
baseline = cv.conv_baseline("f32", { "fp32", "tf32" })
flops = cv.conv_flops
-- Tensor cores have no fp32 inputs (TF32 alone is not accurate enough):
-- no instruction family is required.
targets = {}
plan = cv.tile_plan("conv2d", "N * OH * OW", "K")

-- The KernelBench problems this task poses (docs/kernelbench.md).
kernelbench = {
  { level = 1, problem = 50, differs = "NHWC with KRSC filters; KernelBench's is NCHW; its convolution has a bias" },
  { level = 1, problem = 55, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
  { level = 1, problem = 56, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
  { level = 1, problem = 62, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
  { level = 1, problem = 63, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
  { level = 1, problem = 87, differs = "NHWC with KRSC filters; KernelBench's is NCHW" },
}
