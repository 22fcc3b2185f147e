// KNOWN BAD (verdict: input_modified). Computes every C[b] correctly from
// the original inputs (as samples/naive_bmm), then the block that finishes
// last flips the first min(K, 256) elements of the last member's first row
// of A: to zero, or to 1.0 where an element was already +0.0, so the change
// shows whatever the input distribution. Every block has read A by then, so
// C stays right: only the input check can catch it.

#include <cuda_bf16.h>

__device__ unsigned g_done; /* blocks of the current launch that finished */

extern "C" __global__ void bmm(__nv_bfloat16 *A, const __nv_bfloat16 *__restrict__ B,
                               __nv_bfloat16 *__restrict__ C, unsigned BATCH, unsigned M, unsigned N, unsigned K)
{
    unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    size_t b = blockIdx.z;
    if (m < M && n < N && b < BATCH) {
        const __nv_bfloat16 *a = A + (b * M + m) * K;
        const __nv_bfloat16 *w = B + (b * N + n) * K;
        float acc = 0.0f;
        for (unsigned k = 0; k < K; ++k)
            acc = fmaf(__bfloat162float(a[k]), __bfloat162float(w[k]), acc);
        C[(b * M + m) * N + n] = __float2bfloat16_rn(acc);
    }

    /* only after every block has read A */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        const unsigned nblocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(&g_done, 1u) == nblocks - 1) {
            __threadfence();
            unsigned short *row = (unsigned short *)(A + (size_t)(BATCH - 1) * M * K);
            const unsigned count = K < 256u ? K : 256u;
            for (unsigned k = 0; k < count; ++k)
                row[k] = row[k] == 0 ? (unsigned short)0x3F80u : (unsigned short)0;
            g_done = 0u;
            __threadfence();
        }
    }
}
