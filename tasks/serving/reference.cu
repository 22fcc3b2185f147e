// reference.cu: the serving family's trusted references and the derive
// kernels that make its inputs. Plain fp64 arithmetic, fixed reduction
// orders, no atomics; outputs in fp32. Compiled after klab's prelude
// (klab_unit, u32, u64, i64); the task files' plans run each kernel over
// every unit (positions == 0) or over the units listed in positions (a
// timed run's check).

#define SR 256 // threads of every block-per-unit reference kernel (a power of two)

// The block's sum of v (every thread gets it). red holds SR doubles; the
// first barrier lets a previous call's readers finish with it.
static __device__ double ref_block_sum(double v, double *red)
{
    __syncthreads();
    red[threadIdx.x] = v;
    __syncthreads();
    for (u32 k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    return red[0];
}

// The block's maximum of v (every thread gets it).
static __device__ double ref_block_max(double v, double *red)
{
    __syncthreads();
    red[threadIdx.x] = v;
    __syncthreads();
    for (u32 k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + k]);
        __syncthreads();
    }
    return red[0];
}

// ---------------------------------------------------------------- sampling
//
// After derive, every probability is a whole number of grains of 2^-16
// (probs[b, i] = q / 65536, q integer, each row summing to 65536 grains),
// and top_p and the uniform draws are multiples of 1/256. In grains every
// quantity below is an integer or a multiple of 1/256 under 2^53: fp64 is
// exact, and so is fp32 for the sums and single products the task names.

#define GRAINS 65536.0

