// KNOWN BAD (verdict: runtime_error). Every thread loads through a wild
// pointer 2^44 bytes (16 TiB) past A, far outside any allocation, which the
// GPU reports as an illegal address (CUDA_ERROR_ILLEGAL_ADDRESS, a sticky
// error: the worker process must be replaced afterwards).

typedef unsigned short bf16_t;

extern "C" __global__ void gemm(const bf16_t *__restrict__ A,
                                const bf16_t *__restrict__ B,
                                bf16_t *__restrict__ C,
                                unsigned M, unsigned N, unsigned K)
{
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    (void)B;
    const volatile bf16_t *wild =
        (const volatile bf16_t *)((unsigned long long)A + (1ull << 44));
    const bf16_t v = wild[(size_t)m * K + n];
    if (m < M && n < N)
        C[(size_t)m * N + n] = v;
}
