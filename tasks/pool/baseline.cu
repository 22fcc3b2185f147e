// baseline.cu: the pooling family's shipped baseline for bf16, used where
// cuDNN 9.14's bf16 resample engines fault or compute wrong values on an
// H200 (they do for NHWC 3x3/2 windows; the fp32 engines are right and
// stay the fp32 tasks' baseline). One thread per two channels of one
// output pixel: bf16x2 loads and stores along C (contiguous in NHWC), fp32
// arithmetic, a 3x3 window of stride 2 and padding 1. C must be even.
// Compiled after klab's prelude.

extern "C" __global__ void __launch_bounds__(256)
pool2d_bf16_baseline(const __nv_bfloat162 *x, __nv_bfloat162 *y, u32 H, u32 W, u32 C2, u32 OH, u32 OW, u64 total,
                     int avg)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total)
        return;
    u32 c = (u32)(i % C2);
    u64 t = i / C2;
    u32 ow = (u32)(t % OW);
    t /= OW;
    u32 oh = (u32)(t % OH);
    u64 img = t / OH;
    float a0 = avg ? 0.0f : __int_as_float(0xff800000), a1 = a0;
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
            float2 v = __bfloat1622float2(row[(u64)iw * C2]);
            if (avg) {
                a0 += v.x;
                a1 += v.y;
            } else {
                a0 = fmaxf(a0, v.x);
                a1 = fmaxf(a1, v.y);
            }
        }
    }
    if (avg) {
        a0 *= (1.0f / 9.0f);
        a1 *= (1.0f / 9.0f);
    }
    y[i] = __floats2bfloat162_rn(a0, a1);
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
