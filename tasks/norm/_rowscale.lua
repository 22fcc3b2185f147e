-- What the row scalings share (l1norm_f32.lua, l2norm_f32.lua): each row of
-- X[R, C] in fp32 divided by its own norm, Y = X / ||X[r, :]||, as
-- KernelBench's Level 1 L1Norm (the mean of |x|) and L2Norm (the square root
-- of the sum of x^2) compute it over dimension 1 of [batch, dim]. The
-- reference (reference.cu, rowscale_ref) takes the norm in fp64; the
-- baseline is the kernel shipped in baseline.cu (rowscale_baseline), since
-- cuDNN's norm_fwd has no L1 or L2 mode.
local F = include "_family.lua"
local R = {}

R.CODE = { l2 = 0, l1 = 1 }

-- The row family's shapes, and KernelBench's current one for its problems
-- 38 and 39 ([batch, dim] = [32768, 65535], 8.6 GB a buffer in fp32).
R.dims, R.variants = F.row_dims, { { R = 32768, C = 65535, tags = { "kernelbench" } } }
for _, v in ipairs(F.row_variants) do table.insert(R.variants, #R.variants, v) end

R.buffers = {
  X = { role = "input", dtype = "f32", shape = { "R", "C" } },
  Y = { role = "output", dtype = "f32", shape = { "R", "C" } },
}

R.inputs = { X = F.row_inputs.X }

-- The result does not change with X's scale, so no tol_scale; then the
-- spiky mix and rows shifted to 1000 (the norm of a row far from zero).
function R.distributions()
  local d = F.scaled(1, 1)
  d[#d + 1] = { name = "spiky", inputs = { X = F.SPIKY } }
  d[#d + 1] = { name = "shifted", inputs = { X = { dist = "normal", mean = 1000, std = 1 } } }
  return d
end

function R.description(kernel, norm)
  return ([[
Write a CUDA kernel named `%s` that scales each row of X[R, C]
(row-major, fp32) by its own norm:
  n_r = %s of X[r, :],  Y[r,c] = X[r,c] / n_r.
The norm in fp32 or better; Y[R, C] written as fp32.
Here R=${R}, C=${C}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(const float *X, float *Y, unsigned R, unsigned C)
launched with one block of 256 threads per row (grid (R, 1, 1)) and no
dynamic shared memory. Send your own plan to change any of this.]]):format(kernel, norm, kernel)
end

-- A block per row unit.
function R.reference(op)
  return {
    source = "reference.cu", accumulate = "f64", units = { Y = "C" },
    plan = ([[
local rows = nsample > 0 and nsample or R
return { launches = { { kernel = "rowscale_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("positions"), buffer("Y"), u32(C), i32(%d) } } } }
]]):format(R.CODE[op]),
  }
end

function R.baseline(op)
  return {
    source = "baseline.cu", name = "block per row, " .. op .. " norm in fp32, then the scaling",
    plan = ([[
return { launches = { { kernel = "rowscale_baseline", grid = { R, 1, 1 }, block = { 512, 1, 1 },
  args = { buffer("X"), buffer("Y"), u32(C), i32(%d) } } } }
]]):format(R.CODE[op]),
  }
end

function R.plan(kernel)
  return ([[
-- Default plan: one block of 256 threads per row.
return { launches = { { kernel = "%s", grid = { R, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("Y"), u32(R), u32(C) } } } }
]]):format(kernel)
end

R.targets = F.targets

-- Sets every field of a row scaling in env (the task file's _ENV) but the
-- tolerance, which each task file states. t = {op = "l1"|"l2", norm =
-- (in words)}: the task is <op>norm_f32.
function R.define(env, t)
  local kernel = t.op .. "norm"
  env.name, env.family, env.kernel = kernel .. "_f32", "norm", kernel
  env.tags = { "norm", kernel, "f32", "memory-bound" }
  env.description = R.description(kernel, t.norm)
  env.dims, env.variants, env.buffers, env.inputs = R.dims, R.variants, R.buffers, R.inputs
  env.trials, env.distributions = 2, R.distributions()
  env.reference, env.baseline = R.reference(t.op), R.baseline(t.op)
  -- One operation for the norm and one for the scaling per element, and the
  -- square or absolute value: three (a convention).
  env.flops = function(d) return 3 * d.R * d.C end
  env.targets = R.targets
  env.plan = R.plan(kernel)
end

return R
