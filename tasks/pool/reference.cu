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
