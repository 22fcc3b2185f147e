// Plain attention, a query row at a time: pass 1 scores every key the
// query sees (fp32 dot products) for the maximum; pass 2, 128 keys at a
// time, each thread's exp(s - max) to shared memory, then the threads add
// sum_t p_t v_t over the output's columns. Causal prefill over packed
// queries (gqa_ragged_prefill with packed keys, gqa_paged_prefill with
// paged ones) takes a block of 128 threads per (query token, query head),
// the token's sequence by binary search over qo_indptr; dense attention
// (attention_fwd, [B, H, S, D]; attention_fwd_fp8, e4m3 with per-tensor
// scales) takes the 64 query rows of the default plan's block one after
// another. D <= 256.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#define NT 128

static __device__ float elem(const __nv_bfloat16 *p, size_t i) { return __bfloat162float(p[i]); }
static __device__ float elem(const unsigned char *p, size_t i)
{
    __nv_fp8_e4m3 v;
    v.__x = p[i];
    return (float)v;
}

struct packed_keys {
    const int *kv_indptr;
    unsigned b, Hk, kvh, D;
    __device__ size_t row(unsigned j) const { return (((size_t)kv_indptr[b] + j) * Hk + kvh) * D; }
};

struct paged_keys {
    const int *block_table;
    unsigned b, Hk, kvh, D, PS, MAXP;
    __device__ size_t row(unsigned j) const
    {
        const size_t page = (size_t)block_table[(size_t)b * MAXP + j / PS];
        return ((page * PS + j % PS) * Hk + kvh) * D;
    }
};

struct dense_keys {
    size_t base;
    unsigned D;
    __device__ size_t row(unsigned j) const { return base + (size_t)j * D; }
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

// Attention of query row qr over the first n keys that keys locates; the
// scores times scale, the output times vscale.
template <class T, class Keys>
static __device__ void attend(const T *qr, const T *k, const T *v, Keys keys, unsigned n, unsigned D, float scale,
                              float vscale, __nv_bfloat16 *out, float *lse)
{
    __shared__ float red[NT];
    __shared__ float p[NT];
    __shared__ float acc[256];
    float m = -1e30f;
    for (unsigned j = threadIdx.x; j < n; j += NT) {
        const T *kr = k + keys.row(j);
        float s = 0.0f;
        for (unsigned d = 0; d < D; d++)
            s += elem(qr, d) * elem(kr, d);
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
            const T *kr = k + keys.row(j);
            float s = 0.0f;
            for (unsigned d = 0; d < D; d++)
                s += elem(qr, d) * elem(kr, d);
            e = expf(s * scale - m);
        }
        l += e;
        __syncthreads();
        p[threadIdx.x] = e;
        __syncthreads();
        const unsigned count = n - j0 < NT ? n - j0 : NT;
        for (unsigned d = threadIdx.x; d < D; d += NT)
            for (unsigned t = 0; t < count; t++)
                acc[d] += p[t] * elem(v, keys.row(j0 + t) + d);
    }
    l = block_reduce(l, red, false);
    for (unsigned d = threadIdx.x; d < D; d += NT)
        out[d] = __float2bfloat16_rn(acc[d] / l * vscale);
    if (threadIdx.x == 0)
        *lse = m + logf(l);
}

extern "C" __global__ void __launch_bounds__(NT)
gqa_ragged_prefill(const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v, const int *qo_indptr,
                   const int *kv_indptr, __nv_bfloat16 *out, float *lse, unsigned B, unsigned TQ, unsigned Hq,
                   unsigned Hk, unsigned D, float scale)
{
    const unsigned t = blockIdx.x, h = blockIdx.y, b = sequence_of(qo_indptr, B, t);
    const unsigned qlen = qo_indptr[b + 1] - qo_indptr[b], kvlen = kv_indptr[b + 1] - kv_indptr[b];
    const unsigned visible = kvlen - qlen + (t - qo_indptr[b]) + 1;
    const packed_keys keys = { kv_indptr, b, Hk, h / (Hq / Hk), D };
    const size_t row = (size_t)t * Hq + h;
    attend(q + row * D, k, v, keys, visible, D, scale, 1.0f, out + row * D, lse + row);
}

extern "C" __global__ void __launch_bounds__(NT)
gqa_paged_prefill(const __nv_bfloat16 *q, const __nv_bfloat16 *k_cache, const __nv_bfloat16 *v_cache,
                  const int *qo_indptr, const int *block_table, const int *seq_lens, __nv_bfloat16 *out, float *lse,
                  unsigned B, unsigned TQ, unsigned Hq, unsigned Hk, unsigned D, unsigned PS, unsigned MAXP,
                  float scale)
{
    const unsigned t = blockIdx.x, h = blockIdx.y, b = sequence_of(qo_indptr, B, t);
    const unsigned qlen = qo_indptr[b + 1] - qo_indptr[b], kvlen = seq_lens[b];
    const unsigned visible = kvlen - qlen + (t - qo_indptr[b]) + 1;
    const paged_keys keys = { block_table, b, Hk, h / (Hq / Hk), D, PS, MAXP };
    const size_t row = (size_t)t * Hq + h;
    attend(q + row * D, k_cache, v_cache, keys, visible, D, scale, 1.0f, out + row * D, lse + row);
}

extern "C" __global__ void __launch_bounds__(NT)
attention_fwd(const __nv_bfloat16 *Q, const __nv_bfloat16 *K, const __nv_bfloat16 *V, __nv_bfloat16 *O, float *LSE,
              unsigned BH, unsigned S, unsigned D, float scale, unsigned causal)
{
    const size_t base = (size_t)blockIdx.y * S;
    const dense_keys keys = { base * D, D };
    for (unsigned i = blockIdx.x * 64; i < S && i < blockIdx.x * 64 + 64; i++)
        attend(Q + (base + i) * D, K, V, keys, causal ? i + 1 : S, D, scale, 1.0f, O + (base + i) * D, LSE + base + i);
}

extern "C" __global__ void __launch_bounds__(NT)
attention_fwd_fp8(const unsigned char *Q, const unsigned char *K, const unsigned char *V, const float *q_scale,
                  const float *k_scale, const float *v_scale, __nv_bfloat16 *O, float *LSE, unsigned BH, unsigned S,
                  unsigned D, float scale, unsigned causal)
{
    const size_t base = (size_t)blockIdx.y * S;
    const dense_keys keys = { base * D, D };
    const float qk = scale * *q_scale * *k_scale;
    for (unsigned i = blockIdx.x * 64; i < S && i < blockIdx.x * 64 + 64; i++)
        attend(Q + (base + i) * D, K, V, keys, causal ? i + 1 : S, D, qk, *v_scale, O + (base + i) * D, LSE + base + i);
}
