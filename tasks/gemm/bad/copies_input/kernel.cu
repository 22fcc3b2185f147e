// KNOWN BAD (verdict: incorrect). Copies A into C: C[m, n] = A[m, n] where
// n < K, zero elsewhere. Right shape, plausible magnitudes, wrong values.

typedef unsigned short bf16_t;

extern "C" __global__ void gemm(const bf16_t *__restrict__ A,
                                const bf16_t *__restrict__ B,
                                bf16_t *__restrict__ C,
                                unsigned M, unsigned N, unsigned K)
{
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    (void)B;
    if (m >= M || n >= N)
        return;
    C[(size_t)m * N + n] = (n < K) ? A[(size_t)m * K + n] : (bf16_t)0;
}
