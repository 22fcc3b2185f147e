// A plain block-scaled fp8 GEMM for both recipes (one entry point each): a
// thread per element of C, the fp32 sum of each 128 raw e4m3 products
// scaled by the block's two scales and added. No tensor cores.
#include <cuda_fp8.h>
#include <cuda_bf16.h>

static __device__ float e4m3(unsigned char x)
{
    __nv_fp8_e4m3 v;
    v.__x = x;
    return (float)v;
}

static __device__ void gemm(const unsigned char *A, const unsigned char *B, const float *sfa, const float *sfb,
                            __nv_bfloat16 *C, unsigned M, unsigned N, unsigned K, bool b2d)
{
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    const unsigned KB = K / 128;
    float acc = 0.0f;
    for (unsigned kb = 0; kb < KB; kb++) {
        float part = 0.0f;
        for (unsigned k = kb * 128; k < kb * 128 + 128; k++)
            part += e4m3(A[(size_t)m * K + k]) * e4m3(B[(size_t)n * K + k]);
        acc += part * sfa[(size_t)m * KB + kb] * sfb[(size_t)(b2d ? n / 128 : n) * KB + kb];
    }
    C[(size_t)m * N + n] = __float2bfloat16_rn(acc);
}

extern "C" __global__ void gemm_fp8_1d2d(const unsigned char *A, const unsigned char *B, const float *sfa,
                                         const float *sfb, __nv_bfloat16 *C, unsigned M, unsigned N, unsigned K)
{
    gemm(A, B, sfa, sfb, C, M, N, K, true);
}

extern "C" __global__ void gemm_fp8_1d1d(const unsigned char *A, const unsigned char *B, const float *sfa,
                                         const float *sfb, __nv_bfloat16 *C, unsigned M, unsigned N, unsigned K)
{
    gemm(A, B, sfa, sfb, C, M, N, K, false);
}
