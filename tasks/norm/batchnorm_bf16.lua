-- BatchNorm in inference, NHWC (channels last): Y = (X - mean[c]) /
-- sqrt(var[c] + eps) * weight[c] + bias[c] with the running statistics
-- given, eps = 1e-5 (PyTorch's default); activations bf16, the per-channel
-- statistics and affine parameters fp32 (as PyTorch keeps them).
local F = include "_family.lua"

local EPS = 1e-5

name = "batchnorm_bf16"
family = "norm"
kernel = "batchnorm"
tags = { "norm", "batchnorm", "bf16", "nhwc", "memory-bound" }
description = [[
Write a CUDA kernel named `batchnorm`: BatchNorm in inference mode over
channels-last activations X[N, H, W, C] (NHWC, row-major, C contiguous; bf16
as __nv_bfloat16 bit patterns) with the running statistics given:
  Y[n,h,w,c] = (X[n,h,w,c] - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c],
with eps = 1e-5; mean, var, weight and bias are fp32 [C]; Y is bf16 [N, H, W, C]
(round to nearest even). Here N=${N}, H=${H}, W=${W}, C=${C}.
With the default launch plan the kernel is
  extern "C" __global__ void batchnorm(const __nv_bfloat16 *X, const float *mean,
      const float *var, const float *weight, const float *bias, __nv_bfloat16 *Y,
      unsigned long long P, unsigned C, float eps)
with P = N*H*W pixels, launched with one thread per element of X (grid
(ceil(P*C/256), 1, 1), blocks of 256 threads) and no dynamic shared memory.
Send your own plan to change any of this.]]

dims = { "N", "H", "W", "C" }
-- ResNet-50's stage-2 and stage-4 activations at batch 128 and 256 (about
-- 100M elements: 400 MB read and written, about 100 us on an H200), and a
-- small odd one.
variants = {
  { N = 128, H = 56, W = 56, C = 256, tags = { "main" } },
  { N = 256, H = 28, W = 28, C = 512, tags = { "main" } },
  { N = 3, H = 17, W = 19, C = 40, tags = { "odd", "small" } },
}

buffers = {
  X = { role = "input", dtype = "bf16", shape = { "N", "H", "W", "C" } },
  mean = { role = "input", dtype = "f32", shape = { "C" } },
  var = { role = "input", dtype = "f32", shape = { "C" } },
  weight = { role = "input", dtype = "f32", shape = { "C" } },
  bias = { role = "input", dtype = "f32", shape = { "C" } },
  Y = { role = "output", dtype = "bf16", shape = { "N", "H", "W", "C" } },
}

-- X, weight and bias as the row normalizations draw them; running means
-- near zero and variances in [0.5, 2].
inputs = {
  X = F.row_inputs.X, weight = F.row_inputs.weight, bias = F.row_inputs.bias,
  mean = { dist = "normal", mean = 0, std = 0.5 },
  var = { dist = "uniform", lo = 0.5, hi = 2 },
}

