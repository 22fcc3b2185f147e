// KNOWN BAD (verdict: incorrect, on the trials after the first).
//
// Memoises its first result in module globals that survive between launches:
// the first launch (per shape) computes C correctly and also copies it into
// g_cache; every later launch with the same M, N, K replays g_cache without
// looking at A and B. So the first trial passes, a second run of the same
// inputs agrees with it, and a later trial with fresh inputs gets the stale
// output of the first. A harness that reloads the module between trials would
// not see this; klab must run all trials of a candidate in one module instance.
//
// Protocol: every block reads g_valid/g_dims when it starts; the block that
// finishes last (counted in g_done) publishes the cache for the next launch and
// resets the counter. Launches on one stream are ordered, so the flag never
// changes while a launch reads it. Outputs larger than CACHE_ELEMS are computed
// honestly every time (the cheat then needs a smaller shape to show).

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

#define CACHE_ELEMS (1u << 26) /* 64 Mi elements = 128 MiB, >= 8192 x 7168 */

__device__ bf16_t g_cache[CACHE_ELEMS];
__device__ unsigned g_valid;   /* 1 once g_cache holds a result for g_dims */
__device__ unsigned g_dims[3];
__device__ unsigned g_done;    /* blocks of the current launch that finished */

extern "C" __global__ void gemm(const bf16_t *__restrict__ A,
                                const bf16_t *__restrict__ B,
                                bf16_t *__restrict__ C,
                                unsigned M, unsigned N, unsigned K)
{
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    __shared__ int replay;
    const bool fits = (unsigned long long)M * N <= CACHE_ELEMS;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        volatile unsigned *v = &g_valid;
        volatile unsigned *dd = g_dims;
        replay = fits && *v == 1u && dd[0] == M && dd[1] == N && dd[2] == K;
    }
    __syncthreads();

    if (m < M && n < N) {
        const size_t i = (size_t)m * N + n;
        if (replay) {
            C[i] = g_cache[i];
        } else {
            const bf16_t c = f32_to_bf16(dot_row(A, B, m, n, K));
            C[i] = c;
            if (fits)
                g_cache[i] = c;
        }
    }

    /* last block out publishes the cache */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        const unsigned nblocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(&g_done, 1u) == nblocks - 1) {
            __threadfence();
            if (!replay && fits) {
                g_dims[0] = M;
                g_dims[1] = N;
                g_dims[2] = K;
                g_valid = 1u;
            }
            g_done = 0u;
            __threadfence();
        }
    }
}
