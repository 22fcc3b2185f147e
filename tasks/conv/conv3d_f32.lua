-- PyTorch's nn.Conv3d without a bias, in fp32 and NCDHW, as KernelBench's
-- Level 1 3-D convolutions pose it (problems 54, 59, 60 and 66): x [N, C,
-- D, H, W], weights [K, C/G, T, R, S], y [N, K, OD, OH, OW], a padding, a
-- stride and a dilation per axis, and G groups. The reference sums every
-- output's taps in fp64 (reference.cu, conv_ncdhw_ref); the baseline is
-- cuDNN's convolution graph on the packed tensors, strict FP32 timed with
-- the candidate and TF32 beside it (_nchw.lua).
local nc = include "_nchw.lua"

-- 32 to 64 channels of 32 x 64 x 64 by a 3x3x3 filter (58 GFLOP),
-- KernelBench's current shapes of its problems (each tagged kernelbench,
-- named after the problem), then an odd one with two groups and a stride,
-- a padding and a dilation of its own on some axes.
local KB = { "kernelbench" }
nc.define(_ENV, { nd = 3, kind = "fwd", name = "conv3d_f32", kernel = "conv3d", description = [[
Write a CUDA kernel named `conv3d` that computes a 3-D convolution
(cross-correlation, as torch.nn.functional.conv3d without a bias) in fp32:
x[N, C, D, H, W] and w[K, C/G, T, R, S] in, y[N, K, OD, OH, OW] out, all
row-major (NCDHW), with zero paddings PD, PH and PW on both sides of each
axis, strides UD, UH and UW, dilations DD, DH and DW and G groups:
  y[n,k,od,oh,ow] = sum over c < C/G, a < T, r < R, s < S of
      x[n, g*(C/G) + c, od*UD - PD + a*DD, oh*UH - PH + r*DH, ow*UW - PW + s*DW]
      * w[k, c, a, r, s]
where g = k / (K/G) and x outside the volume is 0; on each axis the
output's extent is (n + 2*P - Dl*(k-1) - 1)/U + 1, rounded down. Sums in
fp32 or better (TF32 tensor cores alone are not enough).]],
  variants = {
    { "n8_c32_32x64x64_k64_3x3x3", { N = 8, C = 32, D = 32, H = 64, W = 64, K = 64, T = 3, R = 3, S = 3, PD = 1, PH = 1,
      PW = 1 }, { "main" } },
    { "kb54", { N = 16, C = 3, D = 64, H = 64, W = 64, K = 64, T = 3, R = 3, S = 3 }, KB },
    { "kb59", { N = 16, C = 3, D = 256, H = 256, W = 10, K = 64, T = 3, R = 3, S = 1 }, KB },
    { "kb60", { N = 16, C = 3, D = 64, H = 64, W = 64, K = 64, T = 3, R = 5, S = 7 }, KB },
    { "kb66", { N = 8, C = 3, D = 16, H = 128, W = 128, K = 64, T = 3, R = 5, S = 7 }, KB },
    { "n2_c4_7x9x11_k6_3x2x3_g2", { N = 2, C = 4, D = 7, H = 9, W = 11, K = 6, T = 3, R = 2, S = 3, PD = 1, PW = 1, UD = 2,
      DH = 2, G = 2 }, { "odd", "small" } },
  } })

-- The KernelBench problems this task poses (docs/kernelbench.md).
kernelbench = {
  { level = 1, problem = 54, exact = true },
  { level = 1, problem = 59, exact = true, note = "a 3 x 3 x 1 filter" },
  { level = 1, problem = 60, exact = true, note = "a 3 x 5 x 7 filter" },
  { level = 1, problem = 66, exact = true, note = "a 3 x 5 x 7 filter" },
}

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.conv3d(x, w, None, stride=(UD, UH, UW), padding=(PD, PH, PW), dilation=(DD, DH, DW), groups=G)"
