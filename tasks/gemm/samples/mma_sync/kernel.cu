// mma_sync: C = A * B^T with warp-level tensor-core MMA (mma.sync m16n8k16 bf16,
// fp32 accumulation), correct for any M, N, K >= 1.
//
// Layout: A[M,K], B[N,K], C[M,N], row-major bf16. Because B is stored N-major
// with K contiguous, its 8x8 sub-tiles have exactly the "col" fragment layout
// that mma.sync expects for the second operand, so both operands are loaded
// with plain (non-transposing) ldmatrix.
//
// Block tile 128x128, K step 32, 256 threads = 8 warps as 2 (M) x 4 (N); each
// warp owns a 64x32 sub-tile: 4 x 4 mma tiles of 16x8, 64 fp32 accumulators per
// thread. Shared memory: two stages of A and B tiles, rows padded to 40 elements
// (80 bytes) so that the eight 16-byte row reads of one ldmatrix hit distinct
// banks. Global loads for the next stage are issued into registers before the
// MMAs of the current stage (simple register double buffering).
//
// Edges: rows past M or N and columns past K are loaded as zero, so partial tiles
// contribute nothing; the epilogue checks every store. When K % 8 == 0 (each row
// starts 16-byte aligned) loads are 16-byte vectors, otherwise element-wise.
//
// Launch: block 256, grid (ceil(N/128), ceil(M/128)), no dynamic shared memory.

typedef unsigned short bf16_t;

#define BM 128
#define BN 128
#define BK 32
#define SK 40 /* padded row length of a shared tile, in elements */
#define NTHREADS 256

