// A plain GroupNorm over NCHW: a block of 256 threads per (sample, group),
// whose (C/G)*HW elements are contiguous; two passes for the statistics,
// shared-memory reductions, fp32 throughout.
#include <cuda_bf16.h>

static __device__ float block_sum(float v, float *red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float r = red[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void groupnorm(const __nv_bfloat16 *X, const __nv_bfloat16 *weight,
                                     const __nv_bfloat16 *bias, __nv_bfloat16 *Y, unsigned N, unsigned C,
                                     unsigned HW, unsigned G, float eps)
{
    __shared__ float red[256];
    const unsigned cpg = C / G;
    const size_t len = (size_t)cpg * HW;
    const __nv_bfloat16 *x = X + blockIdx.x * len;
    __nv_bfloat16 *y = Y + blockIdx.x * len;
    const unsigned c0 = (blockIdx.x % G) * cpg;
    float s = 0.0f;
    for (size_t e = threadIdx.x; e < len; e += blockDim.x)
        s += __bfloat162float(x[e]);
    const float mean = block_sum(s, red) / len;
    float q = 0.0f;
    for (size_t e = threadIdx.x; e < len; e += blockDim.x) {
        float d = __bfloat162float(x[e]) - mean;
        q += d * d;
    }
    const float rstd = rsqrtf(block_sum(q, red) / len + eps);
    for (size_t e = threadIdx.x; e < len; e += blockDim.x) {
        unsigned c = c0 + (unsigned)(e / HW);
        float v = (__bfloat162float(x[e]) - mean) * rstd * __bfloat162float(weight[c]);
        y[e] = __float2bfloat16_rn(v + __bfloat162float(bias[c]));
    }
}
