-- PyTorch's nn.ConvTranspose3d without a bias, in fp32 and NCDHW, as
-- KernelBench's Level 1 3-D transposed convolutions pose it (problems 58,
-- 61, 68, 70, 72, 73 and 77): x [N, C, D, H, W], weights [C, K/G, T, R, S]
-- (torch's layout), y [N, K, OD, OH, OW], a padding, a stride, a dilation
-- and an output padding per axis, and G groups. The reference gathers
-- every output's contributions in fp64 (reference.cu, conv_ncdhw_ref); the
-- baseline is cuDNN's data gradient of the forward convolution on the
-- packed tensors, strict FP32 timed with the candidate and TF32 beside it
-- (_nchw.lua).
local nc = include "_nchw.lua"

-- 64 to 64 channels of 16 x 32 x 32 by a 3x3x3 filter at stride 2 (28
-- GFLOP), KernelBench's current shapes of its problems (each tagged
-- kernelbench, named after the problem), then an odd one.
local KB = { "kernelbench" }
nc.define(_ENV, { nd = 3, kind = "bwd", name = "convt3d_f32", kernel = "convt3d", description = [[
Write a CUDA kernel named `convt3d` that computes a 3-D transposed
convolution (torch.nn.functional.conv_transpose3d without a bias) in fp32:
x[N, C, D, H, W] and w[C, K/G, T, R, S] in, y[N, K, OD, OH, OW] out, all
row-major (NCDHW), with paddings PD, PH and PW, strides UD, UH and UW,
dilations DD, DH and DW, output paddings AD, AH and AW and G groups: every
input element x[n, c, i, j, l] adds x[n,c,i,j,l] * w[c, k', a, r, s] to
  y[n, g*(K/G) + k', i*UD - PD + a*DD, j*UH - PH + r*DH, l*UW - PW + s*DW]
for g = c / (C/G), each k' < K/G, a < T, r < R and s < S, where that place
lies inside y; on each axis the output's extent is
(n-1)*U - 2*P + Dl*(k-1) + 1 + A. Sums in fp32 or better (TF32 tensor cores
alone are not enough).]],
  variants = {
    { "n8_c64_16x32x32_k64_3x3x3_u2", { N = 8, C = 64, D = 16, H = 32, W = 32, K = 64, T = 3, R = 3, S = 3, PD = 1, PH = 1,
      PW = 1, UD = 2, UH = 2, UW = 2 }, { "main" } },
    { "kb58", { N = 16, C = 32, D = 16, H = 32, W = 64, K = 16, T = 3, R = 5, S = 7 }, KB },
    { "kb61", { N = 8, C = 48, D = 64, H = 64, W = 64, K = 48, T = 3, R = 3, S = 3 }, KB },
    { "kb68", { N = 16, C = 32, D = 64, H = 64, W = 64, K = 64, T = 3, R = 5, S = 5 }, KB },
    { "kb70", { N = 8, C = 48, D = 96, H = 96, W = 96, K = 24, T = 3, R = 3, S = 3 }, KB },
    { "kb72", { N = 8, C = 32, D = 12, H = 24, W = 48, K = 32, T = 3, R = 5, S = 7, PD = 1, PH = 2, PW = 3, UD = 2,
      UH = 2, UW = 2, AD = 1, AH = 1, AW = 1, G = 4 }, KB },
    { "kb73", { N = 4, C = 32, D = 32, H = 64, W = 128, K = 32, T = 3, R = 3, S = 3, PD = 1, PH = 1, PW = 1, UD = 2,
      UH = 2, UW = 2 }, KB },
    { "kb77", { N = 16, C = 32, D = 16, H = 32, W = 32, K = 64, T = 3, R = 3, S = 3, PD = 1, PH = 1, PW = 1, UD = 2,
      UH = 2, UW = 2, DD = 2, DH = 2, DW = 2 }, KB },
    { "n2_c4_5x6x7_k6_3x2x3_g2", { N = 2, C = 4, D = 5, H = 6, W = 7, K = 6, T = 3, R = 2, S = 3, PD = 1, PW = 1, UD = 2,
      UW = 3, DH = 2, AW = 2, G = 2 }, { "odd", "small" } },
  } })

-- The KernelBench problems this task poses (docs/kernelbench.md).
kernelbench = {
  { level = 1, problem = 58, exact = true, note = "a 3 x 5 x 7 filter" },
  { level = 1, problem = 61, exact = true },
  { level = 1, problem = 68, exact = true, note = "a 3 x 5 x 5 filter" },
  { level = 1, problem = 70, exact = true },
  { level = 1, problem = 72, exact = true, note = "grouped (4), strided, padded and output-padded per axis" },
  { level = 1, problem = 73, exact = true, note = "KernelBench's module passes its groups (4) as the output padding, "
    .. "which its layer never receives: stride 2, padding 1, groups 1" },
  { level = 1, problem = 77, exact = true, note = "stride 2, padding 1, dilation 2" },
}

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.conv_transpose3d(x, w, None, stride=(UD, UH, UW), padding=(PD, PH, PW), output_padding=(AD, AH, AW), groups=G, dilation=(DD, DH, DW))"
