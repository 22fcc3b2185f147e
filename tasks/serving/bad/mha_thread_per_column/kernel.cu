// Known-bad: dense attention with a thread per output column (thread d
// keeps column d), as a kernel written for D <= 128 with 128 threads: at
// D = 256 columns 128 .. 255 of O are never written. Otherwise the plain
// row-at-a-time attention of samples/naive_attention.
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
attention_fwd(const __nv_bfloat16 *Q, const __nv_bfloat16 *K, const __nv_bfloat16 *V, __nv_bfloat16 *O, float *LSE,
              unsigned BH, unsigned S, unsigned D, float scale, unsigned causal)
{
    __shared__ float red[NT];
    __shared__ float p[NT];
    const size_t base = (size_t)blockIdx.y * S;
    for (unsigned i = blockIdx.x * 64; i < S && i < blockIdx.x * 64 + 64; i++) {
        const __nv_bfloat16 *qr = Q + (base + i) * D;
        const unsigned n = causal ? i + 1 : S;
        float m = -1e30f;
        for (unsigned j = threadIdx.x; j < n; j += NT) {
            const __nv_bfloat16 *kr = K + (base + j) * D;
            float s = 0.0f;
            for (unsigned d = 0; d < D; d++)
                s += __bfloat162float(qr[d]) * __bfloat162float(kr[d]);
            m = fmaxf(m, s * scale);
        }
        m = block_reduce(m, red, true);
        float l = 0.0f, acc = 0.0f;
        for (unsigned j0 = 0; j0 < n; j0 += NT) {
            const unsigned j = j0 + threadIdx.x;
            float e = 0.0f;
            if (j < n) {
                const __nv_bfloat16 *kr = K + (base + j) * D;
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
            if (threadIdx.x < D) // one column per thread: D <= 128 assumed
                for (unsigned t = 0; t < count; t++)
                    acc += p[t] * __bfloat162float(V[(base + j0 + t) * D + threadIdx.x]);
        }
        l = block_reduce(l, red, false);
        if (threadIdx.x < D)
            O[(base + i) * D + threadIdx.x] = __float2bfloat16_rn(acc / l);
        if (threadIdx.x == 0)
            LSE[base + i] = m + logf(l);
    }
}
