// A plain fused add + RMSNorm: a block of 256 threads per token; the sum
// s = x + r written to residual_out and its squares summed in fp32 (a
// shared-memory reduction), then each thread normalizes the elements it
// wrote.
#include <cuda_bf16.h>

extern "C" __global__ void fused_add_rmsnorm(const __nv_bfloat16 *X, const __nv_bfloat16 *residual,
                                             const __nv_bfloat16 *weight, __nv_bfloat16 *Y,
                                             __nv_bfloat16 *residual_out, unsigned T, unsigned H, float eps)
{
    __shared__ float red[256];
    const size_t off = (size_t)blockIdx.x * H;
    float q = 0.0f;
    for (unsigned c = threadIdx.x; c < H; c += blockDim.x) {
        float s = __bfloat162float(X[off + c]) + __bfloat162float(residual[off + c]);
        residual_out[off + c] = __float2bfloat16_rn(s);
        q += s * s;
    }
    red[threadIdx.x] = q;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    const float rstd = rsqrtf(red[0] / H + eps);
    for (unsigned c = threadIdx.x; c < H; c += blockDim.x) {
        float s = __bfloat162float(X[off + c]) + __bfloat162float(residual[off + c]);
        Y[off + c] = __float2bfloat16_rn(s * rstd * __bfloat162float(weight[c]));
    }
}
