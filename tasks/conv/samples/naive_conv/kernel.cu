// naive_conv: a direct NHWC convolution, one thread per output element.
//
// x[N,H,W,C], w[K,R,S,C], y[N,OH,OW,K], bf16; zero padding P, stride U.
// Thread t computes y's element t (consecutive threads: consecutive output
// channels of one pixel, so a warp reads the same x values): the taps in
// the order r, s, c, summed in fp32, rounded once to bf16.

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
        const int ih = (int)(oh * U + r) - (int)P;
        if (ih < 0 || ih >= (int)H)
            continue;
        for (unsigned s = 0; s < S; ++s) {
            const int iw = (int)(ow * U + s) - (int)P;
            if (iw < 0 || iw >= (int)W)
                continue;
            const __nv_bfloat16 *xp = x + ((n * H + ih) * W + iw) * C;
            const __nv_bfloat16 *wp = w + (((size_t)k * R + r) * S + s) * C;
            for (unsigned c = 0; c < C; ++c)
                acc = fmaf(__bfloat162float(xp[c]), __bfloat162float(wp[c]), acc);
        }
    }
    y[t] = __float2bfloat16_rn(acc);
}
