-- What the pointwise losses share (huber.lua, hinge.lua): L = the mean over
-- every element of f(P, T) for predictions P[R, C] and targets T[R, C] in
-- fp32, one scalar, as KernelBench's Level 1 losses compute it. The
-- reference adds f in fp64 (reference.cu, loss_ref_partial, then the MSE's
-- final step); the baseline is the shipped two-pass kernel of baseline.cu
-- (loss_partial_baseline, then the MSE's final step): cuDNN has no engine
-- for a pointwise graph reduced to one value (docs/tasks.md, mse_f32).
local F = {}

-- The operation codes of reference.cu and baseline.cu.
F.CODE = { huber = 0, hinge = 1, kl_div = 2 }

F.dims = { "R", "C" }

-- As mse_f32: the main shape reads 2 GiB, the odd count (1019979) is not a
-- multiple of 2, 4 or 8.
F.variants = {
  { R = 16384, C = 16384, tags = { "main" } },
  { R = 999, C = 1021, tags = { "odd", "small" } },
}

F.buffers = {
  P = { role = "input", dtype = "f32", shape = { "R", "C" } },
  T = { role = "input", dtype = "f32", shape = { "R", "C" } },
  L = { role = "output", dtype = "f32", shape = { 1 } },
}

-- per: what the sum is divided by, in the description's words (default the
-- element count); targets: T's shape in words (default "T[R, C]"); cols:
-- the partial kernel also takes C (targets per column).
function F.description(kernel, formula, per, targets, cols)
  return ([[
Write CUDA kernels that compute a loss of predictions P[R, C] against
%s (row-major, fp32):
  L[0] = %s of %s,
written as one fp32. Here R=${R}, C=${C}. Accumulate in fp32 or wider;
do not round the inputs to a narrower type. The result must not depend
on timing: two runs on the same inputs must give the same bits (no
floating-point atomics whose order varies).
With the default launch plan
  extern "C" __global__ void %s_partial(const float *P, const float *T, float *part,
                                        unsigned long long n%s)
runs first with a grid of (1024, 1, 1) blocks of 256 threads, block b
writing its partial sum to part[b] (part: a workspace of 1024 floats whose
contents are garbage on entry), then
  extern "C" __global__ void %s_final(const float *part, float *L, unsigned long long d)
runs with one block of 256 threads and writes L[0] (d: what the sum is
divided by). Neither uses dynamic shared memory. Send your own plan to
change any of this.]]):format(targets or "targets T[R, C]", per or "(1/n) * sum over all n = R*C elements", formula,
    kernel, cols and ", unsigned long long C" or "", kernel)
end

-- One unit, the scalar: every checked timed run recomputes it in full.
-- divisor: a Lua expression of the plan ("n", the element count, or "R",
-- the rows); derived: the inputs the derive plan rewrites; tn: the number
-- of targets, a plan expression ("n", the default, or "C": one per column).
function F.reference(op, derive, divisor, derived, tn)
  return {
    source = "reference.cu", accumulate = "f64", units = { L = 1 }, sample = 1,
    derived = derive and (derived or { "T" }) or nil, derive = derive,
    plan = ([[
local n, g = R * C, 1024
local d = %s
return { workspace = { part = { bytes = 8 * g } }, launches = {
  { kernel = "loss_ref_partial", grid = { g, 1, 1 }, block = { 256, 1, 1 },
    args = { buffer("P"), buffer("T"), u64(n), workspace("part"), i32(%d), u64(%s) } },
  { kernel = "mse_ref_final", grid = { 1, 1, 1 }, block = { 256, 1, 1 },
    args = { workspace("part"), u32(g), u64(d), buffer("L") } } } }
]]):format(divisor or "n", F.CODE[op], tn or "n"),
  }
end

function F.baseline(op, divisor, tn)
  return {
    source = "baseline.cu", name = "two-pass " .. op .. " loss: block partial sums, fp64 total",
    plan = ([[
local n, g = R * C, 1056
local d = %s
return { workspace = { part = { bytes = 4 * g } }, launches = {
  { kernel = "loss_partial_baseline", grid = { g, 1, 1 }, block = { 256, 1, 1 },
    args = { buffer("P"), buffer("T"), u64(n), workspace("part"), i32(%d), u64(%s) } },
  { kernel = "mse_final_baseline", grid = { 1, 1, 1 }, block = { 256, 1, 1 },
    args = { workspace("part"), u32(g), u64(d), buffer("L") } } } }
]]):format(divisor or "n", F.CODE[op], tn or "n"),
  }
end

function F.plan(kernel, divisor, cols)
  return ([[
-- Default plan: 1024 blocks of partial sums into a workspace, then one block.
local n, g = R * C, 1024
local d = %s
return { workspace = { part = { bytes = 4 * g } }, launches = {
  { kernel = "%s_partial", grid = { g, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
    args = { buffer("P"), buffer("T"), workspace("part"), u64(n)%s } },
  { kernel = "%s_final", grid = { 1, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
    args = { workspace("part"), buffer("L"), u64(d) } } } }
]]):format(divisor or "n", kernel, cols and ", u64(C)" or "", kernel)
end

-- Memory-bound: no target instruction family to verify.
F.targets = {}

F.inputs = {
  P = { dist = "normal", mean = 0, std = 1 },
  T = { dist = "normal", mean = 0, std = 1 },
}

-- Sets the fields of a pointwise loss in env (the task file's _ENV) but its
-- distributions and tolerance, which each task file states. t = {op =,
-- formula = (f in words), flops = per element, derive = (the reference's
-- derive plan, or nil), derived = (the inputs it rewrites, default T),
-- divisor = (a plan expression: "n", the default, or "R"), per = (the
-- description's words for it), column_targets = (true: T[C], one target per
-- column broadcast over the rows), variants = (default F.variants)}: the
-- task is <op>_f32.
function F.define(env, t)
  env.name, env.family, env.kernel = t.op .. "_f32", "loss", t.op
  env.tags = { "loss", t.op, "f32", "memory-bound" }
  local ct = t.column_targets
  env.description = F.description(t.op, t.formula, t.per,
    ct and "targets T[C], one per column (torch's broadcast of a [C] vector over the R rows)" or nil, ct)
  env.dims, env.variants, env.inputs = F.dims, t.variants or F.variants, F.inputs
  env.buffers = F.buffers
  if ct then
    env.buffers = { P = F.buffers.P, L = F.buffers.L, T = { role = "input", dtype = "f32", shape = { "C" } } }
  end
  env.trials = 2
  env.reference = F.reference(t.op, t.derive, t.divisor, t.derived, ct and "C" or nil)
  env.baseline = F.baseline(t.op, t.divisor, ct and "C" or nil)
  env.flops = function(d) return t.flops * d.R * d.C end
  env.targets = F.targets
  env.plan = F.plan(t.op, t.divisor, ct)
end

return F
