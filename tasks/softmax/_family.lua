-- What the softmax family's task files share (softmax.lua, logsoftmax.lua
-- include it): an operation over each row of X[R, C] written to Y[R, C],
-- bf16 in and out, row-major; the reference and the shipped baseline are
-- kernels of this folder (reference.cu, baseline.cu) named after the
-- operation (<op>_ref, <op>_baseline).
local F = {}

F.dims = { "R", "C" }

-- Two main shapes that move 1 GiB (hundreds of microseconds on an H200),
-- a long-row shape and an odd one.
F.variants = {
  { R = 16384, C = 16384, tags = { "main" } },
  { R = 65536, C = 4096, tags = { "main" } },
  { R = 4096, C = 65536, tags = { "long_rows" } },
  { R = 1000, C = 1023, tags = { "odd", "small" } },
}

F.buffers = {
  X = { role = "input", dtype = "bf16", shape = { "R", "C" } },
  Y = { role = "output", dtype = "bf16", shape = { "R", "C" } },
}

F.inputs = { X = { dist = "normal", mean = 0, std = 1 } }
F.trials = 2

-- KernelBench-Verified's scaled inputs (x3, x0.01, x-1), PTXBench's spiky
-- mix, rows shifted to about 100, where exp(x) without the row maximum
-- subtracted overflows fp32 (Inf, then NaN), and rows with a lone peak of
-- hundreds (spikes of std 300, about one a row at C = 1000): a maximum
-- that misses the peak (an element skipped, a step of the reduction lost)
-- is not the row's, and exp(peak - that maximum) overflows too. The
-- maximum is not only a stabiliser. Then what a task adds. No tol_scale:
-- the error of either output does not grow with the input's scale.
function F.distributions(extra)
  local list = {
    { name = "randn" },
    { name = "x3", scale = 3 },
    { name = "x0.01", scale = 0.01 },
    { name = "neg", scale = -1 },
    { name = "spiky", inputs = { X = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
    { name = "shifted", inputs = { X = { dist = "normal", mean = 100, std = 1 } } },
    { name = "peaked", inputs = { X = { dist = "spiky", std = 1, spike_std = 300, p = 0.001 } } },
  }
  for _, d in ipairs(extra or {}) do list[#list + 1] = d end
  return list
end

-- One unit is a row: the reference recomputes 8192 rows of Y per checked
-- timed run. args: the reference kernel's arguments, as plan text.
function F.reference(op, args)
  return {
    source = "reference.cu", accumulate = "f64", units = { Y = "C" },
    plan = ([[
local rows = nsample > 0 and nsample or R
return { launches = { { kernel = "%s_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { %s } } } }
]]):format(op, args),
  }
end

-- No library in klab has a softmax as one call: a kernel shipped with the
-- task, recorded as a shipped baseline in every result.
function F.baseline(op, name)
  return {
    source = "baseline.cu", name = name,
    plan = ([[
return { launches = { { kernel = "%s_baseline", grid = { R, 1, 1 }, block = { 512, 1, 1 },
  args = { buffer("X"), buffer("Y"), u32(C) } } } }
]]):format(op),
  }
end

-- max, subtract, exp, sum, then divide (softmax) or subtract (log-softmax):
-- five operations per element; X read and Y written once.
F.flops = function(d) return 5 * d.R * d.C end
F.bytes = function(d) return 2 * 2 * d.R * d.C end

function F.plan(op)
  return ([[
-- Default plan: one block of 256 threads per row.
return { launches = { { kernel = "%s", grid = { R, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("Y"), u32(R), u32(C) } } } }
]]):format(op)
end

-- Sets the fields every softmax task shares in env (the task file's _ENV):
-- all but the description, the distributions, the tolerance, the reference
-- and the baseline. t = {name =, op =, tags =}.
function F.define(env, t)
  env.name, env.family, env.kernel, env.tags = t.name, "softmax", t.op, t.tags
  env.dims, env.variants, env.buffers, env.inputs, env.trials = F.dims, F.variants, F.buffers, F.inputs, F.trials
  env.flops, env.bytes = F.flops, F.bytes
  -- Memory-bound: no target instruction family to verify.
  env.targets = {}
  env.plan = F.plan(t.op)
end

return F
