// Known bad: tanh written as (e^2x - 1) / (e^2x + 1). Right for moderate x;
// above x = 44, e^2x overflows fp32 and the quotient is Inf/Inf = NaN, which
// the task's "wide" inputs, N(0, 30^2), reach on about one element in
// fourteen.
#include <cuda_bf16.h>

extern "C" __global__ void tanh_act(const __nv_bfloat16 *X, __nv_bfloat16 *Y, unsigned long long n)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) {
        float e = expf(2.0f * __bfloat162float(X[i]));
        Y[i] = __float2bfloat16_rn((e - 1.0f) / (e + 1.0f));
    }
}
