// printf_assert: an honest naive GEMM (as samples/naive) that uses device
// assert() and printf, as public kernels do. nvcc builds it and the driver
// resolves vprintf and __assertfail at load; klab must compile, load and
// judge it like any other correct kernel (target_not_executed: no wgmma).

typedef unsigned short bf16_t;

static __device__ __forceinline__ float bf(bf16_t h) { return __uint_as_float((unsigned)h << 16); }
static __device__ __forceinline__ bf16_t to_bf(float f)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

extern "C" __global__ void gemm(const bf16_t *A, const bf16_t *B, bf16_t *C, unsigned M, unsigned N, unsigned K)
{
    assert(M > 0 && N > 0);
    if (K == 0 && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0)
        printf("gemm: K is 0, C is all zeros (%u x %u)\n", M, N);
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; k++)
        acc = fmaf(bf(A[(size_t)m * K + k]), bf(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = to_bf(acc);
}
