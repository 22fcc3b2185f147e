// reference.cu: the GEMM family's trusted reference, C = scale_a * scale_b *
// A·Bᵀ for row-major A[M,K] and B[N,K] of any task element type, with fp64
// accumulation, written as fp32. klab compiles it after its prelude
// (klab_load, klab_unit) and runs it with the launch plans in _family.lua.
// Plain rather than fast; deterministic (no atomics, a fixed order).
//
// A unit is one element of C (unit u = m*N + n).

static __device__ __forceinline__ double scale_of(const float *sa, const float *sb)
{
    return (sa ? (double)*sa : 1.0) * (sb ? (double)*sb : 1.0);
}

// The whole of C, a 64x64 tile per block (klab_gemm_tile, in the prelude).
extern "C" __global__ void __launch_bounds__(256)
    gemm_ref(const void *A, int dta, const void *B, int dtb, const float *scale_a, const float *scale_b, float *C,
             u32 M, u32 N, u32 K)
{
    double s = scale_of(scale_a, scale_b);
    klab_gemm_tile(
        M, N, K, [=](u32 m, u32 k) { return klab_load(A, (u64)m * K + k, dta); },
        [=](u32 n, u32 k) { return klab_load(B, (u64)n * K + k, dtb); },
        [=](u32 m, u32 n, double v) { C[(u64)m * N + n] = (float)(v * s); });
}

// Units positions[0..n) into C[0..n): a warp per unit, its lanes splitting
// K, the partial sums added in a fixed tree.
extern "C" __global__ void gemm_ref_units(const void *A, int dta, const void *B, int dtb, const float *scale_a,
                                          const float *scale_b, const u64 *positions, u64 n, float *C, u32 N,
                                          u32 K)
{
    u64 slot = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    u32 lane = threadIdx.x & 31;
    if (slot >= n)
        return;
    u64 u = klab_unit(positions, slot);
    u64 m = u / N, col = u % N;
    double acc = 0.0;
    for (u32 k = lane; k < K; k += 32)
        acc += klab_load(A, m * K + k, dta) * klab_load(B, col * K + k, dtb);
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0)
        C[slot] = (float)(acc * scale_of(scale_a, scale_b));
}
