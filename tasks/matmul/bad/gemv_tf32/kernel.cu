// KNOWN BAD (verdict: incorrect). The plain warp-per-row GEMV of
// samples/naive_gemv, except that it rounds A and x to TF32 (10 mantissa
// bits, round to nearest, ties away from zero) before multiplying: what a
// kernel on TF32 tensor cores computes. Each product is then off by about
// 4e-4 of its size, about 4e-4*sqrt(K) on y (0.013 at K = 1023), beyond the
// task's fp32 tolerance (atol 2e-3 where rtol 1e-4 does not cover it).

static __device__ __forceinline__ float to_tf32(float v)
{
    return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xffffe000u);
}

extern "C" __global__ void gemv(const float *__restrict__ A, const float *__restrict__ x, float *__restrict__ y,
                                unsigned M, unsigned K)
{
    unsigned row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    unsigned lane = threadIdx.x % 32;
    if (row >= M)
        return;
    const float *a = A + (size_t)row * K;
    float acc = 0.0f;
    for (unsigned k = lane; k < K; k += 32)
        acc = fmaf(to_tf32(a[k]), to_tf32(x[k]), acc);
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0)
        y[row] = acc;
}
