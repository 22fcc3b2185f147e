-- A diagonal matrix times a matrix in fp32 (KernelBench Level 1, problem
-- 12): Y = diag(a)·B, Y[i, j] = a[i]·B[i, j], a row scaling. No library in
-- klab has it as such (a GEMM with diag(a) in full does N times the work),
-- so the task ships its baseline (baseline.cu).

name = "diag_matmul_f32"
family = "matmul"
kernel = "diag_matmul"
tags = { "matmul", "diagonal", "f32", "memory-bound" }

description = [[
Write a CUDA kernel named `diag_matmul` that multiplies a diagonal matrix,
given by its diagonal a[N], by a matrix B[N, M] (row-major, fp32):
  Y[i, j] = a[i] * B[i, j],
written as fp32 Y[N, M]. Here N=${N}, M=${M}.
With the default launch plan the kernel is
  extern "C" __global__ void diag_matmul(const float *a, const float *B, float *Y,
                                         unsigned N, unsigned M)
launched with one thread per element of Y: a grid of (ceil(N*M/256), 1, 1)
blocks of 256 threads and no dynamic shared memory. Send your own plan to
change any of this.]]

dims = { "N", "M" }
-- 16384 x 16384 (1 GiB read and written, about 500 us on an H200; the
-- KernelBench shape, 4096 x 4096, takes under 50 us), and an odd one.
variants = {
  { N = 16384, M = 16384, tags = { "main" } },
  { N = 4096, M = 4096, tags = { "kernelbench" } },
  { N = 999, M = 1021, tags = { "odd", "small" } },
}

buffers = {
  a = { role = "input", dtype = "f32", shape = { "N" } },
  B = { role = "input", dtype = "f32", shape = { "N", "M" } },
  Y = { role = "output", dtype = "f32", shape = { "N", "M" } },
}

inputs = {
  a = { dist = "normal", mean = 0, std = 1 },
  B = { dist = "normal", mean = 0, std = 1 },
}

-- KernelBench-Verified's scaled inputs (both factors scaled: the product
-- by the square, tol_scale) and PTXBench's spiky mix, two seeds each.
local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
trials = 2
distributions = {
  { name = "randn" },
  { name = "x3", scale = 3, tol_scale = 9 },
  { name = "x0.01", scale = 0.01, tol_scale = 1e-4 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { a = SPIKY, B = SPIKY } },
}

-- One fp32 product of two fp32 values is the fp64 one rounded once: an
-- honest kernel is within half an ulp, 6e-8 relative. rtol = 1e-6 leaves a
-- margin and fails a bf16 or fp16 product; atol only matters at zero.
tolerance = {
  f32 = { atol = 1e-7, rtol = 1e-6, matched = 1.0 },
}

-- A unit is one element of Y.
reference = {
  source = "reference.cu", accumulate = "f64", units = { Y = 1 },
  plan = [[
local n = nsample > 0 and nsample or N * M
return { launches = { { kernel = "diag_ref", grid = { math.min(cdiv(n, 256), 65536), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("a"), buffer("B"), buffer("positions"), u64(n), buffer("Y"), u32(M) } } } }
]],
}

baseline = {
  source = "baseline.cu", name = "grid-stride row scaling, fp32",
  plan = [[
local n = N * M
return { launches = { { kernel = "diag_baseline", grid = { math.min(cdiv(n, 1024), 65536), 1, 1 },
  block = { 256, 1, 1 }, args = { buffer("a"), buffer("B"), buffer("Y"), u64(n), u32(M) } } } }
]],
}

-- One multiply per element of Y.
flops = function(d) return d.N * d.M end

-- Memory-bound: no target instruction family to verify.
targets = {}

plan = [[
-- Default plan: one thread per element of Y, blocks of 256.
local n = N * M
return { launches = { { kernel = "diag_matmul", grid = { cdiv(n, 256), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("a"), buffer("B"), buffer("Y"), u32(N), u32(M) } } } }
]]

-- Why the baseline stays short of the physical floor (docs/tasks.md gives
-- its fraction on an H200).
baseline.floor_note = "a thread per element without vector loads: about 60% of the DRAM floor on an H200; a vectorized kernel is owed"

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 12, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.diag(a) @ B"
