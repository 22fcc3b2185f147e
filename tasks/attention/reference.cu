// reference.cu: the attention family's trusted reference (forward with
// log-sum-exp, backward), run by the launch plans in _family.lua.
//
// klab compiles it after its prelude (klab_unit, u32, u64) with NVRTC for
// the device's exact architecture, once per worker. Plain rather than fast: fp32
// throughout (bf16 inputs widened exactly), precise expf/logf, no tensor
// cores, no atomics, so every result is deterministic. Memory is linear in
// S: scores are never stored beyond one 64x64 tile in shared memory.
//
// Layout: Q, K, V, O, dO are bf16 [BH, S, D] (BH = B*H; D contiguous); LSE
// and Dsum are fp32 [BH, S]. Scores S_ij = scale * q_i . k_j; the causal mask
// (causal != 0) keeps key j for query i iff j <= i (top-left aligned).
//
// Every kernel: 256 threads; thread t owns row r = t / 4 of a 64-row tile and
// the four threads of a row split its 64 columns (c = t%4 + 4*jj) and its D
// outputs in 16-byte chunks (chunk q = t%4 + 4*kk holds d = 4q .. 4q+3).
// Tiles are read from shared memory four floats at a time; each output's
// sums still run in one fixed order (d = 0, 1, ..., D-1 for a score, key or
// query 0, 1, ... for an output), so the results do not depend on the
// vector width. Requirements (checked by the caller): D % 4 == 0,
// D <= 128. Dynamic shared memory, in floats, with L = D + 4 (rows stay
// 16-byte aligned) and tiles of scores 64 x 68:
//   attn_ref_fwd        2*64*L + 64*max(L, 68)   (P in K's place)
//   attn_ref_bwd_dq     4*64*L + 64*68
//   attn_ref_bwd_dkdv   4*64*L + 2*64*68 + 128
// Grids: fwd and dq (ceil(S/64), BH); dkdv (ceil(S/64), BH); prep
// (ceil(BH*S/8)) with 256 threads (a warp per row).
//
// Sampled units (the checks of timed runs): a unit is one row u = bh*S + i
// of every output (D elements of O, dQ, dK, dV; one of LSE). The *_rows
// kernels compute the rows positions[0..n) into slots 0..n, a block of 128
// threads per row, with the row's scores in dynamic shared memory (S floats
// for the forward, 2*S for the backward, plus 3*D).

typedef unsigned short bf16_t;

#define TILE 64
#define DMAX 128
#define NCH (DMAX / 16)  // 16-byte output chunks per thread at most
#define PL 68            // row length of a 64x64 score tile in shared memory

static __device__ __forceinline__ float bf(bf16_t h) { return __uint_as_float((u32)h << 16); }

static __device__ __forceinline__ bf16_t to_bf(float f)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

static __device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

static __device__ __forceinline__ u32 umin(u32 a, u32 b) { return a < b ? a : b; }

static __device__ __forceinline__ float4 ld4(const float *p) { return *reinterpret_cast<const float4 *>(p); }

// acc += a . b over four consecutive elements, in order.
static __device__ __forceinline__ float dot4(float4 a, float4 b, float acc)
{
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc);
    return fmaf(a.w, b.w, acc);
}

// acc += p * v, element by element.
static __device__ __forceinline__ void axpy4(float p, float4 v, float4 &acc)
{
    acc.x = fmaf(p, v.x, acc.x);
    acc.y = fmaf(p, v.y, acc.y);
    acc.z = fmaf(p, v.z, acc.z);
    acc.w = fmaf(p, v.w, acc.w);
}

static __device__ __forceinline__ float4 zero4() { return make_float4(0.0f, 0.0f, 0.0f, 0.0f); }

static __device__ __forceinline__ float4 scale4(float4 v, float a)
{
    return make_float4(v.x * a, v.y * a, v.z * a, v.w * a);
}

