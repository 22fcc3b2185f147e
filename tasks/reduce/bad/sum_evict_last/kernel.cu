// Known bad: a row sum whose loads ask L2 to keep their lines
// (createpolicy.fractional.L2::evict_last). Correct; on a task whose input
// fits in L2 (999x1021 floats: 4 MB) such lines would outlive a plain L2
// flush and later timed runs would read their inputs from L2. It must be
// timed as the same kernel without the hints (KLAB_L2_HINTS 0;
// tests/gpu/l2_check.lua times both).
#define KLAB_L2_HINTS 1

extern "C" __global__ void sum_last(const float *X, float *Y, unsigned R, unsigned C)
{
    __shared__ float part[256];
    const float *x = X + (size_t)blockIdx.x * C;
#if KLAB_L2_HINTS
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
#endif
    float s = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += 256) {
#if KLAB_L2_HINTS
        float v;
        asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(x + c), "l"(policy));
        s += v;
#else
        s += x[c];
#endif
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (unsigned k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        Y[blockIdx.x] = part[0];
}
