// reference.cu: the convolution family's trusted reference (see
// _family.lua for the definitions). NHWC tensors, KRSC filters, zero
// padding, cross-correlation. One thread per output element (a unit): its
// taps summed in fp64 in a fixed order (filter row, filter column, channel)
// from the values the kernel sees, written as fp32. Deterministic, no
// atomics; plain rather than fast. klab compiles it after its prelude
// (klab_load, klab_unit).
//
// Slot i of y holds unit klab_unit(positions, i): with positions null, all
// of y in order (n = its size); else the n units listed.

// The coordinates of element u of a packed [N, H, W, C] tensor.
struct nhwc {
    u64 n;
    u32 h, w, c;
};

static __device__ __forceinline__ nhwc nhwc_of(u64 u, u32 H, u32 W, u32 C)
{
    nhwc p;
    p.c = (u32)(u % C);
    u /= C;
    p.w = (u32)(u % W);
    u /= W;
    p.h = (u32)(u % H);
    p.n = u / H;
    return p;
}

// conv2d and the depthwise convolution: x [N,H,W,C], w [K,R,S,C/groups],
// y [N,OH,OW,K]; output channel k reads the C/groups input channels of its
// group, k / (K/groups). A unit is an element of y: u = ((n*OH + oh)*OW +
// ow)*K + k.
extern "C" __global__ void conv_fwd_ref(const void *x, int dtx, const void *w, int dtw, const u64 *positions, u64 n,
                                        float *y, u32 N, u32 H, u32 W, u32 C, u32 K, u32 R, u32 S, u32 P, u32 U,
                                        u32 OH, u32 OW, u32 groups)
{
    u64 slot = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= n)
        return;
    nhwc o = nhwc_of(klab_unit(positions, slot), OH, OW, K);
    u64 img = o.n;
    u32 oh = o.h, ow = o.w, k = o.c;
    u32 cg = C / groups, kg = K / groups;
    u32 c0 = (k / kg) * cg;
    double acc = 0.0;
    for (u32 r = 0; r < R; r++) {
        long long ih = (long long)oh * U - P + r;
        if (ih < 0 || ih >= H)
            continue;
        for (u32 s = 0; s < S; s++) {
            long long iw = (long long)ow * U - P + s;
            if (iw < 0 || iw >= W)
                continue;
            u64 xb = ((img * H + (u64)ih) * W + (u64)iw) * C + c0;
            u64 wb = (((u64)k * R + r) * S + s) * cg;
            for (u32 c = 0; c < cg; c++)
                acc += klab_load(x, xb + c, dtx) * klab_load(w, wb + c, dtw);
        }
    }
    y[slot] = (float)acc;
}

// The transposed convolution (conv2d's data gradient): x [N,OH,OW,K],
// w [K,R,S,C], y [N,H,W,C]. Output (h, w) gathers every input pixel (i, j)
// and filter tap (r, s) with h = i*U - P + r and w = j*U - P + s. A unit is
// an element of y: u = ((n*H + h)*W + w)*C + c. groups is 1 (unused).
extern "C" __global__ void conv_bwd_data_ref(const void *x, int dtx, const void *w, int dtw, const u64 *positions,
                                             u64 n, float *y, u32 N, u32 H, u32 W, u32 C, u32 K, u32 R, u32 S,
                                             u32 P, u32 U, u32 OH, u32 OW, u32 groups)
{
    u64 slot = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= n)
        return;
    nhwc o = nhwc_of(klab_unit(positions, slot), H, W, C);
    u64 img = o.n;
    u32 row = o.h, col = o.w, c = o.c;
    double acc = 0.0;
    for (u32 r = 0; r < R; r++) {
        long long a = (long long)row + P - r;  // = i*U
        if (a < 0 || a % U != 0 || a / U >= OH)
            continue;
        u64 i = (u64)(a / U);
        for (u32 s = 0; s < S; s++) {
            long long b = (long long)col + P - s;  // = j*U
            if (b < 0 || b % U != 0 || b / U >= OW)
                continue;
            u64 j = (u64)(b / U);
            u64 xb = ((img * OH + i) * OW + j) * K;
            for (u32 k = 0; k < K; k++)
                acc += klab_load(x, xb + k, dtx) * klab_load(w, (((u64)k * R + r) * S + s) * C + c, dtw);
        }
    }
    y[slot] = (float)acc;
}
