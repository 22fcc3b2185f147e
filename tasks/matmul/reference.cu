// reference.cu: the matmul family's trusted reference. For each batch
// member b, C[b] = act(A[b]·B[b]ᵀ + bias) with row-major A[b][M,K],
// B[b][N,K], C[b][M,N], members packed one after the other, bias[N] shared
// by every member (or none), act none, ReLU or GELU in its tanh form (the
// one cuBLASLt's epilogue computes). Products summed in fp64, the bias
// added and the activation applied in fp64, written as fp32. klab compiles
// it after its prelude (klab_load, klab_unit) and runs it with the plans in
// _family.lua. Plain rather than fast; deterministic (no atomics, a fixed
// order).
//
// A unit is one element of C: u = (b*M + m)*N + n. a_km and b_kn store an
// operand the other way round: A[b][K,M] (C = Aᵀ·... ) and B[b][K,N]
// (C = ...·B), for KernelBench's layouts. C is fp32 (dtc = KLAB_F32) or,
// as the first step of a composed task's reference (klab.task.compose),
// fp64 (KLAB_F64), so that the chain after it starts from the exact sums.

// The epilogues (prefixed: a composed task's reference is this file and the
// activation family's in one source).
enum { MM_ACT_NONE = 0, MM_ACT_RELU = 1, MM_ACT_GELU_TANH = 2 };

static __device__ __forceinline__ void mm_store(void *C, u64 i, int dtc, double v)
{
    if (dtc == KLAB_F64)
        ((double *)C)[i] = v;
    else
        ((float *)C)[i] = (float)v;
}

static __device__ __forceinline__ double epilogue(double v, const void *bias, int dtbias, u64 n, int act)
{
    if (bias)
        v += klab_load(bias, n, dtbias);
    if (act == MM_ACT_RELU)
        v = v > 0.0 ? v : 0.0;
    else if (act == MM_ACT_GELU_TANH)
        v = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));  // sqrt(2/pi)
    return v;
}

// Where element (m, k) of A and (n, k) of B lie in their member.
static __device__ __forceinline__ u64 at_a(u64 m, u64 k, u32 M, u32 K, int a_km)
{
    return a_km ? k * M + m : m * K + k;
}
static __device__ __forceinline__ u64 at_b(u64 n, u64 k, u32 N, u32 K, int b_kn)
{
    return b_kn ? k * N + n : n * K + k;
}

// The whole of C: member blockIdx.z, a 64x64 tile per block
// (klab_gemm_tile, in the prelude).
extern "C" __global__ void __launch_bounds__(256)
    mm_ref(const void *A, int dta, const void *B, int dtb, const void *bias, int dtbias, int act, void *C, int dtc,
           u32 M, u32 N, u32 K, int a_km, int b_kn)
{
    u64 b = blockIdx.z;
    u64 a0 = b * M * K, b0 = b * N * K, c0 = b * M * N;
    klab_gemm_tile(
        M, N, K, [=](u32 m, u32 k) { return klab_load(A, a0 + at_a(m, k, M, K, a_km), dta); },
        [=](u32 n, u32 k) { return klab_load(B, b0 + at_b(n, k, N, K, b_kn), dtb); },
        [=](u32 m, u32 n, double v) { mm_store(C, c0 + (u64)m * N + n, dtc, epilogue(v, bias, dtbias, n, act)); });
}

// Units positions[0..n) into C[0..n): a warp per unit, its lanes splitting
// K, the partial sums added in a fixed tree.
extern "C" __global__ void mm_ref_units(const void *A, int dta, const void *B, int dtb, const void *bias,
                                        int dtbias, int act, const u64 *positions, u64 n, void *C, int dtc, u32 M,
                                        u32 N, u32 K, int a_km, int b_kn)
{
    u64 slot = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    u32 lane = threadIdx.x & 31;
    if (slot >= n)
        return;
    u64 u = klab_unit(positions, slot);
    u64 mn = (u64)M * N;
    u64 b = u / mn, r = u % mn;
    u64 m = r / N, col = r % N;
    const u64 a0 = b * M * K, b0 = b * N * K;
    double acc = 0.0;
    for (u32 k = lane; k < K; k += 32)
        acc += klab_load(A, a0 + at_a(m, k, M, K, a_km), dta) * klab_load(B, b0 + at_b(col, k, N, K, b_kn), dtb);
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0)
        mm_store(C, slot, dtc, epilogue(acc, bias, dtbias, col, act));
}

// A diagonal matrix times a matrix, Y = diag(a)·B: Y[i, j] = a[i]·B[i, j]
// (diag_matmul_f32.lua), in fp64 from the stored values; a thread per
// element unit, every unit (positions == 0) or those listed.
extern "C" __global__ void diag_ref(const float *a, const float *B, const u64 *positions, u64 n, float *Y, u32 M)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 u = klab_unit(positions, i);
        Y[i] = (float)((double)a[u / M] * (double)B[u]);
    }
}

// The triangular products' inputs (matmul_triangular.lua): the square
// matrix X[N, N] keeps its upper (upper = 1) or lower triangle, diagonal
// included, and the rest is set to 0.
extern "C" __global__ void tri_mask(float *X, u32 N, int upper)
{
    const u64 total = (u64)N * N;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u64 r = i / N, c = i % N;
        if (upper ? c < r : c > r)
            X[i] = 0.0f;
    }
}
