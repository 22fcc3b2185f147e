-- PyTorch's nn.Conv2d without a bias, in fp32 and NCHW, as KernelBench's
-- Level 1 convolutions pose it (problems 55, 56, 62, 63, 80, 82 to 85 and
-- 87): x [N, C, H, W], weights [K, C/G, R, S], y [N, K, OH, OW], a padding,
-- a stride and a dilation per axis, and G groups (G = C = K: depthwise).
-- conv2d_f32 and dwconv2d_f32 are the channels-last relatives. The
-- reference sums every output's taps in fp64 (reference.cu,
-- conv_nchw_ref); the baseline is cuDNN's convolution graph on the packed
-- NCHW tensors, strict FP32 timed with the candidate and TF32 beside it.
local cv = include "_family.lua"

name = "conv2d_nchw_f32"
family = "conv"
kernel = "conv2d_nchw"
tags = { "conv", "f32", "nchw" }

local OH, OW = "(H+2*PH-DH*(R-1)-1)//UH+1", "(W+2*PW-DW*(S-1)-1)//UW+1"

description = [[
Write a CUDA kernel named `conv2d_nchw` that computes a 2-D convolution
(cross-correlation, as torch.nn.functional.conv2d without a bias) in fp32:
x[N, C, H, W] and w[K, C/G, R, S] in, y[N, K, OH, OW] out, all row-major
(NCHW), with zero padding PH (rows) and PW (columns) on both sides, strides
UH and UW, dilations DH and DW and G groups:
  y[n,k,oh,ow] = sum over c < C/G, r < R, s < S of
      x[n, g*(C/G) + c, oh*UH - PH + r*DH, ow*UW - PW + s*DW] * w[k, c, r, s]
where g = k / (K/G) and x outside the image is 0;
OH = (H + 2*PH - DH*(R-1) - 1)/UH + 1 and OW = (W + 2*PW - DW*(S-1) - 1)/UW + 1,
rounded down. Sums in fp32 or better (TF32 tensor cores alone are not
enough). Here N=${N}, C=${C}, H=${H}, W=${W}, K=${K}, R=${R}, S=${S},
PH=${PH}, PW=${PW}, UH=${UH}, UW=${UW}, DH=${DH}, DW=${DW}, G=${G}.
With the default launch plan the kernel is
  extern "C" __global__ void conv2d_nchw(const float *x, const float *w, float *y,
      unsigned N, unsigned C, unsigned H, unsigned W, unsigned K, unsigned R, unsigned S,
      unsigned PH, unsigned PW, unsigned UH, unsigned UW, unsigned DH, unsigned DW, unsigned G)
launched with one thread per element of y (in y's order): a grid of
(ceil(N*K*OH*OW/256), 1, 1) blocks of 256 threads and no dynamic shared
memory. Send your own plan to change any of this.]]

dims = { "N", "C", "H", "W", "K", "R", "S", "PH", "PW", "UH", "UW", "DH", "DW", "G" }
zero_dims = { "PH", "PW" }

-- A 3x3 convolution of 64 to 128 channels at 128 x 128 (39 GFLOP), then
-- KernelBench's current shapes of its problems (each tagged kernelbench,
-- named after the problem), then an odd one with two groups, a stride, a
-- padding and a dilation of its own on each axis.
local function v(name, d, tags)
  d.name, d.tags = name, tags
  for k, x in pairs { PH = 0, PW = 0, UH = 1, UW = 1, DH = 1, DW = 1, G = 1 } do d[k] = d[k] or x end
  return d
end
local KB = { "kernelbench" }
variants = {
  v("n16_c64_128x128_k128_3x3", { N = 16, C = 64, H = 128, W = 128, K = 128, R = 3, S = 3, PH = 1, PW = 1 }, { "main" }),
  v("kb55", { N = 8, C = 64, H = 512, W = 1024, K = 128, R = 3, S = 3 }, KB),
  v("kb56", { N = 8, C = 64, H = 512, W = 256, K = 128, R = 5, S = 7 }, KB),
  v("kb62", { N = 8, C = 32, H = 512, W = 512, K = 64, R = 5, S = 9 }, KB),
  v("kb63", { N = 16, C = 16, H = 1024, W = 1024, K = 128, R = 3, S = 3 }, KB),
  v("kb80", { N = 8, C = 32, H = 512, W = 512, K = 64, R = 5, S = 9, PH = 2, PW = 4, DH = 2, DW = 3 }, KB),
  v("kb82", { N = 16, C = 64, H = 512, W = 512, K = 64, R = 3, S = 3, G = 64 }, KB),
  v("kb83", { N = 64, C = 8, H = 512, W = 512, K = 8, R = 3, S = 1, G = 8 }, KB),
  v("kb84", { N = 64, C = 128, H = 256, W = 512, K = 128, R = 3, S = 3, G = 128 }, KB),
  v("kb85", { N = 32, C = 128, H = 128, W = 256, K = 128, R = 3, S = 7, G = 128 }, KB),
  v("kb87", { N = 16, C = 64, H = 1024, W = 1024, K = 128, R = 1, S = 1 }, KB),
  v("n3_c6_17x23_k4_3x5_g2", { N = 3, C = 6, H = 17, W = 23, K = 4, R = 3, S = 5, PH = 1, PW = 2, UH = 2, DW = 2, G = 2 },
    { "odd", "small" }),
}

