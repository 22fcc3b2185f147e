-- PyTorch's nn.Conv2d with its bias, in fp32 and NCHW, as KernelBench's
-- Level 1 problem 50 poses it (AlexNet's first layer: 3 to 96 channels, an
-- 11 x 11 filter at stride 4, padding 2): conv2d_nchw_f32 plus bias[K]
-- added to every output of channel k. The reference adds the bias to the
-- fp64 sum; the baseline is cuDNN's graph of the convolution and the bias
-- added (_nchw.lua).
local nc = include "_nchw.lua"

-- 64 to 128 channels at 128 x 128 by a 3x3 filter (39 GFLOP), KernelBench's
-- current shape of problem 50, and an odd one.
nc.define(_ENV, { nd = 2, kind = "fwd", name = "conv2d_nchw_bias_f32", kernel = "conv2d_nchw_bias", bias = true,
  description = nc.conv2d_description("conv2d_nchw_bias", true),
  variants = {
    { "n16_c64_128x128_k128_3x3", { N = 16, C = 64, H = 128, W = 128, K = 128, R = 3, S = 3, PH = 1, PW = 1 }, { "main" } },
    { "kb50", { N = 256, C = 3, H = 224, W = 224, K = 96, R = 11, S = 11, PH = 2, PW = 2, UH = 4, UW = 4 }, { "kernelbench" } },
    { "n3_c6_17x23_k4_3x5_g2", { N = 3, C = 6, H = 17, W = 23, K = 4, R = 3, S = 5, PH = 1, PW = 2, UH = 2, DW = 2, G = 2 },
      { "odd", "small" } },
  } })

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 50, exact = true, note = "with its bias" }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.conv2d(x, w, bias, stride=(UH, UW), padding=(PH, PW), dilation=(DH, DW), groups=G)"
