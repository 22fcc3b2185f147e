// A plain NeoX RoPE: a block of 128 threads per token, a thread per (head,
// pair i): reads x[i] and x[i + D/2] and the token's cos and sin, writes
// both rotated elements.
#include <cuda_bf16.h>

extern "C" __global__ void rope(const int *pos, const __nv_bfloat16 *Q, const __nv_bfloat16 *K,
                                const float *cos_sin, __nv_bfloat16 *Qo, __nv_bfloat16 *Ko, unsigned T,
                                unsigned Hq, unsigned Hk, unsigned D)
{
    const size_t t = blockIdx.x;
    const unsigned half = D / 2;
    const float *cs = cos_sin + (size_t)pos[t] * D;
    for (unsigned j = threadIdx.x; j < (Hq + Hk) * half; j += blockDim.x) {
        unsigned h = j / half, i = j % half;
        const __nv_bfloat16 *x;
        __nv_bfloat16 *o;
        if (h < Hq) {
            x = Q + (t * Hq + h) * D;
            o = Qo + (t * Hq + h) * D;
        } else {
            x = K + (t * Hk + (h - Hq)) * D;
            o = Ko + (t * Hk + (h - Hq)) * D;
        }
        float lo = __bfloat162float(x[i]), hi = __bfloat162float(x[i + half]);
        float c = cs[i], s = cs[half + i];
        o[i] = __float2bfloat16_rn(lo * c - hi * s);
        o[i + half] = __float2bfloat16_rn(hi * c + lo * s);
    }
}
