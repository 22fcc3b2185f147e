// Known-bad: the plain paged decode of samples/naive_gqa_decode reading
// whole pages: each sequence's length rounded up to a multiple of PS, so up
// to 15 tokens past its end (stale slots of its last page) join every
// softmax. Right only where a length is a multiple of the page.
#include <cuda_bf16.h>

#define NT 128

static __device__ const __nv_bfloat16 *kv_row(const __nv_bfloat16 *cache, const int *block_table, unsigned b,
                                              unsigned j, unsigned kvh, unsigned Hk, unsigned D, unsigned PS,
                                              unsigned MAXP)
{
    const size_t page = (size_t)block_table[(size_t)b * MAXP + j / PS];
    return cache + ((page * PS + j % PS) * Hk + kvh) * D;
}

extern "C" __global__ void __launch_bounds__(NT)
gqa_paged_decode(const __nv_bfloat16 *q, const __nv_bfloat16 *k_cache, const __nv_bfloat16 *v_cache,
                 const int *block_table, const int *seq_lens, __nv_bfloat16 *out, float *lse, unsigned B,
                 unsigned Hq, unsigned Hk, unsigned D, unsigned PS, unsigned MAXP, float scale)
{
    __shared__ float red[NT];
    __shared__ float p[NT];
    const unsigned h = blockIdx.x, b = blockIdx.y, kvh = h / (Hq / Hk);
    const unsigned len = ((unsigned)seq_lens[b] + PS - 1) / PS * PS; // the bug: whole pages
    const __nv_bfloat16 *qr = q + ((size_t)b * Hq + h) * D;
    float m = -1e30f;
    for (unsigned j = threadIdx.x; j < len; j += NT) {
        const __nv_bfloat16 *k = kv_row(k_cache, block_table, b, j, kvh, Hk, D, PS, MAXP);
        float s = 0.0f;
        for (unsigned d = 0; d < D; d++)
            s += __bfloat162float(qr[d]) * __bfloat162float(k[d]);
        m = fmaxf(m, s * scale);
    }
    red[threadIdx.x] = m;
    __syncthreads();
    for (unsigned k = NT / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + k]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float l = 0.0f, acc = 0.0f;
    for (unsigned j0 = 0; j0 < len; j0 += NT) {
        const unsigned j = j0 + threadIdx.x;
        float e = 0.0f;
        if (j < len) {
            const __nv_bfloat16 *k = kv_row(k_cache, block_table, b, j, kvh, Hk, D, PS, MAXP);
            float s = 0.0f;
            for (unsigned d = 0; d < D; d++)
                s += __bfloat162float(qr[d]) * __bfloat162float(k[d]);
            e = expf(s * scale - m);
        }
        l += e;
        p[threadIdx.x] = e;
        __syncthreads();
        if (threadIdx.x < D) {
            const unsigned count = len - j0 < NT ? len - j0 : NT;
            for (unsigned t = 0; t < count; t++)
                acc += p[t] * __bfloat162float(kv_row(v_cache, block_table, b, j0 + t, kvh, Hk, D, PS, MAXP)[threadIdx.x]);
        }
        __syncthreads();
    }
    red[threadIdx.x] = l;
    __syncthreads();
    for (unsigned k = NT / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    l = red[0];
    if (threadIdx.x < D)
        out[((size_t)b * Hq + h) * D + threadIdx.x] = __float2bfloat16_rn(acc / l);
    if (threadIdx.x == 0)
        lse[(size_t)b * Hq + h] = m + logf(l);
}
