// naive_conv3d: a direct NCDHW convolution with groups and per-axis
// padding, stride and dilation, one thread per element of y (the task's
// default plan), its taps summed in fp32.

extern "C" __global__ void conv3d(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y,
                                  unsigned N, unsigned C, unsigned D, unsigned H, unsigned W, unsigned K, unsigned T,
                                  unsigned R, unsigned S, unsigned PD, unsigned PH, unsigned PW, unsigned UD,
                                  unsigned UH, unsigned UW, unsigned DD, unsigned DH, unsigned DW, unsigned G)
{
    const unsigned OD = (D + 2 * PD - DD * (T - 1) - 1) / UD + 1, OH = (H + 2 * PH - DH * (R - 1) - 1) / UH + 1,
                   OW = (W + 2 * PW - DW * (S - 1) - 1) / UW + 1;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)N * K * OD * OH * OW)
        return;
    const unsigned ow = t % OW, oh = t / OW % OH, od = t / ((size_t)OW * OH) % OD, k = t / ((size_t)OW * OH * OD) % K;
    const size_t n = t / ((size_t)OW * OH * OD * K);
    const unsigned cg = C / G, c0 = k / (K / G) * cg;
    float acc = 0.0f;
    for (unsigned c = 0; c < cg; ++c)
        for (unsigned a = 0; a < T; ++a) {
            const int id = (int)(od * UD) - (int)PD + (int)(a * DD);
            if (id < 0 || id >= (int)D)
                continue;
            for (unsigned r = 0; r < R; ++r) {
                const int ih = (int)(oh * UH) - (int)PH + (int)(r * DH);
                if (ih < 0 || ih >= (int)H)
                    continue;
                for (unsigned s = 0; s < S; ++s) {
                    const int iw = (int)(ow * UW) - (int)PW + (int)(s * DW);
                    if (iw >= 0 && iw < (int)W)
                        acc += x[(((n * C + c0 + c) * D + id) * H + ih) * W + iw] *
                               w[((((size_t)k * cg + c) * T + a) * R + r) * S + s];
                }
            }
        }
    y[t] = acc;
}
