// A plain log-softmax: a block of 256 threads per row, three passes over the
// row (maximum, sum of exp(x - max), output x - max - log(sum)), fp32
// throughout, shared-memory reductions.
#include <cuda_bf16.h>

// Every thread's v combined by op over the block (256 threads).
template <bool Max>
static __device__ float block_reduce(float v, float *red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] = Max ? fmaxf(red[threadIdx.x], red[threadIdx.x + k]) : red[threadIdx.x] + red[threadIdx.x + k];
        __syncthreads();
    }
    float r = red[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void logsoftmax(const __nv_bfloat16 *X, __nv_bfloat16 *Y, unsigned R, unsigned C)
{
    __shared__ float red[256];
    const __nv_bfloat16 *x = X + (size_t)blockIdx.x * C;
    __nv_bfloat16 *y = Y + (size_t)blockIdx.x * C;
    float m = __int_as_float(0xff800000);
    for (unsigned c = threadIdx.x; c < C; c += 256)
        m = fmaxf(m, __bfloat162float(x[c]));
    m = block_reduce<true>(m, red);
    float s = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += 256)
        s += expf(__bfloat162float(x[c]) - m);
    const float lse = m + logf(block_reduce<false>(s, red));
    for (unsigned c = threadIdx.x; c < C; c += 256)
        y[c] = __float2bfloat16_rn(__bfloat162float(x[c]) - lse);
}
