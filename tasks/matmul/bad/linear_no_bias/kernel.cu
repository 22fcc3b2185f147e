// KNOWN BAD (verdict: incorrect). A plain linear_relu that forgets the
// bias: C = relu(A * B^T) instead of relu(A * B^T + bias). The bias is
// N(0,1), so about half of the elements that are not clipped to zero miss
// by more than the tolerance.

#include <cuda_bf16.h>

extern "C" __global__ void linear_relu(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
                                       const __nv_bfloat16 *__restrict__ bias, __nv_bfloat16 *__restrict__ C,
                                       unsigned M, unsigned N, unsigned K)
{
    unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    const __nv_bfloat16 *a = A + (size_t)m * K;
    const __nv_bfloat16 *w = B + (size_t)n * K;
    float z = 0.0f;
    for (unsigned k = 0; k < K; ++k)
        z = fmaf(__bfloat162float(a[k]), __bfloat162float(w[k]), z);
    C[(size_t)m * N + n] = __float2bfloat16_rn(fmaxf(z, 0.0f));
}
