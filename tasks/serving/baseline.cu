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

// ---------------------------------------------------------------- paged decode attention
//
// Split-KV decoding. gqa_decode_split: a block of 128 threads per
// (split, KV head, sequence) takes `chunk` tokens of the sequence, 32 at a
// time: the tile's K and V rows gathered through the page table into
// shared memory (16-byte loads), the scores of the G = Hq/Hk query heads
// that share the KV head, an online softmax per head, and the unnormalized
// sums of p v; it writes each head's (max, sum, acc[D]) to the workspace.
// gqa_decode_combine merges the splits of a (sequence, head): out and lse.
// Needs D % 8 == 0, G * D <= 16 * 128 and G <= 32.

// What the split-KV decode kernels share (gqa_decode_split,
// mla_decode_split): each block keeps, for its G heads, a running max hm,
// a running sum hl and unnormalized sums acc over the tokens of its split,
// a tile at a time, and writes them to the workspace for a combine kernel:
// ws_m, ws_l [heads, NS] and ws_acc [heads, NS, D].

// A split with no tokens: its heads' sums are empty.
static __device__ void split_empty(float *ws_m, float *ws_l, u64 head0, u32 G, u32 NS, u32 sp)
{
    for (u32 hh = threadIdx.x; hh < G; hh += blockDim.x) {
        ws_m[(head0 + hh) * NS + sp] = -1e30f;
        ws_l[(head0 + hh) * NS + sp] = 0.0f;
    }
}

// The online softmax of a tile, a thread per head: the scores ps[G][tile]
// become exp(s - max) (0 past the tile's `valid` tokens); hm and hl move
// on, and hc gets the factor the earlier sums take.
static __device__ void split_tile_softmax(float *ps, float *hm, float *hl, float *hc, u32 G, u32 tile, u32 valid)
{
    for (u32 hh = threadIdx.x; hh < G; hh += blockDim.x) {
        float mx = hm[hh];
        for (u32 tt = 0; tt < tile; tt++)
            mx = fmaxf(mx, ps[hh * tile + tt]);
        float sum = 0.0f;
        for (u32 tt = 0; tt < tile; tt++) {
            const float e = tt < valid ? expf(ps[hh * tile + tt] - mx) : 0.0f;
            ps[hh * tile + tt] = e;
            sum += e;
        }
        const float corr = expf(hm[hh] - mx);
        hl[hh] = hl[hh] * corr + sum;
        hm[hh] = mx;
        hc[hh] = corr;
    }
}

// The tile's p v added to acc: thread t keeps entries t + THREADS k of the
// G x D sums; the tile's value rows are vals[tt * vstride ..].
template <int ACC, int THREADS>
static __device__ void split_tile_accumulate(float (&acc)[ACC], const float *ps, const float *hc, const float *vals,
                                             u32 vstride, u32 G, u32 D, u32 tile)
{
    for (int k = 0; k < ACC; k++) {
        const u32 i = threadIdx.x + k * THREADS;
        if (i < G * D) {
            const u32 hh = i / D, d = i % D;
            float s = acc[k] * hc[hh];
            for (u32 tt = 0; tt < tile; tt++)
                s += ps[hh * tile + tt] * vals[tt * vstride + d];
            acc[k] = s;
        }
    }
}

// The block's sums to the workspace.
template <int ACC, int THREADS>
static __device__ void split_store(const float (&acc)[ACC], const float *hm, const float *hl, float *ws_m, float *ws_l,
                                   float *ws_acc, u64 head0, u32 G, u32 D, u32 NS, u32 sp)
{
    for (int k = 0; k < ACC; k++) {
        const u32 i = threadIdx.x + k * THREADS;
        if (i < G * D) {
            const u32 hh = i / D, d = i % D;
            ws_acc[((head0 + hh) * NS + sp) * D + d] = acc[k];
        }
    }
    for (u32 hh = threadIdx.x; hh < G; hh += blockDim.x) {
        ws_m[(head0 + hh) * NS + sp] = hm[hh];
        ws_l[(head0 + hh) * NS + sp] = hl[hh];
    }
}

#define GQA_TILE 32
#define GQA_THREADS 128
#define GQA_ACC 16 // outputs (head, d) per thread: G * D <= 16 * 128

