// naive: C = A * B^T, one thread per output element.
//
// A[M,K], B[N,K], C[M,N], row-major bf16; products summed in fp32 in the
// order k = 0, 1, ..., K-1 and rounded once to bf16 (round to nearest even).
// Any M, N, K >= 1 (K = 0 writes zeros). Launch: block 16x16, grid
// (ceil(N/16), ceil(M/16)); x walks N so that the stores to a row of C are
// contiguous within a warp.
//
// Self-contained (no #include) so that it compiles with NVRTC whatever the
// include path; bf16 values are handled as their 16-bit patterns.

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

extern "C" __global__ void gemm(const bf16_t *__restrict__ A,
                                const bf16_t *__restrict__ B,
                                bf16_t *__restrict__ C,
                                unsigned M, unsigned N, unsigned K)
{
    unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    const bf16_t *a = A + (size_t)m * K;
    const bf16_t *b = B + (size_t)n * K;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; ++k)
        acc = fmaf(bf16_to_f32(a[k]), bf16_to_f32(b[k]), acc);
    C[(size_t)m * N + n] = f32_to_bf16(acc);
}
