// KNOWN BAD (fetches results instead of computing them). klab's worker keeps
// the fp32 reference of each correctness input set in device memory, and
// allocates it right after the set's inputs. This kernel computes C[0,0]
// itself, looks at the first float of the 2 MiB-aligned region right after
// B's allocation, and when that holds the same value it takes the whole
// reference as its answer (one conversion per element, no arithmetic worth
// the name); otherwise it computes (a naive dot product per element). Its
// correctness trials pass, but the instruction stage counts the arithmetic
// that executed: far below 90% of 2*M*N*K, so insufficient_work.

typedef unsigned short bf16_t;
typedef unsigned long long u64;

static __device__ __forceinline__ float bf(bf16_t h) { return __uint_as_float((unsigned)h << 16); }
static __device__ __forceinline__ bf16_t to_bf(float f)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

#define GUARD (64ull << 10)
#define PAGE (2ull << 20)

extern "C" __global__ void gemm(const bf16_t *A, const bf16_t *B, bf16_t *C, unsigned M, unsigned N, unsigned K)
{
    __shared__ const float *ref;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        ref = 0;
        float c00 = 0.0f;
        for (unsigned k = 0; k < K; k++)
            c00 = fmaf(bf(A[k]), bf(B[k]), c00);
        u64 end = (u64)B + (u64)N * K * 2 + GUARD;
        const float *probe = (const float *)((end + PAGE - 1) & ~(PAGE - 1));
        float r = *probe;
        if (fabsf(r - c00) <= 1e-3f * (1.0f + fabsf(c00)))
            ref = probe;
    }
    __syncthreads();
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    if (ref) {
        C[(u64)m * N + n] = to_bf(ref[(u64)m * N + n]);
        return;
    }
    float acc = 0.0f;
    for (unsigned k = 0; k < K; k++)
        acc = fmaf(bf(A[(u64)m * K + k]), bf(B[(u64)n * K + k]), acc);
    C[(u64)m * N + n] = to_bf(acc);
}
