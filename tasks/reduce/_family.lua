-- What the reduction task files share (tasks/reduce/*.lua include it): sum,
-- mean and max of fp32 over the last dimension of X[R, C] (Y[R]) or over the
-- middle dimension of X[B, N, D] (Y[B, D]), and argmax of bf16 over the last
-- dimension (I[R], int32). The reference (reference.cu) accumulates in fp64
-- in a fixed order; a unit is one output element. The baselines are cuDNN
-- reduction graphs (ADD, MAX; the mean as ADD then a scale by 1/n, since
-- cuDNN refuses its AVG reduction, docs/baselines.md); argmax has no cuDNN
-- operation and ships a kernel (baseline.cu).
local F = {}

-- The reference's operation codes (reference.cu's RED_*).
local CODE = { sum = 0, mean = 1, max = 2, min = 3 }

-- Over the last dimension: the main shape reads 1 GiB of fp32 (about
-- 300 us on an H200), a shape with few very long rows (parallelism inside
-- a row), and an odd one.
F.last_dims = { "R", "C" }
F.last_variants = {
  { R = 16384, C = 16384, tags = { "main" } },
  { R = 256, C = 1048576, tags = { "long_rows" } },
  { R = 999, C = 1021, tags = { "odd", "small" } },
}

-- Over the middle dimension: 1 GiB again, with wide rows (D = 4096) and with
-- narrow ones (D = 64, where a thread per output reads 256 bytes per
-- stride), and an odd shape.
F.mid_dims = { "B", "N", "D" }
F.mid_variants = {
  { B = 16, N = 4096, D = 4096, tags = { "main" } },
  { B = 4096, N = 1024, D = 64, tags = { "narrow" } },
  { B = 7, N = 333, D = 129, tags = { "odd", "small" } },
}

F.last_buffers = {
  X = { role = "input", dtype = "f32", shape = { "R", "C" } },
  Y = { role = "output", dtype = "f32", shape = { "R" } },
}
F.mid_buffers = {
  X = { role = "input", dtype = "f32", shape = { "B", "N", "D" } },
  Y = { role = "output", dtype = "f32", shape = { "B", "D" } },
}

F.inputs = { X = { dist = "normal", mean = 0, std = 1 } }

-- KernelBench-Verified's scaled inputs (x3, x0.01, x-1: sums and means
-- scale with the input, and so do their rounding errors: tol_scale) and
-- PTXBench's spiky mix, two seeds each. The maximum also gets rows that
-- are negative throughout (N(-100, 1)), where a maximum started at 0
-- instead of -Inf returns 0.
F.trials = 2
local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
function F.distributions(op)
  local list = {
    { name = "randn" },
    { name = "x3", scale = 3, tol_scale = 3 },
    { name = "x0.01", scale = 0.01, tol_scale = 0.01 },
    { name = "neg", scale = -1 },
    { name = "spiky", inputs = { X = SPIKY } },
  }
  if op == "max" then list[#list + 1] = { name = "negative", inputs = { X = { dist = "normal", mean = -100, std = 1 } } } end
  -- The minimum's mirror: rows positive throughout, where a minimum started
  -- at 0 instead of +Inf returns 0.
  if op == "min" then list[#list + 1] = { name = "positive", inputs = { X = { dist = "normal", mean = 100, std = 1 } } } end
  return list
end

-- Sums: the exact sum of C = 16384 N(0,1) values is about ±128; fp32
-- accumulation in any reasonable order (a block of 32 to 1024 threads per
-- row, each summing its share in sequence, then a tree) is off by 1e-3 to
-- 5e-3 on the 1M-element rows, less on the others, and atol = 3e-2 covers
-- that with a margin; rtol = 1e-5 adds room on the largest sums. Rounding
-- the inputs to a narrower type first (bf16, fp16 or TF32: 2^-9 to 2^-11
-- relative per element) moves the sum by about 0.04 to 0.14 (one sigma) at
-- C = 16384, which fails on some of the 16384 rows.
-- Means: the same errors divided by the count; atol = 2e-6 is 3e-2 / C at
-- the main shape, so narrowed inputs fail there too.
-- Maximum and minimum: exact in any order (atol = rtol = 0).
F.TOLERANCE = {
  sum = { atol = 3e-2, rtol = 1e-5, matched = 1.0 },
  mean = { atol = 2e-6, rtol = 1e-5, matched = 1.0 },
  max = { atol = 0, rtol = 0, matched = 1.0 },
  min = { atol = 0, rtol = 0, matched = 1.0 },
}

-- The references: a block per row unit (last dimension), a thread per
-- output unit (middle dimension); fp64 sums, fp32 outputs.
function F.last_reference(op)
  return { source = "reference.cu", accumulate = "f64", units = { Y = 1 }, plan = ([[
local rows = nsample > 0 and nsample or R
return { launches = { { kernel = "reduce_last_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), i32(0), buffer("positions"), buffer("Y"), u32(C), i32(%d) } } } }
]]):format(CODE[op]) }
end

function F.mid_reference(op)
  return { source = "reference.cu", accumulate = "f64", units = { Y = 1 }, plan = ([[
local n = nsample > 0 and nsample or B * D
return { launches = { { kernel = "reduce_mid_ref", grid = { cdiv(n, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), i32(0), buffer("positions"), u64(n), buffer("Y"), u32(N), u32(D), i32(%d) } } } }
]]):format(CODE[op]) }
end

-- cuDNN's reduction of each row of X [R, C] into Y [R, 1] (the task's
-- buffers, fp32 compute); the mean first scales every element by the
-- by-value scalar 1/C (pointwise MUL), then sums: cuDNN 9.14 has no engine
-- for the sum followed by the scale (measured on an H200). Strict FP32
-- only: no TF32 path exists for a reduction.
local function row_graph(op, d)
  local g = { tensors = { X = { dims = { d.R, d.C } }, Y = { dims = { d.R, 1 } } } }
  local mode = op == "max" and "MAX" or "ADD"
  if op == "mean" then
    g.tensors.scaled = { dims = { d.R, d.C }, virtual = true }
    g.tensors.inv_n = { value = 1 / d.C }
    g.ops = { { op = "pointwise", mode = "MUL", inputs = { x = "X", b = "inv_n" }, outputs = { y = "scaled" } },
              { op = "reduction", mode = mode, inputs = { x = "scaled" }, outputs = { y = "Y" } } }
  else
    g.ops = { { op = "reduction", mode = mode, inputs = { x = "X" }, outputs = { y = "Y" } } }
  end
  return g
end

-- cuDNN's row reduction is far from the DRAM floor on the main shape: a
-- kernel of the family (baseline.cu) is timed beside it, and the faster of
-- the two is the baseline.
local LAST_PLAN = [[
return { launches = { { kernel = "reduce_last_baseline", grid = { R, 1, 1 }, block = { 512, 1, 1 },
  args = { buffer("X"), buffer("Y"), u32(C), i32(%d) } } } }
]]

function F.last_baseline(op)
  return { lib = "cudnn", op = "graph", modes = { "fp32" }, spec = function(d) return row_graph(op, d) end,
    shipped = { source = "baseline.cu", name = "block of 512 per row, float4 " .. op, plan = LAST_PLAN:format(CODE[op]) } }
end

-- cuDNN 9.14 has no engine for a [B,N,D] -> [B,1,D] reduction (measured on
-- an H200, packed and with N described last through its stride), so the
-- middle-dimension tasks ship their baseline (baseline.cu), recorded as
-- such in every result.
local MID_PLAN = [[
return { launches = { { kernel = "reduce_mid_baseline", grid = { cdiv(B * D, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("Y"), u32(B), u32(N), u32(D), i32(%d) } } } }
]]

function F.mid_baseline(op)
  local code = CODE[op]
  return { source = "baseline.cu", name = "thread per output, " .. op .. " down the middle dimension",
           plan = MID_PLAN:format(code),
           floor_note = "a thread per output walks N with four loads in flight: 65,536 threads keep too few bytes " ..
             "in flight for DRAM (about 42% of the floor on an H200); a split of N across blocks is owed" }
end

-- One operation per input element (an add or a comparison), one more per
-- output for the mean's scale.
function F.last_flops(op)
  return function(d) return d.R * d.C + (op == "mean" and d.R or 0) end
end

function F.mid_flops(op)
  return function(d) return d.B * d.N * d.D + (op == "mean" and d.B * d.D or 0) end
end

-- What a reduction computes over n elements (n names the count).
local function what(op, n)
  if op == "mean" then return "the mean (the sum divided by " .. n .. ")" end
  return ({ max = "the maximum", min = "the minimum" })[op] or "the sum"
end

local RULES = [[
Accumulate in fp32 or wider; do not round the inputs to a narrower type.
The result must not depend on timing: two runs on the same input must give
the same bits (no floating-point atomics whose order varies).]]

function F.last_description(op)
  return ([[
Write a CUDA kernel named `%s_last` that reduces each row of X[R, C]
(row-major, fp32) to one value: Y[r] = %s of X[r, 0..C),
written as fp32 Y[R]. Here R=${R}, C=${C}.
%s
With the default launch plan the kernel is
  extern "C" __global__ void %s_last(const float *X, float *Y, unsigned R, unsigned C)
launched with one block of 256 threads per row (grid (R, 1, 1)) and no
dynamic shared memory. Send your own plan to change any of this.]]):format(op, what(op, "C"),
    (op == "max" or op == "min") and "Inputs are finite." or RULES, op)
end

function F.mid_description(op)
  return ([[
Write a CUDA kernel named `%s_mid` that reduces X[B, N, D] (row-major, D
contiguous, fp32) over its middle dimension: Y[b, d] = %s of
X[b, 0..N, d], written as fp32 Y[B, D] (row-major). Here B=${B}, N=${N},
D=${D}.
%s
With the default launch plan the kernel is
  extern "C" __global__ void %s_mid(const float *X, float *Y, unsigned B, unsigned N, unsigned D)
launched with a grid of (ceil(D/256), B, 1) blocks of 256 threads and no
dynamic shared memory: thread x of block (i, b) owns Y[b, 256*i + x]. Send
your own plan to change any of this.]]):format(op, what(op, "N"), (op == "max" or op == "min") and "Inputs are finite." or RULES, op)
end

function F.last_plan(op)
  return ([[
-- Default plan: one block of 256 threads per row.
return { launches = { { kernel = "%s_last", grid = { R, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("Y"), u32(R), u32(C) } } } }
]]):format(op)
end

function F.mid_plan(op)
  return ([[
-- Default plan: a thread per output element, blocks of 256 along D.
return { launches = { { kernel = "%s_mid", grid = { cdiv(D, 256), B, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("Y"), u32(B), u32(N), u32(D) } } } }
]]):format(op)
end

-- Sets the fields of a sum, mean or max task in env (the task file's
-- _ENV): every field but the tolerance, which each task file states.
-- t = {name =, op = "sum"|"mean"|"max"|"min", axis = "last"|"mid"}: the kernel is
-- named <op>_<axis>.
function F.define(env, t)
  local op, axis = t.op, t.axis
  env.name, env.family, env.kernel = t.name, "reduce", op .. "_" .. axis
  env.tags = { "reduce", "f32", "memory-bound" }
  env.description = F[axis .. "_description"](op)
  env.dims, env.variants, env.buffers = F[axis .. "_dims"], F[axis .. "_variants"], F[axis .. "_buffers"]
  env.inputs, env.trials, env.distributions = F.inputs, F.trials, F.distributions(op)
  env.reference, env.baseline = F[axis .. "_reference"](op), F[axis .. "_baseline"](op)
  env.flops = F[axis .. "_flops"](op)
  -- Memory-bound: no target instruction family to verify.
  env.targets = {}
  env.plan = F[axis .. "_plan"](op)
end

return F
