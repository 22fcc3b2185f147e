// wgmma_tma: C = A * B^T on Hopper (sm_90a) with TMA, mbarriers and wgmma.
//
// A[M,K], B[N,K], C[M,N], row-major bf16; fp32 accumulation; bf16 output rounded
// to nearest even. Written from the PTX ISA; no library headers (NVRTC-ready).
//
// DESIGN
//   * One CTA computes one 128x256 tile of C. Tiles are numbered on a 1-D grid
//     and mapped to (tile_m, tile_n) in groups of GROUP_M tile rows, so that the
//     CTAs resident at the same time share A and B tiles in L2.
//   * 384 threads = 3 warpgroups. Warpgroup 0 is the producer: it lowers its
//     register budget to 40 (setmaxnreg.dec) and one thread issues TMA loads.
//     Warpgroups 1 and 2 are consumers: they raise their budget to 232
//     (setmaxnreg.inc) and each computes 64 rows x 256 columns of the tile with
//     wgmma.mma_async m64n256k16 (128 fp32 accumulators per thread).
//     40*128 + 232*256 = 168*384, the register file the CTA starts with.
//   * K is walked in steps of 64 through STAGES = 4 shared-memory stages of
//     A (128x64 bf16, 16 KiB) and B (256x64 bf16, 32 KiB): 192 KiB plus 1 KiB of
//     slack used to align the stages to 1024 bytes.
//   * Per stage two mbarriers: full[s] (count 1: the producer's arrive.expect_tx,
//     plus 48 KiB of TMA transactions) and empty[s] (count 8: lane 0 of each of
//     the 8 consumer warps, after that warp's wgmma reading the stage is known
//     complete through wgmma.wait_group).
//   * Phase parity: use number u = kt / STAGES of stage s = kt % STAGES. The
//     consumer waits full[s] with parity u & 1. The producer waits empty[s] with
//     parity (u & 1) ^ 1, which succeeds at once for u = 0 (a fresh barrier is in
//     phase 0, and the phase "before" it counts as complete).
//   * Consumers keep at most two wgmma groups in flight: after committing the
//     group of step kt they wait_group 1, so the group of step kt - 1 is done and
//     its stage is released.
//   * Both operands are K-major (imm-trans-a = imm-trans-b = 0, the natural
//     layout of A[M,K] and B[N,K]). TMA writes each box with 128-byte swizzle:
//     row r (64 bf16 = 128 bytes of K) at r * 128, its 16-byte chunks XORed
//     with r % 8. That is the canonical K-major SWIZZLE_128B layout of wgmma:
//     8-row atoms of 1024 bytes stacked along M/N. Descriptor: start address >> 4
//     in bits 0-13, leading byte offset 16 >> 4 (unused for this layout) in bits
//     16-29, stride byte offset 1024 >> 4 in bits 32-45, base offset 0 (every
//     atom is 1024-aligned), layout 1 (128B swizzle) in bits 62-63. The four
//     k16 steps inside a 64-wide stage advance the start address by 32 bytes.
//   * The tile's A box rows for consumer c start at +c * 64 rows = c * 8 KiB,
//     still 1024-aligned.
//   * Epilogue: each consumer thread converts its accumulators to bf16 and
//     stores them straight from registers (pairs of columns, 4-byte stores),
//     checking row < M and col < N.
//   * Edges: TMA fills out-of-bounds box elements with zeros (OOB fill NONE), so
//     a partial tile in M, N or K adds zeros; the epilogue skips stores outside C.
//     Hence any M, N >= 1 and any K that is a multiple of 8 (a TMA global
//     stride must be a multiple of 16 bytes); the plan rejects other K.
//   * The plan launches clusters of 2 CTAs along x when the number of tiles is
//     even. The kernel itself does nothing cluster-wide (no multicast): the two
//     CTAs of a cluster are neighbours in the tile order (same tile_n, adjacent
//     tile_m), so they share the B tile in L2 at the same time.
//
// ASSUMPTIONS TO CHECK ON THE GPU (nothing here has run yet)
//   1. The host encodes tmA over A as dims {K, M}, strides {K * 2} bytes, box
//      {64, 128}, and tmB over B as dims {K, N}, box {64, 256}; bf16,
//      interleave none, swizzle 128B, OOB fill none (zeros); element strides 1.
//      A box larger than the tensor (M < 128, N < 256) must be accepted by
//      cuTensorMapEncodeTiled; if it is not, small shapes fail at plan time.
//   2. The transaction count credited by a partially out-of-bounds box is the
//      full box (48 KiB per stage); otherwise edge tiles would hang on full[s].
//   3. ptxas gives the kernel exactly 168 registers (launch bounds 384, 1), so
//      that setmaxnreg.inc 232 for 256 threads can be served by what
//      setmaxnreg.dec 40 frees; the compile log must say 168.
//   4. Dynamic shared memory of STAGES * 48 KiB + 1 KiB = 197632 bytes needs
//      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (the host sets it from the
//      plan's shared size).
//   5. The accumulator fragment of m64nNk16: thread t of the warpgroup (warp
//      w = t / 32, lane l) holds d[4j + i] at row 16w + l/4 + 8*(i/2), column
//      8j + 2*(l%4) + (i%2).
//   6. Expected on 8192x7168x5120: 64 x 28 = 1792 CTAs, one per SM at a time.

