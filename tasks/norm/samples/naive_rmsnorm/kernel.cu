// A plain RMSNorm: a block of 256 threads per row, the sum of squares in
// fp32 by a shared-memory reduction, then x * rstd * weight.
#include <cuda_bf16.h>

extern "C" __global__ void rmsnorm(const __nv_bfloat16 *X, const __nv_bfloat16 *weight, __nv_bfloat16 *Y,
                                   unsigned R, unsigned C, float eps)
{
    __shared__ float red[256];
    const __nv_bfloat16 *x = X + (size_t)blockIdx.x * C;
    __nv_bfloat16 *y = Y + (size_t)blockIdx.x * C;
    float q = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += blockDim.x) {
        float v = __bfloat162float(x[c]);
        q += v * v;
    }
    red[threadIdx.x] = q;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float rstd = rsqrtf(red[0] / C + eps);
    for (unsigned c = threadIdx.x; c < C; c += blockDim.x)
        y[c] = __float2bfloat16_rn(__bfloat162float(x[c]) * rstd * __bfloat162float(weight[c]));
}
