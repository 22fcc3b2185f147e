// bwd_racy (known bad): the naive backward, except that dQ is written by two
// warps per query row that race. Both compute the same fp32 sum; one rounds
// it to bf16 to nearest, the other toward zero, and each waits a delay drawn
// from the SM clock before storing. Either value is within tolerance, but
// which store lands last differs from run to run, so two runs on the same
// inputs give different bits: verdict nondeterministic.
//
// (The rest is tasks/attention/samples/naive_bwd; attention_bwd_dq here runs
// with grid (ceil(S/2), BH) and blocks of 128 threads: 2 rows x 2 copies.)

typedef unsigned short bf16_t;

static __device__ __forceinline__ float bf(bf16_t h) { return __uint_as_float((unsigned)h << 16); }

static __device__ __forceinline__ bf16_t to_bf(float f)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

static __device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Loads row r of a [S, D] bf16 matrix: lane's four columns.
static __device__ __forceinline__ void load_row(float x[4], const bf16_t *row, unsigned lane, unsigned D)
{
    for (int t = 0; t < 4; t++) {
        unsigned d = lane + 32 * t;
        x[t] = d < D ? bf(row[d]) : 0.0f;
    }
}

static __device__ __forceinline__ float dot(const float a[4], const float b[4])
{
    return warp_sum(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]);
}

extern "C" __global__ void attention_bwd_prep(const bf16_t *O, const bf16_t *dO, float *Dsum, unsigned S,
                                              unsigned D)
{
    const unsigned lane = threadIdx.x & 31;
    const unsigned i = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (i >= S)
        return;
    const size_t row = (size_t)blockIdx.y * S + i;
    float o[4], g[4];
    load_row(o, O + row * D, lane, D);
    load_row(g, dO + row * D, lane, D);
    float s = dot(o, g);
    if (lane == 0)
        Dsum[row] = s;
}

static __device__ __forceinline__ bf16_t to_bf_rz(float f)
{
    unsigned short h;
    asm("cvt.rz.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

static __device__ __forceinline__ unsigned long long mix64(unsigned long long z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

extern "C" __global__ void attention_bwd_dq(const bf16_t *Q, const bf16_t *K, const bf16_t *V,
                                            const bf16_t *dO, const float *LSE, const float *Dsum, bf16_t *dQ,
                                            unsigned S, unsigned D, float scale, unsigned causal)
{
    const unsigned lane = threadIdx.x & 31;
    const unsigned w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const unsigned i = w >> 1, copy = w & 1;
    if (i >= S)
        return;
    const size_t base = (size_t)blockIdx.y * S * D;
    const size_t row = (size_t)blockIdx.y * S + i;
    float q[4], g[4], acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    load_row(q, Q + base + (size_t)i * D, lane, D);
    load_row(g, dO + base + (size_t)i * D, lane, D);
    const float lse = LSE[row], dsum = Dsum[row];
    const unsigned jend = causal ? i + 1 : S;
    for (unsigned j = 0; j < jend; j++) {
        float k[4], v[4];
        load_row(k, K + base + (size_t)j * D, lane, D);
        load_row(v, V + base + (size_t)j * D, lane, D);
        float p = expf(dot(q, k) * scale - lse);
        float ds = p * (dot(g, v) - dsum);
        for (int t = 0; t < 4; t++)
            acc[t] = fmaf(ds, k[t], acc[t]);
    }
    /* BUG: a delay that depends on the clock, then a store that races with
     * the other copy's. */
    long long t0 = clock64();
    long long wait = (long long)(mix64((unsigned long long)t0 ^ (row * 2 + copy)) & 8191);
    while (clock64() - t0 < wait)
        ;
    for (int t = 0; t < 4; t++) {
        unsigned d = lane + 32 * t;
        if (d < D)
            dQ[base + (size_t)i * D + d] = copy ? to_bf_rz(scale * acc[t]) : to_bf(scale * acc[t]);
    }
}

extern "C" __global__ void attention_bwd_dkdv(const bf16_t *Q, const bf16_t *K, const bf16_t *V,
                                              const bf16_t *dO, const float *LSE, const float *Dsum,
                                              bf16_t *dK, bf16_t *dV, unsigned S, unsigned D, float scale,
                                              unsigned causal)
{
    const unsigned lane = threadIdx.x & 31;
    const unsigned j = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (j >= S)
        return;
    const size_t base = (size_t)blockIdx.y * S * D;
    const size_t rows = (size_t)blockIdx.y * S;
    float k[4], v[4], dk[4] = {0.0f, 0.0f, 0.0f, 0.0f}, dv[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    load_row(k, K + base + (size_t)j * D, lane, D);
    load_row(v, V + base + (size_t)j * D, lane, D);
    for (unsigned i = causal ? j : 0; i < S; i++) {
        float q[4], g[4];
        load_row(q, Q + base + (size_t)i * D, lane, D);
        load_row(g, dO + base + (size_t)i * D, lane, D);
        float p = expf(dot(q, k) * scale - LSE[rows + i]);
        float ds = p * (dot(g, v) - Dsum[rows + i]);
        for (int t = 0; t < 4; t++) {
            dv[t] = fmaf(p, g[t], dv[t]);
            dk[t] = fmaf(ds, q[t], dk[t]);
        }
    }
    for (int t = 0; t < 4; t++) {
        unsigned d = lane + 32 * t;
        if (d < D) {
            dK[base + (size_t)j * D + d] = to_bf(scale * dk[t]);
            dV[base + (size_t)j * D + d] = to_bf(dv[t]);
        }
    }
}
