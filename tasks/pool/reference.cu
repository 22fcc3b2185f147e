// reference.cu: the pooling family's trusted reference (see _family.lua):
// x [N,H,W,C] into y [N,OH,OW,C], NHWC, an R x R window at stride U with
// padding P. One thread per output element (a unit, u = ((n*OH + oh)*OW +
// ow)*C + c): the maximum of the window's elements inside the image (the
// padding is -inf and never wins), or their sum in fp64 divided by R*R
// (the padding counts as zeros), written as fp32. Deterministic; klab
// compiles it after its prelude (klab_load, klab_unit).
//
// Slot i of y holds unit klab_unit(positions, i): with positions null, all
// of y in order (n = its size); else the n units listed.

extern "C" __global__ void pool_ref(const void *x, int dtx, const u64 *positions, u64 n, float *y, u32 H, u32 W, u32 C,
                                    u32 OH, u32 OW, u32 R, u32 U, u32 P, int avg)
{
    u64 slot = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= n)
        return;
    u64 u = klab_unit(positions, slot);
    u32 c = (u32)(u % C);
    u64 t = u / C;
    u32 ow = (u32)(t % OW);
    t /= OW;
    u32 oh = (u32)(t % OH);
    u64 img = t / OH;
    double acc = avg ? 0.0 : __longlong_as_double(0xfff0000000000000ULL);  // -inf
    for (u32 r = 0; r < R; r++) {
        long long ih = (long long)oh * U - P + r;
        if (ih < 0 || ih >= H)
            continue;
        for (u32 s = 0; s < R; s++) {
            long long iw = (long long)ow * U - P + s;
            if (iw < 0 || iw >= W)
                continue;
            double v = klab_load(x, ((img * H + (u64)ih) * W + (u64)iw) * C + c, dtx);
            acc = avg ? acc + v : fmax(acc, v);
        }
    }
    y[slot] = (float)(avg ? acc / (double)(R * R) : acc);
}

// Pooling over the trailing dimensions of NCHW-style tensors, as PyTorch
// lays them out (_ncl.lua): x [N*C, D, H, W] into y [N*C, OD, OH, OW] (a 1-D
// pooling is D = H = 1), a K x K x K window (1 x 1 x K for 1-D) at stride S,
// padding P and dilation DL on each pooled dimension. One thread per output
// element unit; the maximum of the window's elements inside the input, or
// their sum in fp64 divided by the window's size (the padding counts as
// zeros, PyTorch's count_include_pad), written as fp32.
extern "C" __global__ void poolnc_ref(const float *x, const u64 *positions, u64 n, float *y, u32 D, u32 H, u32 W,
                                      u32 OD, u32 OH, u32 OW, u32 KD, u32 KH, u32 KW, u32 S, u32 P, u32 DL, int avg)
{
    u64 slot = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= n)
        return;
    u64 u = klab_unit(positions, slot);
    const u32 ow = (u32)(u % OW), oh = (u32)(u / OW % OH), od = (u32)(u / ((u64)OW * OH) % OD);
    const u64 plane = u / ((u64)OW * OH * OD);
    const float *xp = x + plane * D * H * W;
    const u32 sd = KD > 1 ? S : 1, sh = KH > 1 ? S : 1, pd = KD > 1 ? P : 0, ph = KH > 1 ? P : 0;
    double acc = avg ? 0.0 : __longlong_as_double(0xfff0000000000000ULL);
    for (u32 a = 0; a < KD; a++)
        for (u32 b = 0; b < KH; b++)
            for (u32 c = 0; c < KW; c++) {
                const long long d = (long long)od * sd + (long long)a * DL - pd;
                const long long h = (long long)oh * sh + (long long)b * DL - ph;
                const long long w = (long long)ow * S + (long long)c * DL - P;
                if (d < 0 || d >= D || h < 0 || h >= H || w < 0 || w >= W)
                    continue;
                const double v = xp[((u64)d * H + h) * W + w];
                acc = avg ? acc + v : fmax(acc, v);
            }
    y[slot] = (float)(avg ? acc / ((double)KD * KH * KW) : acc);
}
