// naive_avgpool: 3x3 average pooling, stride 2, padding 1 counted as zeros
// (every window divided by 9), NHWC fp32, one thread per output element
// (the task's default plan). Consecutive threads take consecutive channels,
// so loads are coalesced.

extern "C" __global__ void avgpool2d(const float *__restrict__ x, float *__restrict__ y, unsigned N, unsigned H,
                                     unsigned W, unsigned C)
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
    float sum = 0.0f;
    for (int r = 0; r < 3; ++r) {
        const int ih = 2 * (int)oh - 1 + r;
        if (ih < 0 || ih >= (int)H)
            continue;
        for (int s = 0; s < 3; ++s) {
            const int iw = 2 * (int)ow - 1 + s;
            if (iw < 0 || iw >= (int)W)
                continue;
            sum += x[((n * H + ih) * W + iw) * C + c];
        }
    }
    y[t] = sum / 9.0f;
}
