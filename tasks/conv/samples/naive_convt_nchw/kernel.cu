// naive_convt_nchw: a gathering NCHW transposed convolution with groups and
// per-axis padding, stride and dilation, one thread per element of y (the
// task's default plan), its contributions summed in fp32.

extern "C" __global__ void convt2d_nchw(const float *__restrict__ x, const float *__restrict__ w,
                                        float *__restrict__ y, unsigned N, unsigned C, unsigned H, unsigned W,
                                        unsigned K, unsigned R, unsigned S, unsigned PH, unsigned PW, unsigned UH,
                                        unsigned UW, unsigned DH, unsigned DW, unsigned G)
{
    const unsigned OH = (H - 1) * UH - 2 * PH + DH * (R - 1) + 1, OW = (W - 1) * UW - 2 * PW + DW * (S - 1) + 1;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)N * K * OH * OW)
        return;
    const unsigned ow = t % OW, oh = t / OW % OH, k = t / ((size_t)OW * OH) % K;
    const size_t n = t / ((size_t)OW * OH * K);
    const unsigned kg = K / G, cg = C / G, g = k / kg, kl = k % kg;
    float acc = 0.0f;
    for (unsigned c = g * cg; c < (g + 1) * cg; ++c)
        for (unsigned r = 0; r < R; ++r) {
            const int th = (int)oh + (int)PH - (int)(r * DH);
            if (th < 0 || th % (int)UH != 0 || th / (int)UH >= (int)H)
                continue;
            for (unsigned s = 0; s < S; ++s) {
                const int tw = (int)ow + (int)PW - (int)(s * DW);
                if (tw >= 0 && tw % (int)UW == 0 && tw / (int)UW < (int)W)
                    acc += x[((n * C + c) * H + th / UH) * W + tw / UW] * w[(((size_t)c * kg + kl) * R + r) * S + s];
            }
        }
    y[t] = acc;
}
