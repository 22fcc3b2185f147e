// Known bad: cross-entropy as log(sum exp(x)) - x[target] without the row
// maximum. Right on logits near zero; on logits shifted to about 100 (the
// 'shifted' inputs) exp(x) overflows fp32 and the loss is Inf.
#include <cuda_bf16.h>

extern "C" __global__ void cross_entropy(const __nv_bfloat16 *X, const int *T, float *L, unsigned R, unsigned C)
{
    __shared__ float red[256];
    const __nv_bfloat16 *x = X + (size_t)blockIdx.x * C;
    float s = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += 256)
        s += expf(__bfloat162float(x[c]));
    red[threadIdx.x] = s;
    __syncthreads();
    for (unsigned k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        L[blockIdx.x] = logf(red[0]) - __bfloat162float(x[T[blockIdx.x]]);
}