// rows [row0, row0 + 64) of a [S, D] matrix into an fp32 tile of row length
// L = D + 4; rows past S are zero.
static __device__ void load_tile(float *dst, const bf16_t *src, u32 row0, u32 S, u32 D)
{
    const u32 L = D + 4;
    for (u32 idx = threadIdx.x; idx < TILE * D; idx += blockDim.x) {
        u32 r = idx / D, c = idx - r * D;
        u32 row = row0 + r;
        dst[r * L + c] = row < S ? bf(src[(size_t)row * D + c]) : 0.0f;
    }
}

// Max and sum over the four threads of a row (consecutive lanes).
static __device__ __forceinline__ float quad_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

static __device__ __forceinline__ float quad_sum(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// The 16 scores of this thread (columns sub + 4*jj of a 64-wide tile): row
// a of A against rows sub + 4*jj of B, both tiles of row length L; and with
// C and E the same for a second pair (dp), when C is not null.
static __device__ __forceinline__ void scores(const float *A, const float *B, const float *C, const float *E,
                                              u32 a, u32 sub, u32 D, float s[16], float t[16])
{
    const u32 L = D + 4;
#pragma unroll
    for (u32 jj = 0; jj < 16; jj++) {
        s[jj] = 0.0f;
        t[jj] = 0.0f;
    }
    for (u32 d = 0; d < D; d += 4) {
        float4 x = ld4(&A[a * L + d]);
#pragma unroll
        for (u32 jj = 0; jj < 16; jj++)
            s[jj] = dot4(x, ld4(&B[(sub + 4 * jj) * L + d]), s[jj]);
        if (C) {
            float4 y = ld4(&C[a * L + d]);
#pragma unroll
            for (u32 jj = 0; jj < 16; jj++)
                t[jj] = dot4(y, ld4(&E[(sub + 4 * jj) * L + d]), t[jj]);
        }
    }
}

// Forward. Writes O as fp32 (Of) and/or bf16 (Ob) (either may be null) and
// LSE (natural log). Online softmax over 64-key tiles.
extern "C" __global__ void __launch_bounds__(256)
attn_ref_fwd(const bf16_t *Q, const bf16_t *K, const bf16_t *V, float *Of, bf16_t *Ob, float *LSE,
             u32 S, u32 D, float scale, u32 causal)
{
    extern __shared__ __align__(16) float sm[];
    const u32 L = D + 4;
    // P takes K's place once every warp has its scores: at D = 128 that
    // keeps the block within half an SM's shared memory (two blocks per SM).
    float *Qs = sm, *Vs = Qs + TILE * L, *Ks = Vs + TILE * L, *Ps = Ks;
    const u32 bh = blockIdx.y, i0 = blockIdx.x * TILE;
    const size_t base = (size_t)bh * S * D;
    const u32 r = threadIdx.x >> 2, sub = threadIdx.x & 3;
    const u32 i = i0 + r;
    const u32 nc = D / 4;

    load_tile(Qs, Q + base, i0, S, D);
    float4 o[NCH];
#pragma unroll
    for (u32 kk = 0; kk < NCH; kk++)
        o[kk] = zero4();
    float m = neg_inf(), l = 0.0f;
    u32 kend = causal ? umin(S, i0 + TILE) : S;
    for (u32 j0 = 0; j0 < kend; j0 += TILE) {
        __syncthreads();
        load_tile(Ks, K + base, j0, S, D);
        load_tile(Vs, V + base, j0, S, D);
        __syncthreads();
        float s[16], unused[16];
        scores(Qs, Ks, nullptr, nullptr, r, sub, D, s, unused);
        float mx = neg_inf();
#pragma unroll
        for (u32 jj = 0; jj < 16; jj++) {
            u32 j = j0 + sub + 4 * jj;
            bool ok = j < S && (!causal || j <= i);
            s[jj] = ok ? s[jj] * scale : neg_inf();
            mx = fmaxf(mx, s[jj]);
        }
        mx = quad_max(mx);
        float mnew = fmaxf(m, mx);
        float alpha = (m == neg_inf()) ? 0.0f : expf(m - mnew);
        float psum = 0.0f;
#pragma unroll
        for (u32 jj = 0; jj < 16; jj++) {
            s[jj] = (s[jj] == neg_inf()) ? 0.0f : expf(s[jj] - mnew);
            psum += s[jj];
        }
        psum = quad_sum(psum);
        l = l * alpha + psum;
        m = mnew;
#pragma unroll
        for (u32 kk = 0; kk < NCH; kk++)
            o[kk] = scale4(o[kk], alpha);
        __syncthreads();
#pragma unroll
        for (u32 jj = 0; jj < 16; jj++)
            Ps[r * PL + sub + 4 * jj] = s[jj];
        __syncwarp();
        for (u32 c = 0; c < TILE; c += 4) {
            float4 p4 = ld4(&Ps[r * PL + c]);
            const float p[4] = { p4.x, p4.y, p4.z, p4.w };
#pragma unroll
            for (u32 e = 0; e < 4; e++) {
#pragma unroll
                for (u32 kk = 0; kk < NCH; kk++)
                    if (sub + 4 * kk < nc)
                        axpy4(p[e], ld4(&Vs[(c + e) * L + 4 * (sub + 4 * kk)]), o[kk]);
            }
        }
    }
    if (i >= S)
        return;
    float inv = 1.0f / l;
#pragma unroll
    for (u32 kk = 0; kk < NCH; kk++) {
        u32 q = sub + 4 * kk;
        if (q < nc) {
            const float v[4] = { o[kk].x * inv, o[kk].y * inv, o[kk].z * inv, o[kk].w * inv };
            size_t at = base + (size_t)i * D + 4 * q;
#pragma unroll
            for (u32 e = 0; e < 4; e++) {
                if (Of)
                    Of[at + e] = v[e];
                if (Ob)
                    Ob[at + e] = to_bf(v[e]);
            }
        }
    }
    if (sub == 0)
        LSE[(size_t)bh * S + i] = m + logf(l);
}

// Backward preprocess: Dsum_i = sum_d dO_id * O_id (bf16 inputs, fp32 sum),
// one warp per row.
extern "C" __global__ void __launch_bounds__(256)
attn_ref_bwd_prep(const bf16_t *O, const bf16_t *dO, float *Dsum, unsigned long long rows, u32 D)
{
    unsigned long long row = (unsigned long long)blockIdx.x * 8 + (threadIdx.x >> 5);
    u32 lane = threadIdx.x & 31;
    if (row >= rows)
        return;
    float acc = 0.0f;
    for (u32 d = lane; d < D; d += 32)
        acc = fmaf(bf(dO[row * D + d]), bf(O[row * D + d]), acc);
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0)
        Dsum[row] = acc;
}