extern "C" __global__ void __launch_bounds__(GQA_THREADS)
gqa_decode_split(const bf16 *Q, const bf16 *kc, const bf16 *vc, const int *bt, const int *lens, float *ws_m,
                 float *ws_l, float *ws_acc, u32 Hq, u32 Hk, u32 D, u32 PS, u32 MAXP, u32 chunk, u32 NS, float scale)
{
    extern __shared__ float sm[];
    const u32 G = Hq / Hk, sp = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z, tid = threadIdx.x;
    const u32 KS = D + 1; // padded K rows: a lane per token reads without bank conflicts
    float *qs = sm;                          // [G][D]
    float *ks = qs + G * D;                  // [TILE][D + 1]
    float *vs = ks + GQA_TILE * KS;          // [TILE][D]
    float *ps = vs + GQA_TILE * D;           // [G][TILE]
    float *hm = ps + G * GQA_TILE;           // [G] running max
    float *hl = hm + G;                      // [G] running sum
    float *hc = hl + G;                      // [G] this tile's correction
    const u32 len = (u32)lens[b], start = sp * chunk, end = min(len, start + chunk);
    const u64 head0 = (u64)b * Hq + (u64)kvh * G; // this block's first query head
    if (start >= len) {
        split_empty(ws_m, ws_l, head0, G, NS, sp);
        return;
    }
    for (u32 i = tid; i < G * D; i += blockDim.x)
        qs[i] = __bfloat162float(Q[head0 * D + i]);
    for (u32 hh = tid; hh < G; hh += blockDim.x) {
        hm[hh] = -1e30f;
        hl[hh] = 0.0f;
    }
    float acc[GQA_ACC];
    for (int k = 0; k < GQA_ACC; k++)
        acc[k] = 0.0f;
    const u32 vec = D / 8;
    for (u32 t0 = start; t0 < end; t0 += GQA_TILE) {
        __syncthreads();
        for (u32 i = tid; i < GQA_TILE * vec; i += blockDim.x) {
            const u32 tt = i / vec, c = (i % vec) * 8, tok = t0 + tt;
            float kf[8], vf[8];
            if (tok < end) {
                const u64 page = (u64)bt[(u64)b * MAXP + tok / PS];
                const u64 at = ((page * PS + tok % PS) * Hk + kvh) * D + c;
                const uint4 kr = *(const uint4 *)(kc + at), vr = *(const uint4 *)(vc + at);
                const bf162 *kp = (const bf162 *)&kr, *vp = (const bf162 *)&vr;
                for (int e = 0; e < 4; e++) {
                    float2 a = __bfloat1622float2(kp[e]), v = __bfloat1622float2(vp[e]);
                    kf[2 * e] = a.x;
                    kf[2 * e + 1] = a.y;
                    vf[2 * e] = v.x;
                    vf[2 * e + 1] = v.y;
                }
            } else {
                for (int e = 0; e < 8; e++)
                    kf[e] = vf[e] = 0.0f;
            }
            for (int e = 0; e < 8; e++) {
                ks[tt * KS + c + e] = kf[e];
                vs[tt * D + c + e] = vf[e];
            }
        }
        __syncthreads();
        for (u32 i = tid; i < G * GQA_TILE; i += blockDim.x) {
            const u32 hh = i / GQA_TILE, tt = i % GQA_TILE;
            float s = -1e30f;
            if (t0 + tt < end) {
                s = 0.0f;
                for (u32 d = 0; d < D; d++)
                    s += qs[hh * D + d] * ks[tt * KS + d];
                s *= scale;
            }
            ps[i] = s;
        }
        __syncthreads();
        split_tile_softmax(ps, hm, hl, hc, G, GQA_TILE, end - t0);
        __syncthreads();
        split_tile_accumulate<GQA_ACC, GQA_THREADS>(acc, ps, hc, vs, D, G, D, GQA_TILE);
    }
    __syncthreads();
    split_store<GQA_ACC, GQA_THREADS>(acc, hm, hl, ws_m, ws_l, ws_acc, head0, G, D, NS, sp);
}

