// baseline.cu: the argmax and argmin tasks' shipped baseline (cuDNN has
// neither; argmin is the argmax of -X, sign = -1, exact in bf16). A
// block of 256 threads per row; rows whose length is a multiple of 8 are
// read as 16-byte vectors of eight bf16, other rows element by element.
// Each thread visits its columns in increasing order and keeps the first
// strict improvement; warps, then the block, keep the larger value or the
// lower index of equal values. Compiled after klab's prelude.

// Whether (v, i) beats (bv, bi): larger, or equal with a lower index.
static __device__ __forceinline__ bool beats(float v, u32 i, float bv, u32 bi)
{
    return v > bv || (v == bv && i < bi);
}

extern "C" __global__ void __launch_bounds__(256)
argmax_baseline(const __nv_bfloat16 *X, int *I, u32 C, float sign)
{
    __shared__ float wv[8];
    __shared__ u32 wi[8];
    const __nv_bfloat16 *x = X + (u64)blockIdx.x * C;
    float best = __int_as_float(0xff800000);
    u32 at = 0xffffffffu;

    if ((C & 7) == 0) {
        const uint4 *xv = reinterpret_cast<const uint4 *>(x);
        for (u32 j = threadIdx.x; j < (C >> 3); j += blockDim.x) {
            uint4 q = xv[j];
            const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&q);
#pragma unroll
            for (int k = 0; k < 4; k++) {
                float2 f = __bfloat1622float2(h[k]);
                f.x *= sign;
                f.y *= sign;
                if (f.x > best) {
                    best = f.x;
                    at = 8 * j + 2 * k;
                }
                if (f.y > best) {
                    best = f.y;
                    at = 8 * j + 2 * k + 1;
                }
            }
        }
    } else {
        for (u32 c = threadIdx.x; c < C; c += blockDim.x) {
            float v = sign * __bfloat162float(x[c]);
            if (v > best) {
                best = v;
                at = c;
            }
        }
    }

    for (int off = 16; off > 0; off >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, best, off);
        u32 oi = __shfl_xor_sync(0xffffffffu, at, off);
        if (beats(ov, oi, best, at)) {
            best = ov;
            at = oi;
        }
    }
    if ((threadIdx.x & 31) == 0) {
        wv[threadIdx.x >> 5] = best;
        wi[threadIdx.x >> 5] = at;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (u32 w = 1; w < (blockDim.x >> 5); w++)
            if (beats(wv[w], wi[w], best, at)) {
                best = wv[w];
                at = wi[w];
            }
        I[blockIdx.x] = (int)at;
    }
}

// The middle-dimension reductions' shipped baseline (cuDNN 9.14 has no
// engine for a [B,N,D] -> [B,1,D] reduction, packed or described with the
// reduced dimension last). One thread per output (b, d), walking N with
// consecutive threads on consecutive d, so every step of a warp reads one
// contiguous run of D; four loads in flight per thread. op: 0 sum, 1 mean,
// 2 max, 3 min; fp32 accumulation in index order.
extern "C" __global__ void __launch_bounds__(256)
reduce_mid_baseline(const float *X, float *Y, u32 B, u32 N, u32 D, int op)
{
    u64 o = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= (u64)B * D)
        return;
    u64 b = o / D, d = o % D;
    const float *x = X + b * (u64)N * D + d;
    float acc = op == 2 ? __int_as_float(0xff800000) : op == 3 ? __int_as_float(0x7f800000) : 0.0f;
    u32 n = 0;
    for (; n + 4 <= N; n += 4) {
        float v0 = x[(u64)n * D], v1 = x[(u64)(n + 1) * D], v2 = x[(u64)(n + 2) * D], v3 = x[(u64)(n + 3) * D];
        if (op == 2) {
            acc = fmaxf(fmaxf(acc, v0), fmaxf(fmaxf(v1, v2), v3));
        } else if (op == 3) {
            acc = fminf(fminf(acc, v0), fminf(fminf(v1, v2), v3));
        } else {
            acc += v0;
            acc += v1;
            acc += v2;
            acc += v3;
        }
    }
    for (; n < N; n++) {
        float v = x[(u64)n * D];
        acc = op == 2 ? fmaxf(acc, v) : op == 3 ? fminf(acc, v) : acc + v;
    }
    Y[o] = op == 1 ? acc / (float)N : acc;
}

// The middle-dimension argmax and argmin's shipped kernel (cuDNN has
// neither): a thread per output, consecutive threads on consecutive d, the
// first strict improvement kept (the lowest index of equal extremes);
// sign -1 makes it the argmin.
extern "C" __global__ void __launch_bounds__(256)
argmax_mid_baseline(const float *X, int *I, u32 B, u32 N, u32 D, float sign)
{
    const u64 o = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= (u64)B * D)
        return;
    const float *x = X + (o / D) * (u64)N * D + o % D;
    float best = __int_as_float(0xff800000);
    int at = 0;
    for (u32 k = 0; k < N; k++) {
        const float v = sign * x[(u64)k * D];
        if (v > best) {
            best = v;
            at = (int)k;
        }
    }
    I[o] = at;
}

// The last-dimension reductions' shipped kernel beside cuDNN's reduction
// engine (which reads a 1 GiB row-sum at about a third of the H200's DRAM
// bandwidth; the faster of the two is the baseline). A block of 512
// threads per row: 16-byte loads when C % 4 == 0 (every row then starts
// 16-byte aligned), two in flight per thread, fp32 accumulation, then the
// warps' shuffles and one shared-memory step. op: 0 sum, 1 mean, 2 max,
// 3 min.
static __device__ __forceinline__ float red_op(float a, float b, int op)
{
    return op == 2 ? fmaxf(a, b) : op == 3 ? fminf(a, b) : a + b;
}

extern "C" __global__ void __launch_bounds__(512)
reduce_last_baseline(const float *X, float *Y, u32 C, int op)
{
    __shared__ float part[16];
    const float *x = X + (u64)blockIdx.x * C;
    const float init = op == 2 ? __int_as_float(0xff800000) : op == 3 ? __int_as_float(0x7f800000) : 0.0f;
    float a = init, b = init;
    u32 j = threadIdx.x;
    if ((C & 3) == 0) {
        const float4 *xv = reinterpret_cast<const float4 *>(x);
        const u32 n4 = C >> 2;
        for (; j + blockDim.x < n4; j += 2 * blockDim.x) {
            const float4 p = xv[j], q = xv[j + blockDim.x];
            a = red_op(a, red_op(red_op(p.x, p.y, op), red_op(p.z, p.w, op), op), op);
            b = red_op(b, red_op(red_op(q.x, q.y, op), red_op(q.z, q.w, op), op), op);
        }
        if (j < n4) {
            const float4 p = xv[j];
            a = red_op(a, red_op(red_op(p.x, p.y, op), red_op(p.z, p.w, op), op), op);
        }
    } else {
        for (; j < C; j += blockDim.x)
            a = red_op(a, x[j], op);
    }
    a = red_op(a, b, op);
    for (int s = 16; s > 0; s >>= 1)
        a = red_op(a, __shfl_xor_sync(0xffffffffu, a, s), op);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = a;
    __syncthreads();
    if (threadIdx.x < 32) {
        a = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : init;
        for (int s = 8; s > 0; s >>= 1)
            a = red_op(a, __shfl_xor_sync(0xffffffffu, a, s), op);
        if (threadIdx.x == 0)
            Y[blockIdx.x] = op == 1 ? a / (float)C : a;
    }
}
