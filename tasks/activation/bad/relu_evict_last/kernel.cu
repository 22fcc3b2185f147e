// Known bad: ReLU whose loads and stores ask L2 to keep their lines
// (createpolicy.fractional.L2::evict_last). Correct, and on a task whose
// data fits in L2 (999x1021 floats: 8 MB of the H200's 60 MB) such lines
// outlive an L2 flush that does not reset them, so later timed runs would
// read their inputs from L2: 13.5% faster than the same kernel without the
// hints when this was measured on an H200. klab resets persisting lines
// before every timed run, so it is timed as what it is: the same kernel.
// KLAB_L2_HINTS 0 gives that kernel without the hints (tests/gpu/check.lua
// times both).
#define KLAB_L2_HINTS 1

extern "C" __global__ void relu(const float *X, float *Y, unsigned long long n)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
#if KLAB_L2_HINTS
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    float x;
    asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(x) : "l"(X + i), "l"(policy));
    float y = x > 0.0f ? x : 0.0f;
    asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;" ::"l"(Y + i), "f"(y), "l"(policy) : "memory");
#else
    float x = X[i];
    Y[i] = x > 0.0f ? x : 0.0f;
#endif
}