// A block of D threads per (sequence, query head): the splits merged.
extern "C" __global__ void gqa_decode_combine(const float *ws_m, const float *ws_l, const float *ws_acc, bf16 *out,
                                              float *lse, u32 D, u32 NS)
{
    const u64 head = blockIdx.x;
    float M = -1e30f;
    for (u32 s = 0; s < NS; s++)
        if (ws_l[head * NS + s] > 0.0f)
            M = fmaxf(M, ws_m[head * NS + s]);
    float L = 0.0f, o = 0.0f;
    for (u32 s = 0; s < NS; s++) {
        const float l = ws_l[head * NS + s];
        if (l > 0.0f) {
            const float w = expf(ws_m[head * NS + s] - M);
            L += l * w;
            if (threadIdx.x < D)
                o += ws_acc[(head * NS + s) * D + threadIdx.x] * w;
        }
    }
    if (threadIdx.x < D)
        out[head * D + threadIdx.x] = __float2bfloat16_rn(o / L);
    if (threadIdx.x == 0)
        lse[head] = M + logf(L);
}

// ---------------------------------------------------------------- MoE routing
//
// moe_route_baseline: a warp per token, lane l holding experts l, l + 32,
// ... (E <= 256): scores and keys in registers; each selection (a group's
// two best keys, the TG best groups, the K best eligible experts) is a
// butterfly (key, index) maximum, ties to the lower index. The permuted
// order: moe_count_baseline counts each chunk of 1024 assignments per
// expert, moe_scan_baseline turns the counts into each chunk's first slot
// per expert, and moe_place_baseline ranks each assignment among its
// chunk's earlier ones with the same expert.

#define MOE_PER 8 // experts per lane: E <= 256
#define MOE_CHUNK 1024

struct moe_best {
    float v, s;
    u32 i;
};

static __device__ __forceinline__ moe_best moe_warp_best(moe_best b)
{
    for (int o = 16; o > 0; o >>= 1) {
        moe_best x;
        x.v = __shfl_xor_sync(0xffffffffu, b.v, o);
        x.s = __shfl_xor_sync(0xffffffffu, b.s, o);
        x.i = __shfl_xor_sync(0xffffffffu, b.i, o);
        if (x.v > b.v || (x.v == b.v && x.i < b.i))
            b = x;
    }
    return b;
}

extern "C" __global__ void __launch_bounds__(128)
moe_route_baseline(const float *logits, const float *bias, int *ids, float *wts, u32 T, u32 E, u32 K, u32 G, u32 TG,
                   u32 sigmoid, float scale)
{
    const u32 lane = threadIdx.x & 31;
    const u64 t = (u64)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (t >= T)
        return;
    const float NONE = -3.0e38f;
    float l[MOE_PER], s[MOE_PER], key[MOE_PER];
    float m = NONE;
    for (int j = 0; j < MOE_PER; j++) {
        const u32 e = lane + 32 * j;
        l[j] = e < E ? logits[t * E + e] : NONE;
        m = fmaxf(m, l[j]);
    }
    if (!sigmoid) {
        for (int o = 16; o > 0; o >>= 1)
            m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        float z = 0.0f;
        for (int j = 0; j < MOE_PER; j++)
            if (lane + 32 * j < E)
                z += expf(l[j] - m);
        for (int o = 16; o > 0; o >>= 1)
            z += __shfl_xor_sync(0xffffffffu, z, o);
        for (int j = 0; j < MOE_PER; j++)
            s[j] = expf(l[j] - m) / z;
    } else {
        for (int j = 0; j < MOE_PER; j++)
            s[j] = 1.0f / (1.0f + expf(-l[j]));
    }
    for (int j = 0; j < MOE_PER; j++) {
        const u32 e = lane + 32 * j;
        key[j] = e < E ? s[j] + bias[e] : NONE;
    }
    u32 groups = 0xffffffffu; // eligible groups (bits)
    const u32 EG = E / G;
    if (G > 1) {
        float gs = NONE; // lane g: group g's score
        for (u32 g = 0; g < G; g++) {
            moe_best b1 = { NONE, 0.0f, 0xffffffffu }, b2 = { NONE, 0.0f, 0xffffffffu };
            for (int j = 0; j < MOE_PER; j++) {
                const u32 e = lane + 32 * j;
                if (e < E && e / EG == g && key[j] > b1.v) {
                    b1.v = key[j];
                    b1.i = e;
                }
            }
            b1 = moe_warp_best(b1);
            for (int j = 0; j < MOE_PER; j++) {
                const u32 e = lane + 32 * j;
                if (e < E && e / EG == g && e != b1.i && key[j] > b2.v) {
                    b2.v = key[j];
                    b2.i = e;
                }
            }
            b2 = moe_warp_best(b2);
            if (lane == g)
                gs = b1.v + b2.v;
        }
        groups = 0;
        for (u32 r = 0; r < TG; r++) {
            moe_best b = { (lane < G && !(groups >> lane & 1u)) ? gs : NONE, 0.0f, lane };
            b = moe_warp_best(b);
            groups |= 1u << b.i;
        }
    }
    u32 taken = 0; // bit j: this lane's element j is chosen
    float total = 0.0f;
    int my_id = 0;
    float my_s = 0.0f;
    for (u32 k = 0; k < K; k++) {
        moe_best b = { NONE, 0.0f, 0xffffffffu };
        for (int j = 0; j < MOE_PER; j++) {
            const u32 e = lane + 32 * j;
            if (e < E && (groups >> (e / EG) & 1u) && !(taken >> j & 1u) && key[j] > b.v) {
                b.v = key[j];
                b.s = s[j];
                b.i = e;
            }
        }
        b = moe_warp_best(b);
        if (b.i % 32 == lane)
            taken |= 1u << (b.i / 32);
        total += b.s;
        if (lane == k) {
            my_id = (int)b.i;
            my_s = b.s;
        }
    }
    if (lane < K) {
        ids[t * K + lane] = my_id;
        wts[t * K + lane] = my_s / total * scale;
    }
}

