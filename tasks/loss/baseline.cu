// baseline.cu: the cross-entropy task's shipped baseline (no library has a
// cross-entropy with integer targets as one call; a cuDNN graph would need
// two reductions feeding pointwise operations and an index gather). A block
// of 512 threads per row; rows whose length is a multiple of 8 are read as
// 16-byte vectors of eight bf16, others element by element, once: each
// thread keeps a running maximum m and sum s of exp(x - m), rescaled when
// m grows; warps, then the block, fold their pairs; the loss is
// m + log(s) - x[target]. Compiled after klab's prelude.

// Folds the pair (mo, so) into (m, s); a pair with a zero sum is empty.
static __device__ __forceinline__ void fold(float &m, float &s, float mo, float so)
{
    if (so == 0.0f)
        return;
    if (s == 0.0f) {
        m = mo;
        s = so;
        return;
    }
    const float top = fmaxf(m, mo);
    s = s * __expf(m - top) + so * __expf(mo - top);
    m = top;
}

static __device__ __forceinline__ float ce_value(__nv_bfloat16 v) { return __bfloat162float(v); }
static __device__ __forceinline__ float ce_value(float v) { return v; }

// Row blockIdx.x's loss into L[blockIdx.x], for bf16 logits (eight at a
// time where C allows) or fp32 ones (one at a time).
template <typename E> static __device__ void ce_row_baseline(const E *X, const int *T, float *L, u32 C)
{
    __shared__ float wm[16], ws[16];
    const u64 row = blockIdx.x;
    const E *x = X + row * C;
    float m = 0.0f, s = 0.0f;

    if (sizeof(E) == 2 && (C & 7) == 0) {
        const uint4 *xv = reinterpret_cast<const uint4 *>(x);
        for (u32 j = threadIdx.x; j < (C >> 3); j += blockDim.x) {
            const uint4 q = xv[j];
            const __nv_bfloat16 *h = reinterpret_cast<const __nv_bfloat16 *>(&q);
            float a[8], top = __bfloat162float(h[0]);
#pragma unroll
            for (int k = 0; k < 8; k++) {
                a[k] = __bfloat162float(h[k]);
                top = fmaxf(top, a[k]);
            }
            float sum = 0.0f;
#pragma unroll
            for (int k = 0; k < 8; k++)
                sum += __expf(a[k] - top);
            fold(m, s, top, sum);
        }
    } else {
        for (u32 c = threadIdx.x; c < C; c += blockDim.x)
            fold(m, s, ce_value(x[c]), 1.0f);
    }

    for (int off = 16; off > 0; off >>= 1) {
        const float mo = __shfl_xor_sync(0xffffffffu, m, off);
        const float so = __shfl_xor_sync(0xffffffffu, s, off);
        fold(m, s, mo, so);
    }
    if ((threadIdx.x & 31) == 0) {
        wm[threadIdx.x >> 5] = m;
        ws[threadIdx.x >> 5] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (u32 w = 1; w < (blockDim.x >> 5); w++)
            fold(m, s, wm[w], ws[w]);
        L[row] = m + logf(s) - ce_value(x[T[row]]);
    }
}

extern "C" __global__ void __launch_bounds__(512)
ce_baseline(const __nv_bfloat16 *X, const int *T, float *L, u32 C)
{
    ce_row_baseline(X, T, L, C);
}

// cross_entropy_mean_f32: the rows' losses into a workspace, whose mean
// mse_final_baseline then takes in fp64.
extern "C" __global__ void __launch_bounds__(512)
ce_f32_baseline(const float *X, const int *T, float *L, u32 C)
{
    ce_row_baseline(X, T, L, C);
}

