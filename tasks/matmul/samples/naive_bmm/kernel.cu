// naive_bmm: C[b] = A[b] * B[b]^T for every batch member b, one thread per
// output element.
//
// A[BATCH,M,K], B[BATCH,N,K], C[BATCH,M,N], row-major bf16, members packed;
// products summed in fp32 in the order k = 0, 1, ..., K-1 and rounded once
// to bf16 (round to nearest even). Launch: block 16x16, grid (ceil(N/16),
// ceil(M/16), BATCH); x walks N so that a warp's stores to a row of C are
// contiguous.

#include <cuda_bf16.h>

extern "C" __global__ void bmm(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
                               __nv_bfloat16 *__restrict__ C, unsigned BATCH, unsigned M, unsigned N, unsigned K)
{
    unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    size_t b = blockIdx.z;
    if (m >= M || n >= N || b >= BATCH)
        return;
    const __nv_bfloat16 *a = A + (b * M + m) * K;
    const __nv_bfloat16 *w = B + (b * N + n) * K;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; ++k)
        acc = fmaf(__bfloat162float(a[k]), __bfloat162float(w[k]), acc);
    C[(b * M + m) * N + n] = __float2bfloat16_rn(acc);
}
