// baseline.cu: the activation family's shipped baseline, for the operations
// cuDNN has no single pointwise mode for (LeakyReLU, HardTanh, HardSigmoid,
// Softsign, SELU, a scaling by a constant), and the kernel timed beside
// cuDNN's pointwise engine where that engine is far from the DRAM floor
// (exact GELU, Softplus). A grid-stride loop over 16-byte vectors (four
// fp32 or eight bf16) when both buffers are 16-byte aligned (the timed
// runs shift addresses by multiples of 256 bytes, so they are), single
// elements for the tail and for unaligned buffers; fp32 arithmetic, one
// rounding to the output type. dt: 0 fp32, 2 bf16 (as the reference's
// codes); op: the reference's ACT_* code; p: LeakyReLU's slope or the
// scale.
// Compiled after klab's prelude.

static __device__ __forceinline__ float act_f(int op, float x, float p)
{
    switch (op) {
    case 2:
        return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case 6:
        /* log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|). */
        return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
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
    const u64 first = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    const bool aligned = (((unsigned long long)X | (unsigned long long)Y) & 15) == 0;
    const u64 per = dt == 0 ? 4 : 8;
    const u64 nv = aligned ? n / per : 0;
    for (u64 v = first; v < nv; v += stride) {
        uint4 q = reinterpret_cast<const uint4 *>(X)[v];
        if (dt == 0) {
            float *f = reinterpret_cast<float *>(&q);
#pragma unroll
            for (int k = 0; k < 4; k++)
                f[k] = act_f(op, f[k], p);
        } else {
            __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&q);
#pragma unroll
            for (int k = 0; k < 4; k++) {
                float2 f = __bfloat1622float2(h[k]);
                h[k] = __floats2bfloat162_rn(act_f(op, f.x, p), act_f(op, f.y, p));
            }
        }
        reinterpret_cast<uint4 *>(Y)[v] = q;
    }
    for (u64 i = nv * per + first; i < n; i += stride) {
        if (dt == 0)
            ((float *)Y)[i] = act_f(op, ((const float *)X)[i], p);
        else
            ((__nv_bfloat16 *)Y)[i] = __float2bfloat16_rn(act_f(op, __bfloat162float(((const __nv_bfloat16 *)X)[i]), p));
    }
}
