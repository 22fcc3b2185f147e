// naive_convt_nchw: a gathering channels-first transposed convolution with
// groups and per-axis padding, stride, dilation and output padding, one
// thread per element of y (the tasks' default plans), its contributions
// summed in fp32. One 3-D kernel body serves both entry points: convt2d_nchw
// (convt2d_nchw_f32, a depth of 1) and convt3d (convt3d_f32).

struct geom {
    unsigned N, C, D, H, W, K, T, R, S, PD, PH, PW, UD, UH, UW, DD, DH, DW, AD, AH, AW, G;
};

// The input index that output o receives through tap t, or -1.
static __device__ int convt_from(unsigned o, unsigned t, unsigned U, unsigned P, unsigned Dl, unsigned n)
{
    const int r = (int)o + (int)P - (int)(t * Dl);
    return r >= 0 && r % (int)U == 0 && r / (int)U < (int)n ? r / (int)U : -1;
}

static __device__ void convt_one(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y,
                                 const geom g)
{
    const unsigned OD = (g.D - 1) * g.UD - 2 * g.PD + g.DD * (g.T - 1) + 1 + g.AD,
                   OH = (g.H - 1) * g.UH - 2 * g.PH + g.DH * (g.R - 1) + 1 + g.AH,
                   OW = (g.W - 1) * g.UW - 2 * g.PW + g.DW * (g.S - 1) + 1 + g.AW;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)g.N * g.K * OD * OH * OW)
        return;
    const unsigned ow = t % OW, oh = t / OW % OH, od = t / ((size_t)OW * OH) % OD, k = t / ((size_t)OW * OH * OD) % g.K;
    const size_t n = t / ((size_t)OW * OH * OD * g.K);
    const unsigned kg = g.K / g.G, cg = g.C / g.G, grp = k / kg, kl = k % kg;
    float acc = 0.0f;
    for (unsigned c = grp * cg; c < (grp + 1) * cg; ++c)
        for (unsigned a = 0; a < g.T; ++a) {
            const int id = convt_from(od, a, g.UD, g.PD, g.DD, g.D);
            if (id < 0)
                continue;
            for (unsigned r = 0; r < g.R; ++r) {
                const int ih = convt_from(oh, r, g.UH, g.PH, g.DH, g.H);
                if (ih < 0)
                    continue;
                for (unsigned s = 0; s < g.S; ++s) {
                    const int iw = convt_from(ow, s, g.UW, g.PW, g.DW, g.W);
                    if (iw >= 0)
                        acc += x[(((n * g.C + c) * g.D + id) * g.H + ih) * g.W + iw] *
                               w[((((size_t)c * kg + kl) * g.T + a) * g.R + r) * g.S + s];
                }
            }
        }
    y[t] = acc;
}

extern "C" __global__ void convt2d_nchw(const float *x, const float *w, float *y, unsigned N, unsigned C, unsigned H,
                                        unsigned W, unsigned K, unsigned R, unsigned S, unsigned PH, unsigned PW,
                                        unsigned UH, unsigned UW, unsigned DH, unsigned DW, unsigned G)
{
    convt_one(x, w, y, geom{ N, C, 1, H, W, K, 1, R, S, 0, PH, PW, 1, UH, UW, 1, DH, DW, 0, 0, 0, G });
}

extern "C" __global__ void convt3d(const float *x, const float *w, float *y, unsigned N, unsigned C, unsigned D,
                                   unsigned H, unsigned W, unsigned K, unsigned T, unsigned R, unsigned S, unsigned PD,
                                   unsigned PH, unsigned PW, unsigned UD, unsigned UH, unsigned UW, unsigned DD,
                                   unsigned DH, unsigned DW, unsigned AD, unsigned AH, unsigned AW, unsigned G)
{
    convt_one(x, w, y, geom{ N, C, D, H, W, K, T, R, S, PD, PH, PW, UD, UH, UW, DD, DH, DW, AD, AH, AW, G });
}
