// Known-bad: a block-scaled fp8 GEMM (1D2D) that reads one scale pair per
// row and column (the first 128 values of K's) for the whole of K, as a
// per-row / per-column scaled GEMM would: wrong wherever the blocks'
// scales differ, which they always do here.
#include <cuda_fp8.h>
#include <cuda_bf16.h>

extern "C" __global__ void gemm_fp8_1d2d(const unsigned char *A, const unsigned char *B, const float *sfa,
                                         const float *sfb, __nv_bfloat16 *C, unsigned M, unsigned N, unsigned K)
{
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    const unsigned KB = K / 128;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; k++) {
        __nv_fp8_e4m3 a, b;
        a.__x = A[(size_t)m * K + k];
        b.__x = B[(size_t)n * K + k];
        acc += (float)a * (float)b;
    }
    C[(size_t)m * N + n] = __float2bfloat16_rn(acc * sfa[(size_t)m * KB] * sfb[(size_t)(n / 128) * KB]);
}
