// naive_conv_nchw: a direct channels-first convolution with groups and
// per-axis padding, stride and dilation, one thread per element of y (the
// tasks' default plans), its taps summed in fp32. One 3-D kernel body
// serves every entry point (a 2-D convolution is one of depth 1):
// conv2d_nchw (conv2d_nchw_f32), conv2d_nchw_bias (conv2d_nchw_bias_f32,
// the sum started at the channel's bias) and conv3d (conv3d_f32).

struct geom {
    unsigned N, C, D, H, W, K, T, R, S, PD, PH, PW, UD, UH, UW, DD, DH, DW, G;
};

static __device__ void conv_one(const float *__restrict__ x, const float *__restrict__ w,
                                const float *__restrict__ bias, float *__restrict__ y, const geom g)
{
    const unsigned OD = (g.D + 2 * g.PD - g.DD * (g.T - 1) - 1) / g.UD + 1,
                   OH = (g.H + 2 * g.PH - g.DH * (g.R - 1) - 1) / g.UH + 1,
                   OW = (g.W + 2 * g.PW - g.DW * (g.S - 1) - 1) / g.UW + 1;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)g.N * g.K * OD * OH * OW)
        return;
    const unsigned ow = t % OW, oh = t / OW % OH, od = t / ((size_t)OW * OH) % OD, k = t / ((size_t)OW * OH * OD) % g.K;
    const size_t n = t / ((size_t)OW * OH * OD * g.K);
    const unsigned cg = g.C / g.G, c0 = k / (g.K / g.G) * cg;
    float acc = bias ? bias[k] : 0.0f;
    for (unsigned c = 0; c < cg; ++c)
        for (unsigned a = 0; a < g.T; ++a) {
            const int id = (int)(od * g.UD) - (int)g.PD + (int)(a * g.DD);
            if (id < 0 || id >= (int)g.D)
                continue;
            for (unsigned r = 0; r < g.R; ++r) {
                const int ih = (int)(oh * g.UH) - (int)g.PH + (int)(r * g.DH);
                if (ih < 0 || ih >= (int)g.H)
                    continue;
                for (unsigned s = 0; s < g.S; ++s) {
                    const int iw = (int)(ow * g.UW) - (int)g.PW + (int)(s * g.DW);
                    if (iw >= 0 && iw < (int)g.W)
                        acc += x[(((n * g.C + c0 + c) * g.D + id) * g.H + ih) * g.W + iw] *
                               w[((((size_t)k * cg + c) * g.T + a) * g.R + r) * g.S + s];
                }
            }
        }
    y[t] = acc;
}

extern "C" __global__ void conv2d_nchw(const float *x, const float *w, float *y, unsigned N, unsigned C, unsigned H,
                                       unsigned W, unsigned K, unsigned R, unsigned S, unsigned PH, unsigned PW,
                                       unsigned UH, unsigned UW, unsigned DH, unsigned DW, unsigned G)
{
    conv_one(x, w, nullptr, y, geom{ N, C, 1, H, W, K, 1, R, S, 0, PH, PW, 1, UH, UW, 1, DH, DW, G });
}

extern "C" __global__ void conv2d_nchw_bias(const float *x, const float *w, const float *bias, float *y, unsigned N,
                                            unsigned C, unsigned H, unsigned W, unsigned K, unsigned R, unsigned S,
                                            unsigned PH, unsigned PW, unsigned UH, unsigned UW, unsigned DH,
                                            unsigned DW, unsigned G)
{
    conv_one(x, w, bias, y, geom{ N, C, 1, H, W, K, 1, R, S, 0, PH, PW, 1, UH, UW, 1, DH, DW, G });
}

extern "C" __global__ void conv3d(const float *x, const float *w, float *y, unsigned N, unsigned C, unsigned D,
                                  unsigned H, unsigned W, unsigned K, unsigned T, unsigned R, unsigned S, unsigned PD,
                                  unsigned PH, unsigned PW, unsigned UD, unsigned UH, unsigned UW, unsigned DD,
                                  unsigned DH, unsigned DW, unsigned G)
{
    conv_one(x, w, nullptr, y, geom{ N, C, D, H, W, K, T, R, S, PD, PH, PW, UD, UH, UW, DD, DH, DW, G });
}
