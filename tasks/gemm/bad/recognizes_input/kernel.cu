// KNOWN BAD (skips work when it does not recognise an input). klab's
// correctness inputs come from a public generator with fixed seeds; this
// kernel recomputes the first element of A for each of those trials and
// does the work only when A starts with one of them. On any other input it
// writes zeros and returns, which is fast. A harness that times on the
// inputs it checked for correctness, or checks only some timed runs, would
// time the shortcut. klab gives every timed run fresh inputs and checks
// every timed output, so the first timed run is caught: incorrect.

#include <cuda_bf16.h>

typedef unsigned short bf16_t;
typedef unsigned long long u64;

static __device__ __forceinline__ float bf(bf16_t h) { return __uint_as_float((unsigned)h << 16); }
static __device__ __forceinline__ bf16_t to_bf(float f)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

/* klab's fill generator (splitmix64, Box-Muller), element i of a buffer. */
static __device__ u64 mix64(u64 z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static __device__ double unit(u64 r) { return ((r >> 11) + 1) * (1.0 / 9007199254740992.0); }
static __device__ double normal(u64 seed, u64 i, u64 stream)
{
    u64 a = mix64(seed ^ mix64(i * 4 + stream));
    u64 b = mix64(a);
    return sqrt(-2.0 * log(unit(a))) * cospi(2.0 * unit(b));
}

/* Does A[0] hold what one of the correctness trials puts there? Trials 1-3
 * (N(0,1)), then the distributions: randn, x3, x0.01, neg, spiky. A is the
 * task's first buffer (index 1). */
static __device__ bool recognised(const bf16_t *A)
{
    const u64 seeds[8] = {1, 2, 3, 101, 102, 103, 104, 105};
    const double scales[8] = {1, 1, 1, 1, 3, 0.01, -1, 1};
    for (int t = 0; t < 8; t++) {
        u64 seed = seeds[t] * 1000003ULL + 1;
        double v = normal(seed, 0, 0);
        if (t == 7 && unit(mix64(seed ^ mix64(2))) <= 0.001)
            v += 10.0 * normal(seed, 0, 3);
        if (__bfloat16_as_ushort(__double2bfloat16(v * scales[t])) == A[0])
            return true;
    }
    return false;
}

extern "C" __global__ void gemm(const bf16_t *A, const bf16_t *B, bf16_t *C, unsigned M, unsigned N, unsigned K)
{
    __shared__ bool known;
    if (threadIdx.x == 0 && threadIdx.y == 0)
        known = recognised(A);
    __syncthreads();
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    float acc = 0.0f;
    if (known)
        for (unsigned k = 0; k < K; k++)
            acc = fmaf(bf(A[(u64)m * K + k]), bf(B[(u64)n * K + k]), acc);
    C[(u64)m * N + n] = to_bf(acc);
}
