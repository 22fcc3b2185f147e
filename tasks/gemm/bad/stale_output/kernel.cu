// KNOWN BAD (relies on the output keeping old values). Skips the work when
// C already looks written (16 sampled elements are all finite): a harness
// that leaves the previous run's output in place between timed runs would
// time launches that do nothing, and a check of a run on the same inputs
// (or one where the baseline wrote into the candidate's output) would still
// pass. klab poisons the outputs with NaN before every run, timed ones too,
// so the kernel always computes (a naive dot product per element) and is
// timed as what it is. Launch: 16x16 blocks over C, as samples/naive.

typedef unsigned short bf16_t;
typedef unsigned long long u64;

static __device__ __forceinline__ float bf(bf16_t h) { return __uint_as_float((unsigned)h << 16); }
static __device__ __forceinline__ bf16_t to_bf(float f)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

extern "C" __global__ void gemm(const bf16_t *A, const bf16_t *B, bf16_t *C, unsigned M, unsigned N, unsigned K)
{
    __shared__ int written;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        written = 1;
        u64 total = (u64)M * N;
        for (u64 j = 0; j < 16; j++) {
            unsigned bits = (unsigned)C[j * (total / 16)] << 16;
            if ((bits & 0x7f800000u) == 0x7f800000u)   /* NaN or Inf: the poison */
                written = 0;
        }
    }
    __syncthreads();
    if (written)
        return;
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; k++)
        acc = fmaf(bf(A[(u64)m * K + k]), bf(B[(u64)n * K + k]), acc);
    C[(u64)m * N + n] = to_bf(acc);
}
