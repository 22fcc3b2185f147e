// mma_fwd: attention forward with log-sum-exp on tensor cores
// (mma.sync.m16n8k16 bf16 -> fp32), FlashAttention-2 style.
//
// Q, K, V, O bf16 [BH, S, D] row-major; LSE fp32 [BH, S] (natural log).
// A block of 4 warps owns 64 query rows of one (batch, head); warp w owns
// rows 16w..16w+15. For each 64-key tile:
//   S = Q K^T     (Q and K rows in shared memory, fragments read as 32-bit pairs)
//   online softmax in the log2 domain: x = s * scale * log2(e), m = running max,
//                 p = exp2(x - m), l = running sum (per-thread partial sums)
//   O += P V      (P re-packed from the score accumulators to bf16 A fragments,
//                  V stored transposed in shared memory so that B fragments are pairs)
// At the end O /= l (rounded to bf16) and LSE = (m + log2 l) * ln 2.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 .bf16, g = lane/4, t = lane%4):
//   A (16x16, row): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B (16x8, col):  b0 = (k = 2t..2t+1, n = g), b1 = (k = 2t+8.., n = g)
//   C (16x8):       c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
// the lower half of each 32-bit register holding the lower column/k index.
//
// Shared memory (bytes): 2 * (128 * (D + 8) + D * 72): Q and K tiles with rows
// padded to D + 8 elements, V^T with rows padded to 72, so that the eight rows
// g = 0..7 of a fragment load fall in distinct banks.
//
// Entry points attention_fwd_d64, _d96, _d128 (D is a template parameter).
// Requirements: S % 64 == 0. Launch: block 128, grid (S/64, BH). Under the
// causal mask blocks take query tiles from the last (heaviest) down.

typedef unsigned short bf16_t;

#define BM 64
#define BN 64
#define NT 128
#define LDV (BN + 8)

