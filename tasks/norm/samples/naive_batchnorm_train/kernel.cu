// naive_batchnorm_train: BatchNorm in training mode with the task's default
// plan: a block of 256 per channel takes its mean (each thread's sum in
// fp64: a thread adds up to 65536 values, far from zero on shifted inputs),
// then the mean of squared deviations (fp32 per thread), each through a
// fixed shared-memory tree, and stores the mean and 1/sqrt(var + 1e-5);
// then a thread per element.

static __device__ float block_sum(float v)
{
    __shared__ float red[256];
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned half = 128; half > 0; half >>= 1) {
        if (threadIdx.x < half)
            red[threadIdx.x] += red[threadIdx.x + half];
        __syncthreads();
    }
    const float all = red[0];
    __syncthreads();
    return all;
}

extern "C" __global__ void batchnorm_train_stats(const float *X, float *stats, unsigned N, unsigned C, unsigned S)
{
    const unsigned c = blockIdx.x;
    const float count = (float)N * (float)S;
    double s = 0.0;
    for (unsigned n = 0; n < N; ++n)
        for (unsigned i = threadIdx.x; i < S; i += 256)
            s += X[((size_t)n * C + c) * S + i];
    const float mean = block_sum((float)s) / count;
    float q = 0.0f;
    for (unsigned n = 0; n < N; ++n)
        for (unsigned i = threadIdx.x; i < S; i += 256) {
            const float d = X[((size_t)n * C + c) * S + i] - mean;
            q += d * d;
        }
    const float var = block_sum(q) / count;
    if (threadIdx.x == 0) {
        stats[2 * c] = mean;
        stats[2 * c + 1] = 1.0f / sqrtf(var + 1e-5f);
    }
}

extern "C" __global__ void batchnorm_train_apply(const float *X, const float *weight, const float *bias,
                                                 const float *stats, float *Y, unsigned N, unsigned C, unsigned S)
{
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (size_t)N * C * S)
        return;
    const unsigned c = t / S % C;
    Y[t] = (X[t] - stats[2 * c]) * stats[2 * c + 1] * weight[c] + bias[c];
}
