// A plain gated delta decode step: a block of 128 threads per (value head,
// sequence), a thread per state row i (rows i, i + 128, ...): the row's
// decayed dot with k, the new row written, its dot with q. fp32.
#include <cuda_bf16.h>

extern "C" __global__ void gdn_decode(const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                                      const float *state, const float *A_log, const __nv_bfloat16 *a,
                                      const float *dt_bias, const __nv_bfloat16 *b, __nv_bfloat16 *out,
                                      float *new_state, unsigned B, unsigned HQ, unsigned HV, unsigned K,
                                      unsigned V, float scale)
{
    const unsigned h = blockIdx.x, s = blockIdx.y, qk = h / (HV / HQ);
    const size_t bh = (size_t)s * HV + h;
    const __nv_bfloat16 *qr = q + ((size_t)s * HQ + qk) * K, *kr = k + ((size_t)s * HQ + qk) * K;
    const float x = __bfloat162float(a[bh]) + dt_bias[h];
    const float g = expf(-expf(A_log[h]) * (x > 20.0f ? x : log1pf(expf(x))));
    const float beta = 1.0f / (1.0f + expf(-__bfloat162float(b[bh])));
    for (unsigned i = threadIdx.x; i < V; i += blockDim.x) {
        const float *row = state + (bh * V + i) * K;
        float sk = 0.0f;
        for (unsigned j = 0; j < K; j++)
            sk += g * row[j] * __bfloat162float(kr[j]);
        const float delta = beta * (__bfloat162float(v[bh * V + i]) - sk);
        float o = 0.0f;
        for (unsigned j = 0; j < K; j++) {
            const float n = g * row[j] + delta * __bfloat162float(kr[j]);
            new_state[(bh * V + i) * K + j] = n;
            o += n * __bfloat162float(qr[j]);
        }
        out[bh * V + i] = __float2bfloat16_rn(o * scale);
    }
}
