// naive_conv_nchw: a direct NCHW convolution with groups, per-axis padding,
// stride and dilation, one thread per element of y (the tasks' default
// plans), its taps summed in fp32: conv2d_nchw for conv2d_nchw_f32, and
// conv2d_nchw_bias (the sum started at the channel's bias) for
// conv2d_nchw_bias_f32.

static __device__ void conv_one(const float *__restrict__ x, const float *__restrict__ w,
                                const float *__restrict__ bias, float *__restrict__ y, unsigned N, unsigned C,
                                unsigned H, unsigned W, unsigned K, unsigned R, unsigned S, unsigned PH, unsigned PW,
                                unsigned UH, unsigned UW, unsigned DH, unsigned DW, unsigned G)
{
    const unsigned OH = (H + 2 * PH - DH * (R - 1) - 1) / UH + 1, OW = (W + 2 * PW - DW * (S - 1) - 1) / UW + 1;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)N * K * OH * OW)
        return;
    const unsigned ow = t % OW, oh = t / OW % OH, k = t / ((size_t)OW * OH) % K;
    const size_t n = t / ((size_t)OW * OH * K);
    const unsigned cg = C / G, c0 = k / (K / G) * cg;
    float acc = bias ? bias[k] : 0.0f;
    for (unsigned c = 0; c < cg; ++c)
        for (unsigned r = 0; r < R; ++r) {
            const int ih = (int)(oh * UH) - (int)PH + (int)(r * DH);
            if (ih < 0 || ih >= (int)H)
                continue;
            for (unsigned s = 0; s < S; ++s) {
                const int iw = (int)(ow * UW) - (int)PW + (int)(s * DW);
                if (iw >= 0 && iw < (int)W)
                    acc += x[((n * C + c0 + c) * H + ih) * W + iw] * w[(((size_t)k * cg + c) * R + r) * S + s];
            }
        }
    y[t] = acc;
}

extern "C" __global__ void conv2d_nchw(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y,
                                       unsigned N, unsigned C, unsigned H, unsigned W, unsigned K, unsigned R,
                                       unsigned S, unsigned PH, unsigned PW, unsigned UH, unsigned UW, unsigned DH,
                                       unsigned DW, unsigned G)
{
    conv_one(x, w, nullptr, y, N, C, H, W, K, R, S, PH, PW, UH, UW, DH, DW, G);
}

extern "C" __global__ void conv2d_nchw_bias(const float *__restrict__ x, const float *__restrict__ w,
                                            const float *__restrict__ bias, float *__restrict__ y, unsigned N,
                                            unsigned C, unsigned H, unsigned W, unsigned K, unsigned R, unsigned S,
                                            unsigned PH, unsigned PW, unsigned UH, unsigned UW, unsigned DH,
                                            unsigned DW, unsigned G)
{
    conv_one(x, w, bias, y, N, C, H, W, K, R, S, PH, PW, UH, UW, DH, DW, G);
}
