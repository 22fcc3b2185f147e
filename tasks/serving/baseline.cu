// baseline.cu: the serving family's shipped baselines, for the operations
// no library in klab has (sampling, rotary embedding with a cos/sin cache,
// paged attention). Compiled after klab's prelude (u32, u64, i64).
typedef __nv_bfloat16 bf16;
typedef __nv_bfloat162 bf162;

// ---------------------------------------------------------------- sampling
//
// Probabilities are whole grains of 2^-16 (the tasks' derive), so a grain
// count q = p * 65536 is exact in fp32 and 0 <= q <= 65536. A block of
// 1024 threads per row: one pass builds histograms of the nonzero grains by
// their high bits (q >> 8, 257 bins; count and mass); a threshold's bin
// comes from it, and one more pass builds the histogram of that bin's low
// 8 bits, which gives the threshold. Then one pass in vocabulary order,
// 4096 elements at a time with a block scan, finds the draw.

#define SAMP_THREADS 1024
#define SAMP_BINS 257

struct samp_shared {
    u32 cnt[SAMP_BINS], mass[SAMP_BINS]; // by q >> 8
    u32 lcnt[256], lmass[256];           // by q & 255, within one high bin
    u32 warp[32];
    u32 h, above, g, kept, run, found;
};

static __device__ __forceinline__ u32 samp_grain(float p) { return (u32)(p * 65536.0f); }

// Exclusive block scan of v (a 1024-thread block); *total is the block's sum.
static __device__ u32 samp_scan(u32 v, samp_shared *s, u32 *total)
{
    const u32 lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    u32 x = v;
    for (u32 o = 1; o < 32; o <<= 1) {
        u32 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o)
            x += y;
    }
    __syncthreads();
    if (lane == 31)
        s->warp[w] = x;
    __syncthreads();
    if (w == 0) {
        u32 t = s->warp[lane];
        for (u32 o = 1; o < 32; o <<= 1) {
            u32 y = __shfl_up_sync(0xffffffffu, t, o);
            if (lane >= o)
                t += y;
        }
        s->warp[lane] = t;
    }
    __syncthreads();
    *total = s->warp[31];
    return (w > 0 ? s->warp[w - 1] : 0) + x - v;
}

