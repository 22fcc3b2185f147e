// naive_linear_gelu: C = gelu(A * B^T + bias) with GELU in its tanh form,
// one thread per output element.
//
// A[M,K], B[N,K], bias[N], C[M,N], row-major bf16. The dot product is
// summed in fp32 in the order k = 0, 1, ..., K-1; the bias is added and
// 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))) computed in fp32 (tanhf
// saturates cleanly for large |z|), then rounded once to bf16. Launch:
// block 16x16, grid (ceil(N/16), ceil(M/16)).

#include <cuda_bf16.h>

extern "C" __global__ void linear_gelu(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
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
    z += __bfloat162float(bias[n]);
    const float c = 0.7978845608028654f;  // sqrt(2/pi)
    float g = 0.5f * z * (1.0f + tanhf(c * (z + 0.044715f * z * z * z)));
    C[(size_t)m * N + n] = __float2bfloat16_rn(g);
}
