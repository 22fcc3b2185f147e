// Known bad: fused add + RMSNorm that also updates the residual in place,
// as vLLM's fused_add_rms_norm does with its own buffers. Y and
// residual_out are right, but the input buffer residual is overwritten
// with x + r: the task's inputs are read-only.
#include <cuda_bf16.h>

extern "C" __global__ void fused_add_rmsnorm(const __nv_bfloat16 *X, const __nv_bfloat16 *residual,
                                             const __nv_bfloat16 *weight, __nv_bfloat16 *Y,
                                             __nv_bfloat16 *residual_out, unsigned T, unsigned H, float eps)
{
    __shared__ float red[256];
    __nv_bfloat16 *r = (__nv_bfloat16 *)residual;
    const size_t off = (size_t)blockIdx.x * H;
    float q = 0.0f;
    for (unsigned c = threadIdx.x; c < H; c += blockDim.x) {
        __nv_bfloat16 s = __float2bfloat16_rn(__bfloat162float(X[off + c]) + __bfloat162float(r[off + c]));
        residual_out[off + c] = s;
        r[off + c] = s;
        float f = __bfloat162float(s);
        q += f * f;
    }
    red[threadIdx.x] = q;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    const float rstd = rsqrtf(red[0] / H + eps);
    for (unsigned c = threadIdx.x; c < H; c += blockDim.x)
        Y[off + c] = __float2bfloat16_rn(__bfloat162float(r[off + c]) * rstd * __bfloat162float(weight[c]));
}
