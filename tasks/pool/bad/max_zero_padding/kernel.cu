// KNOWN BAD (verdict: incorrect). 3x3/2 max pooling in bf16 that starts
// its maximum at 0 instead of -inf: as if the padding, and the value before
// the first tap, were zeros. Wrong wherever a window's elements are all
// negative: on the edge windows of N(0,1) inputs (a corner window of 4
// elements is all negative one time in 16) and on every window of the
// task's all-negative input set.

#include <cuda_bf16.h>

extern "C" __global__ void maxpool2d(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ y, unsigned N,
                                     unsigned H, unsigned W, unsigned C)
{
    const unsigned OH = (H - 1) / 2 + 1, OW = (W - 1) / 2 + 1;
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
    float m = 0.0f;
    for (int r = 0; r < 3; ++r) {
        const int ih = 2 * (int)oh - 1 + r;
        if (ih < 0 || ih >= (int)H)
            continue;
        for (int s = 0; s < 3; ++s) {
            const int iw = 2 * (int)ow - 1 + s;
            if (iw < 0 || iw >= (int)W)
                continue;
            m = fmaxf(m, __bfloat162float(x[((n * H + ih) * W + iw) * C + c]));
        }
    }
    y[t] = __float2bfloat16_rn(m);
}