static __device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi)
{
    unsigned r;
    /* cvt packs its first source into the upper half */
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

static __device__ __forceinline__ bf16_t f32_to_bf16(float f)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

static __device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

static __device__ __forceinline__ void ldmatrix_x4(unsigned r[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

static __device__ __forceinline__ void mma_bf16(float d[4], const unsigned a[4],
                                                unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Loads the 8 elements src[row, k .. k+7] of a rows x K row-major matrix into v,
 * with zeros outside the matrix. */
static __device__ __forceinline__ uint4 load8(const bf16_t *__restrict__ src,
                                              unsigned rows, unsigned K,
                                              unsigned row, unsigned k, bool vec)
{
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (row >= rows)
        return v;
    const bf16_t *p = src + (size_t)row * K + k;
    if (vec) {
        /* K % 8 == 0, so the chunk is either wholly inside or wholly outside */
        if (k < K)
            v = __ldg(reinterpret_cast<const uint4 *>(p));
        return v;
    }
    unsigned short e[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
        e[i] = (k + i < K) ? __ldg(p + i) : (unsigned short)0;
    v.x = e[0] | ((unsigned)e[1] << 16);
    v.y = e[2] | ((unsigned)e[3] << 16);
    v.z = e[4] | ((unsigned)e[5] << 16);
    v.w = e[6] | ((unsigned)e[7] << 16);
    return v;
}

extern "C" __global__ void __launch_bounds__(NTHREADS)
gemm(const bf16_t *__restrict__ A, const bf16_t *__restrict__ B,
     bf16_t *__restrict__ C, unsigned M, unsigned N, unsigned K)
{
    __shared__ __align__(16) bf16_t sA[2][BM * SK];
    __shared__ __align__(16) bf16_t sB[2][BN * SK];

    const unsigned tid = threadIdx.x;
    const unsigned lane = tid & 31;
    const unsigned warp = tid >> 5;
    const unsigned wm = warp >> 2; /* 0..1: 64-row slice */
    const unsigned wn = warp & 3;  /* 0..3: 32-column slice */
    const unsigned m0 = blockIdx.y * BM;
    const unsigned n0 = blockIdx.x * BN;
    const bool vec = (K % 8u) == 0u;

    /* Each thread moves 2 chunks of 8 elements of A and 2 of B per stage:
     * chunk c covers row c / 4, columns (c % 4) * 8 .. + 7 of the tile. */
    unsigned crow[2], ccol[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        unsigned c = tid + i * NTHREADS;
        crow[i] = c >> 2;
        ccol[i] = (c & 3) * 8;
    }

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                acc[i][j][r] = 0.0f;

    const unsigned ktiles = (K + BK - 1) / BK;
    uint4 ra[2], rb[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        ra[i] = load8(A, M, K, m0 + crow[i], ccol[i], vec);
        rb[i] = load8(B, N, K, n0 + crow[i], ccol[i], vec);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        *reinterpret_cast<uint4 *>(&sA[0][crow[i] * SK + ccol[i]]) = ra[i];
        *reinterpret_cast<uint4 *>(&sB[0][crow[i] * SK + ccol[i]]) = rb[i];
    }
    __syncthreads();

    /* ldmatrix lane roles: lane l addresses row (l % 8) of 8x8 matrix l / 8. */
    const unsigned lr = lane & 7;
    const unsigned lq = lane >> 3;
    /* A x4: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15) */
    const unsigned a_row = wm * 64 + lr + (lq & 1) * 8;
    const unsigned a_col = (lq >> 1) * 8;
    /* B x4: matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) */
    const unsigned b_row = wn * 32 + lr + (lq >> 1) * 8;
    const unsigned b_col = (lq & 1) * 8;

    for (unsigned kt = 0; kt < ktiles; ++kt) {
        const unsigned cur = kt & 1;
        const bool more = kt + 1 < ktiles;
        if (more) {
            const unsigned kn = (kt + 1) * BK;
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                ra[i] = load8(A, M, K, m0 + crow[i], kn + ccol[i], vec);
                rb[i] = load8(B, N, K, n0 + crow[i], kn + ccol[i], vec);
            }
        }

        const unsigned baseA = smem_addr(&sA[cur][0]);
        const unsigned baseB = smem_addr(&sB[cur][0]);
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) {
            unsigned af[4][4], bfr[2][4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                ldmatrix_x4(af[i], baseA + ((a_row + i * 16) * SK + ks * 16 + a_col) * 2);
#pragma unroll
            for (int j = 0; j < 2; ++j)
                ldmatrix_x4(bfr[j], baseB + ((b_row + j * 16) * SK + ks * 16 + b_col) * 2);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    mma_bf16(acc[i][j], af[i], bfr[j >> 1][(j & 1) * 2],
                             bfr[j >> 1][(j & 1) * 2 + 1]);
        }

        if (more) {
            const unsigned nxt = cur ^ 1;
            /* The buffer written here was last read in iteration kt - 1, and every
             * thread passed the barrier at the end of that iteration. */
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                *reinterpret_cast<uint4 *>(&sA[nxt][crow[i] * SK + ccol[i]]) = ra[i];
                *reinterpret_cast<uint4 *>(&sB[nxt][crow[i] * SK + ccol[i]]) = rb[i];
            }
        }
        __syncthreads();
    }

    /* Accumulator fragment of mma m16n8: values 0,1 at (row g, cols 2t, 2t+1),
     * values 2,3 at (row g + 8, same columns), g = lane / 4, t = lane % 4. */
    const unsigned g = lane >> 2;
    const unsigned t = lane & 3;
    const bool pairs = (N % 2u) == 0u; /* 4-byte aligned pair stores */
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const unsigned row = m0 + wm * 64 + i * 16 + g + h * 8;
            if (row >= M)
                continue;
            bf16_t *crow_p = C + (size_t)row * N;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const unsigned col = n0 + wn * 32 + j * 8 + t * 2;
                const float v0 = acc[i][j][h * 2];
                const float v1 = acc[i][j][h * 2 + 1];
                if (pairs && col + 1 < N) {
                    *reinterpret_cast<unsigned *>(crow_p + col) = pack_bf16x2(v0, v1);
                } else {
                    if (col < N)
                        crow_p[col] = f32_to_bf16(v0);
                    if (col + 1 < N)
                        crow_p[col + 1] = f32_to_bf16(v1);
                }
            }
        }
    }
}