extern "C" __global__ void __launch_bounds__(MOE_CHUNK) moe_count_baseline(const int *ids, u64 n, u32 *cnt, u32 E)
{
    __shared__ u32 h[1024];
    for (u32 e = threadIdx.x; e < E; e += blockDim.x)
        h[e] = 0;
    __syncthreads();
    const u64 a = (u64)blockIdx.x * MOE_CHUNK + threadIdx.x;
    if (a < n)
        atomicAdd(&h[ids[a]], 1u);
    __syncthreads();
    for (u32 e = threadIdx.x; e < E; e += blockDim.x)
        cnt[(u64)blockIdx.x * E + e] = h[e];
}

// One block, a thread per expert: cnt becomes each chunk's first slot for
// the expert (the expert's offset plus its assignments in earlier chunks).
extern "C" __global__ void moe_scan_baseline(u32 *cnt, u32 chunks, u32 E)
{
    __shared__ u32 total[1024];
    for (u32 e = threadIdx.x; e < E; e += blockDim.x) {
        u32 run = 0;
        for (u32 c = 0; c < chunks; c++) {
            const u32 v = cnt[(u64)c * E + e];
            cnt[(u64)c * E + e] = run;
            run += v;
        }
        total[e] = run;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        u32 run = 0;
        for (u32 e = 0; e < E; e++) {
            const u32 v = total[e];
            total[e] = run;
            run += v;
        }
    }
    __syncthreads();
    for (u32 e = threadIdx.x; e < E; e += blockDim.x)
        for (u32 c = 0; c < chunks; c++)
            cnt[(u64)c * E + e] += total[e];
}

extern "C" __global__ void __launch_bounds__(MOE_CHUNK)
moe_place_baseline(const int *ids, u64 n, const u32 *first, int *dest, u32 E)
{
    __shared__ int chunk[MOE_CHUNK];
    const u64 a = (u64)blockIdx.x * MOE_CHUNK + threadIdx.x;
    const int e = a < n ? ids[a] : -1;
    chunk[threadIdx.x] = e;
    __syncthreads();
    if (a >= n)
        return;
    u32 rank = 0;
    for (u32 j = 0; j < threadIdx.x; j++)
        rank += chunk[j] == e;
    dest[a] = (int)(first[(u64)blockIdx.x * E + e] + rank);
}

// ---------------------------------------------------------------- block-scaled fp8 GEMM
//
// A plain SIMT kernel (no tensor cores): a 64x64 tile of C per block of 256
// threads, 4x4 outputs per thread; for each 128 values of K the fp32 sum of
// the raw e4m3 products, then added to the accumulator times the block's
// two scales (DeepGEMM's promotion, done here at every block).

static __device__ __forceinline__ float bs_e4m3(unsigned char x)
{
    __nv_fp8_e4m3 v;
    v.__x = x;
    return (float)v;
}

