// naive_sub_mul_relu: Y = relu((X·Wᵀ + bias - 2)·1.5), one thread per
// element of Y (matmul_subtract_multiply_relu).
//
// X[M,K], W[N,K], bias[N], Y[M,N], row-major fp32. The dot product is
// summed in fp32 in the order k = 0, 1, ..., K-1, then the bias, the
// subtraction, the scale and the ReLU in fp32. Launch: block 16x16, grid
// (ceil(N/16), ceil(M/16)).

extern "C" __global__ void fused(const float *__restrict__ X, const float *__restrict__ W,
                                 const float *__restrict__ bias, float *__restrict__ Y, unsigned M, unsigned N,
                                 unsigned K)
{
    unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N)
        return;
    const float *x = X + (size_t)m * K;
    const float *w = W + (size_t)n * K;
    float z = 0.0f;
    for (unsigned k = 0; k < K; ++k)
        z = fmaf(x[k], w[k], z);
    z = (z + bias[n] - 2.0f) * 1.5f;
    Y[(size_t)m * N + n] = z > 0.0f ? z : 0.0f;
}
