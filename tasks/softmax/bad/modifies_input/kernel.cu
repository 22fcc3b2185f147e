// Known bad: a correct log-softmax that uses X as scratch: it stores
// x - max back into the input row before the last pass.
#include <cuda_bf16.h>

extern "C" __global__ void logsoftmax(const __nv_bfloat16 *Xc, __nv_bfloat16 *Y, unsigned R, unsigned C)
{
    __shared__ float red[256];
    __nv_bfloat16 *x = const_cast<__nv_bfloat16 *>(Xc) + (size_t)blockIdx.x * C;
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
    const float ls = logf(red[0]);
    for (unsigned c = threadIdx.x; c < C; c += 256) {
        float d = __bfloat162float(x[c]) - m;
        x[c] = __float2bfloat16_rn(d);
        y[c] = __float2bfloat16_rn(d - ls);
    }
}
