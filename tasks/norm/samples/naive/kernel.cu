// A plain LayerNorm: a block of 256 threads per row, two passes for the
// statistics (the mean, then the mean squared deviation), shared-memory
// reductions, fp32 throughout.
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

extern "C" __global__ void layernorm(const __nv_bfloat16 *X, const __nv_bfloat16 *weight,
                                     const __nv_bfloat16 *bias, __nv_bfloat16 *Y, unsigned R, unsigned C,
                                     float eps)
{
    __shared__ float red[256];
    const __nv_bfloat16 *x = X + (size_t)blockIdx.x * C;
    __nv_bfloat16 *y = Y + (size_t)blockIdx.x * C;
    float s = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += blockDim.x)
        s += __bfloat162float(x[c]);
    const float mean = block_sum(s, red) / C;
    float q = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += blockDim.x) {
        float d = __bfloat162float(x[c]) - mean;
        q += d * d;
    }
    const float rstd = rsqrtf(block_sum(q, red) / C + eps);
    for (unsigned c = threadIdx.x; c < C; c += blockDim.x) {
        float v = (__bfloat162float(x[c]) - mean) * rstd;
        y[c] = __float2bfloat16_rn(v * __bfloat162float(weight[c]) + __bfloat162float(bias[c]));
    }
}
