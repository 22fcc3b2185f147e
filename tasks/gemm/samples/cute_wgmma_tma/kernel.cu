// cute_wgmma_tma: C = A * B^T on Hopper (sm_90a), written with CuTe (CUTLASS
// 4's layout and tensor layer): TMA loads through CuTe's SM90_TMA_LOAD_2D,
// mbarriers through CuTe's barrier helpers, and wgmma through a TiledMMA of
// CuTe's SM90 GMMA atom (64x256x16, bf16 in, fp32 out, both operands K-major).
//
// A[M,K], B[N,K], C[M,N] row-major bf16; fp32 accumulation; bf16 output.
//
// One CTA of 256 threads (two warpgroups) computes one 128x256 tile of C;
// warpgroup w owns rows 64w..64w+63 of it (the TiledMMA's 2x1 atom layout).
// K is walked 64 at a time through STAGES shared-memory stages of A
// (128x64) and B (256x64). The plan makes the tensor maps: tmA over A with
// box {64, 128}, tmB over B with box {64, 256}, both with 128-byte swizzle,
// which is exactly CuTe's GMMA::Layout_K_SW128_Atom tiled down the rows (8
// rows of 128 bytes per 1024-byte atom), so the smem tensors below describe
// what TMA writes and the GMMA descriptors CuTe builds from them read it.
//
// Pipeline (no warp specialisation): thread 0 keeps STAGES k-tiles in
// flight. For k-tile kt in stage s = kt % STAGES every thread waits full[s]
// (parity (kt / STAGES) & 1), issues the four k16 wgmmas of the stage, and
// waits until at most this group is in flight; then the CTA syncs, so the
// stage of k-tile kt - 1 is read by nobody, and thread 0 refills it with
// k-tile kt - 1 + STAGES.
//
// Edges: TMA fills the part of a box outside the tensor with zeros and still
// counts the whole box's bytes, so a partial tile in M, N or K adds zeros;
// the epilogue stores only inside C. Any M, N >= 1; K a positive multiple of
// 8 (a TMA row stride is a multiple of 16 bytes), which the plan checks.
#include <cute/tensor.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/barrier.h>

using namespace cute;

namespace {

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 256;
constexpr unsigned STAGE_BYTES = (BM + BN) * BK * 2;

using Elem = cute::bfloat16_t;
// Stages of A (BM x BK) and B (BN x BK), K-major, 128-byte swizzled.
using SmemA = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Elem>{},
                                     make_shape(Int<BM>{}, Int<BK>{}, Int<STAGES>{})));
using SmemB = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Elem>{},
                                     make_shape(Int<BN>{}, Int<BK>{}, Int<STAGES>{})));

struct alignas(64) TensorMap { unsigned long long bytes[16]; };

// Thread 0: one k-tile of A and B into stage s, its bytes credited to full[s].
__device__ __forceinline__ void load_stage(const TensorMap &tmA, const TensorMap &tmB, uint64_t &full,
                                           Elem *sa, Elem *sb, int k, int m0, int n0)
{
    set_barrier_transaction_bytes(full, STAGE_BYTES);
    const uint64_t hint = static_cast<uint64_t>(TMA::CacheHintSm90::EVICT_NORMAL);
    SM90_TMA_LOAD_2D::copy(&tmA, &full, hint, sa, k, m0);
    SM90_TMA_LOAD_2D::copy(&tmB, &full, hint, sb, k, n0);
}

} // namespace

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB, Elem *C,
     unsigned M, unsigned N, unsigned K)
{
    extern __shared__ unsigned char dsmem[];
    __shared__ uint64_t full[STAGES];
    // The swizzle repeats every 1024 bytes: align the stages to that.
    unsigned char *base = dsmem + ((1024 - (cast_smem_ptr_to_uint(dsmem) & 1023)) & 1023);
    Elem *pa = reinterpret_cast<Elem *>(base);
    Elem *pb = pa + cosize(SmemA{});
    Tensor sA = make_tensor(make_smem_ptr(pa), SmemA{});   // (BM, BK, STAGES)
    Tensor sB = make_tensor(make_smem_ptr(pb), SmemB{});   // (BN, BK, STAGES)

    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int ktiles = (K + BK - 1) / BK;
    const int tid = threadIdx.x;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s)
            initialize_barrier(full[s], 1);
        cutlass::arch::fence_barrier_init();
    }
    __syncthreads();
    if (tid == 0) {
        for (int kt = 0; kt < STAGES && kt < ktiles; ++kt)
            load_stage(tmA, tmB, full[kt], &sA(0, 0, kt), &sB(0, 0, kt), kt * BK, m0, n0);
    }

    TiledMMA mma = make_tiled_mma(SM90_64x256x16_F32BF16BF16_SS<GMMA::Major::K, GMMA::Major::K>{},
                                  Layout<Shape<_2, _1, _1>>{});
    ThrMMA thr = mma.get_thread_slice(tid);
    Tensor tCsA = thr.partition_A(sA);                     // (MMA, MMA_M, MMA_K, STAGES)
    Tensor tCsB = thr.partition_B(sB);                     // (MMA, MMA_N, MMA_K, STAGES)
    Tensor tCrA = thr.make_fragment_A(tCsA);               // GMMA descriptors
    Tensor tCrB = thr.make_fragment_B(tCsB);
    Tensor acc = partition_fragment_C(mma, Shape<Int<BM>, Int<BN>>{});
    clear(acc);

    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % STAGES;
        wait_barrier(full[s], (kt / STAGES) & 1);
        warpgroup_fence_operand(acc);
        warpgroup_arrive();
        gemm(mma, tCrA(_, _, _, s), tCrB(_, _, _, s), acc);
        warpgroup_commit_batch();
        // This k-tile's group may still run; the one before it is done.
        warpgroup_wait<1>();
        warpgroup_fence_operand(acc);
        __syncthreads();
        const int next = kt - 1 + STAGES;
        if (tid == 0 && kt >= 1 && next < ktiles) {
            const int r = (kt - 1) % STAGES;
            load_stage(tmA, tmB, full[r], &sA(0, 0, r), &sB(0, 0, r), next * BK, m0, n0);
        }
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);

    // Epilogue: each accumulator to its element of C, rounded to bf16, inside C only.
    Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, Int<1>{}));
    Tensor gC = local_tile(mC, Shape<Int<BM>, Int<BN>>{}, make_coord(blockIdx.y, blockIdx.x));
    Tensor cC = local_tile(make_identity_tensor(make_shape(M, N)), Shape<Int<BM>, Int<BN>>{},
                           make_coord(blockIdx.y, blockIdx.x));
    Tensor tCgC = thr.partition_C(gC);
    Tensor tCcC = thr.partition_C(cC);
    CUTE_UNROLL
    for (int i = 0; i < size(acc); ++i) {
        if (elem_less(tCcC(i), make_coord(M, N)))
            tCgC(i) = Elem(acc(i));
    }
}