// Derive: a row of drawn logits (in place) becomes its softmax rounded
// down to grains; the grains lost to rounding go to the row's first
// largest element, so the row sums to exactly 65536 grains.
extern "C" __global__ void __launch_bounds__(SR) sampling_make_probs(float *probs, u32 V)
{
    __shared__ double red[SR];
    __shared__ u32 where[SR];
    float *row = probs + (u64)blockIdx.x * V;
    double m = -1e308; // below every finite logit
    u32 at = 0xffffffffu;
    for (u32 i = threadIdx.x; i < V; i += blockDim.x)
        if ((double)row[i] > m) {
            m = row[i];
            at = i;
        }
    red[threadIdx.x] = m;
    where[threadIdx.x] = at;
    __syncthreads();
    for (u32 k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) {
            double o = red[threadIdx.x + k];
            u32 oi = where[threadIdx.x + k];
            if (o > red[threadIdx.x] || (o == red[threadIdx.x] && oi < where[threadIdx.x])) {
                red[threadIdx.x] = o;
                where[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    const double mx = red[0];
    const u32 first = where[0];
    double z = 0.0;
    for (u32 i = threadIdx.x; i < V; i += blockDim.x)
        z += exp((double)row[i] - mx);
    z = ref_block_sum(z, red); // every read of the logits is done past its barriers
    double kept = 0.0;
    for (u32 i = threadIdx.x; i < V; i += blockDim.x) {
        double g = floor(exp((double)row[i] - mx) / z * GRAINS);
        row[i] = (float)(g / GRAINS);
        kept += g;
    }
    kept = ref_block_sum(kept, red);
    if (threadIdx.x == 0)
        row[first] = (float)(((double)row[first] * GRAINS + (GRAINS - kept)) / GRAINS);
}

// Derive: draws in place as multiples of 1/256. mode 0 (the uniform draws):
// floor(256 x) / 256 in [0, 255/256]; mode 1 (top_p): round(256 x) / 256 in
// [1/256, 255/256].
extern "C" __global__ void sampling_make_draws(float *x, u64 n, u32 mode)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double v = mode == 0 ? floor((double)x[i] * 256.0) : rint((double)x[i] * 256.0);
    v = fmin(fmax(v, mode == 0 ? 0.0 : 1.0), 255.0);
    x[i] = (float)(v / 256.0);
}

// The row's count (mass == 0) or mass in grains (mass == 1) of the
// elements of more than g grains, at each of the 15 points g = pts[j].
static __device__ void sampling_above(const float *row, u32 V, const double *pts, int mass, double *out,
                                      double *red)
{
    double acc[15];
    for (int j = 0; j < 15; j++)
        acc[j] = 0.0;
    for (u32 i = threadIdx.x; i < V; i += blockDim.x) {
        double q = (double)row[i] * GRAINS;
        for (int j = 0; j < 15; j++)
            if (q > pts[j])
                acc[j] += mass ? q : 1.0;
    }
    for (int j = 0; j < 15; j++)
        out[j] = ref_block_sum(acc[j], red);
}

// The smallest whole g in [lo, 65536] with stat(q > g) < limit, where stat
// is the count or the mass of the row's elements above g grains (it falls
// as g grows, and is 0 at 65536): a search that tries 15 points of the
// interval per pass over the row.
static __device__ double sampling_threshold(const float *row, u32 V, int mass, double limit, double lo, double *red)
{
    double pts[15], st[15];
    for (int j = 0; j < 15; j++)
        pts[j] = lo;
    sampling_above(row, V, pts, mass, st, red);
    if (st[0] < limit)
        return lo;
    double a = lo, b = GRAINS; // stat(q > a) >= limit, stat(q > b) < limit
    while (b - a > 1.0) {
        for (int j = 0; j < 15; j++)
            pts[j] = a + floor((b - a) * (j + 1) / 16.0);
        sampling_above(row, V, pts, mass, st, red);
        double na = a, nb = b;
        for (int j = 0; j < 15; j++) {
            if (st[j] < limit) {
                if (pts[j] < nb)
                    nb = pts[j];
            } else if (pts[j] > na) {
                na = pts[j];
            }
        }
        a = na;
        b = nb;
    }
    return b;
}

// Top-k, top-p or both (mode 1, 2, 3), a block per row unit: the kept
// tokens are those of at least g grains, g the threshold of each filter
// (the larger of the two, top-k first); S their mass; the sample is the
// smallest kept i whose running kept mass C_i (vocabulary order) exceeds
// u * S. Written as an fp32 token id (exact below 2^24).
extern "C" __global__ void __launch_bounds__(SR)
sampling_ref(const float *probs, const int *top_k, const float *top_p, const float *uniform, const u64 *positions,
             u64 n, float *samples, u32 V, u32 mode)
{
    __shared__ double red[SR];
    __shared__ double chunk[SR];
    __shared__ int found;
    const u64 slot = blockIdx.x;
    const u64 b = klab_unit(positions, slot);
    const float *row = probs + b * V;
    double g = 0.0;
    if (mode & 1)
        g = sampling_threshold(row, V, 0, (double)top_k[b], 0.0, red);
    if (mode & 2) {
        double pts[15], st[15];
        for (int j = 0; j < 15; j++)
            pts[j] = g - 0.5;
        sampling_above(row, V, pts, 1, st, red); // the mass kept by top-k (all of it without)
        g = sampling_threshold(row, V, 1, (double)top_p[b] * st[0], g, red);
    }
    // Each thread's contiguous chunk of the row: its kept mass, then the
    // running kept mass before it (thread 0, in order).
    const u32 per = (V + blockDim.x - 1) / blockDim.x;
    const u32 from = threadIdx.x * per, to = min(V, from + per);
    double own = 0.0;
    for (u32 i = from; i < to; i++) {
        double q = (double)row[i] * GRAINS;
        if (q >= g)
            own += q;
    }
    __syncthreads();
    chunk[threadIdx.x] = own;
    if (threadIdx.x == 0)
        found = -1;
    __syncthreads();
    if (threadIdx.x == 0) {
        double run = 0.0;
        for (u32 t = 0; t < blockDim.x; t++) {
            double c = chunk[t];
            chunk[t] = run;
            run += c;
        }
        red[0] = run; // S, the kept mass
    }
    __syncthreads();
    const double limit = (double)uniform[b] * red[0];
    double run = chunk[threadIdx.x];
    if (run <= limit && run + own > limit) {
        for (u32 i = from; i < to; i++) {
            double q = (double)row[i] * GRAINS;
            if (q >= g) {
                run += q;
                if (run > limit) {
                    found = (int)i;
                    break;
                }
            }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0)
        samples[slot] = (float)found;
}

// ---------------------------------------------------------------- rotary
//
// Rotary embedding with a partial rotary dimension R <= D and a cos/sin
// cache cs[P, R] (cos in columns 0..R/2-1, sin in R/2..R-1), a block per
// token unit, the Hq query heads then the Hk key heads. Pair i < R/2 of a
// head's row x is (x[i], x[i + R/2]) in the NeoX layout (gptj == 0) and
// (x[2i], x[2i + 1]) in the GPT-J layout; with c = cs[p, i], s =
// cs[p, R/2 + i] the pair (a, b) becomes (a c - b s, b c + a s). Elements
// R..D-1 are copied.
extern "C" __global__ void rope_partial_ref(const i64 *pos, const __nv_bfloat16 *Q, const __nv_bfloat16 *K,
                                            const float *cs, const u64 *positions, u64 n, float *Qo, float *Ko,
                                            u32 Hq, u32 Hk, u32 D, u32 R, u32 gptj)
{
    const u64 slot = blockIdx.x;
    const u64 t = klab_unit(positions, slot);
    const u32 half = R / 2;
    const float *row = cs + (u64)pos[t] * R;
    for (u32 j = threadIdx.x; j < (Hq + Hk) * D; j += blockDim.x) {
        const u32 h = j / D, e = j % D;
        const bool q = h < Hq;
        const __nv_bfloat16 *x = q ? Q + (t * Hq + h) * D : K + (t * Hk + (h - Hq)) * D;
        double v;
        if (e >= R) {
            v = __bfloat162float(x[e]);
        } else {
            // This element's pair i, its partner and whether it is the first of the two.
            const u32 i = gptj ? e / 2 : e % half;
            const bool first = gptj ? e % 2 == 0 : e < half;
            const u32 a_at = gptj ? 2 * i : i, b_at = gptj ? 2 * i + 1 : i + half;
            const double a = __bfloat162float(x[a_at]), b = __bfloat162float(x[b_at]);
            const double c = row[i], s = row[half + i];
            v = first ? a * c - b * s : b * c + a * s;
        }
        if (q)
            Qo[(slot * Hq + h) * D + e] = (float)v;
        else
            Ko[(slot * Hk + (h - Hq)) * D + e] = (float)v;
    }
}

// ---------------------------------------------------------------- attention rows
//
// Attention of one query row per unit, fp64, for every layout of the
// serving attention tasks. Query head h reads KV head h / (Hq / Hk). A unit
// is a row of q and of out (D elements) and one element of lse, so unit u's
// query is row u of q in every layout:
//   ATT_RAGGED  q [TQ, Hq, D], k and v [TKV, Hk, D]; sequence b owns query
//               tokens qo[b] .. qo[b+1]-1 and key tokens kvp[b] .. kvp[b+1]-1;
//               u = t * Hq + h.
//   ATT_DENSE   q, k, v [B, Hq, S, D] (Hk == Hq, every sequence S long);
//               u = (b * Hq + h) * S + i.
//   ATT_PAGED   q as ATT_RAGGED; key j of sequence b in page bt[b, j / PS],
//               slot j % PS, of k and v [NP, PS, Hk, D]; lens[b] keys.
//   ATT_DECODE  q [B, Hq, D], one query per sequence; keys as ATT_PAGED.
// Causal masks are bottom-right aligned (FlashInfer's): query i of a
// sequence of qlen queries and kvlen keys sees keys j <= kvlen - qlen + i.
// Element type dt (bf16, or e4m3 with the scales sq, sk, sv: a null scale
// is 1). Two passes over the keys in chunks of SR: the maximum score, then
// p = exp(s - max), its sum and sum p v; out = sum p v / sum p, lse =
// max + log(sum p).
enum { ATT_RAGGED = 0, ATT_DENSE = 1, ATT_PAGED = 2, ATT_DECODE = 3 };

struct att_row {
    u64 b;     // the sequence
    u32 kvh;   // the KV head
    u32 nkeys; // the keys the query sees
};

// The owner of row t of a ragged array of B parts with offsets qo[0..B]
// (the sequence of a query token, the expert of a MoE row): the largest b
// with qo[b] <= t (empty parts have qo[b] == qo[b+1]).
static __device__ u64 ragged_owner(const int *qo, u32 B, u64 t)
{
    u32 lo = 0, hi = B - 1;
    while (lo < hi) {
        const u32 mid = (lo + hi + 1) / 2;
        if ((u64)qo[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static __device__ att_row att_locate(u64 u, u32 layout, const int *qo, const int *kvp, const int *lens, u32 B,
                                     u32 Hq, u32 Hk, u32 S, u32 causal)
{
    att_row r;
    const u32 h = (u32)(layout == ATT_DENSE ? u / S % Hq : u % Hq);
    r.kvh = h / (Hq / Hk);
    u64 qlen = 1, kvlen, i = 0;
    if (layout == ATT_DENSE) {
        r.b = u / ((u64)Hq * S);
        i = u % S;
        qlen = kvlen = S;
    } else if (layout == ATT_DECODE) {
        r.b = u / Hq;
        kvlen = (u64)lens[r.b];
    } else {
        const u64 t = u / Hq;
        r.b = ragged_owner(qo, B, t);
        i = t - (u64)qo[r.b];
        qlen = (u64)(qo[r.b + 1] - qo[r.b]);
        kvlen = layout == ATT_RAGGED ? (u64)(kvp[r.b + 1] - kvp[r.b]) : (u64)lens[r.b];
    }
    r.nkeys = (u32)(causal ? min(kvlen, kvlen - qlen + i + 1) : kvlen);
    return r;
}

// The element offset of key (or value) row j of the unit's sequence.
static __device__ u64 att_key(const att_row &r, u32 j, u32 layout, const int *kvp, const int *bt, u32 Hq, u32 Hk,
                              u32 D, u32 S, u32 PS, u32 MAXP)
{
    if (layout == ATT_DENSE)
        return ((r.b * Hq + r.kvh) * S + j) * D;
    if (layout == ATT_RAGGED)
        return (((u64)kvp[r.b] + j) * Hk + r.kvh) * D;
    const u64 page = (u64)bt[r.b * MAXP + j / PS];
    return ((page * PS + j % PS) * Hk + r.kvh) * D;
}

static __device__ double att_scale(const float *s) { return s ? (double)*s : 1.0; }

extern "C" __global__ void __launch_bounds__(SR)
attn_rows_ref(const void *Q, const void *Kc, const void *Vc, const float *sq, const float *sk, const float *sv,
              const int *qo, const int *kvp, const int *bt, const int *lens, const u64 *positions, u64 n, float *O,
              float *LSE, u32 layout, u32 dt, u32 B, u32 Hq, u32 Hk, u32 D, u32 S, u32 PS, u32 MAXP, u32 causal)
{
    __shared__ double red[SR];
    __shared__ double p[SR];
    __shared__ double acc[256];
    __shared__ double qs[256];
    const u64 slot = blockIdx.x;
    const u64 u = klab_unit(positions, slot);
    const att_row r = att_locate(u, layout, qo, kvp, lens, B, Hq, Hk, S, causal);
    const double scale = att_scale(sq) * att_scale(sk) / sqrt((double)D), vscale = att_scale(sv);
    for (u32 d = threadIdx.x; d < D; d += blockDim.x) {
        qs[d] = klab_load(Q, u * D + d, dt) * scale;
        acc[d] = 0.0;
    }
    __syncthreads();
    double m = -1e308;
    for (u32 j = threadIdx.x; j < r.nkeys; j += blockDim.x) {
        const u64 k = att_key(r, j, layout, kvp, bt, Hq, Hk, D, S, PS, MAXP);
        double s = 0.0;
        for (u32 d = 0; d < D; d++)
            s += qs[d] * klab_load(Kc, k + d, dt);
        m = fmax(m, s);
    }
    m = ref_block_max(m, red);
    double l = 0.0;
    for (u32 j0 = 0; j0 < r.nkeys; j0 += blockDim.x) {
        const u32 j = j0 + threadIdx.x;
        double e = 0.0;
        if (j < r.nkeys) {
            const u64 k = att_key(r, j, layout, kvp, bt, Hq, Hk, D, S, PS, MAXP);
            double s = 0.0;
            for (u32 d = 0; d < D; d++)
                s += qs[d] * klab_load(Kc, k + d, dt);
            e = exp(s - m);
        }
        l += e;
        __syncthreads();
        p[threadIdx.x] = e;
        __syncthreads();
        const u32 count = min(blockDim.x, r.nkeys - j0);
        for (u32 d = threadIdx.x; d < D; d += blockDim.x) {
            double s = 0.0;
            for (u32 t = 0; t < count; t++)
                s += p[t] * klab_load(Vc, att_key(r, j0 + t, layout, kvp, bt, Hq, Hk, D, S, PS, MAXP) + d, dt);
            acc[d] += s;
        }
    }
    l = ref_block_sum(l, red);
    for (u32 d = threadIdx.x; d < D; d += blockDim.x)
        O[slot * D + d] = (float)(acc[d] / l * vscale);
    if (threadIdx.x == 0)
        LSE[slot] = (float)(m + log(l));
}

// Multi-head latent attention decode (DeepSeek's MLA, absorbed form): one
// query per sequence, every head attending to the sequence's compressed KV
// cache. Token j of sequence b lives in page bt[b, j / PS], slot j % PS, of
// ckv [NP, PS, C] and kpe [NP, PS, R]; the score of head h is
// (qn[b, h] . ckv_j + qp[b, h] . kpe_j) * scale and the values are ckv_j.
// A block per (b, h) unit, two passes as attn_rows_ref; out [.., C] rows.
extern "C" __global__ void __launch_bounds__(SR)
mla_decode_ref(const __nv_bfloat16 *qn, const __nv_bfloat16 *qp, const __nv_bfloat16 *ckv,
               const __nv_bfloat16 *kpe, const int *bt, const int *lens, const u64 *positions, u64 n, float *O,
               float *LSE, u32 H, u32 C, u32 R, u32 PS, u32 MAXP, double scale)
{
    __shared__ double red[SR];
    __shared__ double p[SR];
    __shared__ double acc[1024];
    __shared__ double qs[1024 + 128];
    const u64 slot = blockIdx.x;
    const u64 u = klab_unit(positions, slot), b = u / H;
    const u32 len = (u32)lens[b];
    for (u32 d = threadIdx.x; d < C + R; d += blockDim.x)
        qs[d] = (d < C ? (double)__bfloat162float(qn[u * C + d]) : (double)__bfloat162float(qp[u * R + d - C])) * scale;
    for (u32 d = threadIdx.x; d < C; d += blockDim.x)
        acc[d] = 0.0;
    __syncthreads();
    auto slot_of = [&](u32 j) { return (u64)bt[b * MAXP + j / PS] * PS + j % PS; };
    auto score = [&](u32 j) {
        const u64 t = slot_of(j);
        double s = 0.0;
        for (u32 d = 0; d < C; d++)
            s += qs[d] * (double)__bfloat162float(ckv[t * C + d]);
        for (u32 d = 0; d < R; d++)
            s += qs[C + d] * (double)__bfloat162float(kpe[t * R + d]);
        return s;
    };
    double m = -1e308;
    for (u32 j = threadIdx.x; j < len; j += blockDim.x)
        m = fmax(m, score(j));
    m = ref_block_max(m, red);
    double l = 0.0;
    for (u32 j0 = 0; j0 < len; j0 += blockDim.x) {
        const u32 j = j0 + threadIdx.x;
        const double e = j < len ? exp(score(j) - m) : 0.0;
        l += e;
        __syncthreads();
        p[threadIdx.x] = e;
        __syncthreads();
        const u32 count = min(blockDim.x, len - j0);
        for (u32 d = threadIdx.x; d < C; d += blockDim.x) {
            double s = 0.0;
            for (u32 t = 0; t < count; t++)
                s += p[t] * (double)__bfloat162float(ckv[slot_of(j0 + t) * C + d]);
            acc[d] += s;
        }
    }
    l = ref_block_sum(l, red);
    for (u32 d = threadIdx.x; d < C; d += blockDim.x)
        O[slot * C + d] = (float)(acc[d] / l);
    if (threadIdx.x == 0)
        LSE[slot] = (float)(m + log(l));
}

// Derive for the ragged layouts (packed queries, and the MoE GEMM's rows
// per expert), one block: the drawn qo (B + 1 large non-negative integers)
// become offsets: entries 1 .. B-1 folded to cut points in [0, TQ] and
// sorted, qo[0] = 0, qo[B] = TQ (draws near 0 give one sequence, or
// expert, nearly every row and others none). Each sequence's
// keys are its queries plus a prefix of pre[b] mod (P + 1) cached tokens:
// written as offsets into kvp (B + 1 entries) when kvp is not null, as
// lengths into lens (B entries) when lens is not null. pre may be kvp or
// lens itself: every draw is read before anything is written. A page table
// bt of nbt entries (may be null) is folded mod NP. B <= 1024.
extern "C" __global__ void make_ragged_offsets(int *qo, const int *pre, int *kvp, int *lens, int *bt, u64 nbt, u32 NP,
                                            u32 B, u32 TQ, u32 P)
{
    __shared__ u32 cut[1024], sorted[1024], extra[1024];
    for (u64 i = threadIdx.x; i < nbt; i += blockDim.x)
        bt[i] = (int)((u32)bt[i] % NP);
    for (u32 i = threadIdx.x; i < B; i += blockDim.x) {
        cut[i] = (u32)qo[i] % (TQ + 1);
        extra[i] = (u32)pre[i] % (P + 1);
    }
    __syncthreads();
    for (u32 i = 1 + threadIdx.x; i < B; i += blockDim.x) {
        u32 rank = 0;
        for (u32 j = 1; j < B; j++)
            rank += cut[j] < cut[i] || (cut[j] == cut[i] && j < i);
        sorted[rank] = cut[i];
    }
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    qo[0] = 0;
    for (u32 i = 1; i < B; i++)
        qo[i] = (int)sorted[i - 1];
    qo[B] = (int)TQ;
    u32 run = 0;
    if (kvp)
        kvp[0] = 0;
    for (u32 b = 0; b < B; b++) {
        const u32 len = (u32)(qo[b + 1] - qo[b]) + extra[b];
        run += len;
        if (kvp)
            kvp[b + 1] = (int)run;
        if (lens)
            lens[b] = (int)len;
    }
}

// Derive: the drawn page table and lengths (large non-negative integers)
// folded into range, in place: block_table mod NP, seq_lens mod maxlen + 1.
extern "C" __global__ void gqa_make_tables(int *bt, int *lens, u32 B, u32 MAXP, u32 NP, u32 maxlen)
{
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (u64)B * MAXP)
        bt[i] = (int)((u32)bt[i] % NP);
    if (i < B)
        lens[i] = (int)((u32)lens[i] % maxlen + 1);
}

// ---------------------------------------------------------------- MoE routing
//
// After derive the logits lie on a grid of 17 values and the bias is 0 or 8,
// so equal keys are exactly equal and different ones (and the sums of two)
// differ by far more than fp32 rounding: the selections below are the same
// in fp32 and fp64. Ties go to the lower index.

// Derive: logits in place to the nearest of 0.064 + 0.5 i, i in [-8, 8].
extern "C" __global__ void moe_make_logits(float *logits, u64 n)
{
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const double c = 0.064, v = rint(((double)logits[i] - c) / 0.5);
        logits[i] = (float)(c + 0.5 * fmin(fmax(v, -8.0), 8.0));
    }
}

// Derive, one block: the bias drawn as integers. All zero stays zero;
// otherwise expert bias[0] mod E gets 8 (a hot expert that every token
// picks) and every other expert 0.
extern "C" __global__ void moe_make_bias(float *bias, u32 E)
{
    const double r0 = bias[0];
    __syncthreads(); // every thread has read bias[0] before any writes it
    const double hot = fmod(r0, (double)E);
    for (u32 e = threadIdx.x; e < E; e += blockDim.x)
        bias[e] = (r0 != 0.0 && (double)e == hot) ? 8.0f : 0.0f;
}

// The block's (value, index) maximum, ties to the lower index; v = -1e308
// for a thread that holds nothing. Every thread gets the index.
static __device__ u32 ref_block_argmax(double v, u32 i, double *rv, u32 *ri)
{
    __syncthreads();
    rv[threadIdx.x] = v;
    ri[threadIdx.x] = i;
    __syncthreads();
    for (u32 k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) {
            const double o = rv[threadIdx.x + k];
            const u32 oi = ri[threadIdx.x + k];
            if (o > rv[threadIdx.x] || (o == rv[threadIdx.x] && oi < ri[threadIdx.x])) {
                rv[threadIdx.x] = o;
                ri[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    return ri[0];
}

// Routing of every token, a block of SR threads (thread e: expert e) per
// token: scores s (sigmoid == 1: sigmoid of the logit; else the softmax
// over the E logits), keys s + bias; with G > 1 groups of E/G experts, a
// group's score is the sum of its two largest keys and only the TG best
// groups are eligible; then the K largest eligible keys, in descending
// order. weight_k = s_k / (sum of the K scores) * scale.
extern "C" __global__ void __launch_bounds__(SR)
moe_route_ref(const float *logits, const float *bias, int *ids, double *wts, u32 E, u32 K, u32 G, u32 TG,
              u32 sigmoid, float scale)
{
    __shared__ double rv[SR];
    __shared__ u32 ri[SR];
    __shared__ double gs[SR];
    const u64 t = blockIdx.x;
    const u32 e = threadIdx.x;
    const double l = e < E ? (double)logits[t * E + e] : 0.0;
    double s;
    if (sigmoid) {
        s = 1.0 / (1.0 + exp(-l));
    } else {
        const double m = ref_block_max(e < E ? l : -1e308, rv);
        const double z = ref_block_sum(e < E ? exp(l - m) : 0.0, rv);
        s = exp(l - m) / z;
    }
    const double key = e < E ? s + (double)bias[e] : -1e308;
    bool eligible = e < E;
    if (G > 1) {
        const u32 EG = E / G;
        for (u32 g = 0; g < G; g++) {
            const bool in = e < E && e / EG == g;
            const u32 a = ref_block_argmax(in ? key : -1e308, e, rv, ri);
            const double ka = rv[0];
            const u32 b2 = ref_block_argmax(in && e != a ? key : -1e308, e, rv, ri);
            (void)b2;
            const double kb = rv[0];
            if (threadIdx.x == 0)
                gs[g] = ka + kb;
        }
        __syncthreads();
        bool chosen = false;
        for (u32 r = 0; r < TG; r++) {
            const bool cand = e < G && !chosen;
            const u32 w = ref_block_argmax(cand ? gs[e] : -1e308, e, rv, ri);
            if (e == w)
                chosen = true;
        }
        // Each thread learns whether its expert's group was chosen.
        __syncthreads();
        ri[threadIdx.x] = chosen ? 1u : 0u;
        __syncthreads();
        eligible = e < E && ri[e / EG] == 1u;
    }
    bool taken = false;
    double total = 0.0;
    u32 pick[32];
    double score[32];
    for (u32 k = 0; k < K; k++) {
        const u32 w = ref_block_argmax(eligible && !taken ? key : -1e308, e, rv, ri);
        if (e == w)
            taken = true;
        // The winner's score (without the bias), shared through rv.
        __syncthreads();
        if (e == w)
            rv[0] = s;
        __syncthreads();
        pick[k] = w;
        score[k] = rv[0];
        total += rv[0];
    }
    if (threadIdx.x == 0)
        for (u32 k = 0; k < K; k++) {
            ids[t * K + k] = (int)pick[k];
            wts[t * K + k] = score[k] / total * (double)scale;
        }
}

// The permuted order, one block, a thread per expert: off[e] = the number
// of assignments to experts below e, and rank[a] = the number of
// assignments before a (a = t*K + k, in that order) with a's expert.
extern "C" __global__ void moe_order_ref(const int *ids, u64 n, u32 *off, u32 *rank, u32 E)
{
    __shared__ u32 count[1024];
    for (u32 e = threadIdx.x; e < E; e += blockDim.x) {
        u32 c = 0;
        for (u64 j = 0; j < n; j++)
            if (ids[j] == (int)e)
                rank[j] = c++;
        count[e] = c;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        u32 run = 0;
        for (u32 e = 0; e < E; e++) {
            off[e] = run;
            run += count[e];
        }
    }
}

// A token unit per thread: its K experts, weights and destinations
// (off[e] + rank[a]).
extern "C" __global__ void moe_emit_ref(const int *ids, const double *wts, const u32 *off, const u32 *rank,
                                        const u64 *positions, u64 n, u64 T, float *topk_ids, float *topk_weights,
                                        float *dest, u32 K)
{
    const u64 slot = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= (n ? n : T))
        return;
    const u64 t = klab_unit(positions, slot);
    for (u32 k = 0; k < K; k++) {
        const u64 a = t * K + k;
        const int e = ids[a];
        topk_ids[slot * K + k] = (float)e;
        topk_weights[slot * K + k] = (float)wts[a];
        dest[slot * K + k] = (float)(off[e] + rank[a]);
    }
}

// ---------------------------------------------------------------- block-scaled fp8 GEMM
//
// C = A·Bᵀ with A[M, K] and B[N, K] in e4m3, each 128 values of K of a row
// of A scaled by sfa[m, k/128] and of B by sfb[n/128, k/128] (b2d == 1,
// DeepSeek-V3's 1D2D recipe) or sfb[n, k/128] (b2d == 0, 1D1D); K % 128 == 0.

// The whole of C, a 64x64 tile per block (klab_gemm_tile, fp64 sums).
extern "C" __global__ void __launch_bounds__(256)
gemm_bs_ref(const unsigned char *A, const unsigned char *B, const float *sfa, const float *sfb, float *C, u32 M,
            u32 N, u32 K, u32 b2d)
{
    const u32 KB = K / 128;
    klab_gemm_tile(
        M, N, K,
        [=](u32 m, u32 k) { return klab_load(A, (u64)m * K + k, KLAB_E4M3) * (double)sfa[(u64)m * KB + k / 128]; },
        [=](u32 n, u32 k) {
            return klab_load(B, (u64)n * K + k, KLAB_E4M3) * (double)sfb[(u64)(b2d ? n / 128 : n) * KB + k / 128];
        },
        [=](u32 m, u32 n, double v) { C[(u64)m * N + n] = (float)v; });
}

// Units positions[0..n) into C[0..n): a warp per element, its lanes
// splitting K, the partial sums added in a fixed tree.
extern "C" __global__ void gemm_bs_ref_units(const unsigned char *A, const unsigned char *B, const float *sfa,
                                             const float *sfb, const u64 *positions, u64 n, float *C, u32 N, u32 K,
                                             u32 b2d)
{
    const u64 slot = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const u32 lane = threadIdx.x & 31, KB = K / 128;
    if (slot >= n)
        return;
    const u64 u = klab_unit(positions, slot);
    const u64 m = u / N, col = u % N, brow = b2d ? col / 128 : col;
    double acc = 0.0;
    for (u32 k = lane; k < K; k += 32)
        acc += klab_load(A, m * K + k, KLAB_E4M3) * (double)sfa[m * KB + k / 128] *
               klab_load(B, col * K + k, KLAB_E4M3) * (double)sfb[brow * KB + k / 128];
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0)
        C[slot] = (float)acc;
}

// ---------------------------------------------------------------- MoE grouped GEMM
//
// Y[r, n] = sum_k X[r, k] W[e, n, k] for the rows r of expert e,
// off[e] <= r < off[e + 1]; X [M, K], W [E, N, K], Y [M, N].

// The whole of Y: block (x, y, e) is the 64x64 tile (y, x) of expert e's
// rows (klab_gemm_tile, fp64 sums); tiles past the expert's rows return.
extern "C" __global__ void __launch_bounds__(256)
moe_gemm_ref(const __nv_bfloat16 *X, const __nv_bfloat16 *W, const int *off, float *Y, u32 N, u32 K)
{
    const u32 e = blockIdx.z, r0 = (u32)off[e], rows = (u32)off[e + 1] - r0;
    if (blockIdx.y * KLAB_GB >= rows)
        return;
    const __nv_bfloat16 *We = W + (u64)e * N * K;
    klab_gemm_tile(
        rows, N, K, [=](u32 m, u32 k) { return (double)__bfloat162float(X[(u64)(r0 + m) * K + k]); },
        [=](u32 n, u32 k) { return (double)__bfloat162float(We[(u64)n * K + k]); },
        [=](u32 m, u32 n, double v) { Y[(u64)(r0 + m) * N + n] = (float)v; });
}

// Units positions[0..n) into Y[0..n): a warp per element, its lanes
// splitting K, the partial sums added in a fixed tree.
extern "C" __global__ void moe_gemm_ref_units(const __nv_bfloat16 *X, const __nv_bfloat16 *W, const int *off,
                                              const u64 *positions, u64 n, float *Y, u32 E, u32 N, u32 K)
{
    const u64 slot = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const u32 lane = threadIdx.x & 31;
    if (slot >= n)
        return;
    const u64 u = klab_unit(positions, slot), r = u / N, col = u % N;
    const __nv_bfloat16 *w = W + (ragged_owner(off, E, r) * N + col) * K, *x = X + r * K;
    double acc = 0.0;
    for (u32 k = lane; k < K; k += 32)
        acc += (double)__bfloat162float(x[k]) * (double)__bfloat162float(w[k]);
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0)
        Y[slot] = (float)acc;
}

// ---------------------------------------------------------------- gated delta net
//
// One decode step of the gated delta rule (Qwen3-Next's linear attention),
// the state k-last: S [B, HV, V, K]. For sequence b and value head h (query
// and key head h / (HV / HQ)): g = exp(-exp(A_log[h]) * softplus(a[b, h] +
// dt_bias[h])), beta = sigmoid(b[b, h]); S' = g S; row i of the new state
// is S'[i] + beta (v[i] - S'[i] . k) k, and out[i] = scale (new row i . q).
// A thread per (b, h, i) unit: K elements of new_state, one of out; fp64.
extern "C" __global__ void gdn_decode_ref(const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                                          const float *state, const float *A_log, const __nv_bfloat16 *a,
                                          const float *dt_bias, const __nv_bfloat16 *bg, const u64 *positions, u64 n,
                                          u64 units, float *out, float *new_state, u32 HQ, u32 HV, u32 K, u32 V,
                                          double scale)
{
    const u64 slot = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= (n ? n : units))
        return;
    const u64 u = klab_unit(positions, slot), bh = u / V, b = bh / HV;
    const u32 h = (u32)(bh % HV), qk = h / (HV / HQ);
    const double x = (double)__bfloat162float(a[bh]) + (double)dt_bias[h];
    const double softplus = x > 20.0 ? x : log1p(exp(x));
    const double g = exp(-exp((double)A_log[h]) * softplus);
    const double beta = 1.0 / (1.0 + exp(-(double)__bfloat162float(bg[bh])));
    const float *row = state + u * K;
    const __nv_bfloat16 *kr = k + (b * HQ + qk) * K, *qr = q + (b * HQ + qk) * K;
    double sk = 0.0;
    for (u32 j = 0; j < K; j++)
        sk += g * (double)row[j] * (double)__bfloat162float(kr[j]);
    const double delta = beta * ((double)__bfloat162float(v[u]) - sk);
    double o = 0.0;
    for (u32 j = 0; j < K; j++) {
        const double s = g * (double)row[j] + delta * (double)__bfloat162float(kr[j]);
        new_state[slot * K + j] = (float)s;
        o += s * (double)__bfloat162float(qr[j]);
    }
    out[slot] = (float)(o * scale);
}

