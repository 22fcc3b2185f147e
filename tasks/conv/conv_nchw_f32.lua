-- PyTorch's nn.Conv2d without a bias, in fp32 and NCHW, as KernelBench's
-- Level 1 convolutions pose it (problems 55, 56, 62, 63, 80, 82 to 85 and
-- 87, and the 1-D 67 and 76 with H = 1): x [N, C, H, W], weights [K, C/G, R, S], y [N, K, OH, OW], a padding,
-- a stride and a dilation per axis, and G groups (G = C = K: depthwise).
-- conv2d_f32 and dwconv2d_f32 are the channels-last relatives. The
-- reference sums every output's taps in fp64 (reference.cu,
-- conv_nchw_ref); the baseline is cuDNN's convolution graph on the packed
-- NCHW tensors, strict FP32 timed with the candidate and TF32 beside it
-- (_nchw.lua).
local nc = include "_nchw.lua"

-- A 3x3 convolution of 64 to 128 channels at 128 x 128 (39 GFLOP), then
-- KernelBench's current shapes of its problems (each tagged kernelbench,
-- named after the problem), then an odd one with two groups, a stride, a
-- padding and a dilation of its own on each axis.
local KB = { "kernelbench" }
nc.define(_ENV, { nd = 2, kind = "fwd", name = "conv2d_nchw_f32", kernel = "conv2d_nchw",
  description = nc.conv2d_description("conv2d_nchw"),
  variants = {
  { "n16_c64_128x128_k128_3x3", { N = 16, C = 64, H = 128, W = 128, K = 128, R = 3, S = 3, PH = 1, PW = 1 }, { "main" } },
  { "kb55", { N = 8, C = 64, H = 512, W = 1024, K = 128, R = 3, S = 3 }, KB },
  { "kb56", { N = 8, C = 64, H = 512, W = 256, K = 128, R = 5, S = 7 }, KB },
  { "kb62", { N = 8, C = 32, H = 512, W = 512, K = 64, R = 5, S = 9 }, KB },
  { "kb63", { N = 16, C = 16, H = 1024, W = 1024, K = 128, R = 3, S = 3 }, KB },
  { "kb80", { N = 8, C = 32, H = 512, W = 512, K = 64, R = 5, S = 9, PH = 2, PW = 4, DH = 2, DW = 3 }, KB },
  { "kb82", { N = 16, C = 64, H = 512, W = 512, K = 64, R = 3, S = 3, G = 64 }, KB },
  { "kb83", { N = 64, C = 8, H = 512, W = 512, K = 8, R = 3, S = 1, G = 8 }, KB },
  { "kb84", { N = 64, C = 128, H = 256, W = 512, K = 128, R = 3, S = 3, G = 128 }, KB },
  { "kb85", { N = 32, C = 128, H = 128, W = 256, K = 128, R = 3, S = 7, G = 128 }, KB },
  { "kb87", { N = 16, C = 64, H = 1024, W = 1024, K = 128, R = 1, S = 1 }, KB },
  -- KernelBench's 1-D convolutions: x [N, C, L] is [N, C, 1, L], a 1 x k filter.
  { "kb67", { N = 32, C = 64, H = 1, W = 131072, K = 128, R = 1, S = 3 }, KB },
  { "kb76", { N = 64, C = 64, H = 1, W = 524280, K = 128, R = 1, S = 3, UW = 3, DW = 4 }, KB },
  { "n3_c6_17x23_k4_3x5_g2", { N = 3, C = 6, H = 17, W = 23, K = 4, R = 3, S = 5, PH = 1, PW = 2, UH = 2, DW = 2, G = 2 },
    { "odd", "small" } },
} })

-- The KernelBench problems this task poses (docs/kernelbench.md).
kernelbench = {
  { level = 1, problem = 55, exact = true },
  { level = 1, problem = 56, exact = true },
  { level = 1, problem = 62, exact = true },
  { level = 1, problem = 63, exact = true },
  { level = 1, problem = 80, exact = true },
  { level = 1, problem = 82, exact = true, note = "depthwise: G = C = K" },
  { level = 1, problem = 83, exact = true, note = "depthwise with a 3 x 1 filter" },
  { level = 1, problem = 84, exact = true, note = "depthwise: G = C = K" },
  { level = 1, problem = 85, exact = true, note = "depthwise: G = C = K" },
  { level = 1, problem = 87, exact = true, note = "pointwise: a 1 x 1 filter" },
  { level = 1, problem = 67, exact = true, note = "Conv1d as H = 1 and a 1 x 3 filter" },
  { level = 1, problem = 76, exact = true, note = "Conv1d as H = 1, stride 3, dilation 4" },
}

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.conv2d(x, w, None, stride=(UH, UW), padding=(PH, PW), dilation=(DH, DW), groups=G)"
