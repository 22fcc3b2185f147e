// A plain partial RoPE for both layouts (one entry point each): a block of
// 128 threads per token, a thread per (head, pair) or (head, copied
// element): reads the pair and the token's cos and sin, writes both
// rotated elements; elements R..D-1 are copied.
#include <cuda_bf16.h>

static __device__ void rope_token(const long long *pos, const __nv_bfloat16 *Q, const __nv_bfloat16 *K,
                                  const float *cos_sin, __nv_bfloat16 *Qo, __nv_bfloat16 *Ko, unsigned Hq,
                                  unsigned Hk, unsigned D, unsigned R, bool gptj)
{
    const size_t t = blockIdx.x;
    const unsigned half = R / 2, per = half + (D - R);
    const float *cs = cos_sin + (size_t)pos[t] * R;
    for (unsigned j = threadIdx.x; j < (Hq + Hk) * per; j += blockDim.x) {
        const unsigned h = j / per, i = j % per;
        const __nv_bfloat16 *x;
        __nv_bfloat16 *o;
        if (h < Hq) {
            x = Q + (t * Hq + h) * D;
            o = Qo + (t * Hq + h) * D;
        } else {
            x = K + (t * Hk + (h - Hq)) * D;
            o = Ko + (t * Hk + (h - Hq)) * D;
        }
        if (i >= half) {
            o[R + i - half] = x[R + i - half];
            continue;
        }
        const unsigned ia = gptj ? 2 * i : i, ib = gptj ? 2 * i + 1 : i + half;
        const float a = __bfloat162float(x[ia]), b = __bfloat162float(x[ib]);
        const float c = cs[i], s = cs[half + i];
        o[ia] = __float2bfloat16_rn(a * c - b * s);
        o[ib] = __float2bfloat16_rn(b * c + a * s);
    }
}

extern "C" __global__ void rope_neox(const long long *pos, const __nv_bfloat16 *Q, const __nv_bfloat16 *K,
                                     const float *cos_sin, __nv_bfloat16 *Qo, __nv_bfloat16 *Ko, unsigned T,
                                     unsigned Hq, unsigned Hk, unsigned D, unsigned R)
{
    rope_token(pos, Q, K, cos_sin, Qo, Ko, Hq, Hk, D, R, false);
}

extern "C" __global__ void rope_gptj(const long long *pos, const __nv_bfloat16 *Q, const __nv_bfloat16 *K,
                                     const float *cos_sin, __nv_bfloat16 *Qo, __nv_bfloat16 *Ko, unsigned T,
                                     unsigned Hq, unsigned Hk, unsigned D, unsigned R)
{
    rope_token(pos, Q, K, cos_sin, Qo, Ko, Hq, Hk, D, R, true);
}
