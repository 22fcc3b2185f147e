// Attention forward with log-sum-exp written with CuTe: Q, K, V, O as
// [B*H, S, D] tensors, the key and value tiles of a block staged in shared
// memory through CuTe tensors, fp32 arithmetic on the CUDA cores (no tensor
// cores: a plain, readable kernel).
//
// A block of 8 warps owns 8 query rows of one (batch, head), a warp per row.
// For each tile of 64 keys the block copies K and V (64 x D) into shared
// memory; lane j scores keys j and j + 32 of the tile against the warp's
// query row (held in shared memory as fp32), and the warp updates its online
// softmax: m = running maximum, l = running sum of exp(s - m), and lane l's
// output columns d = l, l + 32, l + 64, l + 96. Under the causal mask only
// keys j <= i count. Any S, D <= 128.
#include <cute/tensor.hpp>

using namespace cute;

namespace {

constexpr int ROWS = 8, KEYS = 64, DMAX = 128;
// K rows padded to 130 elements (65 words): the 32 lanes reading 32
// different rows at the same column fall in 32 different banks.
using TileLayout = Layout<Shape<Int<KEYS>, Int<DMAX>>, Stride<Int<DMAX + 2>, _1>>;

__device__ __forceinline__ float warp_max(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

} // namespace

extern "C" __global__ void __launch_bounds__(ROWS * 32)
attention_fwd(const cute::bfloat16_t *Q, const cute::bfloat16_t *K, const cute::bfloat16_t *V, cute::bfloat16_t *O,
              float *LSE, unsigned S, unsigned D, float scale, unsigned causal)
{
    __shared__ cute::bfloat16_t k_smem[cosize(TileLayout{})], v_smem[cosize(TileLayout{})];
    __shared__ float q_smem[ROWS][DMAX];
    Tensor sK = make_tensor(make_smem_ptr(k_smem), TileLayout{});      // (KEYS, DMAX)
    Tensor sV = make_tensor(make_smem_ptr(v_smem), TileLayout{});

    const unsigned bh = blockIdx.y;
    auto shape = make_shape(S, D);
    auto stride = make_stride(size_t(D), Int<1>{});
    const size_t head = size_t(bh) * S * D;
    Tensor mQ = make_tensor(make_gmem_ptr(Q + head), shape, stride);  // (S, D) of this (batch, head)
    Tensor mK = make_tensor(make_gmem_ptr(K + head), shape, stride);
    Tensor mV = make_tensor(make_gmem_ptr(V + head), shape, stride);
    Tensor mO = make_tensor(make_gmem_ptr(O + head), shape, stride);

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const unsigned first = blockIdx.x * ROWS;
    const unsigned i = first + warp;                   // this warp's query row
    const bool live = i < S;
    for (int d = lane; d < DMAX; d += 32)
        q_smem[warp][d] = live && d < int(D) ? float(mQ(i, d)) : 0.0f;

    float m = __int_as_float(0xff800000), l = 0.0f;    // m starts at -inf
    float o[DMAX / 32] = {};
    // Keys the block needs: all, or up to its last row under the mask.
    const unsigned last = min(S, first + ROWS);
    const unsigned end = causal ? last : S;
    for (unsigned k0 = 0; k0 < end; k0 += KEYS) {
        __syncthreads();                               // the previous tile is read by nobody
        Tensor gK = local_tile(mK, make_shape(Int<KEYS>{}, D), make_coord(k0 / KEYS, 0));   // (KEYS, D)
        Tensor gV = local_tile(mV, make_shape(Int<KEYS>{}, D), make_coord(k0 / KEYS, 0));
        for (unsigned e = threadIdx.x; e < KEYS * D; e += ROWS * 32) {
            const unsigned r = e / D, c = e % D;
            const bool in = k0 + r < S;
            sK(r, c) = in ? gK(r, c) : cute::bfloat16_t(0.0f);
            sV(r, c) = in ? gV(r, c) : cute::bfloat16_t(0.0f);
        }
        __syncthreads();

        // Scores of keys k0 + lane and k0 + lane + 32.
        float s[2];
        for (int h = 0; h < 2; ++h) {
            const unsigned j = k0 + lane + 32 * h;
            float dot = 0.0f;
            for (unsigned d = 0; d < D; ++d)
                dot = fmaf(q_smem[warp][d], float(sK(lane + 32 * h, d)), dot);
            const bool visible = j < S && (!causal || j <= i);
            s[h] = visible ? dot * scale : __int_as_float(0xff800000);
        }
        const float tile_max = warp_max(fmaxf(s[0], s[1]));
        if (tile_max == __int_as_float(0xff800000))
            continue;                                  // no visible key in this tile for this row
        const float m_new = fmaxf(m, tile_max);
        const float alpha = expf(m - m_new);
        const float p0 = expf(s[0] - m_new), p1 = expf(s[1] - m_new);
        l = l * alpha + warp_sum(p0 + p1);
        for (int t = 0; t < DMAX / 32; ++t)
            o[t] *= alpha;
        for (int j = 0; j < KEYS; ++j) {
            const float p = __shfl_sync(0xffffffffu, j < 32 ? p0 : p1, j % 32);
            for (int t = 0; t < DMAX / 32; ++t) {
                const int d = lane + 32 * t;
                if (d < int(D))
                    o[t] = fmaf(p, float(sV(j, d)), o[t]);
            }
        }
        m = m_new;
    }
    if (!live)
        return;
    const float inv = 1.0f / l;
    for (int t = 0; t < DMAX / 32; ++t) {
        const int d = lane + 32 * t;
        if (d < int(D))
            mO(i, d) = cute::bfloat16_t(o[t] * inv);
    }
    if (lane == 0)
        LSE[size_t(bh) * S + i] = m + logf(l);
}
