// naive_maxpool_nchw: 4x4 max pooling, stride 1, padding 1 (taps in the
// padding skipped), NCHW fp32, one thread per output element (the task's
// default plan). Consecutive threads take consecutive output columns.

extern "C" __global__ void maxpool2d_nchw(const float *__restrict__ x, float *__restrict__ y, unsigned N, unsigned C,
                                          unsigned H, unsigned W)
{
    const unsigned OH = H + 2 - 4 + 1, OW = W + 2 - 4 + 1;
    const size_t total = (size_t)N * C * OH * OW;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total)
        return;
    const unsigned ow = t % OW, oh = t / OW % OH;
    const size_t plane = t / ((size_t)OW * OH);
    const float *xp = x + plane * H * W;
    float m = __int_as_float(0xff800000); // -inf
    for (int r = 0; r < 4; ++r) {
        const int ih = (int)oh - 1 + r;
        if (ih < 0 || ih >= (int)H)
            continue;
        for (int s = 0; s < 4; ++s) {
            const int iw = (int)ow - 1 + s;
            if (iw >= 0 && iw < (int)W)
                m = fmaxf(m, xp[(size_t)ih * W + iw]);
        }
    }
    y[t] = m;
}
