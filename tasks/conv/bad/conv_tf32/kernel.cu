// KNOWN BAD (verdict: incorrect). A direct fp32 convolution (as
// samples/naive_conv, in fp32) that rounds x and w to TF32 (10 mantissa
// bits, round to nearest, ties away from zero) before multiplying: what a
// kernel on TF32 tensor cores computes. Each product is off by about 4e-4
// of its size, about 4e-4*sqrt(C*R*S) on y (6e-3 on the small shape),
// beyond the task's fp32 tolerance.

static __device__ __forceinline__ float to_tf32(float v)
{
    return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xffffe000u);
}

extern "C" __global__ void conv2d(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y,
                                  unsigned N, unsigned H, unsigned W, unsigned C, unsigned K, unsigned R, unsigned S,
                                  unsigned P, unsigned U)
{
    const unsigned OH = (H + 2 * P - R) / U + 1, OW = (W + 2 * P - S) / U + 1;
    const size_t total = (size_t)N * OH * OW * K;
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total)
        return;
    const unsigned k = t % K;
    size_t p = t / K;
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
            const float *xp = x + ((n * H + ih) * W + iw) * C;
            const float *wp = w + (((size_t)k * R + r) * S + s) * C;
            for (unsigned c = 0; c < C; ++c)
                acc = fmaf(to_tf32(xp[c]), to_tf32(wp[c]), acc);
        }
    }
    y[t] = acc;
}
