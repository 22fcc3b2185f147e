// Known bad: LayerNorm with a one-pass variance, E[x^2] - E[x]^2, both
// sums in fp32. Right on rows near zero; on rows shifted to 1000 the two
// terms (about 1e6 each) cancel and fp32 keeps too few bits of their
// difference: the variance is off by tens of percent, or negative.
#include <cuda_bf16.h>

extern "C" __global__ void layernorm(const __nv_bfloat16 *X, const __nv_bfloat16 *weight,
                                     const __nv_bfloat16 *bias, __nv_bfloat16 *Y, unsigned R, unsigned C,
                                     float eps)
{
    __shared__ float s1[256], s2[256];
    const __nv_bfloat16 *x = X + (size_t)blockIdx.x * C;
    __nv_bfloat16 *y = Y + (size_t)blockIdx.x * C;
    float a = 0.0f, b = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += blockDim.x) {
        float v = __bfloat162float(x[c]);
        a += v;
        b += v * v;
    }
    s1[threadIdx.x] = a;
    s2[threadIdx.x] = b;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            s1[threadIdx.x] += s1[threadIdx.x + s];
            s2[threadIdx.x] += s2[threadIdx.x + s];
        }
        __syncthreads();
    }
    const float mean = s1[0] / C;
    const float var = s2[0] / C - mean * mean;
    const float rstd = rsqrtf(var + eps);
    for (unsigned c = threadIdx.x; c < C; c += blockDim.x) {
        float v = (__bfloat162float(x[c]) - mean) * rstd;
        y[c] = __float2bfloat16_rn(v * __bfloat162float(weight[c]) + __bfloat162float(bias[c]));
    }
}
