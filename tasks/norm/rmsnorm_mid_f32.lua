-- RMSNorm over dimension 1 in fp32, as KernelBench's Level 1 problem 36
-- computes it: for x [batch, features, d1, d2], each element divided by
-- the root mean square of its features at the same (batch, d1, d2), eps =
-- 1e-5, no weight. Here X[B, F, S] with S = d1*d2. rmsnorm_bf16 is the
-- last-dimension, weighted relative of transformer layers. No library has
-- it as one call, so the task ships its baseline (baseline.cu).
local N = include "_family.lua"
local EPS = 1e-5

name = "rmsnorm_mid_f32"
family = "norm"
kernel = "rmsnorm_mid"
tags = { "norm", "rmsnorm", "f32", "memory-bound" }

description = [[
Write a CUDA kernel named `rmsnorm_mid` that normalizes X[B, F, S]
(row-major, fp32) over its middle dimension:
  ms[b,s] = (1/F) sum over f of X[b,f,s]^2,  Y[b,f,s] = X[b,f,s] / sqrt(ms[b,s] + eps)
with eps = 1e-5 and no weight, written as fp32 Y[B, F, S] (torch's
x / sqrt(mean(x^2, dim=1, keepdim=True) + eps) on [batch, features, d1, d2]
with S = d1*d2). Sums in fp32 or wider. Here B=${B}, F=${F}, S=${S}.
With the default launch plan the kernel is
  extern "C" __global__ void rmsnorm_mid(const float *X, float *Y, unsigned B, unsigned F, unsigned S)
launched with one thread per (b, s) column (grid (ceil(B*S/256), 1, 1),
blocks of 256, thread o for b = o / S and s = o % S) and no dynamic shared
memory. Send your own plan to change any of this.]]

dims = { "B", "F", "S" }

-- 16 x 64 x 512 x 512 (1 GiB read and written), KernelBench's current
-- shape (112 x 64 x 512 x 512: 7.5 GB a buffer) and an odd one.
variants = {
  { B = 16, F = 64, S = 262144, tags = { "main" } },
  { B = 112, F = 64, S = 262144, tags = { "kernelbench" } },
  { B = 3, F = 37, S = 1021, tags = { "odd", "small" } },
}

buffers = {
  X = { role = "input", dtype = "f32", shape = { "B", "F", "S" } },
  Y = { role = "output", dtype = "f32", shape = { "B", "F", "S" } },
}
inputs = { X = { dist = "normal", mean = 0, std = 1 } }

-- The result does not change with X's scale except near eps: at x0.01 the
-- mean square is 1e-4, where eps moves the result by 5% (a kernel that
-- drops eps fails); then the spiky mix (a large element dominates its
-- column) and columns shifted to 1000 (squares near 1e6).
trials = 2
distributions = N.scaled(1, 1)
distributions[#distributions + 1] = { name = "spiky", inputs = { X = N.SPIKY } }
distributions[#distributions + 1] = { name = "shifted", inputs = { X = { dist = "normal", mean = 1000, std = 1 } } }

-- Outputs are about 1. An fp32 sum of F = 64 squares in any order is
-- within a few 1e-7 relative of the fp64 one, halved by the square root,
-- and the division or reciprocal square root adds an ulp or two: rtol =
-- 1e-5 leaves a margin of ten; atol = 1e-6 only matters near zero. A
-- normalization over the wrong axis, without eps or in bf16 fails.
tolerance = {
  f32 = { atol = 1e-6, rtol = 1e-5, matched = 1.0 },
}

reference = {
  source = "reference.cu", accumulate = "f64", units = { Y = 1 },
  plan = ([[
local n = nsample > 0 and nsample or B * F * S
return { launches = { { kernel = "rmsnorm_mid_ref", grid = { cdiv(n, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("positions"), u64(n), buffer("Y"), u32(F), u32(S), f64(%.17g) } } } }
]]):format(EPS),
}

baseline = {
  source = "baseline.cu", name = "thread per column: fp32 mean of squares, then its outputs",
  plan = ([[
return { launches = { { kernel = "rmsnorm_mid_baseline", grid = { cdiv(B * S, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("Y"), u32(B), u32(F), u32(S), f32(%.9g) } } } }
]]):format(EPS),
  floor_note = "not measured yet: a thread per column reads it twice (the second time mostly from L2)",
}

-- A square and an add per element for the mean, a multiply for the scaling.
flops = function(d) return 3 * d.B * d.F * d.S end
targets = {}

plan = [[
-- Default plan: one thread per (b, s) column.
return { launches = { { kernel = "rmsnorm_mid", grid = { cdiv(B * S, 256), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("Y"), u32(B), u32(F), u32(S) } } } }
]]

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 36, exact = true, note = "[batch, features, d1, d2] as [B, F, d1*d2]" }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "X / torch.sqrt(torch.mean(X ** 2, dim=1, keepdim=True) + 1e-5)"
