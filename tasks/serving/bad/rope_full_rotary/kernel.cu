// Known-bad: a NeoX RoPE that rotates the whole head (pairs (i, i + D/2),
// the cache row read at i and D/2 + i as if R were D): right only where
// R == D, wrong on every partial variant.
#include <cuda_bf16.h>

extern "C" __global__ void rope_neox(const long long *pos, const __nv_bfloat16 *Q, const __nv_bfloat16 *K,
                                     const float *cos_sin, __nv_bfloat16 *Qo, __nv_bfloat16 *Ko, unsigned T,
                                     unsigned Hq, unsigned Hk, unsigned D, unsigned R)
{
    const size_t t = blockIdx.x;
    const unsigned half = D / 2;
    const size_t p = (size_t)pos[t];
    for (unsigned j = threadIdx.x; j < (Hq + Hk) * half; j += blockDim.x) {
        const unsigned h = j / half, i = j % half;
        const __nv_bfloat16 *x = h < Hq ? Q + (t * Hq + h) * D : K + (t * Hk + (h - Hq)) * D;
        __nv_bfloat16 *o = h < Hq ? Qo + (t * Hq + h) * D : Ko + (t * Hk + (h - Hq)) * D;
        // The cache index wraps inside the buffer, so the kernel stays in bounds and is just wrong.
        const size_t at = (p * R + i) % ((size_t)8192 * R), bt = (p * R + half + i) % ((size_t)8192 * R);
        const float a = __bfloat162float(x[i]), b = __bfloat162float(x[i + half]);
        const float c = cos_sin[at], s = cos_sin[bt];
        o[i] = __float2bfloat16_rn(a * c - b * s);
        o[i + half] = __float2bfloat16_rn(b * c + a * s);
    }
}