extern "C" __global__ void __launch_bounds__(256)
gemm_bs_baseline(const unsigned char *A, const unsigned char *B, const float *sfa, const float *sfb, bf16 *C, u32 M,
                 u32 N, u32 K, u32 b2d)
{
    __shared__ float As[32][64 + 4], Bs[32][64 + 4];
    const u32 tx = threadIdx.x % 16, ty = threadIdx.x / 16, m0 = blockIdx.y * 64, n0 = blockIdx.x * 64, KB = K / 128;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;
    for (u32 kb = 0; kb < KB; kb++) {
        float part[4][4];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                part[i][j] = 0.0f;
        for (u32 k0 = kb * 128; k0 < kb * 128 + 128; k0 += 32) {
            for (u32 i = threadIdx.x; i < 64 * 32; i += blockDim.x) {
                const u32 r = i / 32, c = i % 32, m = m0 + r, n = n0 + r;
                As[c][r] = m < M ? bs_e4m3(A[(u64)m * K + k0 + c]) : 0.0f;
                Bs[c][r] = n < N ? bs_e4m3(B[(u64)n * K + k0 + c]) : 0.0f;
            }
            __syncthreads();
            for (u32 c = 0; c < 32; c++) {
                float a[4], b[4];
                for (int i = 0; i < 4; i++) {
                    a[i] = As[c][ty * 4 + i];
                    b[i] = Bs[c][tx * 4 + i];
                }
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 4; j++)
                        part[i][j] += a[i] * b[j];
            }
            __syncthreads();
        }
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                const u32 m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
                if (m < M && n < N)
                    acc[i][j] += part[i][j] * sfa[(u64)m * KB + kb] * sfb[(u64)(b2d ? n / 128 : n) * KB + kb];
            }
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const u32 m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
            if (m < M && n < N)
                C[(u64)m * N + n] = __float2bfloat16_rn(acc[i][j]);
        }
}

// ---------------------------------------------------------------- MLA decode
//
// Split-KV MLA decoding (absorbed form: every head attends to the shared
// compressed cache). mla_decode_split: a block of 256 threads per (split,
// sequence, group of up to 16 heads) takes `chunk` tokens, 16 at a time:
// the tile's ckv and kpe rows gathered through the page table into shared
// memory, the G x 16 scores (a thread each), an online softmax per head,
// and the unnormalized sums of p ckv (thread t keeps entries t + 256 k of
// the G x C outputs). It writes each head's (max, sum, acc[C]) in
// gqa_decode_combine's layout, which merges the splits. Needs C <= 512.
#define MLA_TILE 16
#define MLA_THREADS 256
#define MLA_ACC 32

extern "C" __global__ void __launch_bounds__(MLA_THREADS)
mla_decode_split(const bf16 *qn, const bf16 *qp, const bf16 *ckv, const bf16 *kpe, const int *bt, const int *lens,
                 float *ws_m, float *ws_l, float *ws_acc, u32 H, u32 C, u32 R, u32 PS, u32 MAXP, u32 chunk, u32 NS,
                 float scale)
{
    extern __shared__ float sm[];
    const u32 sp = blockIdx.x, b = blockIdx.y, tid = threadIdx.x, W = C + R + 1; // padded rows
    const u32 G = min(16u, H - blockIdx.z * 16);
    float *qs = sm;                   // [G][C + R], scaled
    float *ks = qs + 16 * (C + R);    // [TILE][C + R + 1]: ckv then kpe
    float *ps = ks + MLA_TILE * W;    // [G][TILE]
    float *hm = ps + 16 * MLA_TILE;   // [G] running max
    float *hl = hm + 16;              // [G] running sum
    float *hc = hl + 16;              // [G] this tile's correction
    const u32 len = (u32)lens[b], start = sp * chunk, end = min(len, start + chunk);
    const u64 head0 = (u64)b * H + blockIdx.z * 16;
    if (start >= len) {
        split_empty(ws_m, ws_l, head0, G, NS, sp);
        return;
    }
    for (u32 i = tid; i < G * (C + R); i += blockDim.x) {
        const u32 hh = i / (C + R), d = i % (C + R);
        qs[i] = __bfloat162float(d < C ? qn[(head0 + hh) * C + d] : qp[(head0 + hh) * R + d - C]) * scale;
    }
    for (u32 hh = tid; hh < G; hh += blockDim.x) {
        hm[hh] = -1e30f;
        hl[hh] = 0.0f;
    }
    float acc[MLA_ACC];
    for (int k = 0; k < MLA_ACC; k++)
        acc[k] = 0.0f;
    for (u32 t0 = start; t0 < end; t0 += MLA_TILE) {
        __syncthreads();
        for (u32 i = tid; i < MLA_TILE * (C + R); i += blockDim.x) {
            const u32 tt = i / (C + R), d = i % (C + R), tok = t0 + tt;
            float x = 0.0f;
            if (tok < end) {
                const u64 at = (u64)bt[(u64)b * MAXP + tok / PS] * PS + tok % PS;
                x = __bfloat162float(d < C ? ckv[at * C + d] : kpe[at * R + d - C]);
            }
            ks[tt * W + d] = x;
        }
        __syncthreads();
        for (u32 i = tid; i < G * MLA_TILE; i += blockDim.x) {
            const u32 hh = i / MLA_TILE, tt = i % MLA_TILE;
            float s = -1e30f;
            if (t0 + tt < end) {
                s = 0.0f;
                for (u32 d = 0; d < C + R; d++)
                    s += qs[hh * (C + R) + d] * ks[tt * W + d];
            }
            ps[i] = s;
        }
        __syncthreads();
        split_tile_softmax(ps, hm, hl, hc, G, MLA_TILE, end - t0);
        __syncthreads();
        split_tile_accumulate<MLA_ACC, MLA_THREADS>(acc, ps, hc, ks, W, G, C, MLA_TILE);
    }
    __syncthreads();
    split_store<MLA_ACC, MLA_THREADS>(acc, hm, hl, ws_m, ws_l, ws_acc, head0, G, C, NS, sp);
}

