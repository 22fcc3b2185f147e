// naive_maxpool: 3x3 max pooling, stride 2, padding 1, NHWC bf16, one
// thread per output element (the task's default plan).
//
// Thread t computes y's element t (consecutive threads: consecutive
// channels, so loads are coalesced). Taps outside the image are skipped:
// the padding of a max pooling is -inf. The maximum is one of the inputs,
// so it is stored exactly.

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
    float m = __int_as_float(0xff800000);  // -inf
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
