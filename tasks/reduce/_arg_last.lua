-- What the argmax and argmin tasks share: over the last dimension of bf16
-- (argmax_last.lua, argmin_last.lua; A.define) and over the middle one of
-- fp32 (argmax_mid.lua, argmin_mid.lua; A.define_mid, at the end): I[r] = the index of the largest (smallest) X[r, c],
-- int32, ties broken by the lowest index (torch's and numpy's rule). cuDNN
-- has neither, so the tasks ship a baseline kernel (baseline.cu). The
-- argmin is the argmax of -X (sign = -1, exact in bf16), in the reference
-- and the baseline alike.
local F = include "_family.lua"
local A = {}

local REFERENCE_PLAN = [[
local rows = nsample > 0 and nsample or R
return { launches = { { kernel = "argmax_last_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("positions"), buffer("I"), u32(C), f32(%d) } } } }
]]

local BASELINE_PLAN = [[
return { launches = { { kernel = "argmax_baseline", grid = { R, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("I"), u32(C), f32(%d) } } } }
]]

local PLAN = [[
-- Default plan: one block of 256 threads per row.
return { launches = { { kernel = "%s", grid = { R, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("I"), u32(R), u32(C) } } } }
]]

-- The input sets of an argmax (sign 1) or argmin (-1): first the base
-- law (named first), then normal values, KernelBench-Verified's scaled
-- inputs, PTXBench's spiky mix, and values of one sign throughout
-- (N(∓100, 1)), where a search that starts from 0 instead of ∓Inf returns
-- nothing. An index is right or wrong: every one must equal the reference's.
local function inputs_and_checks(env, sign, first, law)
  env.inputs = { X = law }
  env.trials = 2
  env.distributions = {
    { name = first },
    { name = "randn", inputs = { X = { dist = "normal", mean = 0, std = 1 } } },
    { name = "x3", scale = 3 },
    { name = "x0.01", scale = 0.01 },
    { name = "neg", scale = -1 },
    { name = "spiky", inputs = { X = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
    { name = sign == 1 and "negative" or "positive", inputs = { X = { dist = "normal", mean = -100 * sign, std = 1 } } },
  }
  env.tolerance = { i32 = { atol = 0, rtol = 0, matched = 1.0 } }
end

-- Sets every field of the task in env. which: "max" or "min".
function A.define(env, which)
  local sign = which == "max" and 1 or -1
  local extreme = which == "max" and "maximum" or "minimum"
  local fn = "arg" .. which .. "_last"
  env.name, env.family, env.kernel = fn .. "_bf16", "reduce", fn
  env.tags = { "reduce", "arg" .. which, "bf16", "memory-bound" }
  env.description = ([[
Write a CUDA kernel named `%s` that finds, for each row of X[R, C]
(row-major, bf16 as __nv_bfloat16 bit patterns), the column of its %s
element: I[r] = c such that X[r, c] is the row's %s, written as int32
I[R]. When several elements equal the %s, I[r] is the lowest of their
columns (as torch.arg%s and numpy.arg%s); ties are common, since bf16
holds few distinct values. Inputs are finite. Here R=${R}, C=${C}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const __nv_bfloat16 *X, int *I, unsigned R, unsigned C)
launched with one block of 256 threads per row (grid (R, 1, 1)) and no
dynamic shared memory. Send your own plan to change any of this.]]):format(fn,
    which == "max" and "largest" or "smallest", extreme, extreme, which, which, fn)

  -- The main shape reads 512 MiB of bf16 (about 150 us on an H200).
  env.dims, env.variants = F.last_dims, F.last_variants
  env.buffers = {
    X = { role = "input", dtype = "bf16", shape = { "R", "C" } },
    I = { role = "output", dtype = "i32", shape = { "R" } },
  }

  -- Uniform on [-1, 1] rounded to bf16: near ±1 the bf16 spacing is 2^-8,
  -- so about 16 elements of a row of 16384 round to the extreme, and two or
  -- more of a row of 1021 in a quarter of the rows: the tie rule decides
  -- those rows. Then normal rows (ties rarer), the scaled inputs of
  -- KernelBench-Verified, PTXBench's spiky mix, and rows of one sign
  -- throughout (N(∓100, 1), bf16 spacing 0.5: many ties again).
  inputs_and_checks(env, sign, "uniform", { dist = "uniform", lo = -1, hi = 1 })

  -- A block per row unit; the index is written as an fp32 (exact below 2^24).
  env.reference = { source = "reference.cu", units = { I = 1 }, plan = REFERENCE_PLAN:format(sign) }
  env.baseline = { source = "baseline.cu", name = "block-per-row arg" .. which, plan = BASELINE_PLAN:format(sign) }
  -- One comparison per element.
  env.flops = function(d) return d.R * d.C end
  -- Memory-bound: no target instruction family to verify.
  env.targets = {}
  env.plan = PLAN:format(fn)
end

-- The same over the middle dimension of fp32 X[B, N, D], as KernelBench's
-- problems 51 and 52 reduce dimension 1 of [batch, dim1, dim2]: I[b, d] =
-- the n of the largest (smallest) X[b, n, d], int32 (torch's is int64),
-- the lowest n among equal ones. A thread per output in the reference
-- (argmax_mid_ref) and the shipped baseline (argmax_mid_baseline).
local MID_REFERENCE_PLAN = [[
local n = nsample > 0 and nsample or B * D
return { launches = { { kernel = "argmax_mid_ref", grid = { cdiv(n, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("positions"), u64(n), buffer("I"), u32(N), u32(D), f32(%d) } } } }
]]

local MID_BASELINE_PLAN = [[
return { launches = { { kernel = "argmax_mid_baseline", grid = { cdiv(B * D, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("I"), u32(B), u32(N), u32(D), f32(%d) } } } }
]]

local MID_PLAN = [[
-- Default plan: one thread per output (consecutive threads on consecutive d).
return { launches = { { kernel = "%s", grid = { cdiv(B * D, 256), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("I"), u32(B), u32(N), u32(D) } } } }
]]

-- Sets every field of the middle-dimension task in env. which: "max" or "min".
function A.define_mid(env, which)
  local sign = which == "max" and 1 or -1
  local extreme = which == "max" and "maximum" or "minimum"
  local fn = "arg" .. which .. "_mid"
  env.name, env.family, env.kernel = fn .. "_f32", "reduce", fn
  env.tags = { "reduce", "arg" .. which, "f32", "memory-bound" }
  env.description = ([[
Write a CUDA kernel named `%s` that finds, for each b and d of
X[B, N, D] (row-major, fp32), the index n of the %s X[b, n, d] along the
middle dimension: I[b, d] = n such that X[b, n, d] is the %s over n,
written as int32 I[B, D] (torch.arg%s(X, dim=1)). When several elements
equal the %s, I[b, d] is the lowest of their indices. Inputs are finite.
Here B=${B}, N=${N}, D=${D}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const float *X, int *I, unsigned B, unsigned N, unsigned D)
launched with one thread per output (grid (ceil(B*D/256), 1, 1), blocks of
256, thread o for b = o / D, d = o %% D) and no dynamic shared memory. Send
your own plan to change any of this.]]):format(fn, which == "max" and "largest" or "smallest", extreme, which,
    extreme, fn)
  -- The family's middle-dimension shapes, KernelBench's current one, and
  -- the odd one.
  env.dims = F.mid_dims
  env.variants = { F.mid_variants[1], F.mid_variants[2], { B = 128, N = 4096, D = 4095, tags = { "kernelbench" } },
    F.mid_variants[3] }
  env.buffers = {
    X = { role = "input", dtype = "f32", shape = { "B", "N", "D" } },
    I = { role = "output", dtype = "i32", shape = { "B", "D" } },
  }
  -- KernelBench's torch.rand first.
  inputs_and_checks(env, sign, "rand", { dist = "uniform", lo = 0, hi = 1 })
  env.reference = { source = "reference.cu", units = { I = 1 }, plan = MID_REFERENCE_PLAN:format(sign) }
  env.baseline = { source = "baseline.cu", name = "thread-per-output arg" .. which .. " over the middle dimension",
    plan = MID_BASELINE_PLAN:format(sign) }
  env.flops = function(d) return d.B * d.N * d.D end
  env.targets = {}
  env.plan = MID_PLAN:format(fn)
end

return A
