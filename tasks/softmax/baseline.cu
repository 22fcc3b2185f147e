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

// The log-softmax baseline (logsoftmax.lua): a block per row. Rows whose
// length is a multiple of 8 are read as 16-byte vectors of eight bf16, each
// vector folded into the thread's running (max, sum of exp(x - max)) with
// one rescale; other rows element by element. The block's statistics give
// lse = max + log(sum); a second pass over the row (from L2) writes
// x - lse, never exp(x - max), which underflows on wide rows.

// Merges the statistics (mo, so) into (m, s); an empty side has m = -inf.
static __device__ __forceinline__ void merge_stats(float &m, float &s, float mo, float so)
{
    const float ninf = __int_as_float(0xff800000);
    const float mn = fmaxf(m, mo);
    if (mn == ninf)
        return;
    s = (m == ninf ? 0.0f : s * __expf(m - mn)) + (mo == ninf ? 0.0f : so * __expf(mo - mn));
    m = mn;
}

static __device__ __forceinline__ void unpack8(const uint4 &q, float *a)
{
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&q);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float2 f = __bfloat1622float2(h[k]);
        a[2 * k] = f.x;
        a[2 * k + 1] = f.y;
    }
}

extern "C" __global__ void __launch_bounds__(512)
logsoftmax_baseline(const __nv_bfloat16 *X, __nv_bfloat16 *Y, u32 C)
{
    __shared__ float wm[32], ws[32];
    const __nv_bfloat16 *x = X + (u64)blockIdx.x * C;
    __nv_bfloat16 *y = Y + (u64)blockIdx.x * C;
    const bool vec = (C & 7) == 0;
    const u32 nvec = C >> 3;
    float m = __int_as_float(0xff800000), s = 0.0f;

    if (vec) {
        const uint4 *xv = reinterpret_cast<const uint4 *>(x);
        for (u32 j = threadIdx.x; j < nvec; j += blockDim.x) {
            float a[8];
            unpack8(xv[j], a);
            float vm = a[0];
#pragma unroll
            for (int k = 1; k < 8; k++)
                vm = fmaxf(vm, a[k]);
            float vs = 0.0f;
#pragma unroll
            for (int k = 0; k < 8; k++)
                vs += __expf(a[k] - vm);
            merge_stats(m, s, vm, vs);
        }
    } else {
        for (u32 c = threadIdx.x; c < C; c += blockDim.x)
            merge_stats(m, s, __bfloat162float(x[c]), 1.0f);
    }

    for (int off = 16; off > 0; off >>= 1)
        merge_stats(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
    if ((threadIdx.x & 31) == 0) {
        wm[threadIdx.x >> 5] = m;
        ws[threadIdx.x >> 5] = s;
    }
    __syncthreads();
    m = wm[0];
    s = ws[0];
    for (u32 w = 1; w < (blockDim.x >> 5); w++)
        merge_stats(m, s, wm[w], ws[w]);
    const float lse = m + logf(s);

    if (vec) {
        const uint4 *xv = reinterpret_cast<const uint4 *>(x);
        uint4 *yv = reinterpret_cast<uint4 *>(y);
        for (u32 j = threadIdx.x; j < nvec; j += blockDim.x) {
            float a[8];
            unpack8(xv[j], a);
            uint4 q;
            __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&q);
#pragma unroll
            for (int k = 0; k < 4; k++)
                h[k] = __floats2bfloat162_rn(a[2 * k] - lse, a[2 * k + 1] - lse);
            yv[j] = q;
        }
    } else {
        for (u32 c = threadIdx.x; c < C; c += blockDim.x)
            y[c] = __float2bfloat16_rn(__bfloat162float(x[c]) - lse);
    }
}