// ---------------------------------------------------------------- flash attention
//
// Attention forward over the layouts of the serving attention tasks:
// layout 0 and 2, causal GQA prefill over packed queries q [TQ, Hq, D]
// (0: keys packed through kvp; 2: keys in pages through bt, lens keys);
// layout 1, dense [B, H, S, D] (Hk == Hq, S queries and keys, causal or
// not). Elements bf16, or e4m3 with the scales sq, sk, sv. Block (x, h, b):
// query rows 16x .. 16x+15 of sequence b, head h. Four warps of four rows;
// 32-key tiles of K and V in shared memory (K rows padded to D + 1 floats);
// lane j scores key j of the tile, the row's online softmax by warp
// shuffles, and lane l keeps output columns l, l + 32, ... of its warp's
// rows. fp32 throughout. Bottom-right causal mask: query i sees keys
// j <= kvlen - qlen + i.
static __device__ __forceinline__ float fa_load(const bf16 *p, u64 i) { return __bfloat162float(p[i]); }
static __device__ __forceinline__ float fa_load(const unsigned char *p, u64 i) { return bs_e4m3(p[i]); }

template <int D, class T>
static __device__ void flash_attention(const T *Q, const T *K, const T *V, const float *sq, const float *sk,
                                       const float *sv, const int *qo, const int *kvp, const int *bt, const int *lens,
                                       bf16 *O, float *LSE, u32 layout, u32 Hq, u32 Hk, u32 S, u32 PS, u32 MAXP,
                                       u32 causal, float scale)
{
    enum { BQ = 16, BK = 32, C = D / 32 };
    extern __shared__ float sm[];
    float *qs = sm, *ks = qs + BQ * D, *vs = ks + BK * (D + 1);
    const u32 b = blockIdx.z, h = blockIdx.y, kvh = h / (Hq / Hk), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const bool dense = layout == 1;
    const u32 q0 = dense ? 0 : (u32)qo[b], qlen = dense ? S : (u32)qo[b + 1] - q0, i0 = blockIdx.x * BQ;
    if (i0 >= qlen)
        return;
    const u32 kvlen = dense ? S : layout == 0 ? (u32)(kvp[b + 1] - kvp[b]) : (u32)lens[b];
    const u32 rows = min(BQ, qlen - i0), shift = kvlen - qlen, kend = causal ? shift + i0 + rows : kvlen;
    const u64 head = ((u64)b * Hq + h) * S; // dense: the (batch, head)'s first row
    // The output row (of q, O and LSE) of query i, the key row of key j.
    auto qrow = [&](u32 i) { return dense ? head + i : (u64)(q0 + i) * Hq + h; };
    auto krow = [&](u32 j) {
        if (dense)
            return head + j;
        const u64 t = layout == 0 ? (u64)kvp[b] + j : (u64)bt[(u64)b * MAXP + j / PS] * PS + j % PS;
        return t * Hk + kvh;
    };
    scale *= (sq ? *sq : 1.0f) * (sk ? *sk : 1.0f);
    const float vscale = sv ? *sv : 1.0f;
    for (u32 x = threadIdx.x; x < BQ * D; x += blockDim.x) {
        const u32 r = x / D;
        qs[x] = r < rows ? fa_load(Q, qrow(i0 + r) * D + x % D) * scale : 0.0f;
    }
    float m[4], l[4], acc[4][C];
    for (int r = 0; r < 4; r++) {
        m[r] = -1e30f;
        l[r] = 0.0f;
        for (int c = 0; c < C; c++)
            acc[r][c] = 0.0f;
    }
    for (u32 j0 = 0; j0 < kend; j0 += BK) {
        __syncthreads();
        for (u32 x = threadIdx.x; x < BK * D; x += blockDim.x) {
            const u32 t = x / D, d = x % D, j = j0 + t;
            float kv = 0.0f, vv = 0.0f;
            if (j < kend) {
                const u64 row = krow(j);
                kv = fa_load(K, row * D + d);
                vv = fa_load(V, row * D + d);
            }
            ks[t * (D + 1) + d] = kv;
            vs[t * D + d] = vv;
        }
        __syncthreads();
        for (int rr = 0; rr < 4; rr++) {
            const u32 r = warp * 4 + rr, j = j0 + lane;
            const bool seen = r < rows && j < kend && (!causal || j <= shift + i0 + r);
            float s = -3.0e38f; // below every score; the row's m starts at -1e30
            if (seen) {
                s = 0.0f;
                for (int d = 0; d < D; d++)
                    s += qs[r * D + d] * ks[lane * (D + 1) + d];
            }
            float mx = s;
            for (int o = 16; o > 0; o >>= 1)
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            const float mn = fmaxf(m[rr], mx), alpha = __expf(m[rr] - mn);
            const float p = seen ? __expf(s - mn) : 0.0f;
            float ps = p;
            for (int o = 16; o > 0; o >>= 1)
                ps += __shfl_xor_sync(0xffffffffu, ps, o);
            l[rr] = l[rr] * alpha + ps;
            m[rr] = mn;
            for (int c = 0; c < C; c++)
                acc[rr][c] *= alpha;
            for (int t = 0; t < BK; t++) {
                const float pt = __shfl_sync(0xffffffffu, p, t);
                for (int c = 0; c < C; c++)
                    acc[rr][c] += pt * vs[t * D + lane + 32 * c];
            }
        }
    }
    for (int rr = 0; rr < 4; rr++) {
        const u32 r = warp * 4 + rr;
        if (r >= rows)
            continue;
        const u64 row = qrow(i0 + r);
        for (int c = 0; c < C; c++)
            O[row * D + lane + 32 * c] = __float2bfloat16_rn(acc[rr][c] / l[rr] * vscale);
        if (lane == 0)
            LSE[row] = m[rr] + logf(l[rr]);
    }
}

