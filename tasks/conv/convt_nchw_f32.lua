-- PyTorch's nn.ConvTranspose2d without a bias and without output padding,
-- in fp32 and NCHW, as KernelBench's Level 1 transposed convolutions pose
-- it (problems 57, 65, 69, 71, 75, 78 and 81, and the 1-D 64, 74 and 79
-- with H = 1): x [N, C, H, W], weights
-- [C, K/G, R, S] (torch's layout), y [N, K, OH, OW], a padding, a stride
-- and a dilation per axis, and G groups. convt2d_f32 is the channels-last
-- relative. The reference gathers every output's contributions in fp64
-- (reference.cu, convt_nchw_ref); the baseline is cuDNN's data gradient of
-- the forward convolution on the packed NCHW tensors, strict FP32 timed
-- with the candidate and TF32 beside it (_nchw.lua).
local nc = include "_nchw.lua"

-- 64 to 64 channels at 128 x 128 by a 3x3 filter at stride 2 (19 GFLOP),
-- KernelBench's current shapes of its problems (each tagged kernelbench,
-- named after the problem), then an odd one with two groups and a stride,
-- a padding and a dilation of its own on each axis.
local KB = { "kernelbench" }
nc.define(_ENV, { nd = 2, kind = "bwd", name = "convt2d_nchw_f32", kernel = "convt2d_nchw", description = [[
Write a CUDA kernel named `convt2d_nchw` that computes a 2-D transposed
convolution (torch.nn.functional.conv_transpose2d without a bias or an
output padding) in fp32: x[N, C, H, W] and w[C, K/G, R, S] in,
y[N, K, OH, OW] out, all row-major (NCHW), with padding PH and PW, strides
UH and UW, dilations DH and DW and G groups: every input element
x[n, c, i, j] adds x[n,c,i,j] * w[c, k', r, s] to
  y[n, g*(K/G) + k', i*UH - PH + r*DH, j*UW - PW + s*DW]
for g = c / (C/G), each k' < K/G, r < R and s < S, where that place lies
inside y; OH = (H-1)*UH - 2*PH + DH*(R-1) + 1 and
OW = (W-1)*UW - 2*PW + DW*(S-1) + 1. Sums in fp32 or better (TF32 tensor
cores alone are not enough).]],
  variants = {
  { "n16_c64_128x128_k64_3x3_u2", { N = 16, C = 64, H = 128, W = 128, K = 64, R = 3, S = 3, PH = 1, PW = 1, UH = 2, UW = 2 },
    { "main" } },
  { "kb57", { N = 8, C = 64, H = 1024, W = 1024, K = 64, R = 3, S = 3 }, KB },
  { "kb65", { N = 8, C = 64, H = 512, W = 512, K = 64, R = 3, S = 7 }, KB },
  { "kb69", { N = 64, C = 64, H = 128, W = 256, K = 128, R = 3, S = 5 }, KB },
  { "kb71", { N = 8, C = 32, H = 512, W = 1024, K = 32, R = 3, S = 3 }, KB },
  { "kb75", { N = 16, C = 32, H = 128, W = 256, K = 64, R = 3, S = 5, PH = 1, PW = 2, UH = 2, UW = 3, DH = 2, G = 4 }, KB },
  { "kb78", { N = 8, C = 32, H = 512, W = 1024, K = 32, R = 3, S = 7, PH = 1, PW = 3 }, KB },
  { "kb81", { N = 16, C = 32, H = 64, W = 128, K = 64, R = 3, S = 3, PH = 1, PW = 1, UH = 5, UW = 5, DH = 2, DW = 2 }, KB },
  -- KernelBench's 1-D transposed convolutions: x [N, C, L] is [N, C, 1, L], a 1 x k filter.
  { "kb64", { N = 64, C = 128, H = 1, W = 65536, K = 128, R = 1, S = 3 }, KB },
  { "kb74", { N = 32, C = 32, H = 1, W = 131072, K = 64, R = 1, S = 5, DW = 3 }, KB },
  { "kb79", { N = 16, C = 32, H = 1, W = 131072, K = 64, R = 1, S = 3, PW = 1, UW = 2, DW = 2 }, KB },
  { "n3_c6_9x11_k4_3x5_g2", { N = 3, C = 6, H = 9, W = 11, K = 4, R = 3, S = 5, PH = 1, PW = 2, UH = 2, DW = 2, G = 2 },
    { "odd", "small" } },
} })

-- The KernelBench problems this task poses (docs/kernelbench.md).
kernelbench = {
  { level = 1, problem = 57, exact = true },
  { level = 1, problem = 65, exact = true },
  { level = 1, problem = 69, exact = true },
  { level = 1, problem = 71, exact = true },
  { level = 1, problem = 75, exact = true, note = "grouped (4), strided, padded and dilated per axis" },
  { level = 1, problem = 78, exact = true, note = "padding (1, 3)" },
  { level = 1, problem = 81, exact = true, note = "stride 5, padding 1, dilation 2" },
  { level = 1, problem = 64, exact = true, note = "ConvTranspose1d as H = 1 and a 1 x 3 filter" },
  { level = 1, problem = 74, exact = true, note = "ConvTranspose1d as H = 1, dilation 3" },
  { level = 1, problem = 79, exact = true, note = "ConvTranspose1d as H = 1, stride 2, padding 1, dilation 2" },
}

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.conv_transpose2d(x, w, None, stride=(UH, UW), padding=(PH, PW), dilation=(DH, DW), groups=G)"
