-- What the row argmax and argmin of bf16 share (argmax_last.lua,
-- argmin_last.lua): I[r] = the index of the largest (smallest) X[r, c],
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
  -- throughout (N(∓100, 1), bf16 spacing 0.5: many ties again), where a
  -- search that starts from 0 instead of ∓Inf returns nothing.
  env.inputs = { X = { dist = "uniform", lo = -1, hi = 1 } }
  env.trials = 2
  env.distributions = {
    { name = "uniform" },
    { name = "randn", inputs = { X = { dist = "normal", mean = 0, std = 1 } } },
    { name = "x3", scale = 3 },
    { name = "x0.01", scale = 0.01 },
    { name = "neg", scale = -1 },
    { name = "spiky", inputs = { X = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
    { name = which == "max" and "negative" or "positive",
      inputs = { X = { dist = "normal", mean = -100 * sign, std = 1 } } },
  }

  -- An index is right or wrong: every one must equal the reference's.
  env.tolerance = { i32 = { atol = 0, rtol = 0, matched = 1.0 } }

  -- A block per row unit; the index is written as an fp32 (exact below 2^24).
  env.reference = { source = "reference.cu", units = { I = 1 }, plan = REFERENCE_PLAN:format(sign) }
  env.baseline = { source = "baseline.cu", name = "block-per-row arg" .. which, plan = BASELINE_PLAN:format(sign) }
  -- One comparison per element.
  env.flops = function(d) return d.R * d.C end
  -- Memory-bound: no target instruction family to verify.
  env.targets = {}
  env.plan = PLAN:format(fn)
end

return A