buffers = {
  x = { role = "input", dtype = "f32", shape = { "N", "C", "H", "W" } },
  w = { role = "input", dtype = "f32", shape = { "K", "C/G", "R", "S" } },
  y = { role = "output", dtype = "f32", shape = { "N", "K", OH, OW } },
}
inputs = cv.inputs
trials = cv.trials
distributions = cv.distributions

-- As conv2d_f32: an fp32 sum of C/G·R·S products (up to 2240 here) in any
-- order is within about u·n/√6 ≈ 6e-5 of the fp64 one on N(0,1) values;
-- atol = 2e-3 and rtol = 1e-4 pass it and fail TF32 inputs (errors near
-- 5e-4·√n). atol scales with the inputs (tol_scale in the distributions).
tolerance = {
  f32 = { atol = 2e-3, rtol = 1e-4, matched = 1.0 },
}

reference = {
  source = "reference.cu", accumulate = "f64", units = { y = 1 },
  plan = [[
local OH, OW = (H + 2 * PH - DH * (R - 1) - 1) // UH + 1, (W + 2 * PW - DW * (S - 1) - 1) // UW + 1
local total = nsample > 0 and nsample or buffers.y.numel
return { launches = { { kernel = "conv_nchw_ref", grid = { cdiv(total, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("x"), buffer("w"), buffer("positions"), u64(total), buffer("y"), u32(C), u32(H), u32(W), u32(K),
           u32(R), u32(S), u32(PH), u32(PW), u32(UH), u32(UW), u32(DH), u32(DW), u32(G), u32(OH), u32(OW) } } } }
]],
}

-- cuDNN's convolution graph on packed NCHW tensors (no layout given: row
-- major); the grouped filter is [K, C/G, R, S], as torch stores it.
baseline = { lib = "cudnn", op = "graph", modes = { "fp32", "tf32" }, spec = function(d)
  local oh = (d.H + 2 * d.PH - d.DH * (d.R - 1) - 1) // d.UH + 1
  local ow = (d.W + 2 * d.PW - d.DW * (d.S - 1) - 1) // d.UW + 1
  return {
    tensors = { x = { dtype = "f32", dims = { d.N, d.C, d.H, d.W } },
                w = { dtype = "f32", dims = { d.K, d.C // d.G, d.R, d.S } },
                y = { dtype = "f32", dims = { d.N, d.K, oh, ow } } },
    ops = { { op = "conv_fwd", inputs = { x = "x", w = "w" }, outputs = { y = "y" }, padding = { d.PH, d.PW },
              stride = { d.UH, d.UW }, dilation = { d.DH, d.DW } } },
    compute = "f32",
  }
end }

-- Two FLOPs per multiply-add of the direct convolution, padding taps
-- included.
flops = function(d)
  local oh = (d.H + 2 * d.PH - d.DH * (d.R - 1) - 1) // d.UH + 1
  local ow = (d.W + 2 * d.PW - d.DW * (d.S - 1) - 1) // d.UW + 1
  return 2 * d.N * d.K * oh * ow * (d.C // d.G) * d.R * d.S
end
targets = {}

plan = [[
-- Default plan: one thread per element of y, blocks of 256.
local OH, OW = (H + 2 * PH - DH * (R - 1) - 1) // UH + 1, (W + 2 * PW - DW * (S - 1) - 1) // UW + 1
return { launches = { { kernel = "conv2d_nchw", grid = { cdiv(N * K * OH * OW, 256), 1, 1 }, block = { 256, 1, 1 },
  shared = 0, args = { buffer("x"), buffer("w"), buffer("y"), u32(N), u32(C), u32(H), u32(W), u32(K), u32(R), u32(S),
  u32(PH), u32(PW), u32(UH), u32(UW), u32(DH), u32(DW), u32(G) } } } }
]]

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
}

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.conv2d(x, w, None, stride=(UH, UW), padding=(PH, PW), dilation=(DH, DW), groups=G)"
