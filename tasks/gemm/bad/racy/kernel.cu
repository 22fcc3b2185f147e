// KNOWN BAD (verdict: nondeterministic).
//
// Two blocks compute every 16x16 tile of C and both write it, with no
// synchronisation: block 2t rounds its fp32 sums to nearest, block 2t + 1
// rounds them toward zero. Both results are within one bf16 ulp of the exact
// product (inside any sensible bf16 tolerance), and they differ in about half
// of the elements. Before its store each thread waits a pseudo-random number of
// cycles seeded from %globaltimer, %clock64 and its coordinates, so which block
// writes an element last changes from run to run: the same inputs run twice
// give bitwise different outputs. Only the determinism check can catch it.

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

static __device__ __forceinline__ bf16_t f32_to_bf16_rz(float f)
{
    unsigned short h;
    asm("cvt.rz.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

extern "C" __global__ void gemm(const bf16_t *__restrict__ A,
                                const bf16_t *__restrict__ B,
                                bf16_t *__restrict__ C,
                                unsigned M, unsigned N, unsigned K)
{
    const unsigned copy = blockIdx.x & 1u;
    const unsigned n = (blockIdx.x >> 1) * blockDim.x + threadIdx.x;
    const unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    const float acc = dot_row(A, B, m, n, K);
    const bf16_t v = copy ? f32_to_bf16_rz(acc) : f32_to_bf16(acc);

    unsigned long long t, c;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    unsigned h = (unsigned)(t ^ (t >> 32)) * 2654435761u ^ (unsigned)c * 40503u ^
                 (m * 7919u + n * 104729u + copy * 15485863u);
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const long long delay = (long long)(h % 8192u); /* up to ~4 us */
    const long long start = clock64();
    while (clock64() - start < delay) {
    }
    C[(size_t)m * N + n] = v;
}