// Entries flash_<type>_d<D>, launched with a grid of (ceil(max query
// rows / 16), heads, sequences) blocks of 128 threads and
// 4 * (16 * D + 32 * (D + 1) + 32 * D) bytes of dynamic shared memory.
#define FLASH_ENTRY(NAME, T, DIM)                                                                                    \
    extern "C" __global__ void __launch_bounds__(128)                                                                \
        NAME##_d##DIM(const T *Q, const T *K, const T *V, const float *sq, const float *sk, const float *sv,         \
                      const int *qo, const int *kvp, const int *bt, const int *lens, bf16 *O, float *LSE, u32 layout, \
                      u32 Hq, u32 Hk, u32 S, u32 PS, u32 MAXP, u32 causal, float scale)                               \
    {                                                                                                                \
        flash_attention<DIM>(Q, K, V, sq, sk, sv, qo, kvp, bt, lens, O, LSE, layout, Hq, Hk, S, PS, MAXP, causal,    \
                             scale);                                                                                 \
    }
FLASH_ENTRY(flash_bf16, bf16, 64)
FLASH_ENTRY(flash_bf16, bf16, 128)
FLASH_ENTRY(flash_bf16, bf16, 256)
FLASH_ENTRY(flash_e4m3, unsigned char, 64)
FLASH_ENTRY(flash_e4m3, unsigned char, 96)
FLASH_ENTRY(flash_e4m3, unsigned char, 128)
FLASH_ENTRY(flash_e4m3, unsigned char, 256)

