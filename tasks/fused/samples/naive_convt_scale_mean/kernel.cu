// naive_convt_scale_mean: y[n,k] = mean over the plane of
// 0.5 · conv_transpose2d(x, w, conv_bias, stride 2, padding 1, output padding 1)
// (convtranspose2d_multiply_globalavgpool_globalavgpool_mean; the second
// mean, of one value, is that value).
//
// x[N,C,H,W], w[C,K,3,3], y[N,K,1,1], row-major fp32; the output plane is
// OH = 2H, OW = 2W. Block r = n*K + k owns plane (n, k); thread t gathers
// the outputs t, t + 256, ... of the plane (each from the input places
// (oh + 1 - r)/2, (ow + 1 - s)/2 that are whole and inside), in fp32; the
// block's 256 partial sums are added in a fixed tree in shared memory.
// Launch: grid (N*K, 1, 1) of 256 threads.

extern "C" __global__ void fused(const float *__restrict__ x, const float *__restrict__ w,
                                 const float *__restrict__ conv_bias, float *__restrict__ y, unsigned N, unsigned C,
                                 unsigned H, unsigned W, unsigned K)
{
    __shared__ float part[256];
    const unsigned OH = 2 * H, OW = 2 * W;
    const unsigned n = blockIdx.x / K, k = blockIdx.x % K;
    const float *img = x + (size_t)n * C * H * W;
    float acc = 0.0f;
    for (unsigned p = threadIdx.x; p < OH * OW; p += 256) {
        const int oh = (int)(p / OW), ow = (int)(p % OW);
        float s = conv_bias[k];
        for (unsigned c = 0; c < C; ++c)
            for (int r = 0; r < 3; ++r) {
                const int ih2 = oh + 1 - r;
                if (ih2 < 0 || ih2 % 2 || ih2 / 2 >= (int)H)
                    continue;
                for (int q = 0; q < 3; ++q) {
                    const int iw2 = ow + 1 - q;
                    if (iw2 < 0 || iw2 % 2 || iw2 / 2 >= (int)W)
                        continue;
                    s = fmaf(img[((size_t)c * H + ih2 / 2) * W + iw2 / 2], w[((size_t)c * K + k) * 9 + r * 3 + q], s);
                }
            }
        acc += 0.5f * s;
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned half = 128; half > 0; half >>= 1) {
        if (threadIdx.x < half)
            part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        y[blockIdx.x] = part[0] / (float)(OH * OW);
}
