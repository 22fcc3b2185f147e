// KNOWN BAD (verdict: incorrect). 3x3/2 average pooling in fp32 that
// divides each window's sum by the number of its elements inside the image
// (PyTorch's count_include_pad=False) instead of by 9: wrong on every
// window at the top and left edges (4 or 6 elements inside) and, on the
// small 15x17 shape, at the bottom and right edges too.

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
    int count = 0;
    for (int r = 0; r < 3; ++r) {
        const int ih = 2 * (int)oh - 1 + r;
        if (ih < 0 || ih >= (int)H)
            continue;
        for (int s = 0; s < 3; ++s) {
            const int iw = 2 * (int)ow - 1 + s;
            if (iw < 0 || iw >= (int)W)
                continue;
            sum += x[((n * H + ih) * W + iw) * C + c];
            ++count;
        }
    }
    y[t] = sum / (float)count;
}
