// reference.cu: the GEMM family's trusted reference, C = scale_a * scale_b *
// A·Bᵀ for row-major A[M,K] and B[N,K] of any task element type, with fp64
// accumulation, written as fp32. klab compiles it after its prelude
// (klab_load, klab_unit) and runs it with the launch plans in _family.lua.
// Plain rather than fast; deterministic (no atomics, a fixed order).
//
// A unit is one element of C (unit u = m*N + n).

#define RT 16

static __device__ __forceinline__ double scale_of(const float *sa, const float *sb)
{
    return (sa ? (double)*sa : 1.0) * (sb ? (double)*sb : 1.0);
}

// The whole of C: a 16x16 tile per block, both operands staged in shared
// memory as doubles.
extern "C" __global__ void gemm_ref(const void *A, int dta, const void *B, int dtb, const float *scale_a,
                                    const float *scale_b, float *C, u32 M, u32 N, u32 K)
{
    __shared__ double As[RT][RT + 1];
    __shared__ double Bs[RT][RT + 1];
    u32 m = blockIdx.y * RT + threadIdx.y;
    u32 n = blockIdx.x * RT + threadIdx.x;
    double acc = 0.0;
    for (u32 k0 = 0; k0 < K; k0 += RT) {
        u32 ka = k0 + threadIdx.x;
        u32 bn = blockIdx.x * RT + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (m < M && ka < K) ? klab_load(A, (u64)m * K + ka, dta) : 0.0;
        Bs[threadIdx.y][threadIdx.x] = (bn < N && ka < K) ? klab_load(B, (u64)bn * K + ka, dtb) : 0.0;
        __syncthreads();
        for (int kk = 0; kk < RT; kk++)
            acc += As[threadIdx.y][kk] * Bs[threadIdx.x][kk];
        __syncthreads();
    }
    if (m < M && n < N)
        C[(u64)m * N + n] = (float)(acc * scale_of(scale_a, scale_b));
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
