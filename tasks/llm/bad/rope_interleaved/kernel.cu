// Known bad: RoPE in the GPT-J convention, rotating interleaved pairs
// (x[2i], x[2i+1]) with cos/sin column i, where the task asks for
// GPT-NeoX's rotate-half pairs (x[i], x[i + D/2]). Right only where the
// two conventions agree, which on random inputs is almost nowhere.
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
        float a = __bfloat162float(x[2 * i]), b = __bfloat162float(x[2 * i + 1]);
        float c = cs[i], s = cs[half + i];
        o[2 * i] = __float2bfloat16_rn(a * c - b * s);
        o[2 * i + 1] = __float2bfloat16_rn(b * c + a * s);
    }
}
