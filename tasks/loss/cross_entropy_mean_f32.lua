-- Cross-entropy as KernelBench's Level 1 problem 95 computes it
-- (torch.nn.functional.cross_entropy with its default mean reduction): fp32
-- logits X[R, C], integer targets T[R] (int32 where torch's are int64), and
-- L = the mean over rows of logsumexp(X[r, :]) - X[r, T[r]], one fp32.
-- cross_entropy_bf16 is the per-row relative. The reference takes every
-- row's loss in fp64, then their mean; the baseline is a block per row in
-- fp32 (baseline.cu, ce_f32_baseline) and the fp64 mean of the rows.
local CE = include "_cross_entropy.lua"

name = "cross_entropy_mean_f32"
family = "loss"
kernel = "cross_entropy_mean"
tags = { "loss", "cross_entropy", "f32", "memory-bound" }

description = [=[
Write CUDA kernels that compute the mean cross-entropy loss of logits
X[R, C] (row-major, fp32) against target classes T[R] (int32,
0 <= T[r] < C):
  L[0] = (1/R) * sum over r of ( log(sum_c exp(X[r, c])) - X[r, T[r]] ),
written as one fp32. Rows may be shifted far from zero or spread wider than
exp's range in fp32: go through the row maximum. The result must not
depend on timing (no floating-point atomics whose order varies). Here
R=${R}, C=${C}.
With the default launch plan
  extern "C" __global__ void cross_entropy_mean_rows(const float *X, const int *T, float *part,
                                                     unsigned C)
runs first with one block of 256 threads per row (grid (R, 1, 1)), block r
writing row r's loss to part[r] (part: a workspace of R floats whose
contents are garbage on entry), then
  extern "C" __global__ void cross_entropy_mean_final(const float *part, float *L, unsigned R)
runs with one block of 256 threads and writes L[0]. Neither uses dynamic
shared memory. Send your own plan to change any of this.]=]

dims = { "R", "C" }

-- 32768 rows of 4096 classes (KernelBench's current shape, 512 MiB of
-- logits), 8192 of 32768 (1 GiB) and an odd one.
variants = {
  { R = 32768, C = 4096, tags = { "main", "kernelbench" } },
  { R = 8192, C = 32768, tags = { "main", "vocab" } },
  { R = 999, C = 1021, tags = { "odd", "small" } },
}

buffers = {
  X = { role = "input", dtype = "f32", shape = { "R", "C" } },
  T = { role = "input", dtype = "i32", shape = { "R" } },
  L = { role = "output", dtype = "f32", shape = { 1 } },
}
CE.define(_ENV)

-- The mean of losses near log(C) ≈ 8 (up to a few hundred on the wide
-- logits): each row's fp32 logsumexp is within about 1e-6 absolute of the
-- fp64 one and their mean's fp32 sum over R rows in blocks within about
-- 1e-6 relative: rtol = 1e-5 leaves a margin of ten; atol = 1e-5 only
-- matters near zero. Exponentials summed in bf16, a missing maximum or a
-- sum where the mean is due fails.
tolerance = {
  f32 = { atol = 1e-5, rtol = 1e-5, matched = 1.0 },
}

-- One unit, the scalar: every checked timed run recomputes it in full.
reference = {
  source = "reference.cu", accumulate = "f64", units = { L = 1 }, sample = 1,
  derived = { "T" }, derive = CE.DERIVE,
  plan = [[
return { workspace = { part = { bytes = 8 * R } }, launches = {
  { kernel = "ce_rows_ref", grid = { R, 1, 1 }, block = { 256, 1, 1 },
    args = { buffer("X"), buffer("T"), workspace("part"), u32(C) } },
  { kernel = "mse_ref_final", grid = { 1, 1, 1 }, block = { 256, 1, 1 },
    args = { workspace("part"), u32(R), u64(R), buffer("L") } } } }
]],
}

baseline = {
  source = "baseline.cu", name = "block-per-row cross-entropy in fp32, then the fp64 mean of the rows",
  plan = [[
return { workspace = { part = { bytes = 4 * R } }, launches = {
  { kernel = "ce_f32_baseline", grid = { R, 1, 1 }, block = { 512, 1, 1 },
    args = { buffer("X"), buffer("T"), workspace("part"), u32(C) } },
  { kernel = "mse_final_baseline", grid = { 1, 1, 1 }, block = { 256, 1, 1 },
    args = { workspace("part"), u32(R), u64(R), buffer("L") } } } }
]],
}

-- max, subtract, exp, add per element, in fp32 (the first input in the
-- buffer order is the int32 T, hence precision).
flops = function(d) return 4 * d.R * d.C end
precision = "f32"
targets = {}

plan = [[
-- Default plan: a block per row into a workspace, then one block.
return { workspace = { part = { bytes = 4 * R } }, launches = {
  { kernel = "cross_entropy_mean_rows", grid = { R, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
    args = { buffer("X"), buffer("T"), workspace("part"), u32(C) } },
  { kernel = "cross_entropy_mean_final", grid = { 1, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
    args = { workspace("part"), buffer("L"), u32(R) } } } }
]]

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 95, exact = true, note = "int32 targets where torch's are int64" }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.cross_entropy(X, T)"
