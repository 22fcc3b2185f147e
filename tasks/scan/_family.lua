-- What the scan task files share (tasks/scan/*.lua include it): prefix sums
-- along the rows of X[R, C] in fp32, as KernelBench's Level 1 cumsum
-- problems compute them over dimension 1 of [batch, n]: inclusive,
-- reversed (from the row's end), exclusive (the sum before each element),
-- and masked (the sum of X where a mask is set). The reference
-- (reference.cu) sums each row in fp64 in order; no library in klab has a
-- scan, so the baseline is the kernel shipped in baseline.cu, recorded as
-- such. A unit is a row of Y.
local F = {}

-- reference.cu's and baseline.cu's operation codes.
F.CODE = { cumsum = 0, cumsum_reverse = 1, cumsum_exclusive = 2, masked_cumsum = 3, cumprod = 4 }

F.FORMULA = {
  cumsum = "Y[r,c] = sum of X[r,0..c] (inclusive)",
  cumsum_reverse = "Y[r,c] = sum of X[r,c..C-1] (from the row's end, inclusive)",
  cumsum_exclusive = "Y[r,c] = sum of X[r,0..c-1] (exclusive: Y[r,0] = 0)",
  masked_cumsum = "Y[r,c] = sum of X[r,k] over k <= c where M[r,k] is 1",
  cumprod = "Y[r,c] = product of X[r,0..c] (inclusive)",
}

F.dims = { "R", "C" }

-- 268M elements (2 GiB of fp32 traffic, about 600 us on an H200), long rows
-- of a million, KernelBench's current shape for its problems 89 to 93
-- (32768 x 32768, 4 GiB of fp32 a buffer) and an odd one.
F.variants = {
  { R = 16384, C = 16384, tags = { "main" } },
  { R = 256, C = 1048576, tags = { "main", "long" } },
  { R = 32768, C = 32768, tags = { "kernelbench" } },
  { R = 999, C = 1021, tags = { "odd", "small" } },
}

function F.buffers(op)
  local b = {
    X = { role = "input", dtype = "f32", shape = { "R", "C" } },
    Y = { role = "output", dtype = "f32", shape = { "R", "C" } },
  }
  if op == "masked_cumsum" then b.M = { role = "input", dtype = "u8", shape = { "R", "C" } } end
  return b
end

-- The products' inputs lie on [0.9, 1.1]: a row's running product then
-- drifts down slowly (about e^-27 after 16384 factors, e^±7 around that)
-- and stays inside fp32's range, where N(0, 1) factors underflow to 0
-- within a few hundred and test nothing.
function F.inputs(op)
  if op == "cumprod" then return { X = { dist = "uniform", lo = 0.9, hi = 1.1 } } end
  local i = { X = { dist = "normal", mean = 0, std = 1 } }
  if op == "masked_cumsum" then i.M = { dist = "int", lo = 0, hi = 1 } end
  return i
end

-- KernelBench-Verified's scaled inputs (the sums scale with X, and so do
-- their rounding errors: tol_scale) and PTXBench's spiky mix, two seeds
-- each (the mask is drawn, never scaled).
F.trials = 2
F.distributions = {
  { name = "randn" },
  { name = "x3", scale = 3, tol_scale = 3 },
  { name = "x0.01", scale = 0.01, tol_scale = 0.01 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { X = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
}

-- The products get no scaled inputs (3^C and 0.01^C leave fp32's range
-- within a hundred factors): the uniform law with two seeds, its negation
-- (signs alternating with the count of factors), and factors on [0.5, 1.5]
-- (faster drift, larger steps).
F.PRODUCT_DISTRIBUTIONS = {
  { name = "uniform" },
  { name = "neg", scale = -1 },
  { name = "wide", inputs = { X = { dist = "uniform", lo = 0.5, hi = 1.5 } } },
}

-- A prefix sum of N(0, 1) values reaches about sqrt(C) (128 at 16384,
-- 1024 at a million). fp32 in any sensible order (a thread's run of
-- elements, then a scan of the runs' totals) is off by a few ulps of that:
-- 1e-4 to 1e-3 at the main shapes; one thread adding a whole row in
-- sequence is off by about sqrt(C) ulps, 1e-3 at 16384 and 5e-2 at a
-- million. atol = 0.1 passes both, with rtol = 1e-4 for the large sums of
-- the spiky rows. Rounding X to bf16 first moves a sum by about
-- sqrt(C) * 2^-9, 0.25 at 16384, and fails; so does a missed or doubled
-- element (about 1).
F.TOLERANCE = { f32 = { atol = 0.1, rtol = 1e-4, matched = 1.0 } }

-- A running product in fp32 gains one rounding (2^-24 relative) per factor,
-- a random walk of about sqrt(C) of them: 1e-5 relative at 16384, 6e-5 at a
-- million for a sequential product, less for a scan of run products.
-- rtol = 5e-4 passes both; atol = 1e-30 only lets underflowed values
-- (both sides near fp32's smallest) agree. A product rounded to bf16 on
-- the way is off by percents.
F.PRODUCT_TOLERANCE = { f32 = { atol = 1e-30, rtol = 5e-4, matched = 1.0 } }

function F.reference(op)
  return {
    source = "reference.cu", accumulate = "f64", units = { Y = "C" },
    plan = ([[
local rows = nsample > 0 and nsample or R
return { launches = { { kernel = "scan_ref", grid = { cdiv(rows, 64), 1, 1 }, block = { 64, 1, 1 },
  args = { buffer("X"), %s, buffer("positions"), u64(rows), buffer("Y"), u32(C), i32(%d) } } } }
]]):format(op == "masked_cumsum" and 'buffer("M")' or "u64(0)", F.CODE[op]),
  }
end

function F.baseline(op)
  return {
    source = "baseline.cu", name = "block-per-row scan: runs per thread, a block scan of their totals",
    plan = ([[
return { launches = { { kernel = "scan_baseline", grid = { R, 1, 1 }, block = { 1024, 1, 1 },
  args = { buffer("X"), %s, buffer("Y"), u32(C), i32(%d) } } } }
]]):format(op == "masked_cumsum" and 'buffer("M")' or "u64(0)", F.CODE[op]),
  }
end

function F.describe(op)
  local masked = op == "masked_cumsum"
  return ([[
Write a CUDA kernel named `%s` that scans each row of X[R, C] (row-major,
fp32)%s:
  %s,
written as fp32 Y[R, C]. Here R=${R}, C=${C}. Accumulate in fp32 or wider;
do not round X to a narrower type.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const float *X, %sfloat *Y, unsigned R, unsigned C)
launched with one block of 256 threads per row (grid (R, 1, 1)) and no
dynamic shared memory. Send your own plan to change any of this.]]):format(op,
    masked and " where a mask M[R, C] (one byte per element, 0 or 1) is set" or "", F.FORMULA[op], op,
    masked and "const unsigned char *M, " or "")
end

function F.plan(op)
  return ([[
-- Default plan: one block of 256 threads per row.
return { launches = { { kernel = "%s", grid = { R, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), %sbuffer("Y"), u32(R), u32(C) } } } }
]]):format(op, op == "masked_cumsum" and 'buffer("M"), ' or "")
end

-- Sets the fields of a scan task in env (the task file's _ENV): every field
-- but the tolerance, which each task file states. t = {name =, op =}.
function F.define(env, t)
  local op = t.op
  env.name, env.family, env.kernel = t.name, "scan", op
  env.tags = { "scan", op, "f32", "memory-bound" }
  env.description = F.describe(op)
  env.dims, env.variants, env.buffers = F.dims, F.variants, F.buffers(op)
  env.inputs, env.trials = F.inputs(op), F.trials
  env.distributions = op == "cumprod" and F.PRODUCT_DISTRIBUTIONS or F.distributions
  env.reference, env.baseline = F.reference(op), F.baseline(op)
  -- Why the baseline stays short of the physical floor (docs/tasks.md).
  env.baseline.floor_note = "a block per row scans it in one pass, each thread a run in sequence: 16 to 17% of the DRAM " ..
    "floor on 16384x16384 and 2 to 3% on 256x1048576 (256 rows for 132 SMs) on an H200; a decoupled look-back scan " ..
    "is owed"
  -- One add (or multiply) per element (the mask's select is not counted).
  env.flops = function(d) return d.R * d.C end
  -- Memory-bound: no target instruction family to verify.
  env.targets = {}
  env.plan = F.plan(op)
end

return F
