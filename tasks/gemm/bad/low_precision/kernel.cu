// KNOWN BAD (verdict: incorrect). Accumulates in bf16: after every
// multiply-add the running sum is rounded to bf16 (8 significant bits). On
// K = 5120 the sum grows to where each new product is smaller than half an ulp
// of the sum, so rounding errors pile up (and products are lost outright when
// the inputs are all positive), far outside the task tolerance. On small K it
// may pass; the PTXBench shape must fail.

typedef unsigned short bf16_t;

static __device__ __forceinline__ float bf16_to_f32(bf16_t h)
{
    return __uint_as_float((unsigned)h << 16);
}

static __device__ __forceinline__ bf16_t f32_to_bf16(float f)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

static __device__ __forceinline__ float round_bf16(float f)
{
    return bf16_to_f32(f32_to_bf16(f));
}

extern "C" __global__ void gemm(const bf16_t *__restrict__ A,
                                const bf16_t *__restrict__ B,
                                bf16_t *__restrict__ C,
                                unsigned M, unsigned N, unsigned K)
{
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    const bf16_t *a = A + (size_t)m * K;
    const bf16_t *b = B + (size_t)n * K;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; ++k)
        acc = round_bf16(fmaf(bf16_to_f32(a[k]), bf16_to_f32(b[k]), acc));
    C[(size_t)m * N + n] = f32_to_bf16(acc);
}
