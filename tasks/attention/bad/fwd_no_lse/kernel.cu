// fwd_no_lse (known bad): the naive forward, but it returns O without LSE
// (the LSE buffer keeps the poison the host wrote): verdict incorrect.
//
// (The rest is tasks/attention/samples/naive_fwd.)
//
// Q, K, V, O bf16 [BH, S, D] row-major, LSE fp32 [BH, S] (natural log).
// Lane l owns the output columns d = l, l+32, l+64, l+96 (D <= 128). For each
// key j (j <= i under the causal mask) the warp forms s = q.k_j * scale with
// a butterfly sum, then an online softmax update in fp32 with expf:
//   m' = max(m, s); l = l*exp(m - m') + exp(s - m'); o = o*exp(m - m') + exp(s - m') v_j.
// No shared memory, no tensor cores: slow and obviously right.
//
// Launch: block 128 (4 rows), grid (ceil(S/4), BH).

typedef unsigned short bf16_t;

static __device__ __forceinline__ float bf(bf16_t h) { return __uint_as_float((unsigned)h << 16); }

static __device__ __forceinline__ bf16_t to_bf(float f)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

extern "C" __global__ void attention_fwd(const bf16_t *Q, const bf16_t *K, const bf16_t *V, bf16_t *O,
                                         float *LSE, unsigned S, unsigned D, float scale, unsigned causal)
{
    const unsigned lane = threadIdx.x & 31;
    const unsigned i = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const unsigned bh = blockIdx.y;
    if (i >= S)
        return;
    const size_t base = (size_t)bh * S * D;
    float q[4], o[4];
    for (int t = 0; t < 4; t++) {
        unsigned d = lane + 32 * t;
        q[t] = d < D ? bf(Q[base + (size_t)i * D + d]) : 0.0f;
        o[t] = 0.0f;
    }
    float m = __int_as_float(0xff800000), l = 0.0f;
    const unsigned jend = causal ? i + 1 : S;
    for (unsigned j = 0; j < jend; j++) {
        const bf16_t *k = K + base + (size_t)j * D;
        const bf16_t *v = V + base + (size_t)j * D;
        float part = 0.0f;
        for (int t = 0; t < 4; t++) {
            unsigned d = lane + 32 * t;
            if (d < D)
                part = fmaf(q[t], bf(k[d]), part);
        }
        for (int off = 16; off > 0; off >>= 1)
            part += __shfl_xor_sync(0xffffffffu, part, off);
        float s = part * scale;
        float mnew = fmaxf(m, s);
        float alpha = expf(m - mnew);
        float p = expf(s - mnew);
        l = l * alpha + p;
        for (int t = 0; t < 4; t++) {
            unsigned d = lane + 32 * t;
            if (d < D)
                o[t] = fmaf(p, bf(v[d]), o[t] * alpha);
        }
        m = mnew;
    }
    const float inv = 1.0f / l;
    for (int t = 0; t < 4; t++) {
        unsigned d = lane + 32 * t;
        if (d < D)
            O[base + (size_t)i * D + d] = to_bf(o[t] * inv);
    }
    /* BUG: LSE is never written. */
    (void)LSE;
}
