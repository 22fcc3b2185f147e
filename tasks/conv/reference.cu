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

// Every element of y at once, for conv2d (groups 1) and the transposed
// convolution: the same sums as conv_fwd_ref and conv_bwd_data_ref, term
// for term and in their order (filter row, filter column, channel), so the
// same bits; only the reads differ. A block takes a tile of 64 output
// pixels by 64 output channels, 16 outputs a thread, and stages 16 of the
// summed channels of both operands in shared memory at a time, so each
// value read from memory serves 64 outputs instead of one.
//   conv2d:     pixels (n, oh, ow) of y [N,OH,OW,K], out channels k, summed c
//   transposed: pixels (n, h, w) of y [N,H,W,C], out channels c, summed k
// Grid (ceil(pixels / 64), ceil(out channels / 64)), 256 threads.
#define CT 64  // pixels and out channels of a block's tile
#define RC 16  // summed channels staged at a time

extern "C" __global__ void __launch_bounds__(256)
conv_ref_tiles(const void *x, int dtx, const void *w, int dtw, float *y, u32 N, u32 H, u32 W, u32 C, u32 K, u32 R,
               u32 S, u32 P, u32 U, u32 OH, u32 OW, u32 transposed)
{
    __shared__ double xs[RC][CT], ws[RC][CT];
    __shared__ long long xrow[CT];  // where a pixel's summed channels start in x at this tap; -1: no tap
    const u32 PH = transposed ? H : OH, PW = transposed ? W : OW;
    const u32 OC = transposed ? C : K, SUM = transposed ? K : C;
    const u64 npix = (u64)N * PH * PW, p0 = (u64)blockIdx.x * CT;
    const u32 oc0 = blockIdx.y * CT;
    const u32 tp = threadIdx.x & 15, tk = threadIdx.x >> 4;  // pixels tp + 16*i, out channels tk + 16*j
    double acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0;
    for (u32 r = 0; r < R; r++) {
        for (u32 s = 0; s < S; s++) {
            __syncthreads();
            if (threadIdx.x < CT) {
                u64 pix = p0 + threadIdx.x;
                long long at = -1;
                if (pix < npix) {
                    nhwc q = nhwc_of(pix, PH, PW, 1);
                    if (!transposed) {
                        long long ih = (long long)q.h * U - P + r, iw = (long long)q.w * U - P + s;
                        if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                            at = (long long)(((q.n * H + (u64)ih) * W + (u64)iw) * C);
                    } else {
                        long long a = (long long)q.h + P - r, b = (long long)q.w + P - s;
                        if (a >= 0 && a % U == 0 && a / U < OH && b >= 0 && b % U == 0 && b / U < OW)
                            at = (long long)(((q.n * OH + (u64)(a / U)) * OW + (u64)(b / U)) * K);
                    }
                }
                xrow[threadIdx.x] = at;
            }
            __syncthreads();
            bool tap[4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                tap[i] = xrow[tp + 16 * i] >= 0;
            for (u32 c0 = 0; c0 < SUM; c0 += RC) {
                if (c0 > 0)
                    __syncthreads();
                for (u32 e = threadIdx.x; e < RC * CT; e += blockDim.x) {
                    u32 p = e / RC, c = e % RC;
                    long long at = xrow[p];
                    xs[c][p] = (at >= 0 && c0 + c < SUM) ? klab_load(x, (u64)at + c0 + c, dtx) : 0.0;
                    // conv2d: w [K,R,S,C] read along c; transposed: w [K,R,S,C] read along its C (out channels).
                    u32 o, k;
                    if (!transposed) {
                        o = p;
                        k = c;
                    } else {
                        o = e % CT;
                        k = e / CT;
                    }
                    u32 oc = oc0 + o, sc = c0 + k;
                    double v = 0.0;
                    if (oc < OC && sc < SUM)
                        v = klab_load(w, transposed ? (((u64)sc * R + r) * S + s) * C + oc
                                                    : (((u64)oc * R + r) * S + s) * C + sc, dtw);
                    ws[k][o] = v;
                }
                __syncthreads();
                u32 cn = SUM - c0 < RC ? SUM - c0 : RC;
                for (u32 c = 0; c < cn; c++) {
                    double xv[4], wv[4];
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        xv[i] = xs[c][tp + 16 * i];
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        wv[j] = ws[c][tk + 16 * j];
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        if (tap[i])
#pragma unroll
                            for (int j = 0; j < 4; j++)
                                acc[i][j] = fma(xv[i], wv[j], acc[i][j]);
                }
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        u64 pix = p0 + tp + 16 * i;
        if (pix >= npix)
            continue;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            u32 oc = oc0 + tk + 16 * j;
            if (oc < OC)
                y[pix * OC + oc] = (float)acc[i][j];
        }
    }
}

// PyTorch's nn.Conv2d and nn.Conv3d in NCHW / NCDHW (_nchw.lua; a 2-D task
// passes D = T = OD = 1): x [N, C, D, H, W], w [K, C/G, T, R, S],
// y [N, K, OD, OH, OW], a padding, stride and dilation per axis and G
// groups (output channel k reads the C/G input channels of its group
// k / (K/G)), and a bias per output channel where bias is not null. A
// unit is an element of y in y's order; its taps are summed in fp64 (the
// bias, then input channel, filter depth, row, column) from the fp32 values
// the kernel sees. conv_ncdhw_ref writes the sum as fp32; conv_ncdhw_ref64
// keeps it in fp64, as the first step of a composed task's reference
// (klab.task.compose: a convolution, then tasks/fused/chain.cu's chain).
struct conv_geom {
    u32 C, D, H, W, K, T, R, S, PD, PH, PW, UD, UH, UW, DD, DH, DW, G, OD, OH, OW;
};

// The input coordinate of output o and tap t on one axis, or -1 outside.
static __device__ __forceinline__ long long conv_tap(u32 o, u32 t, u32 U, u32 P, u32 Dl, u32 n)
{
    const long long i = (long long)o * U - P + (long long)t * Dl;
    return i >= 0 && i < n ? i : -1;
}

// The input coordinate that output o receives through tap t of a
// transposed convolution, or -1 when none does.
static __device__ __forceinline__ long long convt_tap(u32 o, u32 t, u32 U, u32 P, u32 Dl, u32 n)
{
    const long long r = (long long)o + P - (long long)t * Dl;
    return r >= 0 && r % U == 0 && r / U < n ? r / U : -1;
}

// transposed: 0 the convolution (w [K, C/G, T, R, S]), 1 the transposed one
// (w [C, K/G, T, R, S]: input channel c sends to output channels
// (c / (C/G))*(K/G) + k').
static __device__ double conv_ncdhw_unit(const float *x, const float *w, const float *bias, u64 u, const conv_geom &g,
                                         int transposed)
{
    const u32 ow = (u32)(u % g.OW), oh = (u32)(u / g.OW % g.OH), od = (u32)(u / ((u64)g.OW * g.OH) % g.OD);
    const u32 k = (u32)(u / ((u64)g.OW * g.OH * g.OD) % g.K);
    const u64 img = u / ((u64)g.OW * g.OH * g.OD * g.K);
    const u32 cg = g.C / g.G, kg = g.K / g.G, grp = k / kg;
    double acc = bias ? (double)bias[k] : 0.0;
    for (u32 c = grp * cg; c < (grp + 1) * cg; c++)
        for (u32 a = 0; a < g.T; a++) {
            const long long d = transposed ? convt_tap(od, a, g.UD, g.PD, g.DD, g.D) : conv_tap(od, a, g.UD, g.PD, g.DD, g.D);
            if (d < 0)
                continue;
            for (u32 r = 0; r < g.R; r++) {
                const long long h = transposed ? convt_tap(oh, r, g.UH, g.PH, g.DH, g.H) : conv_tap(oh, r, g.UH, g.PH, g.DH, g.H);
                if (h < 0)
                    continue;
                for (u32 s = 0; s < g.S; s++) {
                    const long long ww = transposed ? convt_tap(ow, s, g.UW, g.PW, g.DW, g.W)
                                                    : conv_tap(ow, s, g.UW, g.PW, g.DW, g.W);
                    if (ww < 0)
                        continue;
                    const double xv = x[(((img * g.C + c) * g.D + d) * g.H + h) * g.W + ww];
                    const u64 wi = transposed ? ((u64)c * kg + k % kg) : ((u64)k * cg + (c - grp * cg));
                    const double wv = w[((wi * g.T + a) * g.R + r) * g.S + s];
                    acc += xv * wv;
                }
            }
        }
    return acc;
}

extern "C" __global__ void conv_ncdhw_ref(const float *x, const float *w, const float *bias, const u64 *positions, u64 n,
                                          float *y,
                                          int transposed, u32 C, u32 D, u32 H, u32 W, u32 K, u32 T, u32 R, u32 S,
                                          u32 PD, u32 PH, u32 PW, u32 UD, u32 UH, u32 UW, u32 DD, u32 DH, u32 DW,
                                          u32 G, u32 OD, u32 OH, u32 OW)
{
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const conv_geom g = { C, D, H, W, K, T, R, S, PD, PH, PW, UD, UH, UW, DD, DH, DW, G, OD, OH, OW };
    y[i] = (float)conv_ncdhw_unit(x, w, bias, klab_unit(positions, i), g, transposed);
}

extern "C" __global__ void conv_ncdhw_ref64(const float *x, const float *w, const float *bias, const u64 *positions,
                                            u64 n, double *y, int transposed, u32 C, u32 D, u32 H, u32 W, u32 K, u32 T,
                                            u32 R, u32 S, u32 PD, u32 PH, u32 PW, u32 UD, u32 UH, u32 UW, u32 DD,
                                            u32 DH, u32 DW, u32 G, u32 OD, u32 OH, u32 OW)
{
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const conv_geom g = { C, D, H, W, K, T, R, S, PD, PH, PW, UD, UH, UW, DD, DH, DW, G, OD, OH, OW };
    y[i] = conv_ncdhw_unit(x, w, bias, klab_unit(positions, i), g, transposed);
}
