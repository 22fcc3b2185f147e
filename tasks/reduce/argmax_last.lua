-- Row argmax of bf16: I[r] = the index of the largest X[r, c], int32, ties
-- broken by the lowest index (torch.argmax, numpy.argmax). cuDNN has no
-- argmax, so the task ships a baseline kernel (baseline.cu).
local F = include "_family.lua"

name = "argmax_last_bf16"
family = "reduce"
kernel = "argmax_last"
tags = { "reduce", "argmax", "bf16", "memory-bound" }

description = [[
Write a CUDA kernel named `argmax_last` that finds, for each row of X[R, C]
(row-major, bf16 as __nv_bfloat16 bit patterns), the column of its largest
element: I[r] = c such that X[r, c] is the row's maximum, written as int32
I[R]. When several elements equal the maximum, I[r] is the lowest of their
columns (as torch.argmax and numpy.argmax); ties are common, since bf16
holds few distinct values. Inputs are finite. Here R=${R}, C=${C}.
With the default launch plan the kernel is
  extern "C" __global__ void argmax_last(const bf16 *X, int *I, unsigned R, unsigned C)
launched with one block of 256 threads per row (grid (R, 1, 1)) and no
dynamic shared memory. Send your own plan to change any of this.]]

-- The main shape reads 512 MiB of bf16 (about 150 us on an H200).
dims = F.last_dims
variants = F.last_variants

buffers = {
  X = { role = "input", dtype = "bf16", shape = { "R", "C" } },
  I = { role = "output", dtype = "i32", shape = { "R" } },
}

-- Uniform on [-1, 1] rounded to bf16: near 1 the bf16 spacing is 2^-8, so
-- about 16 elements of a row of 16384 round to 1.0, and two or more of a
-- row of 1021 in a quarter of the rows: the tie rule decides those rows. Then normal rows (ties rarer), the
-- scaled inputs of KernelBench-Verified, PTXBench's spiky mix, and rows
-- negative throughout (N(-100, 1), bf16 spacing 0.5: many ties again),
-- where a search that starts from 0 instead of -Inf returns nothing.
inputs = { X = { dist = "uniform", lo = -1, hi = 1 } }
trials = 2
distributions = {
  { name = "uniform" },
  { name = "randn", inputs = { X = { dist = "normal", mean = 0, std = 1 } } },
  { name = "x3", scale = 3 },
  { name = "x0.01", scale = 0.01 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { X = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
  { name = "negative", inputs = { X = { dist = "normal", mean = -100, std = 1 } } },
}

-- An index is right or wrong: every one must equal the reference's.
tolerance = {
  i32 = { atol = 0, rtol = 0, matched = 1.0 },
}

-- A block per row unit; the index is written as an fp32 (exact below 2^24).
reference = {
  source = "reference.cu", units = { I = 1 },
  plan = [[
local rows = nsample > 0 and nsample or R
return { launches = { { kernel = "argmax_last_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("positions"), buffer("I"), u32(C) } } } }
]],
}

baseline = {
  source = "baseline.cu", name = "block-per-row argmax",
  plan = [[
return { launches = { { kernel = "argmax_baseline", grid = { R, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("I"), u32(C) } } } }
]],
}

-- One comparison per element.
flops = function(d) return d.R * d.C end

-- Memory-bound: no target instruction family to verify.
targets = {}

plan = [[
-- Default plan: one block of 256 threads per row.
return { launches = { { kernel = "argmax_last", grid = { R, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("I"), u32(R), u32(C) } } } }
]]
