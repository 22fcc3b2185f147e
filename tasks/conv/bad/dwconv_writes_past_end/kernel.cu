// KNOWN BAD (verdict: guard_violation). A correct direct depthwise
// convolution in bf16 (one thread per output element, the task's default
// plan), whose last thread also stores one bf16 just past the end of y.

#include <cuda_bf16.h>

extern "C" __global__ void dwconv2d(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ w,
                                    __nv_bfloat16 *__restrict__ y, unsigned N, unsigned H, unsigned W, unsigned C,
                                    unsigned R, unsigned S, unsigned P, unsigned U)
{
    const unsigned OH = (H + 2 * P - R) / U + 1, OW = (W + 2 * P - S) / U + 1;
    const size_t total = (size_t)N * OH * OW * C;
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total)
        return;
    const unsigned c = t % C;
    size_t p = t / C;
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
            acc = fmaf(__bfloat162float(x[((n * H + ih) * W + iw) * C + c]),
                       __bfloat162float(w[((size_t)c * R + r) * S + s]), acc);
        }
    }
    y[t] = __float2bfloat16_rn(acc);
    if (t == total - 1)
        y[total] = __float2bfloat16_rn(1.0f);
}
