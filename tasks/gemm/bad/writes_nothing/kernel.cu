// KNOWN BAD (verdict: incorrect). Launches with the right grid and parameters
// but writes nothing: C keeps the poison the host filled it with.

typedef unsigned short bf16_t;

extern "C" __global__ void gemm(const bf16_t *__restrict__ A,
                                const bf16_t *__restrict__ B,
                                bf16_t *__restrict__ C,
                                unsigned M, unsigned N, unsigned K)
{
    (void)A; (void)B; (void)C; (void)M; (void)N; (void)K;
}
