-- BatchNorm in training mode, fp32, as KernelBench's Level 1 problem 33
-- runs nn.BatchNorm2d (a module's default mode): every channel of X[N, C, S]
-- (S = H*W of NCHW) normalized with the mean and biased variance of its own
-- N*S elements, eps = 1e-5, then scaled and shifted per channel. (The
-- module also updates its running statistics, which the output does not
-- depend on.) batchnorm_bf16 is the inference form with given statistics.
-- klab's cuDNN graphs have only that form, so the task ships its baseline.
local N = include "_family.lua"
local EPS = 1e-5

name = "batchnorm_train_f32"
family = "norm"
kernel = "batchnorm_train"
tags = { "norm", "batchnorm", "f32", "nchw", "memory-bound" }

description = [[
Write CUDA kernels that apply BatchNorm in training mode to X[N, C, S]
(row-major, fp32; S = H*W of an NCHW tensor): for each channel c, over its
N*S elements X[n, c, s],
  mean_c = their average,  var_c = the average of (X - mean_c)^2 (biased),
  Y[n,c,s] = (X[n,c,s] - mean_c) / sqrt(var_c + eps) * weight[c] + bias[c],
with eps = 1e-5, weight[C] and bias[C] fp32, statistics in fp32 or wider
(inputs may sit far from zero: a variance taken as E[x^2] - E[x]^2 in fp32
is wrong there), written as fp32 Y[N, C, S]. Here N=${N}, C=${C}, S=${S}.
With the default launch plan
  extern "C" __global__ void batchnorm_train_stats(const float *X, float *stats,
      unsigned N, unsigned C, unsigned S)
runs first with one block of 256 threads per channel (grid (C, 1, 1)),
writing whatever the second kernel needs into stats (a workspace of 2*C
floats whose contents are garbage on entry), then
  extern "C" __global__ void batchnorm_train_apply(const float *X, const float *weight,
      const float *bias, const float *stats, float *Y, unsigned N, unsigned C, unsigned S)
runs with one thread per element of Y (grid (ceil(N*C*S/256), 1, 1)).
Neither uses dynamic shared memory. Send your own plan to change any of
this.]]

dims = { "N", "C", "S" }

-- 32 images of 64 channels of 256 x 256 (512 MiB read), KernelBench's
-- current shape (64 x 64 x 512 x 512: 4 GiB a buffer) and an odd one.
variants = {
  { N = 32, C = 64, S = 65536, tags = { "main" } },
  { N = 64, C = 64, S = 262144, tags = { "kernelbench" } },
  { N = 3, C = 5, S = 1021, tags = { "odd", "small" } },
}

buffers = {
  X = { role = "input", dtype = "f32", shape = { "N", "C", "S" } },
  weight = { role = "input", dtype = "f32", shape = { "C" } },
  bias = { role = "input", dtype = "f32", shape = { "C" } },
  Y = { role = "output", dtype = "f32", shape = { "N", "C", "S" } },
}
inputs = { X = N.row_inputs.X, weight = N.row_inputs.weight, bias = N.row_inputs.bias }

-- The output scales with the weight and the bias (every float input is
-- scaled: tol_scale 3 and 0.01; at x0.01 the variance is 1e-4, where eps
-- moves the result by 5%, so a kernel that drops eps fails); then the
-- spiky mix and inputs shifted to 100, where a one-pass fp32 variance
-- loses every digit.
trials = 2
distributions = N.scaled(3, 0.01)
distributions[#distributions + 1] = { name = "spiky", inputs = { X = N.SPIKY } }
distributions[#distributions + 1] = { name = "shifted", inputs = { X = { dist = "normal", mean = 100, std = 1 } } }

-- Outputs are about weight ≈ 1 in size. The statistics of up to 16M
-- elements in fp32 blocks are within about 1e-6 relative of the fp64
-- ones; the scaling adds a few ulps: atol = rtol = 1e-4 leave a margin of
-- ten and more, and fail statistics over the wrong axis, a one-pass
-- variance on the shifted inputs or a missing eps.
tolerance = {
  f32 = { atol = 1e-4, rtol = 1e-4, matched = 1.0 },
}

-- The statistics over all of X every time (a timed run's check samples
-- only the scaling), then the element units.
reference = {
  source = "reference.cu", accumulate = "f64", units = { Y = 1 },
  plan = ([[
local m = nsample > 0 and nsample or N * C * S
return { workspace = { stats = { bytes = 16 * C } }, launches = {
  { kernel = "bn_stats_ref", grid = { C, 1, 1 }, block = { 256, 1, 1 },
    args = { buffer("X"), workspace("stats"), u32(N), u32(C), u64(S), f64(%.17g) } },
  { kernel = "bn_apply_ref", grid = { cdiv(m, 256), 1, 1 }, block = { 256, 1, 1 },
    args = { buffer("X"), buffer("weight"), buffer("bias"), workspace("stats"), buffer("positions"), u64(m),
             buffer("Y"), u32(C), u64(S) } } } }
]]):format(EPS),
}

baseline = {
  source = "baseline.cu", name = "16 slices a channel in fp32, Chan's combination in fp64, then the scaling",
  plan = ([[
return { workspace = { part = { bytes = 8 * 3 * 16 * C }, stats = { bytes = 8 * C } }, launches = {
  { kernel = "bn_partial_baseline", grid = { C, 16, 1 }, block = { 512, 1, 1 },
    args = { buffer("X"), workspace("part"), u32(N), u32(C), u64(S) } },
  { kernel = "bn_finish_baseline", grid = { cdiv(C, 256), 1, 1 }, block = { 256, 1, 1 },
    args = { workspace("part"), workspace("stats"), u32(C), f32(%.9g) } },
  { kernel = "bn_apply_baseline", grid = { math.min(cdiv(N * C * S, 256), 65536), 1, 1 }, block = { 256, 1, 1 },
    args = { buffer("X"), buffer("weight"), buffer("bias"), workspace("stats"), buffer("Y"), u32(C), u64(S),
             u64(N * C * S) } } } }
]]):format(EPS),
  floor_note = "not measured yet: X is read twice for the statistics and once more for the scaling",
}

-- The mean, the deviations and the scaling: about five operations an element.
flops = function(d) return 5 * d.N * d.C * d.S end
targets = {}

plan = [[
-- Default plan: a block per channel for the statistics, then a thread per element.
return { workspace = { stats = { bytes = 8 * C } }, launches = {
  { kernel = "batchnorm_train_stats", grid = { C, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
    args = { buffer("X"), workspace("stats"), u32(N), u32(C), u32(S) } },
  { kernel = "batchnorm_train_apply", grid = { cdiv(N * C * S, 256), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
    args = { buffer("X"), buffer("weight"), buffer("bias"), workspace("stats"), buffer("Y"), u32(N), u32(C),
             u32(S) } } } }
]]

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 33, exact = true,
  note = "[N, C, H, W] as [N, C, H*W]; weight and bias drawn where KernelBench's start at 1 and 0" }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.batch_norm(X, None, None, weight, bias, training=True, eps=1e-5)"
