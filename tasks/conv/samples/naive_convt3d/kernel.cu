// naive_convt3d: a gathering NCDHW transposed convolution with groups and
// per-axis padding, stride, dilation and output padding, one thread per
// element of y (the task's default plan), its contributions summed in fp32.

// The input index that output o receives through tap t, or -1.
static __device__ int convt_from(unsigned o, unsigned t, unsigned U, unsigned P, unsigned Dl, unsigned n)
{
    const int r = (int)o + (int)P - (int)(t * Dl);
    return r >= 0 && r % (int)U == 0 && r / (int)U < (int)n ? r / (int)U : -1;
}

extern "C" __global__ void convt3d(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y,
                                   unsigned N, unsigned C, unsigned D, unsigned H, unsigned W, unsigned K, unsigned T,
                                   unsigned R, unsigned S, unsigned PD, unsigned PH, unsigned PW, unsigned UD,
                                   unsigned UH, unsigned UW, unsigned DD, unsigned DH, unsigned DW, unsigned AD,
                                   unsigned AH, unsigned AW, unsigned G)
{
    const unsigned OD = (D - 1) * UD - 2 * PD + DD * (T - 1) + 1 + AD,
                   OH = (H - 1) * UH - 2 * PH + DH * (R - 1) + 1 + AH,
                   OW = (W - 1) * UW - 2 * PW + DW * (S - 1) + 1 + AW;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)N * K * OD * OH * OW)
        return;
    const unsigned ow = t % OW, oh = t / OW % OH, od = t / ((size_t)OW * OH) % OD, k = t / ((size_t)OW * OH * OD) % K;
    const size_t n = t / ((size_t)OW * OH * OD * K);
    const unsigned kg = K / G, cg = C / G, g = k / kg, kl = k % kg;
    float acc = 0.0f;
    for (unsigned c = g * cg; c < (g + 1) * cg; ++c)
        for (unsigned a = 0; a < T; ++a) {
            const int id = convt_from(od, a, UD, PD, DD, D);
            if (id < 0)
                continue;
            for (unsigned r = 0; r < R; ++r) {
                const int ih = convt_from(oh, r, UH, PH, DH, H);
                if (ih < 0)
                    continue;
                for (unsigned s = 0; s < S; ++s) {
                    const int iw = convt_from(ow, s, UW, PW, DW, W);
                    if (iw >= 0)
                        acc += x[(((n * C + c) * D + id) * H + ih) * W + iw] *
                               w[((((size_t)c * kg + kl) * T + a) * R + r) * S + s];
                }
            }
        }
    y[t] = acc;
}
