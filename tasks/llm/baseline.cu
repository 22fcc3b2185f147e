// baseline.cu: the LLM-serving family's shipped baselines, for operations
// no library in klab offers as one call (each task file says why): fused
// residual add + RMSNorm, NeoX rotary embedding and SwiGLU. Reasonably fast
// memory-bound kernels: 8- and 16-byte accesses where shapes allow, scalar
// code otherwise, fp32 arithmetic. Compiled after klab's prelude.

typedef __nv_bfloat16 bf16;
typedef __nv_bfloat162 bf162;

// The sum of v over the block (blockDim.x a multiple of 32), returned to
// every thread.
static __device__ __forceinline__ float block_sum(float v, float *red)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    u32 w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if ((threadIdx.x & 31) == 0)
        red[w] = v;
    __syncthreads();
    if (w == 0) {
        v = threadIdx.x < nw ? red[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0)
            red[0] = v;
    }
    __syncthreads();
    return red[0];
}

// Fused add + RMSNorm: a block per token. The first pass writes s = x + r
// (rounded to bf16) to residual_out and sums its squares; the second reads
// back the very elements each thread wrote (from L2) and normalizes them.
extern "C" __global__ void __launch_bounds__(512)
add_rmsnorm_baseline(const bf16 *X, const bf16 *R, const bf16 *W, bf16 *Y, bf16 *Rout, u32 H, float eps)
{
    __shared__ float red[32];
    const u64 off = (u64)blockIdx.x * H;
    const bool vec = H % 8 == 0;
    float q = 0.0f;
    if (vec) {
        const uint4 *x4 = (const uint4 *)(X + off), *r4 = (const uint4 *)(R + off);
        uint4 *s4 = (uint4 *)(Rout + off);
        for (u32 i = threadIdx.x; i < H / 8; i += blockDim.x) {
            uint4 a = x4[i], b = r4[i], o;
            const bf162 *pa = (const bf162 *)&a, *pb = (const bf162 *)&b;
            bf162 *po = (bf162 *)&o;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                float2 fa = __bfloat1622float2(pa[j]), fb = __bfloat1622float2(pb[j]);
                po[j] = __floats2bfloat162_rn(fa.x + fb.x, fa.y + fb.y);
                float2 fs = __bfloat1622float2(po[j]);
                q += fs.x * fs.x + fs.y * fs.y;
            }
            s4[i] = o;
        }
    } else {
        for (u32 c = threadIdx.x; c < H; c += blockDim.x) {
            bf16 s = __float2bfloat16_rn(__bfloat162float(X[off + c]) + __bfloat162float(R[off + c]));
            Rout[off + c] = s;
            float f = __bfloat162float(s);
            q += f * f;
        }
    }
    const float rstd = rsqrtf(block_sum(q, red) / (float)H + eps);
    if (vec) {
        const uint4 *s4 = (const uint4 *)(Rout + off), *w4 = (const uint4 *)W;
        uint4 *y4 = (uint4 *)(Y + off);
        for (u32 i = threadIdx.x; i < H / 8; i += blockDim.x) {
            uint4 s = s4[i], w = w4[i], o;
            const bf162 *ps = (const bf162 *)&s, *pw = (const bf162 *)&w;
            bf162 *po = (bf162 *)&o;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                float2 fs = __bfloat1622float2(ps[j]), fw = __bfloat1622float2(pw[j]);
                po[j] = __floats2bfloat162_rn(fs.x * rstd * fw.x, fs.y * rstd * fw.y);
            }
            y4[i] = o;
        }
    } else {
        for (u32 c = threadIdx.x; c < H; c += blockDim.x)
            Y[off + c] = __float2bfloat16_rn(__bfloat162float(Rout[off + c]) * rstd * __bfloat162float(W[c]));
    }
}

// out[i] = lo c - hi s, out[i + D/2] = hi c + lo s, in fp32.
static __device__ __forceinline__ void rotate(float lo, float hi, float c, float s, float *a, float *b)
{
    *a = lo * c - hi * s;
    *b = hi * c + lo * s;
}

