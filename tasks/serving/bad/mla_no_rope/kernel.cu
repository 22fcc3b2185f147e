// Known-bad: the plain MLA decode of samples/naive_mla scoring with the
// latent part only, q_nope . ckv_j, dropping the rotary part q_pe . kpe_j
// (as if the cache held no positional key): every score is wrong.
#include <cuda_bf16.h>

#define NT 128

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

extern "C" __global__ void __launch_bounds__(NT)
mla_paged_decode(const __nv_bfloat16 *q_nope, const __nv_bfloat16 *q_pe, const __nv_bfloat16 *ckv_cache,
                 const __nv_bfloat16 *kpe_cache, const int *block_table, const int *seq_lens, __nv_bfloat16 *out,
                 float *lse, unsigned B, unsigned H, unsigned C, unsigned R, unsigned PS, unsigned MAXP,
                 float sm_scale)
{
    __shared__ float red[NT];
    __shared__ float p[NT];
    __shared__ float acc[1024];
    const unsigned h = blockIdx.x, b = blockIdx.y, len = (unsigned)seq_lens[b];
    const size_t head = (size_t)b * H + h;
    const __nv_bfloat16 *qn = q_nope + head * C;
    auto slot = [&](unsigned j) { return (size_t)block_table[(size_t)b * MAXP + j / PS] * PS + j % PS; };
    auto score = [&](unsigned j) {
        const size_t t = slot(j);
        float s = 0.0f;
        for (unsigned d = 0; d < C; d++)
            s += __bfloat162float(qn[d]) * __bfloat162float(ckv_cache[t * C + d]);
        return s * sm_scale;
    };
    float m = -1e30f;
    for (unsigned j = threadIdx.x; j < len; j += NT)
        m = fmaxf(m, score(j));
    m = block_reduce(m, red, true);
    for (unsigned d = threadIdx.x; d < C; d += NT)
        acc[d] = 0.0f;
    float l = 0.0f;
    for (unsigned j0 = 0; j0 < len; j0 += NT) {
        const unsigned j = j0 + threadIdx.x;
        const float e = j < len ? expf(score(j) - m) : 0.0f;
        l += e;
        __syncthreads();
        p[threadIdx.x] = e;
        __syncthreads();
        const unsigned count = len - j0 < NT ? len - j0 : NT;
        for (unsigned d = threadIdx.x; d < C; d += NT)
            for (unsigned t = 0; t < count; t++)
                acc[d] += p[t] * __bfloat162float(ckv_cache[slot(j0 + t) * C + d]);
    }
    l = block_reduce(l, red, false);
    for (unsigned d = threadIdx.x; d < C; d += NT)
        out[head * C + d] = __float2bfloat16_rn(acc[d] / l);
    if (threadIdx.x == 0)
        lse[head] = m + logf(l);
}