-- KernelBench-Verified's scales multiply every float input, var too. Y =
-- s^1.5 (x - mean) weight / sqrt(var) + s bias, so x3 scales Y by 3 to 5.2
-- and x0.01 by 0.001 to 0.01; atol follows the bias term (tol_scale = s),
-- rtol the rest. x-1 would make every variance negative: its entry draws
-- var from [-2, -0.5], which the scale turns into [0.5, 2]. Then the
-- spiky mix on X, and running variances below eps (tiny_var): there a
-- kernel that leaves eps out, or adds it after the square root, is off by
-- a factor of up to sqrt(2) and more.
trials = 2
distributions = F.scaled(3, 0.01, { var = { dist = "uniform", lo = -2, hi = -0.5 } })
distributions[#distributions + 1] = { name = "spiky", inputs = { X = F.SPIKY } }
distributions[#distributions + 1] = { name = "tiny_var", inputs = { var = { dist = "uniform", lo = 0, hi = 2e-5 } } }

-- bf16 outputs: PTXBench's rule, atol = rtol = 1e-2. Each output is one
-- short expression: an fp32 computation rounded once is within 2^-9 of it,
-- folded forms (x * scale + shift with scale = weight * rsqrt(var + eps),
-- as cuDNN may compute it) lose a few fp32 ulps more, and atol covers
-- outputs near zero where the two terms cancel. With tiny variances the
-- outputs grow to a few hundred, where rtol governs.
tolerance = {
  bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 },
}

-- A unit is a pixel, the C channels of one (n, h, w): a thread per element.
reference = {
  source = "reference.cu", accumulate = "f64", units = { Y = "C" },
  plan = [[
local DT = { f32 = 0, f16 = 1, bf16 = 2 }
local units = nsample > 0 and nsample or N * H * W
return { launches = { { kernel = "batchnorm_ref", grid = { cdiv(units * C, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), i32(DT[buffers.X.dtype]), buffer("mean"), buffer("var"), buffer("weight"), buffer("bias"),
           buffer("positions"), u64(units), buffer("Y"), u32(C), f32(1e-5) } } } }
]],
}

-- cuDNN's norm_fwd BATCH_NORM in inference lists no engine without a GPU
-- (docs/baselines.md) and takes 1/sqrt(var + eps), not var. The same
-- operation as a cuDNN pointwise graph does describe with engines: per
-- channel inv = weight * rsqrt(var + eps), then Y = (X - mean) * inv + bias,
-- the per-channel tensors [1, C, 1, 1] broadcast over X [N, C, H, W] held
-- channels-last (layout nhwc: the task's X[N, H, W, C] byte for byte).
baseline = {
  lib = "cudnn", op = "graph", modes = { "default" },
  spec = function(d)
    local full = { d.N, d.C, d.H, d.W }
    local ch = { 1, d.C, 1, 1 }
    local function per_channel() return { dtype = "f32", dims = ch, layout = "nhwc" } end
    return {
      tensors = {
        X = { dtype = "bf16", dims = full, layout = "nhwc" },
        Y = { dtype = "bf16", dims = full, layout = "nhwc" },
        mean = per_channel(), var = per_channel(), weight = per_channel(), bias = per_channel(),
        eps = { value = EPS },
        var_eps = { virtual = true }, rstd = { virtual = true }, inv = { virtual = true },
        centered = { virtual = true }, scaled = { virtual = true },
      },
      ops = {
        { op = "pointwise", mode = "ADD", inputs = { x = "var", b = "eps" }, outputs = { y = "var_eps" } },
        { op = "pointwise", mode = "RSQRT", inputs = { x = "var_eps" }, outputs = { y = "rstd" } },
        { op = "pointwise", mode = "MUL", inputs = { x = "rstd", b = "weight" }, outputs = { y = "inv" } },
        { op = "pointwise", mode = "SUB", inputs = { x = "X", b = "mean" }, outputs = { y = "centered" } },
        { op = "pointwise", mode = "MUL", inputs = { x = "centered", b = "inv" }, outputs = { y = "scaled" } },
        { op = "pointwise", mode = "ADD", inputs = { x = "scaled", b = "bias" }, outputs = { y = "Y" } },
      },
    }
  end,
}

-- subtract, scale, weight, bias: 4 operations per element (a convention).
flops = function(d) return 4 * d.N * d.H * d.W * d.C end
precision = "f32"
targets = F.targets

plan = [[
-- Default plan: one thread per element of X, blocks of 256.
local P = N * H * W
return { launches = { { kernel = "batchnorm", grid = { cdiv(P * C, 256), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("mean"), buffer("var"), buffer("weight"), buffer("bias"), buffer("Y"),
           u64(P), u32(C), f32(1e-5) } } } }
]]

-- Why the baseline stays short of the physical floor (docs/tasks.md gives
-- its fraction on an H200).
baseline.floor_note = "cuDNN's inference graph (pointwise subtract, scale, shift per channel) reaches 41 to 43% of the DRAM floor on an H200; no shipped kernel beside it yet"

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 33, differs = "inference mode with given statistics, NHWC bf16; KernelBench's module is in training mode (batch statistics) on NCHW (batchnorm_train_f32 poses it)" }
