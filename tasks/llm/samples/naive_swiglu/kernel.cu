// A plain SwiGLU: a thread per element of Y, silu(a) = a / (1 + exp(-a))
// in fp32 (exp(-a) overflowing to Inf for very negative a gives -0, the
// right limit).
#include <cuda_bf16.h>

extern "C" __global__ void swiglu(const __nv_bfloat16 *X, __nv_bfloat16 *Y, unsigned T, unsigned D)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)T * D)
        return;
    size_t t = e / D, j = e % D;
    float a = __bfloat162float(X[t * 2 * D + j]);
    float b = __bfloat162float(X[t * 2 * D + D + j]);
    Y[e] = __float2bfloat16_rn(a / (1.0f + expf(-a)) * b);
}
