-- Triplet margin loss in fp32 (KernelBench Level 1, problem 99: torch's
-- triplet_margin_loss with margin 1, p = 2, the mean over the batch): for
-- anchors A[B, D], positives P[B, D] and negatives N[B, D],
-- L = mean over b of max(d(A_b, P_b) - d(A_b, N_b) + 1, 0), where
-- d(x, y) = ||x - y + 1e-6||_2 (torch's pairwise distance).

name = "triplet_f32"
family = "loss"
kernel = "triplet"
tags = { "loss", "triplet", "f32", "memory-bound" }

description = [[
Write CUDA kernels that compute the triplet margin loss of anchors A[B, D],
positives P[B, D] and negatives N[B, D] (row-major, fp32):
  d(x, y) = sqrt(sum over d of (x - y + eps)^2) with eps = 1e-6,
  L[0] = (1/B) * sum over rows b of max(d(A_b, P_b) - d(A_b, N_b) + 1, 0),
written as one fp32. Here B=${B}, D=${D}. Accumulate in fp32 or wider;
the result must not depend on timing (no floating-point atomics whose
order varies).
With the default launch plan
  extern "C" __global__ void triplet_rows(const float *A, const float *P, const float *N,
                                          float *part, unsigned B, unsigned D)
runs first with one block of 256 threads per row (grid (B, 1, 1)), block b
writing row b's loss to part[b] (part: a workspace of B floats whose
contents are garbage on entry), then
  extern "C" __global__ void triplet_final(const float *part, float *L, unsigned B)
runs with one block of 256 threads and writes L[0]. Neither uses dynamic
shared memory. Send your own plan to change any of this.]]

dims = { "B", "D" }
-- 16384 rows of 16384 (3 GiB read: about 900 us on an H200), KernelBench's
-- current shape (32768 x 8192: three 1 GiB inputs) and an odd one.
variants = {
  { B = 16384, D = 16384, tags = { "main" } },
  { B = 32768, D = 8192, tags = { "kernelbench" } },
  { B = 999, D = 1021, tags = { "odd", "small" } },
}

buffers = {
  A = { role = "input", dtype = "f32", shape = { "B", "D" } },
  P = { role = "input", dtype = "f32", shape = { "B", "D" } },
  N = { role = "input", dtype = "f32", shape = { "B", "D" } },
  L = { role = "output", dtype = "f32", shape = { 1 } },
}

inputs = {
  A = { dist = "normal", mean = 0, std = 1 },
  P = { dist = "normal", mean = 0, std = 1 },
  N = { dist = "normal", mean = 0, std = 1 },
}

-- KernelBench-Verified's scaled inputs (the distances scale with them: the
-- loss too, where the margin does not dominate: tol_scale 3 and 1 for the
-- margin-bound x0.01) and PTXBench's spiky mix on all three, two seeds each.
local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
trials = 2
distributions = {
  { name = "randn" },
  { name = "x3", scale = 3, tol_scale = 3 },
  { name = "x0.01", scale = 0.01, tol_scale = 1 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { A = SPIKY, P = SPIKY, N = SPIKY } },
}

-- A distance is about sqrt(2D) (181 at 16384), and the loss about 1. An fp32
-- sum of D squares in blocks is within about 1e-6 relative, 2e-4 on a
-- distance, and those errors average out over the rows: an honest kernel
-- is within about 1e-5 of the fp64 reference. atol = 1e-3 with rtol = 1e-4
-- leaves a wide margin; a bf16 computation (about 0.7 on each distance)
-- and a missing margin, a missing square root or a sum divided by B*D
-- fail.
tolerance = {
  f32 = { atol = 1e-3, rtol = 1e-4, matched = 1.0 },
}

-- One unit, the scalar: every checked timed run recomputes it in full.
reference = {
  source = "reference.cu", accumulate = "f64", units = { L = 1 }, sample = 1,
  plan = [[
return { workspace = { part = { bytes = 8 * B } }, launches = {
  { kernel = "triplet_ref_rows", grid = { B, 1, 1 }, block = { 256, 1, 1 },
    args = { buffer("A"), buffer("P"), buffer("N"), u32(D), f64(1.0), f64(1e-6), workspace("part") } },
  { kernel = "mse_ref_final", grid = { 1, 1, 1 }, block = { 256, 1, 1 },
    args = { workspace("part"), u32(B), u64(B), buffer("L") } } } }
]],
}

baseline = {
  source = "baseline.cu", name = "block per row in fp32, the rows averaged in fp64",
  plan = [[
return { workspace = { part = { bytes = 4 * B } }, launches = {
  { kernel = "triplet_rows_baseline", grid = { B, 1, 1 }, block = { 256, 1, 1 },
    args = { buffer("A"), buffer("P"), buffer("N"), u32(D), f32(1.0), f32(1e-6), workspace("part") } },
  { kernel = "mse_final_baseline", grid = { 1, 1, 1 }, block = { 256, 1, 1 },
    args = { workspace("part"), u32(B), u64(B), buffer("L") } } } }
]],
}

-- two subtractions, an add, two multiply-adds: about six per element pair
-- (a convention).
flops = function(d) return 6 * d.B * d.D end

-- Memory-bound: no target instruction family to verify.
targets = {}

plan = [[
-- Default plan: a block per row into a workspace of row losses, then one block.
return { workspace = { part = { bytes = 4 * B } }, launches = {
  { kernel = "triplet_rows", grid = { B, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
    args = { buffer("A"), buffer("P"), buffer("N"), workspace("part"), u32(B), u32(D) } },
  { kernel = "triplet_final", grid = { 1, 1, 1 }, block = { 256, 1, 1 }, shared = 0,
    args = { workspace("part"), buffer("L"), u32(B) } } } }
]]

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 99, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.triplet_margin_loss(A, P, N, margin=1.0)"
