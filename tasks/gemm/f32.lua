-- GEMM, fp32: C = A·Bᵀ with A[M,K], B[N,K], C[M,N], row-major, all fp32.
-- Same shape set as the bf16 task. As in KernelBench-Verified, the cuBLASLt
-- baseline is timed twice: strict FP32 (CUBLAS_COMPUTE_32F) and TF32
-- (CUBLAS_COMPUTE_32F_FAST_TF32, what PyTorch uses with
-- set_float32_matmul_precision('high')); both are recorded.
name = "gemm_f32"
family = "gemm"
kernel = "gemm"
tags = { "gemm", "f32" }

description = [[
Write a CUDA kernel named `gemm` that computes C = A·Bᵀ for row-major matrices
A[M,K] and B[N,K] in fp32, writing C[M,N] in fp32, as accurate as an fp32
dot product (TF32 tensor cores alone are not). Here M=${M}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void gemm(const float *A, const float *B, float *C,
                                  unsigned M, unsigned N, unsigned K)
launched with a grid of (ceil(N/128), ceil(M/128), 1) blocks of 256 threads
and no dynamic shared memory: block (x, y) owns the 128x128 tile of C at rows
128*y and columns 128*x. Send your own plan to change any of this (tensor
maps, clusters, dynamic shared memory, several launches).]]

dims = { "M", "N", "K" }
variants = {
  { M = 8192, N = 7168, K = 5120, tags = { "ptxbench" } },
  { M = 4096, N = 4096, K = 4096, tags = { "square" } },
  { M = 8192, N = 8192, K = 8192, tags = { "square" } },
  { M = 65536, N = 256, K = 1024, tags = { "tall_skinny" } },
  { M = 16384, N = 128, K = 7168, tags = { "tall_skinny" } },
  { M = 1, N = 7168, K = 5120, tags = { "small" } },
  { M = 16, N = 7168, K = 5120, tags = { "small" } },
  { M = 128, N = 4096, K = 4096, tags = { "small" } },
  { M = 8191, N = 7169, K = 5120, tags = { "odd" } },
  { M = 1000, N = 1000, K = 1000, tags = { "odd" } },
  { M = 4097, N = 4095, K = 4099, tags = { "odd" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}

buffers = {
  A = { role = "input", dtype = "f32", shape = { "M", "K" } },
  B = { role = "input", dtype = "f32", shape = { "N", "K" } },
  C = { role = "output", dtype = "f32", shape = { "M", "N" } },
}

inputs = {
  A = { dist = "normal", mean = 0, std = 1 },
  B = { dist = "normal", mean = 0, std = 1 },
}

-- KernelBench-Verified's hidden suite (x1, x3, x0.01, x-1 on float inputs)
-- plus PTXBench's spiky mix N(0,1) + N(0,100)·Bern(0.001) (variance 100,
-- so spike_std = 10). C scales with the product of the input scales, and so
-- does every accumulation error, so atol is scaled by scale^2 (tol_scale);
-- rtol needs no scaling.
trials = 3
distributions = {
  { name = "randn" },
  { name = "x3", scale = 3, tol_scale = 9 },
  { name = "x0.01", scale = 0.01, tol_scale = 1e-4 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { A = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 },
                               B = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
}

-- KernelBench-Verified's fp32 tolerance, atol = rtol = 1e-3: above the
-- error of an fp32 sum in any order (a sequential sum at K=5120 on N(0,1)
-- inputs drifts by about u·K/√6 ≈ 1.3e-4, blocked sums less), far below the
-- error of TF32 inputs (10-bit mantissas: about 4e-4·√K ≈ 3e-2 absolute
-- here). So TF32 tensor cores alone fail; split schemes such as 3xTF32 pass.
tolerance = {
  f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 },
}

reference = { name = "gemm_ref", op = "nt", accumulate = "f64" }
baseline = { lib = "cublaslt", op = "matmul", layout = "nt", modes = { "fp32", "tf32" } }

flops = function(d) return 2 * d.M * d.N * d.K end
bytes = function(d) return 4 * (d.M * d.K + d.N * d.K + d.M * d.N) end

-- Tensor cores have no fp32 inputs; wgmma/tcgen05 reach fp32 accuracy only
-- through split-TF32 schemes, so only TMA is a target (tensor cores are
-- welcome, not required).
targets = {
  sm_90a = { "tma" },
  sm_100a = { "tma" },
}

plan = [[
-- Default plan: one launch of `gemm`, a block of 256 threads per 128x128 tile of C.
local M, N, K = dims.M, dims.N, dims.K
return {
  launches = {
    { kernel = "gemm",
      grid = { (N + 127) // 128, (M + 127) // 128, 1 },
      block = { 256, 1, 1 },
      shared = 0,
      args = { { buffer = "A" }, { buffer = "B" }, { buffer = "C" },
               { u32 = M }, { u32 = N }, { u32 = K } } },
  },
}
]]
