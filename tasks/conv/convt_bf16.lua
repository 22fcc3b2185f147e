-- Transposed 2D convolution in NHWC, bf16 (the data gradient of a
-- convolution): fp32 accumulation, bf16 in and out; cuDNN's backward-data
-- convolution as the baseline. See _family.lua.
local cv = include "_family.lua"

name = "convt2d_bf16"
family = "conv"
kernel = "conv_transpose2d"
tags = { "conv", "transposed", "bf16" }
description = cv.convt_description(cv.BF16_TEXT, "__nv_bfloat16")

dims = cv.dims
-- 2x upsampling decoder layers (3x3, stride 2, padding 1: 56x56 to
-- 112x112 and 28x28 to 56x56; 59 GFLOP each, a hundred microseconds and
-- more for cuDNN on an H200), then the small odd one (15x17 from 8x9).
variants = {
  cv.variant({ N = 32, H = 112, W = 112, C = 128, K = 256, R = 3, S = 3, P = 1, U = 2 }, { "main" }),
  cv.variant({ N = 32, H = 56, W = 56, C = 256, K = 512, R = 3, S = 3, P = 1, U = 2 }, { "main" }),
  cv.variant({ N = 2, H = 15, W = 17, C = 24, K = 40, R = 3, S = 3, P = 1, U = 2 }, { "odd", "small" }),
}

buffers = cv.convt_buffers("bf16")
inputs = cv.inputs
trials = cv.trials
distributions = cv.distributions
-- Up to K·R·S/U² ≈ 4K products per element (at most 2048 here): as for
-- conv2d_bf16.
tolerance = cv.bf16_tolerance

reference = cv.convt_reference
baseline = cv.convt_baseline("bf16", { "default" })
-- The multiply-adds of the forward convolution it is the gradient of.
flops = cv.conv_flops
targets = cv.tensor_targets
plan = cv.tile_plan("conv_transpose2d", "N * H * W", "C")
