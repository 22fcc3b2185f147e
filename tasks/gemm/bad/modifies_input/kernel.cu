// KNOWN BAD (verdict: input_modified). Computes C correctly from the original
// inputs, then the block that finishes last overwrites the first row of A
// (min(K, 256) elements) with zeros, or with 1.0 where an element was already
// +0.0, so the change shows in a checksum whatever the input distribution.
// A must be checked before the output is compared with a reference computed
// from the (now modified) inputs, otherwise this reads as "incorrect".

typedef unsigned short bf16_t;

static __device__ __forceinline__ float bf16_to_f32(bf16_t h)
{
    return __uint_as_float((unsigned)h << 16);
}

static __device__ __forceinline__ bf16_t f32_to_bf16(float f)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

/* The exact dot product of row m of A and row n of B, fp32, k in order. */
static __device__ __forceinline__ float dot_row(const bf16_t *A, const bf16_t *B,
                                                unsigned m, unsigned n, unsigned K)
{
    const bf16_t *a = A + (size_t)m * K;
    const bf16_t *b = B + (size_t)n * K;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; ++k)
        acc = fmaf(bf16_to_f32(a[k]), bf16_to_f32(b[k]), acc);
    return acc;
}

__device__ unsigned g_done; /* blocks of the current launch that finished */

extern "C" __global__ void gemm(bf16_t *A, const bf16_t *__restrict__ B,
                                bf16_t *__restrict__ C,
                                unsigned M, unsigned N, unsigned K)
{
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m < M && n < N)
        C[(size_t)m * N + n] = f32_to_bf16(dot_row(A, B, m, n, K));

    /* only after every block has read A */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        const unsigned nblocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(&g_done, 1u) == nblocks - 1) {
            __threadfence();
            const unsigned count = K < 256u ? K : 256u;
            for (unsigned k = 0; k < count; ++k)
                A[k] = (A[k] == (bf16_t)0) ? (bf16_t)0x3F80u : (bf16_t)0;
            g_done = 0u;
            __threadfence();
        }
    }
}