// NeoX RoPE: a block per token, the query heads then the key heads; each
// thread takes four pairs (i .. i+3 with i + D/2 ..) at a time: 8-byte
// loads of Q/K halves and 16-byte loads of the cos and sin, when D % 8 == 0.
extern "C" __global__ void __launch_bounds__(128)
rope_baseline(const int *pos, const bf16 *Q, const bf16 *K, const float *cs, bf16 *Qo, bf16 *Ko, u32 Hq, u32 Hk,
              u32 D)
{
    const u64 t = blockIdx.x;
    const u32 half = D / 2, heads = Hq + Hk;
    const float *row = cs + (u64)pos[t] * D;
    if (half % 4 == 0) {
        const u32 per = half / 4;
        for (u32 j = threadIdx.x; j < heads * per; j += blockDim.x) {
            const u32 h = j / per, i = (j % per) * 4;
            const bf16 *x = h < Hq ? Q + (t * Hq + h) * D : K + (t * Hk + (h - Hq)) * D;
            bf16 *o = h < Hq ? Qo + (t * Hq + h) * D : Ko + (t * Hk + (h - Hq)) * D;
            const float4 c = *(const float4 *)(row + i), s = *(const float4 *)(row + half + i);
            uint2 lo = *(const uint2 *)(x + i), hi = *(const uint2 *)(x + half + i), a, b;
            const bf162 *pl = (const bf162 *)&lo, *ph = (const bf162 *)&hi;
            bf162 *pa = (bf162 *)&a, *pb = (bf162 *)&b;
            float2 l0 = __bfloat1622float2(pl[0]), l1 = __bfloat1622float2(pl[1]);
            float2 h0 = __bfloat1622float2(ph[0]), h1 = __bfloat1622float2(ph[1]);
            float r[8];
            rotate(l0.x, h0.x, c.x, s.x, &r[0], &r[4]);
            rotate(l0.y, h0.y, c.y, s.y, &r[1], &r[5]);
            rotate(l1.x, h1.x, c.z, s.z, &r[2], &r[6]);
            rotate(l1.y, h1.y, c.w, s.w, &r[3], &r[7]);
            pa[0] = __floats2bfloat162_rn(r[0], r[1]);
            pa[1] = __floats2bfloat162_rn(r[2], r[3]);
            pb[0] = __floats2bfloat162_rn(r[4], r[5]);
            pb[1] = __floats2bfloat162_rn(r[6], r[7]);
            *(uint2 *)(o + i) = a;
            *(uint2 *)(o + half + i) = b;
        }
    } else {
        for (u32 j = threadIdx.x; j < heads * half; j += blockDim.x) {
            const u32 h = j / half, i = j % half;
            const bf16 *x = h < Hq ? Q + (t * Hq + h) * D : K + (t * Hk + (h - Hq)) * D;
            bf16 *o = h < Hq ? Qo + (t * Hq + h) * D : Ko + (t * Hk + (h - Hq)) * D;
            float a, b;
            rotate(__bfloat162float(x[i]), __bfloat162float(x[half + i]), row[i], row[half + i], &a, &b);
            o[i] = __float2bfloat16_rn(a);
            o[half + i] = __float2bfloat16_rn(b);
        }
    }
}

// silu(a) * b with silu(a) = a / (1 + exp(-a)): exp(-a) overflows to Inf
// for very negative a, and a / Inf = -0, the right limit.
static __device__ __forceinline__ float silu_mul(float a, float b)
{
    return a / (1.0f + __expf(-a)) * b;
}

// SwiGLU: 8 outputs per thread with 16-byte loads and stores when D % 8 ==
// 0 (rows then stay aligned), one otherwise; grid-stride.
extern "C" __global__ void __launch_bounds__(256)
swiglu_baseline(const bf16 *X, bf16 *Y, u32 T, u32 D)
{
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (D % 8 == 0) {
        const u32 dv = D / 8;
        for (u64 v = first; v < (u64)T * dv; v += stride) {
            const u64 t = v / dv;
            const u32 j = (u32)(v % dv) * 8;
            const bf16 *row = X + t * 2 * D;
            uint4 a = *(const uint4 *)(row + j), b = *(const uint4 *)(row + D + j), o;
            const bf162 *pa = (const bf162 *)&a, *pb = (const bf162 *)&b;
            bf162 *po = (bf162 *)&o;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                float2 fa = __bfloat1622float2(pa[k]), fb = __bfloat1622float2(pb[k]);
                po[k] = __floats2bfloat162_rn(silu_mul(fa.x, fb.x), silu_mul(fa.y, fb.y));
            }
            *(uint4 *)(Y + t * D + j) = o;
        }
    } else {
        for (u64 e = first; e < (u64)T * D; e += stride) {
            const u64 t = e / D, j = e % D;
            const bf16 *row = X + t * 2 * D;
            Y[e] = __float2bfloat16_rn(silu_mul(__bfloat162float(row[j]), __bfloat162float(row[D + j])));
        }
    }
}
