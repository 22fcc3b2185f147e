-- Tall-skinny GEMM, bf16: C = A·Bᵀ where one side is thin. Two kinds: a
-- thin output (M x 64 with a deep K: the whole of A is read once, a
-- bandwidth problem) and a tall-skinny product of two 16-column operands
-- whose product is a large square (writing C is the cost). KernelBench's
-- problem 9 is A·B in fp32: matmul_nn_f32 poses it.
-- fp32 accumulation, bf16 in and out. See _family.lua.
local mm = include "_family.lua"

name = "tall_skinny_bf16"
family = "matmul"
kernel = "gemm"
tags = { "matmul", "tall_skinny", "bf16" }
description = [[
Write a CUDA kernel named `gemm` that computes C = A·Bᵀ for row-major
matrices A[M,K] and B[N,K] in bf16 (__nv_bfloat16 bit patterns), accumulating
in fp32 and writing C[M,N] in bf16 (round to nearest even). The shapes are
tall and skinny: here M=${M}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void gemm(const __nv_bfloat16 *A, const __nv_bfloat16 *B, __nv_bfloat16 *C,
                                  unsigned M, unsigned N, unsigned K)
launched with a grid of (ceil(N/128), ceil(M/128), 1) blocks of 256 threads
and no dynamic shared memory: block (x, y) owns the 128x128 tile of C at rows
128*y and columns 128*x.
]] .. mm.own_plan

dims = { "M", "N", "K" }

-- 65536x64x4096 reads 512 MiB of A (about 140 us at 4 TB/s);
-- 16384x16384x16 writes 512 MiB of C. Then a small odd shape.
variants = {
  { M = 65536, N = 64, K = 4096, tags = { "main", "thin_output" } },
  { M = 16384, N = 16384, K = 16, tags = { "main", "thin_operands" } },
  { M = 1001, N = 40, K = 777, tags = { "odd", "small" } },
}

buffers = {
  A = { role = "input", dtype = "bf16", shape = { "M", "K" } },
  B = { role = "input", dtype = "bf16", shape = { "N", "K" } },
  C = { role = "output", dtype = "bf16", shape = { "M", "N" } },
}
inputs = mm.inputs { "A", "B" }
trials = mm.trials
distributions = mm.distributions("A", "B")
tolerance = mm.bf16_tolerance

reference = mm.reference { a = "A", b = "B", c = "C" }
baseline = mm.baseline {}
flops = mm.flops
work = mm.work
targets = mm.targets
plan = mm.tile_plan("gemm", "1", 'buffer("A"), buffer("B"), buffer("C"), u32(M), u32(N), u32(K)')
