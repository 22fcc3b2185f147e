// baseline.cu: the activation family's shipped baseline, for the operations
// cuDNN has no single pointwise mode for (LeakyReLU, HardTanh, HardSigmoid,
// Softsign, SELU, a scaling by a constant). A grid-stride loop over the elements (no vector loads:
// the timed runs shift the buffers' addresses), fp32 arithmetic, one
// rounding to the output type. dt: 0 fp32, 2 bf16 (as the
// reference's codes); op: the reference's ACT_* code; p: LeakyReLU's slope
// or the scale.
// Compiled after klab's prelude.

static __device__ __forceinline__ float act_f(int op, float x, float p)
{
    switch (op) {
    case 8:
        return x > 0.0f ? x : p * x;
    case 9:
        return fminf(fmaxf(x, -1.0f), 1.0f);
    case 10:
        return fminf(fmaxf(x * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f);
    case 11:
        return x / (1.0f + fabsf(x));
    case 12:
        return x > 0.0f ? 1.05070098735548049f * x : 1.75809934084737685f * expm1f(x);
    case 13:
        return p * x;
    }
    return x;
}

extern "C" __global__ void __launch_bounds__(256)
act_baseline(const void *X, void *Y, u64 n, int dt, int op, float p)
{
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += stride) {
        if (dt == 0)
            ((float *)Y)[i] = act_f(op, ((const float *)X)[i], p);
        else
            ((__nv_bfloat16 *)Y)[i] = __float2bfloat16_rn(act_f(op, __bfloat162float(((const __nv_bfloat16 *)X)[i]), p));
    }
}
