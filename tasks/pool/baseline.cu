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
