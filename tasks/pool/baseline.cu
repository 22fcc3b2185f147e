// baseline.cu: the pooling family's shipped baselines. For bf16, used where
// cuDNN 9.14's bf16 resample engines fault or compute wrong values on an
// H200 (they do for NHWC 3x3/2 windows; the fp32 engines are right): one
// thread per V channels of one output pixel, V = 8 (16-byte loads and
// stores along C, contiguous in NHWC) when C % 8 == 0, else V = 2 (bf16x2;
// C must be even), fp32 arithmetic, a 3x3 window of stride 2 and padding 1.
// Compiled after klab's prelude.

extern "C" __global__ void __launch_bounds__(256)
pool2d_bf16_baseline(const __nv_bfloat162 *x, __nv_bfloat162 *y, u32 H, u32 W, u32 C2, u32 OH, u32 OW, u64 total,
                     int avg, u32 V)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total)
        return;
    const u32 P = V / 2; /* channel pairs per thread: 4 or 1 */
    const u32 CP = C2 / P;
    u32 c = (u32)(i % CP) * P;
    u64 t = i / CP;
    u32 ow = (u32)(t % OW);
    t /= OW;
    u32 oh = (u32)(t % OH);
    u64 img = t / OH;
    const float init = avg ? 0.0f : __int_as_float(0xff800000);
    float a[8];
#pragma unroll
    for (int k = 0; k < 8; k++)
        a[k] = init;
    int h0 = (int)oh * 2 - 1, w0 = (int)ow * 2 - 1;
#pragma unroll
    for (int r = 0; r < 3; r++) {
        int ih = h0 + r;
        if (ih < 0 || ih >= (int)H)
            continue;
        const __nv_bfloat162 *row = x + ((img * H + (u64)ih) * W) * C2 + c;
#pragma unroll
        for (int s = 0; s < 3; s++) {
            int iw = w0 + s;
            if (iw < 0 || iw >= (int)W)
                continue;
            __nv_bfloat162 q[4];
            if (P == 4)
                *reinterpret_cast<uint4 *>(q) = *reinterpret_cast<const uint4 *>(row + (u64)iw * C2);
            else
                q[0] = row[(u64)iw * C2];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                if (k >= (int)P)
                    break;
                float2 v = __bfloat1622float2(q[k]);
                if (avg) {
                    a[2 * k] += v.x;
                    a[2 * k + 1] += v.y;
                } else {
                    a[2 * k] = fmaxf(a[2 * k], v.x);
                    a[2 * k + 1] = fmaxf(a[2 * k + 1], v.y);
                }
            }
        }
    }
    __nv_bfloat162 o[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float lo = avg ? a[2 * k] * (1.0f / 9.0f) : a[2 * k], hi = avg ? a[2 * k + 1] * (1.0f / 9.0f) : a[2 * k + 1];
        o[k] = __floats2bfloat162_rn(lo, hi);
    }
    __nv_bfloat162 *out = y + ((img * OH + oh) * OW + ow) * C2 + c;
    if (P == 4)
        *reinterpret_cast<uint4 *>(out) = *reinterpret_cast<const uint4 *>(o);
    else
        out[0] = o[0];
}

// The NC-layout poolings' shipped baseline (_ncl.lua; klab's cuDNN pooling
// graphs are NHWC 2-D): a thread per output element in a grid-stride loop,
// the window in fp32, the same index arithmetic as the reference.
extern "C" __global__ void __launch_bounds__(256)
poolnc_baseline(const float *x, float *y, u64 n, u32 D, u32 H, u32 W, u32 OD, u32 OH, u32 OW, u32 KD, u32 KH,
                u32 KW, u32 S, u32 P, u32 DL, int avg)
{
    const u32 sd = KD > 1 ? S : 1, sh = KH > 1 ? S : 1, pd = KD > 1 ? P : 0, ph = KH > 1 ? P : 0;
    for (u64 u = (u64)blockIdx.x * blockDim.x + threadIdx.x; u < n; u += (u64)gridDim.x * blockDim.x) {
        const u32 ow = (u32)(u % OW), oh = (u32)(u / OW % OH), od = (u32)(u / ((u64)OW * OH) % OD);
        const float *xp = x + u / ((u64)OW * OH * OD) * D * H * W;
        float acc = avg ? 0.0f : __int_as_float(0xff800000);
        for (u32 a = 0; a < KD; a++) {
            const int d = (int)(od * sd + a * DL) - (int)pd;
            if (d < 0 || d >= (int)D)
                continue;
            for (u32 b = 0; b < KH; b++) {
                const int h = (int)(oh * sh + b * DL) - (int)ph;
                if (h < 0 || h >= (int)H)
                    continue;
                for (u32 c = 0; c < KW; c++) {
                    const int w = (int)(ow * S + c * DL) - (int)P;
                    if (w < 0 || w >= (int)W)
                        continue;
                    const float v = xp[((u64)d * H + h) * W + w];
                    acc = avg ? acc + v : fmaxf(acc, v);
                }
            }
        }
        y[u] = avg ? acc / (float)(KD * KH * KW) : acc;
    }
}

// The fp32 NHWC poolings' shipped kernel beside cuDNN's resample (which
// reaches about half of the H200's DRAM bandwidth on the main shapes; the
// faster of the two is the baseline). One thread per V channels of one
// output pixel: 16-byte loads and stores along C when V = 4 (C % 4 == 0),
// single floats when V = 1; a 3x3 window of stride 2 and padding 1, the
// padding counted as zeros by the average (divided by 9) and never
// winning the maximum.
extern "C" __global__ void __launch_bounds__(256)
pool2d_f32_baseline(const float *x, float *y, u32 H, u32 W, u32 C, u32 OH, u32 OW, u64 total, u32 V, int avg)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total)
        return;
    const u32 CV = C / V;
    const u32 c = (u32)(i % CV) * V;
    u64 t = i / CV;
    const u32 ow = (u32)(t % OW);
    t /= OW;
    const u32 oh = (u32)(t % OH);
    const u64 img = t / OH;
    const float init = avg ? 0.0f : __int_as_float(0xff800000);
    float4 a = make_float4(init, init, init, init);
    const int h0 = (int)oh * 2 - 1, w0 = (int)ow * 2 - 1;
#pragma unroll
    for (int r = 0; r < 3; r++) {
        const int ih = h0 + r;
        if (ih < 0 || ih >= (int)H)
            continue;
        const float *row = x + ((img * H + (u64)ih) * W) * C + c;
#pragma unroll
        for (int s = 0; s < 3; s++) {
            const int iw = w0 + s;
            if (iw < 0 || iw >= (int)W)
                continue;
            float4 v;
            if (V == 4)
                v = *reinterpret_cast<const float4 *>(row + (u64)iw * C);
            else
                v = make_float4(row[(u64)iw * C], 0.0f, 0.0f, 0.0f);
            if (avg) {
                a.x += v.x;
                a.y += v.y;
                a.z += v.z;
                a.w += v.w;
            } else {
                a.x = fmaxf(a.x, v.x);
                a.y = fmaxf(a.y, v.y);
                a.z = fmaxf(a.z, v.z);
                a.w = fmaxf(a.w, v.w);
            }
        }
    }
    float *o = y + ((img * OH + oh) * OW + ow) * C + c;
    if (avg) {
        a.x /= 9.0f;
        a.y /= 9.0f;
        a.z /= 9.0f;
        a.w /= 9.0f;
    }
    if (V == 4)
        *reinterpret_cast<float4 *>(o) = a;
    else
        o[0] = a.x;
}
