// naive_bmm_nn: C[b] = A[b] * B[b] for every batch member b, one thread per
// output element, fp32 sums in the order k = 0, 1, ..., K-1.
//
// A[BATCH,M,K], B[BATCH,K,N], C[BATCH,M,N], row-major fp32, members packed.
// Launch (plan.lua): block 16x16, grid (ceil(N/16), ceil(M/16), BATCH); x
// walks N, so a warp's loads of a row of B and stores to a row of C are
// contiguous.

extern "C" __global__ void bmm_nn(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                                  unsigned BATCH, unsigned M, unsigned N, unsigned K)
{
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    const size_t b = blockIdx.z;
    if (m >= M || n >= N || b >= BATCH)
        return;
    const float *a = A + (b * M + m) * K;
    const float *w = B + b * K * N + n;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; ++k)
        acc = fmaf(a[k], w[(size_t)k * N], acc);
    C[(b * M + m) * N + n] = acc;
}
