// baseline.cu: the normalization family's shipped baseline, GroupNorm over
// NCHW bf16 (no library in klab has an engine for it: groupnorm_bf16.lua).
// A block per (sample, group), whose elements are contiguous: one pass for
// the sums of (x - k) and (x - k)^2, shifted by one of the group's own
// values k so that groups far from zero keep their variance, then one pass
// that normalizes (mostly from L2). 16-byte loads and stores where the
// group is aligned and no vector straddles two channels; fp32 arithmetic.
// Compiled after klab's prelude.

// The sums of v.x and v.y over the block (blockDim.x a multiple of 32),
// returned to every thread.
static __device__ __forceinline__ float2 block_sum2(float2 v, float2 *red)
{
    for (int o = 16; o > 0; o >>= 1) {
        v.x += __shfl_xor_sync(0xffffffffu, v.x, o);
        v.y += __shfl_xor_sync(0xffffffffu, v.y, o);
    }
    u32 w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if ((threadIdx.x & 31) == 0)
        red[w] = v;
    __syncthreads();
    if (w == 0) {
        v = threadIdx.x < nw ? red[threadIdx.x] : make_float2(0.0f, 0.0f);
        for (int o = 16; o > 0; o >>= 1) {
            v.x += __shfl_xor_sync(0xffffffffu, v.x, o);
            v.y += __shfl_xor_sync(0xffffffffu, v.y, o);
        }
        if (threadIdx.x == 0)
            red[0] = v;
    }
    __syncthreads();
    return red[0];
}

extern "C" __global__ void __launch_bounds__(512)
groupnorm_baseline(const __nv_bfloat16 *X, const __nv_bfloat16 *weight, const __nv_bfloat16 *bias,
                   __nv_bfloat16 *Y, u32 C, u32 HW, u32 G, float eps)
{
    __shared__ float2 red[32];
    const u64 group = blockIdx.x;
    const u32 cpg = C / G;
    const u64 len = (u64)cpg * HW;
    const u64 base = group * len;
    const u32 c0 = (u32)(group % G) * cpg;
    const __nv_bfloat16 *x = X + base;
    __nv_bfloat16 *y = Y + base;
    const bool vec = base % 8 == 0 && HW % 8 == 0;
    const float k = __bfloat162float(x[0]);

    float2 acc = make_float2(0.0f, 0.0f);
    if (vec) {
        const uint4 *x4 = (const uint4 *)x;
        for (u64 i = threadIdx.x; i < len / 8; i += blockDim.x) {
            uint4 v = x4[i];
            const __nv_bfloat162 *h = (const __nv_bfloat162 *)&v;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                float2 f = __bfloat1622float2(h[j]);
                float a = f.x - k, b = f.y - k;
                acc.x += a + b;
                acc.y += a * a + b * b;
            }
        }
    } else {
        for (u64 i = threadIdx.x; i < len; i += blockDim.x) {
            float a = __bfloat162float(x[i]) - k;
            acc.x += a;
            acc.y += a * a;
        }
    }
    const float2 s = block_sum2(acc, red);
    const float d = s.x / (float)len;
    const float mean = k + d;
    const float rstd = rsqrtf(fmaxf(s.y / (float)len - d * d, 0.0f) + eps);

    if (vec) {
        const uint4 *x4 = (const uint4 *)x;
        uint4 *y4 = (uint4 *)y;
        for (u64 i = threadIdx.x; i < len / 8; i += blockDim.x) {
            const u32 c = c0 + (u32)(i * 8 / HW);
            const float sc = rstd * (weight ? __bfloat162float(weight[c]) : 1.0f);
            const float sh = bias ? __bfloat162float(bias[c]) : 0.0f;
            uint4 v = x4[i], o;
            const __nv_bfloat162 *h = (const __nv_bfloat162 *)&v;
            __nv_bfloat162 *q = (__nv_bfloat162 *)&o;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                float2 f = __bfloat1622float2(h[j]);
                q[j] = __floats2bfloat162_rn((f.x - mean) * sc + sh, (f.y - mean) * sc + sh);
            }
            y4[i] = o;
        }
    } else {
        for (u64 i = threadIdx.x; i < len; i += blockDim.x) {
            const u32 c = c0 + (u32)(i / HW);
            const float v = (__bfloat162float(x[i]) - mean) * rstd * (weight ? __bfloat162float(weight[c]) : 1.0f);
            y[i] = __float2bfloat16_rn(v + (bias ? __bfloat162float(bias[c]) : 0.0f));
        }
    }
}

// The row scalings' shipped baseline (_rowscale.lua; cuDNN's norm_fwd has
// no L1 or L2 mode): a block of 512 per row, each thread's share of the
// norm in fp32, a warp then block sum, and a second pass that divides
// (the row is read again, from L2). mode 0: L2 norm, 1: mean of |x|.
extern "C" __global__ void __launch_bounds__(512)
rowscale_baseline(const float *X, float *Y, u32 C, int mode)
{
    __shared__ float red[16];
    const float *x = X + (u64)blockIdx.x * C;
    float *y = Y + (u64)blockIdx.x * C;
    float s = 0.0f;
    for (u32 c = threadIdx.x; c < C; c += blockDim.x) {
        const float v = x[c];
        s += mode == 0 ? v * v : fabsf(v);
    }
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, off);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        float t = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : 0.0f;
        for (int off = 16; off > 0; off >>= 1)
            t += __shfl_xor_sync(0xffffffffu, t, off);
        if (threadIdx.x == 0)
            red[0] = mode == 0 ? sqrtf(t) : t / (float)C;
    }
    __syncthreads();
    const float inv = 1.0f / red[0];
    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        y[c] = x[c] * inv;
}

