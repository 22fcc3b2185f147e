// A plain grouped GEMM: a thread per element of Y. The row's expert by
// binary search over expert_offsets, then an fp32 dot product of the row of
// X with the expert's row n of W. Correct, no tensor cores.
#include <cuda_bf16.h>

extern "C" __global__ void moe_grouped_gemm(const __nv_bfloat16 *X, const __nv_bfloat16 *W,
                                            const int *expert_offsets, __nv_bfloat16 *Y, unsigned M, unsigned E,
                                            unsigned N, unsigned K)
{
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= M || n >= N)
        return;
    unsigned lo = 0, hi = E - 1; // the largest e with expert_offsets[e] <= r
    while (lo < hi) {
        const unsigned mid = (lo + hi + 1) / 2;
        if ((unsigned)expert_offsets[mid] <= r)
            lo = mid;
        else
            hi = mid - 1;
    }
    const __nv_bfloat16 *x = X + (size_t)r * K, *w = W + ((size_t)lo * N + n) * K;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; k++)
        acc += __bfloat162float(x[k]) * __bfloat162float(w[k]);
    Y[(size_t)r * N + n] = __float2bfloat16_rn(acc);
}