static __device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi)
{
    unsigned r;
    /* cvt packs its first source into the upper half */
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

static __device__ __forceinline__ void mma_bf16(float d[4], const unsigned a[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

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

static __device__ __forceinline__ unsigned ld32(const bf16_t *p)
{
    return *reinterpret_cast<const unsigned *>(p);
}

template <int D>
static __device__ __forceinline__ void fwd_body(const bf16_t *__restrict__ Q, const bf16_t *__restrict__ K,
                                                const bf16_t *__restrict__ V, bf16_t *__restrict__ O,
                                                float *__restrict__ LSE, unsigned S, float scale_log2,
                                                unsigned causal)
{
    constexpr int LDQ = D + 8;   // row stride of the Q and K tiles, elements
    constexpr int CPR = D / 8;   // 16-byte chunks per row
    constexpr int ND = D / 8;    // n-tiles of O
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16_t *Qs = reinterpret_cast<bf16_t *>(smem_raw);
    bf16_t *Ks = Qs + BM * LDQ;
    bf16_t *Vt = Ks + BN * LDQ;

    const unsigned tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const unsigned g = lane >> 2, t = lane & 3;
    const unsigned qb = causal ? (gridDim.x - 1 - blockIdx.x) : blockIdx.x;
    const unsigned i0 = qb * BM;
    const size_t base = (size_t)blockIdx.y * S * D;
    const float NEG_INF = __int_as_float(0xff800000);

    for (int c = tid; c < BM * CPR; c += NT) {
        int r = c / CPR, col = (c % CPR) * 8;
        uint4 val = make_uint4(0u, 0u, 0u, 0u);
        if (i0 + r < S)
            val = *reinterpret_cast<const uint4 *>(Q + base + (size_t)(i0 + r) * D + col);
        *reinterpret_cast<uint4 *>(Qs + r * LDQ + col) = val;
    }

    float o[ND][4];
#pragma unroll
    for (int nd = 0; nd < ND; nd++)
        o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;
    float m0 = NEG_INF, m1 = NEG_INF, l0 = 0.0f, l1 = 0.0f;
    const unsigned row0 = i0 + warp * 16 + g, row1 = row0 + 8;
    const unsigned kend = causal ? (i0 + BM < S ? i0 + BM : S) : S;

    for (unsigned j0 = 0; j0 < kend; j0 += BN) {
        __syncthreads();   // the previous tile is consumed (and the Q tile is in place)
        for (int c = tid; c < BN * CPR; c += NT) {
            int r = c / CPR, col = (c % CPR) * 8;
            uint4 val = make_uint4(0u, 0u, 0u, 0u);
            if (j0 + r < S)
                val = *reinterpret_cast<const uint4 *>(K + base + (size_t)(j0 + r) * D + col);
            *reinterpret_cast<uint4 *>(Ks + r * LDQ + col) = val;
        }
        // V transposed: consecutive threads take consecutive keys, so the
        // 16-bit stores of one instruction land in distinct words.
        for (int c = tid; c < BN * CPR; c += NT) {
            int r = c % BN, col = (c / BN) * 8;
            uint4 val = make_uint4(0u, 0u, 0u, 0u);
            if (j0 + r < S)
                val = *reinterpret_cast<const uint4 *>(V + base + (size_t)(j0 + r) * D + col);
            const bf16_t *e = reinterpret_cast<const bf16_t *>(&val);
#pragma unroll
            for (int q = 0; q < 8; q++)
                Vt[(col + q) * LDV + r] = e[q];
        }
        __syncthreads();

        float s[8][4];
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
            s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
        for (int kd = 0; kd < D / 16; kd++) {
            const bf16_t *qa = Qs + (warp * 16 + g) * LDQ + kd * 16 + t * 2;
            unsigned a[4] = {ld32(qa), ld32(qa + 8 * LDQ), ld32(qa + 8), ld32(qa + 8 * LDQ + 8)};
#pragma unroll
            for (int nt = 0; nt < 8; nt++) {
                const bf16_t *kb = Ks + (nt * 8 + g) * LDQ + kd * 16 + t * 2;
                mma_bf16(s[nt], a, ld32(kb), ld32(kb + 8));
            }
        }

        float mx0 = NEG_INF, mx1 = NEG_INF;
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                unsigned key = j0 + nt * 8 + t * 2 + (e & 1);
                unsigned row = e < 2 ? row0 : row1;
                bool ok = key < S && (!causal || key <= row);
                float x = ok ? s[nt][e] * scale_log2 : NEG_INF;
                s[nt][e] = x;
                if (e < 2)
                    mx0 = fmaxf(mx0, x);
                else
                    mx1 = fmaxf(mx1, x);
            }
        }
        mx0 = quad_max(mx0);
        mx1 = quad_max(mx1);
        const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
        // A row with no visible key yet keeps a finite reference point.
        const float b0 = mn0 == NEG_INF ? 0.0f : mn0, b1 = mn1 == NEG_INF ? 0.0f : mn1;
        const float al0 = exp2f(m0 - b0), al1 = exp2f(m1 - b1);
        float ps0 = 0.0f, ps1 = 0.0f;
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            s[nt][0] = exp2f(s[nt][0] - b0);
            s[nt][1] = exp2f(s[nt][1] - b0);
            s[nt][2] = exp2f(s[nt][2] - b1);
            s[nt][3] = exp2f(s[nt][3] - b1);
            ps0 += s[nt][0] + s[nt][1];
            ps1 += s[nt][2] + s[nt][3];
        }
        l0 = l0 * al0 + ps0;
        l1 = l1 * al1 + ps1;
        m0 = mn0;
        m1 = mn1;
#pragma unroll
        for (int nd = 0; nd < ND; nd++) {
            o[nd][0] *= al0;
            o[nd][1] *= al0;
            o[nd][2] *= al1;
            o[nd][3] *= al1;
        }

#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
            unsigned a[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                             pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
            for (int nd = 0; nd < ND; nd++) {
                const bf16_t *vb = Vt + (nd * 8 + g) * LDV + kk * 16 + t * 2;
                mma_bf16(o[nd], a, ld32(vb), ld32(vb + 8));
            }
        }
    }

    l0 = quad_sum(l0);
    l1 = quad_sum(l1);
    const float inv0 = 1.0f / l0, inv1 = 1.0f / l1;
    const float LN2 = 0.69314718055994531f;
    if (row0 < S) {
        unsigned *out = reinterpret_cast<unsigned *>(O + base + (size_t)row0 * D + t * 2);
#pragma unroll
        for (int nd = 0; nd < ND; nd++)
            out[nd * 4] = pack_bf16x2(o[nd][0] * inv0, o[nd][1] * inv0);
        if (t == 0)
            LSE[(size_t)blockIdx.y * S + row0] = (m0 + log2f(l0)) * LN2;
    }
    if (row1 < S) {
        unsigned *out = reinterpret_cast<unsigned *>(O + base + (size_t)row1 * D + t * 2);
#pragma unroll
        for (int nd = 0; nd < ND; nd++)
            out[nd * 4] = pack_bf16x2(o[nd][2] * inv1, o[nd][3] * inv1);
        if (t == 0)
            LSE[(size_t)blockIdx.y * S + row1] = (m1 + log2f(l1)) * LN2;
    }
}

#define ENTRY(DIM)                                                                                       \
    extern "C" __global__ void __launch_bounds__(NT)                                                     \
        attention_fwd_d##DIM(const bf16_t *Q, const bf16_t *K, const bf16_t *V, bf16_t *O, float *LSE,   \
                             unsigned S, float scale_log2, unsigned causal)                              \
    {                                                                                                    \
        fwd_body<DIM>(Q, K, V, O, LSE, S, scale_log2, causal);                                           \
    }

ENTRY(64)
ENTRY(96)
ENTRY(128)
