-- 2D convolution in NHWC, bf16: y = conv2d(x, w), fp32 accumulation, bf16
-- in and out; cuDNN's forward convolution as the baseline. See _family.lua.
local cv = include "_family.lua"

name = "conv2d_bf16"
family = "conv"
kernel = "conv2d"
tags = { "conv", "bf16" }
description = cv.conv_description(cv.BF16_TEXT, "__nv_bfloat16")

dims = cv.dims
-- ResNet-like 3x3 convolutions at 56x56 with 128 and 256 channels (59 and
-- 118 GFLOP: a hundred microseconds and more for cuDNN on an H200), then a
-- small odd one with stride 2 (no extent a multiple of 16).
variants = {
  cv.variant({ N = 64, H = 56, W = 56, C = 128, K = 128, R = 3, S = 3, P = 1, U = 1 }, { "main" }),
  cv.variant({ N = 32, H = 56, W = 56, C = 256, K = 256, R = 3, S = 3, P = 1, U = 1 }, { "main" }),
  cv.variant({ N = 2, H = 15, W = 17, C = 24, K = 40, R = 3, S = 3, P = 1, U = 2 }, { "odd", "small" }),
}

buffers = cv.conv_buffers("bf16")
inputs = cv.inputs
trials = cv.trials
distributions = cv.distributions
tolerance = cv.bf16_tolerance

reference = cv.conv_reference
baseline = cv.conv_baseline("bf16", { "default" })
flops = cv.conv_flops
-- An implicit GEMM on tensor cores, as the bf16 GEMM.
targets = cv.tensor_targets
plan = cv.tile_plan("conv2d", "N * OH * OW", "K")