// ---------------------------------------------------------------- MoE grouped GEMM
//
// Y = X_e · W_eᵀ over each expert's rows off[e] .. off[e+1]-1. Block
// (x, y, e): the 64x64 tile (y, x) of expert e's rows (blocks past them
// return); 256 threads of 4x4 outputs, K in chunks of 32 through shared
// memory, fp32 sums on the SIMT pipes.
extern "C" __global__ void __launch_bounds__(256)
moe_gemm_baseline(const bf16 *X, const bf16 *W, const int *off, bf16 *Y, u32 N, u32 K)
{
    __shared__ float As[32][64 + 4], Bs[32][64 + 4];
    const u32 e = blockIdx.z, r0 = (u32)off[e], rows = (u32)off[e + 1] - r0;
    const u32 tx = threadIdx.x % 16, ty = threadIdx.x / 16, m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
    if (m0 >= rows)
        return;
    const bf16 *We = W + (u64)e * N * K;
    float acc[4][4] = {};
    for (u32 k0 = 0; k0 < K; k0 += 32) {
        for (u32 i = threadIdx.x; i < 64 * 32; i += blockDim.x) {
            const u32 r = i / 32, c = i % 32, m = m0 + r, n = n0 + r, k = k0 + c;
            As[c][r] = m < rows && k < K ? __bfloat162float(X[(u64)(r0 + m) * K + k]) : 0.0f;
            Bs[c][r] = n < N && k < K ? __bfloat162float(We[(u64)n * K + k]) : 0.0f;
        }
        __syncthreads();
        for (u32 c = 0; c < 32; c++) {
            float a[4], b[4];
            for (int i = 0; i < 4; i++) {
                a[i] = As[c][ty * 4 + i];
                b[i] = Bs[c][tx * 4 + i];
            }
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const u32 m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
            if (m < rows && n < N)
                Y[(u64)(r0 + m) * N + n] = __float2bfloat16_rn(acc[i][j]);
        }
}

// ---------------------------------------------------------------- gated delta net
//
// One decode step of the gated delta rule, k-last state [B, HV, V, K]. A
// block of 256 threads per (value head, sequence): q and k in shared
// memory, the gate and beta once; a warp per state row (rows warp, warp +
// 8, ...), its lanes over K (coalesced): the row's decayed dot with k by
// shuffles, the new row written, its dot with q. fp32. K <= 256.
extern "C" __global__ void __launch_bounds__(256)
gdn_decode_baseline(const bf16 *q, const bf16 *k, const bf16 *v, const float *state, const float *A_log,
                    const bf16 *a, const float *dt_bias, const bf16 *bg, bf16 *out, float *new_state, u32 HQ, u32 HV,
                    u32 K, u32 V, float scale)
{
    __shared__ float qs[256], ks[256];
    const u32 h = blockIdx.x, b = blockIdx.y, qk = h / (HV / HQ), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const u64 bh = (u64)b * HV + h;
    for (u32 j = threadIdx.x; j < K; j += blockDim.x) {
        qs[j] = __bfloat162float(q[((u64)b * HQ + qk) * K + j]);
        ks[j] = __bfloat162float(k[((u64)b * HQ + qk) * K + j]);
    }
    __syncthreads();
    const float x = __bfloat162float(a[bh]) + dt_bias[h];
    const float g = expf(-expf(A_log[h]) * (x > 20.0f ? x : log1pf(expf(x))));
    const float beta = 1.0f / (1.0f + expf(-__bfloat162float(bg[bh])));
    for (u32 i = warp; i < V; i += blockDim.x / 32) {
        const float *row = state + (bh * V + i) * K;
        float *nrow = new_state + (bh * V + i) * K;
        float sk = 0.0f;
        for (u32 j = lane; j < K; j += 32)
            sk += row[j] * ks[j];
        for (int o = 16; o > 0; o >>= 1)
            sk += __shfl_xor_sync(0xffffffffu, sk, o);
        const float delta = beta * (__bfloat162float(v[bh * V + i]) - g * sk);
        float oq = 0.0f;
        for (u32 j = lane; j < K; j += 32) {
            const float s = g * row[j] + delta * ks[j];
            nrow[j] = s;
            oq += s * qs[j];
        }
        for (int o = 16; o > 0; o >>= 1)
            oq += __shfl_xor_sync(0xffffffffu, oq, o);
        if (lane == 0)
            out[bh * V + i] = __float2bfloat16_rn(oq * scale);
    }
}

