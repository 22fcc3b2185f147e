// baseline.cu: the softmax family's shipped baseline, a block per row with
// the row held in registers when it fits (up to 16 elements per thread,
// 8192 columns at 512 threads) and read again from L2 otherwise. Online
// max and sum in one pass, fp32 arithmetic, bf16 in and out. Compiled after
// klab's prelude.

#define PER 16

static __device__ __forceinline__ void warp_combine(float &m, float &s)
{
    for (int off = 16; off > 0; off >>= 1) {
        float mo = __shfl_xor_sync(0xffffffffu, m, off);
        float so = __shfl_xor_sync(0xffffffffu, s, off);
        float mn = fmaxf(m, mo);
        s = (m == __int_as_float(0xff800000) ? 0.0f : s * __expf(m - mn)) + (mo == __int_as_float(0xff800000) ? 0.0f : so * __expf(mo - mn));
        m = mn;
    }
}

extern "C" __global__ void __launch_bounds__(512)
softmax_baseline(const __nv_bfloat16 *X, __nv_bfloat16 *Y, u32 C)
{
    __shared__ float wm[32], ws[32];
    const u64 row = blockIdx.x;
    const __nv_bfloat16 *x = X + row * C;
    __nv_bfloat16 *y = Y + row * C;
    const bool held = C <= PER * blockDim.x;

    float v[PER];
    float m = __int_as_float(0xff800000), s = 0.0f;
    if (held) {
#pragma unroll
        for (int k = 0; k < PER; k++) {
            u32 c = threadIdx.x + k * blockDim.x;
            v[k] = c < C ? __bfloat162float(x[c]) : __int_as_float(0xff800000);
            m = fmaxf(m, v[k]);
        }
#pragma unroll
        for (int k = 0; k < PER; k++)
            s += v[k] == __int_as_float(0xff800000) ? 0.0f : __expf(v[k] - m);
    } else {
        for (u32 c = threadIdx.x; c < C; c += blockDim.x) {
            float a = __bfloat162float(x[c]);
            float mn = fmaxf(m, a);
            s = (m == __int_as_float(0xff800000) ? 0.0f : s * __expf(m - mn)) + __expf(a - mn);
            m = mn;
        }
    }
    warp_combine(m, s);
    u32 w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if ((threadIdx.x & 31) == 0) {
        wm[w] = m;
        ws[w] = s;
    }
    __syncthreads();
    if (w == 0) {
        m = threadIdx.x < nw ? wm[threadIdx.x] : __int_as_float(0xff800000);
        s = threadIdx.x < nw ? ws[threadIdx.x] : 0.0f;
        warp_combine(m, s);
        if (threadIdx.x == 0) {
            wm[0] = m;
            ws[0] = s;
        }
    }
    __syncthreads();
    m = wm[0];
    const float inv = 1.0f / ws[0];
    if (held) {
#pragma unroll
        for (int k = 0; k < PER; k++) {
            u32 c = threadIdx.x + k * blockDim.x;
            if (c < C)
                y[c] = __float2bfloat16_rn(__expf(v[k] - m) * inv);
        }
    } else {
        for (u32 c = threadIdx.x; c < C; c += blockDim.x)
            y[c] = __float2bfloat16_rn(__expf(__bfloat162float(x[c]) - m) * inv);
    }
}
