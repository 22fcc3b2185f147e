// KNOWN BAD (verdict: incorrect). Does the real work only on the first
// REAL_CALLS launches of the module, counted in a __device__ counter; later
// launches return without writing, so C keeps the host's poison. Correctness
// trials that come first may pass; later trials, or the check of the outputs
// of timed runs, must catch it.
//
// Every block reads g_calls when it starts; the block that finishes last
// (counted in g_done) increments g_calls and resets g_done, so all blocks of a
// launch agree on the launch number.

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

#define REAL_CALLS 3u

__device__ unsigned g_calls; /* launches completed so far */
__device__ unsigned g_done;  /* blocks of the current launch that finished */

extern "C" __global__ void gemm(const bf16_t *__restrict__ A,
                                const bf16_t *__restrict__ B,
                                bf16_t *__restrict__ C,
                                unsigned M, unsigned N, unsigned K)
{
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    __shared__ int work;
    if (threadIdx.x == 0 && threadIdx.y == 0)
        work = *(volatile unsigned *)&g_calls < REAL_CALLS;
    __syncthreads();

    if (work && m < M && n < N)
        C[(size_t)m * N + n] = f32_to_bf16(dot_row(A, B, m, n, K));

    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        const unsigned nblocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(&g_done, 1u) == nblocks - 1) {
            __threadfence();
            g_calls = g_calls + 1u;
            g_done = 0u;
            __threadfence();
        }
    }
}