// The smallest whole g >= lo with mul * stat(q > g) < lim, stat the count
// (by_mass == 0) or the mass of the row's grains above g; s->kept gets the
// mass of the grains >= g. Needs the high histograms; builds the low ones.
static __device__ u32 samp_threshold(const float4 *row, u32 n4, samp_shared *s, int by_mass, u32 mul, u32 lim,
                                     u32 lo)
{
    const u32 *hi = by_mass ? s->mass : s->cnt;
    if (threadIdx.x == 0) {
        u32 h = SAMP_BINS - 1, above = 0;
        while (h > (lo >> 8) && (unsigned long long)mul * (above + hi[h]) < lim)
            above += hi[h--];
        s->h = h;
        s->above = above;
    }
    for (u32 i = threadIdx.x; i < 256; i += blockDim.x)
        s->lcnt[i] = s->lmass[i] = 0;
    __syncthreads();
    const u32 h = s->h;
    for (u32 i = threadIdx.x; i < n4; i += blockDim.x) {
        const float4 p = row[i];
        const float e[4] = { p.x, p.y, p.z, p.w };
        for (int j = 0; j < 4; j++) {
            const u32 q = samp_grain(e[j]);
            if (q != 0 && (q >> 8) == h) {
                atomicAdd(&s->lcnt[q & 255], 1u);
                atomicAdd(&s->lmass[q & 255], q);
            }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        const u32 *low = by_mass ? s->lmass : s->lcnt;
        const u32 start = (h == (lo >> 8)) ? (lo & 255) : 0;
        u32 l = 255, suffix = 0;
        while (l > start && (unsigned long long)mul * (s->above + suffix + low[l]) < lim)
            suffix += low[l--];
        u32 kept = 0;
        for (u32 x = h + 1; x < SAMP_BINS; x++)
            kept += s->mass[x];
        for (u32 x = l; x < 256; x++)
            kept += s->lmass[x];
        s->g = h * 256 + l;
        s->kept = kept;
    }
    __syncthreads();
    return s->g;
}

extern "C" __global__ void __launch_bounds__(SAMP_THREADS)
sampling_baseline(const float *probs, const int *top_k, const float *top_p, const float *uniform, int *samples,
                  u32 V, u32 mode)
{
    __shared__ samp_shared s;
    const u32 b = blockIdx.x, n4 = V / 4;
    const float4 *row = (const float4 *)(probs + (u64)b * V);
    for (u32 i = threadIdx.x; i < SAMP_BINS; i += blockDim.x)
        s.cnt[i] = s.mass[i] = 0;
    if (threadIdx.x == 0) {
        s.kept = 65536;
        s.run = 0;
        s.found = 0xffffffffu;
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < n4; i += blockDim.x) {
        const float4 p = row[i];
        const float e[4] = { p.x, p.y, p.z, p.w };
        for (int j = 0; j < 4; j++) {
            const u32 q = samp_grain(e[j]);
            if (q != 0) {
                atomicAdd(&s.cnt[q >> 8], 1u);
                atomicAdd(&s.mass[q >> 8], q);
            }
        }
    }
    __syncthreads();
    u32 g = 0;
    if (mode & 1)
        g = samp_threshold(row, n4, &s, 0, 1, (u32)top_k[b], 0);
    if (mode & 2) {
        const u32 c = (u32)(top_p[b] * 256.0f); // exact: a multiple of 1/256
        g = samp_threshold(row, n4, &s, 1, 256, c * s.kept, g);
    }
    // The draw: the first kept i whose running kept mass C_i has
    // 256 * C_i > a * S, a = 256 u (all below 2^24).
    const u32 target = (u32)(uniform[b] * 256.0f) * s.kept;
    for (u32 base = 0; base < n4; base += blockDim.x) {
        const u32 i = base + threadIdx.x;
        u32 q[4] = { 0, 0, 0, 0 }, own = 0;
        if (i < n4) {
            const float4 p = row[i];
            q[0] = samp_grain(p.x);
            q[1] = samp_grain(p.y);
            q[2] = samp_grain(p.z);
            q[3] = samp_grain(p.w);
            for (int j = 0; j < 4; j++) {
                if (q[j] < g)
                    q[j] = 0;
                own += q[j];
            }
        }
        u32 total;
        u32 before = s.run + samp_scan(own, &s, &total);
        if (256u * before <= target && 256u * (before + own) > target) {
            for (int j = 0; j < 4; j++) {
                before += q[j];
                if (256u * before > target) {
                    s.found = i * 4 + j;
                    break;
                }
            }
        }
        __syncthreads();
        if (s.found != 0xffffffffu)
            break;
        if (threadIdx.x == 0)
            s.run += total;
        __syncthreads();
    }
    if (threadIdx.x == 0)
        samples[b] = (int)s.found;
}

// ---------------------------------------------------------------- rotary
//
// A block per token. Where R % 16 == 0 and D % 8 == 0 each thread takes 8
// consecutive elements (16-byte loads and stores): in the NeoX layout a
// chunk of the first half with its partner chunk R/2 further, in the GPT-J
// layout four adjacent pairs, and chunks past R are copied. Otherwise an
// element pair per thread.

static __device__ __forceinline__ void rope_rotate(float a, float b, float c, float s, float *x, float *y)
{
    *x = a * c - b * s;
    *y = b * c + a * s;
}

static __device__ __forceinline__ void rope_unpack(uint4 v, float *f)
{
    const bf162 *p = (const bf162 *)&v;
    for (int k = 0; k < 4; k++) {
        float2 t = __bfloat1622float2(p[k]);
        f[2 * k] = t.x;
        f[2 * k + 1] = t.y;
    }
}

static __device__ __forceinline__ uint4 rope_pack(const float *f)
{
    uint4 v;
    bf162 *p = (bf162 *)&v;
    for (int k = 0; k < 4; k++)
        p[k] = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
    return v;
}

extern "C" __global__ void __launch_bounds__(256)
rope_partial_baseline(const i64 *pos, const bf16 *Q, const bf16 *K, const float *cs, bf16 *Qo, bf16 *Ko, u32 Hq,
                      u32 Hk, u32 D, u32 R, u32 gptj)
{
    const u64 t = blockIdx.x;
    const u32 half = R / 2, heads = Hq + Hk;
    const float *row = cs + (u64)pos[t] * R;
    if (R % 16 == 0 && D % 8 == 0) {
        // Chunks of a head: rotary ones (R/16 NeoX chunk pairs, or R/8 GPT-J
        // chunks), then (D - R)/8 copied ones.
        const u32 rot = gptj ? R / 8 : R / 16, per = rot + (D - R) / 8;
        for (u32 j = threadIdx.x; j < heads * per; j += blockDim.x) {
            const u32 h = j / per, c = j % per;
            const bf16 *x = h < Hq ? Q + (t * Hq + h) * D : K + (t * Hk + (h - Hq)) * D;
            bf16 *o = h < Hq ? Qo + (t * Hq + h) * D : Ko + (t * Hk + (h - Hq)) * D;
            if (c >= rot) {
                const u32 at = R + (c - rot) * 8;
                *(uint4 *)(o + at) = *(const uint4 *)(x + at);
            } else if (gptj) {
                float f[8], r[8];
                rope_unpack(*(const uint4 *)(x + c * 8), f);
                for (int k = 0; k < 4; k++) {
                    const u32 i = c * 4 + k;
                    rope_rotate(f[2 * k], f[2 * k + 1], row[i], row[half + i], &r[2 * k], &r[2 * k + 1]);
                }
                *(uint4 *)(o + c * 8) = rope_pack(r);
            } else {
                float lo[8], hi[8], a[8], b[8];
                rope_unpack(*(const uint4 *)(x + c * 8), lo);
                rope_unpack(*(const uint4 *)(x + half + c * 8), hi);
                for (int k = 0; k < 8; k++) {
                    const u32 i = c * 8 + k;
                    rope_rotate(lo[k], hi[k], row[i], row[half + i], &a[k], &b[k]);
                }
                *(uint4 *)(o + c * 8) = rope_pack(a);
                *(uint4 *)(o + half + c * 8) = rope_pack(b);
            }
        }
    } else {
        const u32 per = half + (D - R);
        for (u32 j = threadIdx.x; j < heads * per; j += blockDim.x) {
            const u32 h = j / per, i = j % per;
            const bf16 *x = h < Hq ? Q + (t * Hq + h) * D : K + (t * Hk + (h - Hq)) * D;
            bf16 *o = h < Hq ? Qo + (t * Hq + h) * D : Ko + (t * Hk + (h - Hq)) * D;
            if (i >= half) {
                const u32 e = R + (i - half);
                o[e] = x[e];
            } else {
                const u32 a_at = gptj ? 2 * i : i, b_at = gptj ? 2 * i + 1 : i + half;
                float a, b;
                rope_rotate(__bfloat162float(x[a_at]), __bfloat162float(x[b_at]), row[i], row[half + i], &a, &b);
                o[a_at] = __float2bfloat16_rn(a);
                o[b_at] = __float2bfloat16_rn(b);
            }
        }
    }
}