// Backward, dQ (fp32 out): for a 64-row query tile, over key tiles:
//   P = exp(S - LSE), dP = dO V^T, dS = P (dP - Dsum), dQ = scale dS K.
extern "C" __global__ void __launch_bounds__(256)
attn_ref_bwd_dq(const bf16_t *Q, const bf16_t *K, const bf16_t *V, const bf16_t *dO, const float *LSE,
                const float *Dsum, float *dQ, u32 S, u32 D, float scale, u32 causal)
{
    extern __shared__ __align__(16) float sm[];
    const u32 L = D + 4;
    float *Qs = sm, *Gs = Qs + TILE * L, *Ks = Gs + TILE * L, *Vs = Ks + TILE * L, *DS = Vs + TILE * L;
    const u32 bh = blockIdx.y, i0 = blockIdx.x * TILE;
    const size_t base = (size_t)bh * S * D;
    const u32 r = threadIdx.x >> 2, sub = threadIdx.x & 3;
    const u32 i = i0 + r;
    const u32 nc = D / 4;
    const float lse = i < S ? LSE[(size_t)bh * S + i] : 0.0f;
    const float dsum = i < S ? Dsum[(size_t)bh * S + i] : 0.0f;

    load_tile(Qs, Q + base, i0, S, D);
    load_tile(Gs, dO + base, i0, S, D);
    float4 dq[NCH];
#pragma unroll
    for (u32 kk = 0; kk < NCH; kk++)
        dq[kk] = zero4();
    u32 kend = causal ? umin(S, i0 + TILE) : S;
    for (u32 j0 = 0; j0 < kend; j0 += TILE) {
        __syncthreads();
        load_tile(Ks, K + base, j0, S, D);
        load_tile(Vs, V + base, j0, S, D);
        __syncthreads();
        float s[16], dp[16];
        scores(Qs, Ks, Gs, Vs, r, sub, D, s, dp);
#pragma unroll
        for (u32 jj = 0; jj < 16; jj++) {
            u32 j = j0 + sub + 4 * jj;
            bool ok = i < S && j < S && (!causal || j <= i);
            float p = ok ? expf(s[jj] * scale - lse) : 0.0f;
            DS[r * PL + sub + 4 * jj] = p * (dp[jj] - dsum);
        }
        __syncwarp();
        for (u32 c = 0; c < TILE; c += 4) {
            float4 d4 = ld4(&DS[r * PL + c]);
            const float ds[4] = { d4.x, d4.y, d4.z, d4.w };
#pragma unroll
            for (u32 e = 0; e < 4; e++) {
#pragma unroll
                for (u32 kk = 0; kk < NCH; kk++)
                    if (sub + 4 * kk < nc)
                        axpy4(ds[e], ld4(&Ks[(c + e) * L + 4 * (sub + 4 * kk)]), dq[kk]);
            }
        }
    }
    if (i >= S)
        return;
#pragma unroll
    for (u32 kk = 0; kk < NCH; kk++) {
        u32 q = sub + 4 * kk;
        if (q < nc) {
            size_t at = base + (size_t)i * D + 4 * q;
            dQ[at] = scale * dq[kk].x;
            dQ[at + 1] = scale * dq[kk].y;
            dQ[at + 2] = scale * dq[kk].z;
            dQ[at + 3] = scale * dq[kk].w;
        }
    }
}

