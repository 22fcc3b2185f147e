// Known-bad: the plain grouped GEMM of samples/naive_moe_gemm computing
// only whole 16-row tiles of each expert, as a tiled kernel that assumes
// every count is a multiple of its tile: the last count % 16 rows of every
// expert are never written. Right only where every count is a multiple
// of 16.
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
    const unsigned first = expert_offsets[lo], count = expert_offsets[lo + 1] - first;
    if (r - first >= count / 16 * 16)
        return; // the tail of the expert's rows: dropped
    const __nv_bfloat16 *x = X + (size_t)r * K, *w = W + ((size_t)lo * N + n) * K;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; k++)
        acc += __bfloat162float(x[k]) * __bfloat162float(w[k]);
    Y[(size_t)r * N + n] = __float2bfloat16_rn(acc);
}
