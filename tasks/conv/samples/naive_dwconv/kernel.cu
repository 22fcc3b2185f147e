// naive_dwconv: a direct NHWC depthwise convolution in fp32, one thread per
// output element (the task's default plan).
//
// x[N,H,W,C], w[C,R,S], y[N,OH,OW,C], fp32; zero padding P, stride U.
// Thread t computes y's element t (consecutive threads: consecutive
// channels, so loads of x are coalesced), the taps in the order r, s.

extern "C" __global__ void dwconv2d(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y,
                                    unsigned N, unsigned H, unsigned W, unsigned C, unsigned R, unsigned S,
                                    unsigned P, unsigned U)
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
            acc = fmaf(x[((n * H + ih) * W + iw) * C + c], w[((size_t)c * R + r) * S + s], acc);
        }
    }
    y[t] = acc;
}
