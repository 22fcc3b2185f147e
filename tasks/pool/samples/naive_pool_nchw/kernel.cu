// naive_pool_nchw: KernelBench's 2-D poolings in NCHW fp32, one thread per
// output element (the tasks' default plans): maxpool2d_nchw, a 4x4 window
// at stride 1 with padding 1 (taps in the padding skipped), and
// avgpool2d_nchw, an 11x11 window at stride 11 without padding (the sum in
// fp32 divided by 121). Both walk the window of the output they own.

// The window of output t of a k x k pooling at stride u and padding p:
// its plane's first element and its top-left input row and column.
struct window {
    const float *plane;
    int h0, w0;
};

static __device__ bool window_of(const float *x, size_t t, unsigned N, unsigned C, unsigned H, unsigned W, int k,
                                 int u, int p, window &win)
{
    const unsigned OH = (H + 2 * p - k) / u + 1, OW = (W + 2 * p - k) / u + 1;
    if (t >= (size_t)N * C * OH * OW)
        return false;
    const unsigned ow = t % OW, oh = t / OW % OH;
    win.plane = x + t / ((size_t)OW * OH) * H * W;
    win.h0 = (int)oh * u - p;
    win.w0 = (int)ow * u - p;
    return true;
}

extern "C" __global__ void maxpool2d_nchw(const float *x, float *y, unsigned N, unsigned C, unsigned H, unsigned W)
{
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    window win;
    if (!window_of(x, t, N, C, H, W, 4, 1, 1, win))
        return;
    float m = __int_as_float(0xff800000); // -inf
    for (int r = 0; r < 4; ++r)
        for (int s = 0; s < 4; ++s) {
            const int ih = win.h0 + r, iw = win.w0 + s;
            if (ih >= 0 && ih < (int)H && iw >= 0 && iw < (int)W)
                m = fmaxf(m, win.plane[(size_t)ih * W + iw]);
        }
    y[t] = m;
}

extern "C" __global__ void avgpool2d_nchw(const float *x, float *y, unsigned N, unsigned C, unsigned H, unsigned W)
{
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    window win;
    if (!window_of(x, t, N, C, H, W, 11, 11, 0, win))
        return;
    float sum = 0.0f;
    for (int r = 0; r < 11; ++r)
        for (int s = 0; s < 11; ++s)
            sum += win.plane[(size_t)(win.h0 + r) * W + win.w0 + s];
    y[t] = sum / 121.0f;
}
