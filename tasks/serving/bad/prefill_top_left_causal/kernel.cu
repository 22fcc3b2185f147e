// Known-bad: the plain prefill of samples/naive_attention with the causal
// mask aligned top-left (query i sees keys j <= i) as in a square
// self-attention, ignoring each sequence's cached prefix: every query of a
// sequence with a prefix misses the keys it should see. Right only where
// kvlen == qlen.
#include <cuda_bf16.h>

#define NT 128

struct packed_keys {
    const int *kv_indptr;
    unsigned b, Hk, kvh, D;
    __device__ size_t row(unsigned j) const { return (((size_t)kv_indptr[b] + j) * Hk + kvh) * D; }
};

static __device__ unsigned sequence_of(const int *qo_indptr, unsigned B, unsigned t)
{
    unsigned lo = 0, hi = B - 1;
    while (lo < hi) {
        const unsigned mid = (lo + hi + 1) / 2;
        if ((unsigned)qo_indptr[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static __device__ float block_reduce(float v, float *red, bool is_max)
{
    __syncthreads();
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned k = NT / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] = is_max ? fmaxf(red[threadIdx.x], red[threadIdx.x + k]) : red[threadIdx.x] + red[threadIdx.x + k];
        __syncthreads();
    }
    return red[0];
}

// Attention of query row qr over the first n keys that keys locates.
template <class Keys>
static __device__ void attend(const __nv_bfloat16 *qr, const __nv_bfloat16 *k, const __nv_bfloat16 *v, Keys keys,
                              unsigned n, unsigned D, float scale, __nv_bfloat16 *out, float *lse)
{
    __shared__ float red[NT];
    __shared__ float p[NT];
    __shared__ float acc[256];
    float m = -1e30f;
    for (unsigned j = threadIdx.x; j < n; j += NT) {
        const __nv_bfloat16 *kr = k + keys.row(j);
        float s = 0.0f;
        for (unsigned d = 0; d < D; d++)
            s += __bfloat162float(qr[d]) * __bfloat162float(kr[d]);
        m = fmaxf(m, s * scale);
    }
    m = block_reduce(m, red, true);
    for (unsigned d = threadIdx.x; d < D; d += NT)
        acc[d] = 0.0f;
    float l = 0.0f;
    for (unsigned j0 = 0; j0 < n; j0 += NT) {
        const unsigned j = j0 + threadIdx.x;
        float e = 0.0f;
        if (j < n) {
            const __nv_bfloat16 *kr = k + keys.row(j);
            float s = 0.0f;
            for (unsigned d = 0; d < D; d++)
                s += __bfloat162float(qr[d]) * __bfloat162float(kr[d]);
            e = expf(s * scale - m);
        }
        l += e;
        __syncthreads();
        p[threadIdx.x] = e;
        __syncthreads();
        const unsigned count = n - j0 < NT ? n - j0 : NT;
        for (unsigned d = threadIdx.x; d < D; d += NT)
            for (unsigned t = 0; t < count; t++)
                acc[d] += p[t] * __bfloat162float(v[keys.row(j0 + t) + d]);
    }
    l = block_reduce(l, red, false);
    for (unsigned d = threadIdx.x; d < D; d += NT)
        out[d] = __float2bfloat16_rn(acc[d] / l);
    if (threadIdx.x == 0)
        *lse = m + logf(l);
}

extern "C" __global__ void __launch_bounds__(NT)
gqa_ragged_prefill(const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v, const int *qo_indptr,
                   const int *kv_indptr, __nv_bfloat16 *out, float *lse, unsigned B, unsigned TQ, unsigned Hq,
                   unsigned Hk, unsigned D, float scale)
{
    const unsigned t = blockIdx.x, h = blockIdx.y, b = sequence_of(qo_indptr, B, t);
    const unsigned visible = (t - qo_indptr[b]) + 1;
    const packed_keys keys = { kv_indptr, b, Hk, h / (Hq / Hk), D };
    const size_t row = (size_t)t * Hq + h;
    attend(q + row * D, k, v, keys, visible, D, scale, out + row * D, lse + row);
}