// The Frobenius normalization's shipped baseline (frobenius_f32.lua; no
// library in klab has a whole-tensor norm and scaling as one call): block
// sums of squares in fp32 into part[0..g), one block adding them in fp64
// into part[g] (the norm, as a float), then a grid-stride scaling. The same
// bits every run (no atomics).
extern "C" __global__ void __launch_bounds__(256)
frob_partial_baseline(const float *X, u64 n, float *part)
{
    __shared__ float red[8];
    float s = 0.0f;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        s += X[i] * X[i];
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, off);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int w = 0; w < 8; w++)
            t += red[w];
        part[blockIdx.x] = t;
    }
}

extern "C" __global__ void __launch_bounds__(256)
frob_norm_baseline(float *part, u32 g)
{
    __shared__ double red[256];
    double s = 0.0;
    for (u32 i = threadIdx.x; i < g; i += blockDim.x)
        s += part[i];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        part[g] = (float)sqrt(red[0]);
}

extern "C" __global__ void __launch_bounds__(256)
frob_scale_baseline(const float *X, const float *part, u32 g, u64 n, float *Y)
{
    const float inv = 1.0f / part[g];
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        Y[i] = X[i] * inv;
}

// RMSNorm over the middle dimension's shipped baseline (rmsnorm_mid_f32.lua;
// cuDNN's RMS_NORM normalizes the innermost dimensions): a thread per
// (b, s) column, consecutive threads on consecutive s, its mean of squares
// in fp32, then its F outputs.
extern "C" __global__ void __launch_bounds__(256)
rmsnorm_mid_baseline(const float *X, float *Y, u32 B, u32 F, u32 S, float eps)
{
    const u64 o = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= (u64)B * S)
        return;
    const u64 base = (o / S) * (u64)F * S + o % S;
    float sq = 0.0f;
    for (u32 f = 0; f < F; f++) {
        const float v = X[base + (u64)f * S];
        sq = fmaf(v, v, sq);
    }
    const float inv = rsqrtf(sq / (float)F + eps);
    for (u32 f = 0; f < F; f++)
        Y[base + (u64)f * S] = X[base + (u64)f * S] * inv;
}

// BatchNorm in training mode's shipped baseline (batchnorm_train_f32.lua;
// klab's cuDNN graphs have the inference form only): a block of 512 per
// (channel, slice of images), the slice's sum and sum of squared deviations
// from its own mean in fp32, combined across slices in fp64 by
// bn_finish_baseline (Chan's parallel variance), then a grid-stride apply.
#define BN_SLICES 16
extern "C" __global__ void __launch_bounds__(512)
bn_partial_baseline(const float *X, double *part, u32 N, u32 C, u64 S)
{
    __shared__ float red[16];
    const u32 c = blockIdx.x, slice = blockIdx.y;
    const u32 n0 = (u32)((u64)N * slice / BN_SLICES), n1 = (u32)((u64)N * (slice + 1) / BN_SLICES);
    const double count = (double)(n1 - n0) * (double)S;
    float s = 0.0f;
    for (u32 n = n0; n < n1; n++)
        for (u64 i = threadIdx.x; i < S; i += blockDim.x)
            s += X[((u64)n * C + c) * S + i];
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, off);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = s;
    __syncthreads();
    double total = 0.0;
    for (u32 w = 0; w < (blockDim.x >> 5); w++)
        total += red[w];
    __syncthreads();
    const float mean = count > 0 ? (float)(total / count) : 0.0f;
    float q = 0.0f;
    for (u32 n = n0; n < n1; n++)
        for (u64 i = threadIdx.x; i < S; i += blockDim.x) {
            const float d = X[((u64)n * C + c) * S + i] - mean;
            q = fmaf(d, d, q);
        }
    for (int off = 16; off > 0; off >>= 1)
        q += __shfl_xor_sync(0xffffffffu, q, off);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = q;
    __syncthreads();
    if (threadIdx.x == 0) {
        double m2 = 0.0;
        for (u32 w = 0; w < (blockDim.x >> 5); w++)
            m2 += red[w];
        double *p = part + 3 * ((u64)c * BN_SLICES + slice);
        p[0] = count;
        p[1] = mean;
        p[2] = m2;
    }
}

// stats[2c] = the channel's mean, stats[2c+1] = 1/sqrt(var + eps), from its
// slices' (count, mean, M2); a thread per channel.
extern "C" __global__ void bn_finish_baseline(const double *part, float *stats, u32 C, float eps)
{
    const u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    double n = 0.0, mean = 0.0, m2 = 0.0;
    for (u32 k = 0; k < BN_SLICES; k++) {
        const double *p = part + 3 * ((u64)c * BN_SLICES + k);
        if (p[0] == 0.0)
            continue;
        const double nn = n + p[0], d = p[1] - mean;
        mean += d * p[0] / nn;
        m2 += p[2] + d * d * n * p[0] / nn;
        n = nn;
    }
    stats[2 * c] = (float)mean;
    stats[2 * c + 1] = rsqrtf((float)(m2 / n) + eps);
}

extern "C" __global__ void bn_apply_baseline(const float *X, const float *weight, const float *bias,
                                             const float *stats, float *Y, u32 C, u64 S, u64 total)
{
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u32 c = (u32)(i / S % C);
        Y[i] = (X[i] - stats[2 * c]) * stats[2 * c + 1] * weight[c] + bias[c];
    }
}