// The mean squared error's shipped baseline (cuDNN 9.14 has no engine for
// SUB, MUL, a reduction of the whole [R, C] tensor to [1, 1] and a scale,
// measured on an H200). Two launches and no atomics, so the result is the
// same bits every run: each block sums (p - t)^2 over a grid-strided slice
// in fp32, four elements per load, into part[block]; one block then adds
// the partial sums in fp64 and divides by n.
// The block's fp32 sum of acc (256 threads: a warp sum, then thread 0 adds
// the eight warps' in order) written to part[blockIdx.x].
static __device__ __forceinline__ void block_total(float acc, float *part)
{
    __shared__ float red[8];
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int w = 0; w < 8; w++)
            s += red[w];
        part[blockIdx.x] = s;
    }
}

extern "C" __global__ void __launch_bounds__(256)
mse_partial_baseline(const float4 *P, const float4 *T, const float *Ps, const float *Ts, u64 n, float *part)
{
    float acc = 0.0f;
    u64 n4 = n / 4;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 p = P[i], t = T[i];
        float a = p.x - t.x, b = p.y - t.y, c = p.z - t.z, d = p.w - t.w;
        acc += a * a + b * b + c * c + d * d;
    }
    if (blockIdx.x == 0)
        for (u64 i = n4 * 4 + threadIdx.x; i < n; i += blockDim.x) {
            float a = Ps[i] - Ts[i];
            acc += a * a;
        }
    block_total(acc, part);
}

extern "C" __global__ void __launch_bounds__(256)
mse_final_baseline(const float *part, u32 nparts, u64 n, float *L)
{
    __shared__ double red[256];
    double s = 0.0;
    for (u32 i = threadIdx.x; i < nparts; i += blockDim.x)
        s += part[i];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        L[0] = (float)(red[0] / (double)n);
}

// The pointwise losses' shipped baseline (_pointwise.lua): as the MSE's,
// each block sums the loss over a grid-strided slice in fp32 into
// part[block], and mse_final_baseline adds the partial sums in fp64 and
// divides by n. op 0 Huber (smooth L1, beta 1), op 1 hinge, op 2 KL
// divergence t (log t - log p). Element i's target is T[i % tn] (tn = n:
// targets of P's shape; C: one per column).
extern "C" __global__ void __launch_bounds__(256)
loss_partial_baseline(const float *P, const float *T, u64 n, float *part, int op, u64 tn)
{
    float acc = 0.0f;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float p = P[i], t = T[tn == n ? i : i % tn];
        if (op == 0) {
            const float d = fabsf(p - t);
            acc += d < 1.0f ? 0.5f * d * d : d - 0.5f;
        } else if (op == 2) {
            acc += t > 0.0f ? t * (logf(t) - logf(p)) : 0.0f;
        } else {
            acc += fmaxf(1.0f - p * t, 0.0f);
        }
    }
    block_total(acc, part);
}

// The triplet margin loss's shipped baseline (triplet_f32.lua): a block of
// 256 per row, both squared distances in fp32 (warp sums, then the eight
// warps' in order), the row's loss into part[row]; mse_final_baseline then
// averages the rows in fp64.
extern "C" __global__ void __launch_bounds__(256)
triplet_rows_baseline(const float *A, const float *P, const float *N, u32 D, float margin, float eps, float *part)
{
    __shared__ float rp[8], rn[8];
    const u64 base = (u64)blockIdx.x * D;
    float sp = 0.0f, sn = 0.0f;
    for (u32 c = threadIdx.x; c < D; c += blockDim.x) {
        const float a = A[base + c];
        const float dp = a - P[base + c] + eps, dn = a - N[base + c] + eps;
        sp += dp * dp;
        sn += dn * dn;
    }
    for (int off = 16; off > 0; off >>= 1) {
        sp += __shfl_xor_sync(0xffffffffu, sp, off);
        sn += __shfl_xor_sync(0xffffffffu, sn, off);
    }
    if ((threadIdx.x & 31) == 0) {
        rp[threadIdx.x >> 5] = sp;
        rn[threadIdx.x >> 5] = sn;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float tp = 0.0f, tn = 0.0f;
        for (int w = 0; w < 8; w++) {
            tp += rp[w];
            tn += rn[w];
        }
        part[blockIdx.x] = fmaxf(sqrtf(tp) - sqrtf(tn) + margin, 0.0f);
    }
}
