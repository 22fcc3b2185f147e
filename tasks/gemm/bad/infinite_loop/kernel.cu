// KNOWN BAD (verdict: timeout). Spins forever on a flag nobody sets; the
// volatile load keeps the compiler from removing the loop. The worker must be
// killed (the driver cannot reset a context while the kernel runs).

typedef unsigned short bf16_t;

__device__ unsigned g_never_set;

extern "C" __global__ void gemm(const bf16_t *__restrict__ A,
                                const bf16_t *__restrict__ B,
                                bf16_t *__restrict__ C,
                                unsigned M, unsigned N, unsigned K)
{
    (void)A; (void)B; (void)C; (void)M; (void)N; (void)K;
    while (*(volatile unsigned *)&g_never_set == 0u) {
    }
}