// Backward, dK and dV (fp32 out): for a 64-row key tile, over query tiles:
//   dV = P^T dO, dK = scale dS^T Q.
extern "C" __global__ void __launch_bounds__(256)
attn_ref_bwd_dkdv(const bf16_t *Q, const bf16_t *K, const bf16_t *V, const bf16_t *dO, const float *LSE,
                  const float *Dsum, float *dK, float *dV, u32 S, u32 D, float scale, u32 causal)
{
    extern __shared__ __align__(16) float sm[];
    const u32 L = D + 4;
    float *Ks = sm, *Vs = Ks + TILE * L, *Qs = Vs + TILE * L, *Gs = Qs + TILE * L;
    float *Ps = Gs + TILE * L, *DS = Ps + TILE * PL, *ls = DS + TILE * PL, *dsm = ls + TILE;
    const u32 bh = blockIdx.y, j0 = blockIdx.x * TILE;
    const size_t base = (size_t)bh * S * D;
    const u32 r = threadIdx.x >> 2, sub = threadIdx.x & 3;
    const u32 j = j0 + r;
    const u32 nc = D / 4;

    load_tile(Ks, K + base, j0, S, D);
    load_tile(Vs, V + base, j0, S, D);
    float4 dk[NCH], dv[NCH];
#pragma unroll
    for (u32 kk = 0; kk < NCH; kk++) {
        dk[kk] = zero4();
        dv[kk] = zero4();
    }
    // Causal: queries before this key tile never see its keys.
    for (u32 q0 = causal ? j0 : 0; q0 < S; q0 += TILE) {
        __syncthreads();
        load_tile(Qs, Q + base, q0, S, D);
        load_tile(Gs, dO + base, q0, S, D);
        if (threadIdx.x < TILE) {
            u32 qi = q0 + threadIdx.x;
            ls[threadIdx.x] = qi < S ? LSE[(size_t)bh * S + qi] : 0.0f;
            dsm[threadIdx.x] = qi < S ? Dsum[(size_t)bh * S + qi] : 0.0f;
        }
        __syncthreads();
        float s[16], dp[16];
        scores(Ks, Qs, Vs, Gs, r, sub, D, s, dp);
#pragma unroll
        for (u32 jj = 0; jj < 16; jj++) {
            u32 c = sub + 4 * jj;
            u32 qi = q0 + c;
            bool ok = j < S && qi < S && (!causal || j <= qi);
            float p = ok ? expf(s[jj] * scale - ls[c]) : 0.0f;
            Ps[r * PL + c] = p;
            DS[r * PL + c] = p * (dp[jj] - dsm[c]);
        }
        __syncwarp();
        for (u32 c = 0; c < TILE; c += 4) {
            float4 p4 = ld4(&Ps[r * PL + c]), d4 = ld4(&DS[r * PL + c]);
            const float p[4] = { p4.x, p4.y, p4.z, p4.w }, ds[4] = { d4.x, d4.y, d4.z, d4.w };
#pragma unroll
            for (u32 e = 0; e < 4; e++) {
#pragma unroll
                for (u32 kk = 0; kk < NCH; kk++) {
                    u32 at = (c + e) * L + 4 * (sub + 4 * kk);
                    if (sub + 4 * kk < nc) {
                        axpy4(p[e], ld4(&Gs[at]), dv[kk]);
                        axpy4(ds[e], ld4(&Qs[at]), dk[kk]);
                    }
                }
            }
        }
    }
    if (j >= S)
        return;
#pragma unroll
    for (u32 kk = 0; kk < NCH; kk++) {
        u32 q = sub + 4 * kk;
        if (q < nc) {
            size_t at = base + (size_t)j * D + 4 * q;
            const float a[4] = { dk[kk].x, dk[kk].y, dk[kk].z, dk[kk].w };
            const float b[4] = { dv[kk].x, dv[kk].y, dv[kk].z, dv[kk].w };
#pragma unroll
            for (u32 e = 0; e < 4; e++) {
                dK[at + e] = scale * a[e];
                dV[at + e] = b[e];
            }
        }
    }
}