typedef unsigned short bf16_t;
typedef unsigned long long u64;

/* Opaque 128-byte tensor map, as CUtensorMap; passed by value as a
 * __grid_constant__ parameter and only ever addressed, never read. */
struct __align__(64) tmap_t {
    u64 opaque[16];
};

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define GROUP_M 16
#define A_STAGE_BYTES (BM * BK * 2) /* 16384 */
#define B_STAGE_BYTES (BN * BK * 2) /* 32768 */
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
#define NTHREADS 384
#define CONSUMER_WARPS 8

static __device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

/* ---- mbarrier ---------------------------------------------------------- */

static __device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

static __device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    unsigned done;
    do {
        asm volatile("{\n"
                     ".reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n"
                     "}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

static __device__ __forceinline__ void mbar_arrive(unsigned bar)
{
    asm volatile("{\n"
                 ".reg .b64 st;\n"
                 "mbarrier.arrive.shared::cta.b64 st, [%0];\n"
                 "}\n" :: "r"(bar) : "memory");
}

static __device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("{\n"
                 ".reg .b64 st;\n"
                 "mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n"
                 "}\n" :: "r"(bar), "r"(bytes) : "memory");
}

/* ---- TMA ------------------------------------------------------------- */

/* 2-D tiled load of the box at (c0 = innermost, c1) into shared memory at dst,
 * completing its bytes on the mbarrier at bar. */
static __device__ __forceinline__ void tma_load_2d(unsigned dst, const tmap_t *map,
                                                   int c0, int c1, unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"((u64)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}

static __device__ __forceinline__ void tma_prefetch_map(const tmap_t *map)
{
    asm volatile("prefetch.tensormap [%0];" :: "l"((u64)map) : "memory");
}

/* ---- wgmma ----------------------------------------------------------- */

/* Shared-memory matrix descriptor for a K-major operand in the 128-byte
 * swizzle layout (see the header). */
static __device__ __forceinline__ u64 smem_desc_sw128(unsigned addr)
{
    return (u64)((addr & 0x3FFFFu) >> 4)     /* start address */
         | ((u64)(16u >> 4) << 16)           /* leading byte offset (unused) */
         | ((u64)(1024u >> 4) << 32)         /* stride byte offset: 8 rows */
         | ((u64)1 << 62);                   /* 128-byte swizzle */
}

static __device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

static __device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int N>
static __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}

/* Keeps the compiler from moving reads or writes of the accumulators across
 * the wgmma fence/commit/wait statements (the hardware writes them
 * asynchronously). */
static __device__ __forceinline__ void acc_fence(float d[128])
{
    asm volatile(""
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
                   "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
                   "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
                   "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
                   "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 :: "memory");
}

/* d[64x256] += A[64x16] * B[16x256], both from shared memory descriptors. */
static __device__ __forceinline__ void wgmma_m64n256k16(float d[128], u64 desc_a, u64 desc_b)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(1));
}

/* ---- kernel ---------------------------------------------------------- */

extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
gemm(const __grid_constant__ tmap_t tmA, const __grid_constant__ tmap_t tmB,
     bf16_t *__restrict__ C, unsigned M, unsigned N, unsigned K)
{
    extern __shared__ unsigned char dsmem[];
    __shared__ __align__(8) u64 bars[2 * STAGES];

    /* Stage buffers at a 1024-byte boundary (the plan asks for 1 KiB extra). */
    const unsigned base = (smem_addr(dsmem) + 1023u) & ~1023u;
    const unsigned sA = base;
    const unsigned sB = base + STAGES * A_STAGE_BYTES;
    const unsigned full0 = smem_addr(&bars[0]);
    const unsigned empty0 = smem_addr(&bars[STAGES]);

    /* Tile of this CTA, grouped by GROUP_M tile rows. */
    const unsigned tiles_m = (M + BM - 1) / BM;
    const unsigned tiles_n = (N + BN - 1) / BN;
    const unsigned group_size = GROUP_M * tiles_n;
    const unsigned b = blockIdx.x;
    const unsigned first_m = (b / group_size) * GROUP_M;
    const unsigned gm = min(tiles_m - first_m, (unsigned)GROUP_M);
    const unsigned local = b % group_size;
    const unsigned tile_m = first_m + local % gm;
    const unsigned tile_n = local / gm;
    const unsigned ktiles = (K + BK - 1) / BK;

    const unsigned tid = threadIdx.x;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);
            mbar_init(empty0 + 8 * s, CONSUMER_WARPS);
        }
        /* make the initialised barriers visible to the async proxy (TMA) */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();

    const unsigned wg = tid / 128;
    if (wg == 0) {
        /* ---- producer warpgroup ---- */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
        if (tid == 0) {
            tma_prefetch_map(&tmA);
            tma_prefetch_map(&tmB);
            const int row_a = (int)(tile_m * BM);
            const int row_b = (int)(tile_n * BN);
            for (unsigned kt = 0; kt < ktiles; ++kt) {
                const unsigned s = kt % STAGES;
                const unsigned u = kt / STAGES;
                mbar_wait(empty0 + 8 * s, (u & 1u) ^ 1u);
                const unsigned full = full0 + 8 * s;
                mbar_arrive_expect_tx(full, STAGE_BYTES);
                tma_load_2d(sA + s * A_STAGE_BYTES, &tmA, (int)(kt * BK), row_a, full);
                tma_load_2d(sB + s * B_STAGE_BYTES, &tmB, (int)(kt * BK), row_b, full);
            }
        }
        return;
    }

    /* ---- consumer warpgroups ---- */
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
    const unsigned cw = wg - 1;          /* 0 or 1: rows cw*64 .. +63 of the tile */
    const unsigned lane = tid & 31;

    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i)
        d[i] = 0.0f;

    for (unsigned kt = 0; kt < ktiles; ++kt) {
        const unsigned s = kt % STAGES;
        const unsigned u = kt / STAGES;
        mbar_wait(full0 + 8 * s, u & 1u);

        const unsigned a_tile = sA + s * A_STAGE_BYTES + cw * (64 * 128);
        const unsigned b_tile = sB + s * B_STAGE_BYTES;
        acc_fence(d);
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < BK / 16; ++k)
            wgmma_m64n256k16(d, smem_desc_sw128(a_tile + k * 32),
                             smem_desc_sw128(b_tile + k * 32));
        wgmma_commit();
        acc_fence(d);
        if (kt > 0) {
            /* the group of step kt - 1 has finished reading its stage */
            wgmma_wait<1>();
            acc_fence(d);
            if (lane == 0)
                mbar_arrive(empty0 + 8 * ((kt - 1) % STAGES));
        }
    }
    wgmma_wait<0>();
    acc_fence(d);

    /* ---- epilogue: registers -> C ---- */
    const unsigned warp_in_wg = (tid / 32) % 4;
    const unsigned row0 = tile_m * BM + cw * 64 + warp_in_wg * 16 + lane / 4;
    const unsigned col0 = tile_n * BN + (lane % 4) * 2;
    const bool pairs = (N % 2u) == 0u;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const unsigned row = row0 + h * 8;
        if (row >= M)
            continue;
        bf16_t *crow = C + (size_t)row * N;
#pragma unroll
        for (int j = 0; j < 32; ++j) {
            const unsigned col = col0 + j * 8;
            const float v0 = d[4 * j + 2 * h];
            const float v1 = d[4 * j + 2 * h + 1];
            if (pairs) {
                if (col < N) { /* col even, N even: col + 1 < N too */
                    unsigned packed;
                    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(v1), "f"(v0));
                    *reinterpret_cast<unsigned *>(crow + col) = packed;
                }
            } else {
                unsigned short h0, h1;
                asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h0) : "f"(v0));
                asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h1) : "f"(v1));
                if (col < N)
                    crow[col] = h0;
                if (col + 1 < N)
                    crow[col + 1] = h1;
            }
        }
    }
}
