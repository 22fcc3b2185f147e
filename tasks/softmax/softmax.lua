-- Row softmax in bf16: Y[r, :] = softmax(X[r, :]), fp32 arithmetic inside,
-- bf16 in and out. A family defined only by files in this folder: the task
-- (this file), its reference (reference.cu) and a shipped baseline kernel
-- (baseline.cu), with a naive sample and known-bad kernels (samples/, bad/).

name = "softmax_bf16"
family = "softmax"
kernel = "softmax"
tags = { "softmax", "bf16", "memory-bound" }

description = [[
Write a CUDA kernel named `softmax` that computes a softmax over each row of
X[R, C] (row-major, bf16 as __nv_bfloat16 bit patterns): Y[r, c] =
exp(X[r, c] - m_r) / sum_j exp(X[r, j] - m_r), with m_r the row's maximum,
written as bf16 (round to nearest even). Here R=${R}, C=${C}.
With the default launch plan the kernel is
  extern "C" __global__ void softmax(const bf16 *X, bf16 *Y, unsigned R, unsigned C)
launched with one block of 256 threads per row (grid (R, 1, 1)) and no
dynamic shared memory. Send your own plan to change any of this.]]

dims = { "R", "C" }

-- The main shapes move 0.5 to 1 GiB (tens to hundreds of microseconds on an
-- H200), then a long-row shape and an odd one.
variants = {
  { R = 16384, C = 16384, tags = { "main" } },
  { R = 65536, C = 4096, tags = { "main" } },
  { R = 4096, C = 65536, tags = { "long_rows" } },
  { R = 1000, C = 1023, tags = { "odd", "small" } },
}

buffers = {
  X = { role = "input", dtype = "bf16", shape = { "R", "C" } },
  Y = { role = "output", dtype = "bf16", shape = { "R", "C" } },
}

inputs = { X = { dist = "normal", mean = 0, std = 1 } }

-- KernelBench-Verified's scaled inputs (x3, x0.01, x-1) and PTXBench's spiky
-- mix; and rows shifted far from zero, which a softmax that does not
-- subtract the row maximum turns into Inf/Inf = NaN (exp(100) overflows
-- fp32). The output is a probability whatever the input scale: the
-- tolerance does not scale (tol_scale 1).
trials = 2
distributions = {
  { name = "randn" },
  { name = "x3", scale = 3 },
  { name = "x0.01", scale = 0.01 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { X = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
  { name = "shifted", inputs = { X = { dist = "normal", mean = 100, std = 1 } } },
}

-- Outputs lie in [0, 1] and many are near 1/C. A bf16 output holds 8
-- significant bits (relative rounding error up to 2^-9 ~ 0.2%), so rtol 1e-2
-- passes any honest fp32 computation rounded once; atol 1e-5 only matters
-- for elements near zero (1/C is 6e-5 at C = 16384), where a kernel that
-- sums in bf16 or drops the normalisation misses by far more.
tolerance = {
  bf16 = { atol = 1e-5, rtol = 1e-2, matched = 1.0 },
}

-- One unit is a row: the reference recomputes 8192 rows of Y per checked
-- timed run.
reference = {
  source = "reference.cu", accumulate = "f64", units = { Y = "C" },
  plan = [[
local rows = nsample > 0 and nsample or R
return { launches = { { kernel = "softmax_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("positions"), u64(nsample), buffer("Y"), u32(C) } } } }
]],
}

-- No library in klab has a softmax yet: a kernel shipped with the task,
-- recorded as a shipped baseline in every result.
baseline = {
  source = "baseline.cu", name = "block-per-row softmax",
  plan = [[
return { launches = { { kernel = "softmax_baseline", grid = { R, 1, 1 }, block = { 512, 1, 1 },
  args = { buffer("X"), buffer("Y"), u32(C) } } } }
]],
}

-- max, subtract, exp, sum, divide: five operations per element.
flops = function(d) return 5 * d.R * d.C end
bytes = function(d) return 2 * 2 * d.R * d.C end

-- Memory-bound: no target instruction family to verify.
targets = {}

plan = [[
-- Default plan: one block of 256 threads per row.
return { launches = { { kernel = "softmax", grid = { R, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("Y"), u32(R), u32(C) } } } }
]]