// ---- sampled rows ---------------------------------------------------------

static __device__ float block_reduce(float v, float *red, bool is_max)
{
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    u32 w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();
    if ((threadIdx.x & 31) == 0)
        red[w] = v;
    __syncthreads();
    float r = red[0];
    for (u32 k = 1; k < nw; k++)
        r = is_max ? fmaxf(r, red[k]) : r + red[k];
    return r;
}

// Forward rows: O (n x D, fp32) and LSE (n) of the rows positions[0..n).
extern "C" __global__ void __launch_bounds__(128)
attn_ref_fwd_rows(const bf16_t *Q, const bf16_t *K, const bf16_t *V, const u64 *positions, u64 n, float *O,
                  float *LSE, u32 S, u32 D, float scale, u32 causal)
{
    extern __shared__ float sm[];
    float *sc = sm, *q = sc + S, *red = q + D;
    u64 slot = blockIdx.x;
    if (slot >= n)
        return;
    u64 u = klab_unit(positions, slot);
    u64 bh = u / S;
    u32 i = (u32)(u % S);
    const size_t base = (size_t)bh * S * D;
    for (u32 d = threadIdx.x; d < D; d += blockDim.x)
        q[d] = bf(Q[base + (size_t)i * D + d]);
    __syncthreads();
    float mx = neg_inf();
    for (u32 j = threadIdx.x; j < S; j += blockDim.x) {
        float s = neg_inf();
        if (!causal || j <= i) {
            float acc = 0.0f;
            for (u32 d = 0; d < D; d++)
                acc = fmaf(q[d], bf(K[base + (size_t)j * D + d]), acc);
            s = acc * scale;
        }
        sc[j] = s;
        mx = fmaxf(mx, s);
    }
    mx = block_reduce(mx, red, true);
    float sum = 0.0f;
    for (u32 j = threadIdx.x; j < S; j += blockDim.x) {
        float p = sc[j] == neg_inf() ? 0.0f : expf(sc[j] - mx);
        sc[j] = p;
        sum += p;
    }
    sum = block_reduce(sum, red, false);
    __syncthreads();
    for (u32 d = threadIdx.x; d < D; d += blockDim.x) {
        float acc = 0.0f;
        for (u32 j = 0; j < S; j++)
            acc = fmaf(sc[j], bf(V[base + (size_t)j * D + d]), acc);
        O[slot * D + d] = acc / sum;
    }
    if (threadIdx.x == 0)
        LSE[slot] = mx + logf(sum);
}

