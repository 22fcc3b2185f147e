// Known bad: log-softmax as the log of the softmax. Right on narrow rows; on
// rows spread wider than exp's fp32 range (the 'wide' inputs), exp(x - max)
// underflows to 0 for the smallest elements and their output is -Inf.
#include <cuda_bf16.h>

extern "C" __global__ void logsoftmax(const __nv_bfloat16 *X, __nv_bfloat16 *Y, unsigned R, unsigned C)
{
    __shared__ float red[256];
    const __nv_bfloat16 *x = X + (size_t)blockIdx.x * C;
    __nv_bfloat16 *y = Y + (size_t)blockIdx.x * C;
    float m = __int_as_float(0xff800000);
    for (unsigned c = threadIdx.x; c < C; c += 256)
        m = fmaxf(m, __bfloat162float(x[c]));
    red[threadIdx.x] = m;
    __syncthreads();
    for (unsigned k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + k]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float s = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += 256)
        s += expf(__bfloat162float(x[c]) - m);
    red[threadIdx.x] = s;
    __syncthreads();
    for (unsigned k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    s = red[0];
    for (unsigned c = threadIdx.x; c < C; c += 256)
        y[c] = __float2bfloat16_rn(logf(expf(__bfloat162float(x[c]) - m) / s));
}
