// fenced_includes: a kernel as public repositories ship them, with its
// host side fenced off. C = A * B^T in bf16 with fp32 sums, 16x16 tiles
// staged through shared memory.
//
// The file is written to build both as a PyTorch extension (nvcc) and with
// NVRTC: the host includes and the binding sit in groups the preprocessor
// skips under NVRTC (#ifndef __CUDACC_RTC__, #if 0), so they are never
// read. klab judges includes where the preprocessor reads them: this
// kernel compiles and is judged like any other (correct, no tensor cores:
// target_not_executed).

#ifndef __CUDACC_RTC__
#include <cstdio>
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#endif

#include <cuda_bf16.h>

#define TILE 16

extern "C" __global__ void gemm(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
                                __nv_bfloat16 *__restrict__ C, unsigned M, unsigned N, unsigned K)
{
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned n = blockIdx.x * TILE + tx;
    unsigned m = blockIdx.y * TILE + ty;
    unsigned bn = blockIdx.x * TILE + ty; // the row of B this thread stages
    float acc = 0.0f;
    for (unsigned k0 = 0; k0 < K; k0 += TILE) {
        unsigned k = k0 + tx;
        As[ty][tx] = (m < M && k < K) ? __bfloat162float(A[(size_t)m * K + k]) : 0.0f;
        Bs[ty][tx] = (bn < N && k < K) ? __bfloat162float(B[(size_t)bn * K + k]) : 0.0f;
        __syncthreads();
        for (unsigned j = 0; j < TILE; ++j)
            acc = fmaf(As[ty][j], Bs[tx][j], acc);
        __syncthreads();
    }
    if (m < M && n < N)
        C[(size_t)m * N + n] = __float2bfloat16_rn(acc);
}

#if 0
// The PyTorch binding, built by setup.py with nvcc; never part of the kernel.
#include <pybind11/pybind11.h>
torch::Tensor gemm_forward(torch::Tensor a, torch::Tensor b)
{
    auto c = torch::empty({a.size(0), b.size(0)}, a.options());
    dim3 block(TILE, TILE), grid((b.size(0) + TILE - 1) / TILE, (a.size(0) + TILE - 1) / TILE);
    gemm<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const __nv_bfloat16 *>(a.data_ptr()), reinterpret_cast<const __nv_bfloat16 *>(b.data_ptr()),
        reinterpret_cast<__nv_bfloat16 *>(c.data_ptr()), a.size(0), b.size(0), a.size(1));
    return c;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &gemm_forward); }
#endif