// Backward rows: dQ, dK, dV (n x D each, fp32) of the rows positions[0..n),
// given Dsum of every row (attn_ref_bwd_prep). Row r is a query row for dQ
// and a key row for dK and dV.
extern "C" __global__ void __launch_bounds__(128)
attn_ref_bwd_rows(const bf16_t *Q, const bf16_t *K, const bf16_t *V, const bf16_t *dO, const float *LSE,
                  const float *Dsum, const u64 *positions, u64 n, float *dQ, float *dK, float *dV, u32 S, u32 D,
                  float scale, u32 causal)
{
    extern __shared__ float sm[];
    float *pa = sm, *pb = pa + S, *x = pb + S, *y = x + D, *z = y + D;
    u64 slot = blockIdx.x;
    if (slot >= n)
        return;
    u64 u = klab_unit(positions, slot);
    u64 bh = u / S;
    u32 r = (u32)(u % S);
    const size_t base = (size_t)bh * S * D, rows = (size_t)bh * S;

    // dQ of query row r: dS_rj = P_rj (dO_r . V_j - Dsum_r), dQ = scale sum_j dS_rj K_j.
    for (u32 d = threadIdx.x; d < D; d += blockDim.x) {
        x[d] = bf(Q[base + (size_t)r * D + d]);
        y[d] = bf(dO[base + (size_t)r * D + d]);
    }
    __syncthreads();
    const float lse_r = LSE[rows + r], dsum_r = Dsum[rows + r];
    for (u32 j = threadIdx.x; j < S; j += blockDim.x) {
        float ds = 0.0f;
        if (!causal || j <= r) {
            float s = 0.0f, dp = 0.0f;
            for (u32 d = 0; d < D; d++) {
                s = fmaf(x[d], bf(K[base + (size_t)j * D + d]), s);
                dp = fmaf(y[d], bf(V[base + (size_t)j * D + d]), dp);
            }
            float p = expf(s * scale - lse_r);
            ds = p * (dp - dsum_r);
        }
        pa[j] = ds;
    }
    __syncthreads();
    for (u32 d = threadIdx.x; d < D; d += blockDim.x) {
        float acc = 0.0f;
        for (u32 j = 0; j < S; j++)
            acc = fmaf(pa[j], bf(K[base + (size_t)j * D + d]), acc);
        dQ[slot * D + d] = scale * acc;
    }
    __syncthreads();

    // dK and dV of key row r: over queries i (causal: i >= r),
    // P_ir = exp(scale q_i . k_r - LSE_i), dS_ir = P_ir (dO_i . v_r - Dsum_i).
    for (u32 d = threadIdx.x; d < D; d += blockDim.x) {
        z[d] = bf(K[base + (size_t)r * D + d]);
        y[d] = bf(V[base + (size_t)r * D + d]);
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < S; i += blockDim.x) {
        float p = 0.0f, ds = 0.0f;
        if (!causal || r <= i) {
            float s = 0.0f, dp = 0.0f;
            for (u32 d = 0; d < D; d++) {
                s = fmaf(bf(Q[base + (size_t)i * D + d]), z[d], s);
                dp = fmaf(bf(dO[base + (size_t)i * D + d]), y[d], dp);
            }
            p = expf(s * scale - LSE[rows + i]);
            ds = p * (dp - Dsum[rows + i]);
        }
        pa[i] = p;
        pb[i] = ds;
    }
    __syncthreads();
    for (u32 d = threadIdx.x; d < D; d += blockDim.x) {
        float dv = 0.0f, dk = 0.0f;
        for (u32 i = 0; i < S; i++) {
            dv = fmaf(pa[i], bf(dO[base + (size_t)i * D + d]), dv);
            dk = fmaf(pb[i], bf(Q[base + (size_t)i * D + d]), dk);
        }
        dV[slot * D + d] = dv;
        dK[slot * D + d] = scale * dk;
    }
}
