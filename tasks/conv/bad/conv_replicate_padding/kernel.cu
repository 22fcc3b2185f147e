// KNOWN BAD (verdict: incorrect). The direct bf16 convolution of
// samples/naive_conv, except that it clamps the input coordinates into the
// image instead of skipping taps outside it: edge ("replicate") padding in
// place of zero padding. Every output whose window crosses the border is
// wrong; on the small shape (15x17, stride 2) that is the whole first row
// and column of every output map.

#include <cuda_bf16.h>

extern "C" __global__ void conv2d(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ w,
                                  __nv_bfloat16 *__restrict__ y, unsigned N, unsigned H, unsigned W, unsigned C,
                                  unsigned K, unsigned R, unsigned S, unsigned P, unsigned U)
{
    const unsigned OH = (H + 2 * P - R) / U + 1, OW = (W + 2 * P - S) / U + 1;
    const size_t total = (size_t)N * OH * OW * K;
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total)
        return;
    const unsigned k = t % K;
    size_t p = t / K;
    const unsigned ow = p % OW;
    p /= OW;
    const unsigned oh = p % OH;
    const size_t n = p / OH;
    float acc = 0.0f;
    for (unsigned r = 0; r < R; ++r) {
        const int ih = min(max((int)(oh * U + r) - (int)P, 0), (int)H - 1);
        for (unsigned s = 0; s < S; ++s) {
            const int iw = min(max((int)(ow * U + s) - (int)P, 0), (int)W - 1);
            const __nv_bfloat16 *xp = x + ((n * H + ih) * W + iw) * C;
            const __nv_bfloat16 *wp = w + (((size_t)k * R + r) * S + s) * C;
            for (unsigned c = 0; c < C; ++c)
                acc = fmaf(__bfloat162float(xp[c]), __bfloat162float(wp[c]), acc);
        }
    }
    y[t] = __float2bfloat16_rn(acc);
}
