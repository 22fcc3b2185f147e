// naive_mlp_layer: one linear layer of an MLP (mlp_f32 and the other MLP
// tasks, with the task's default plan: one launch per layer),
// Y = X·Wᵀ + b, then ReLU where relu is 1.
//
// X[M,K], W[N,K], b[N], Y[M,N], row-major fp32. A block of 16 x 16 threads
// owns a 16 x 16 tile of Y; the tiles of X and W it needs pass through
// shared memory 16 columns of K at a time; each thread sums its dot product
// in fp32, k = 0, 1, ..., K-1, then adds b[n]. It runs with the task's
// default plan (no plan.lua).

extern "C" __global__ void linear_layer(const float *__restrict__ X, const float *__restrict__ W,
                                        const float *__restrict__ b, float *__restrict__ Y, unsigned M, unsigned N,
                                        unsigned K, int relu)
{
    __shared__ float xs[16][17], ws[16][17];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned m = blockIdx.y * 16 + ty, n = blockIdx.x * 16 + tx;
    const unsigned wn = blockIdx.x * 16 + ty;
    float s = 0.0f;
    for (unsigned k0 = 0; k0 < K; k0 += 16) {
        xs[ty][tx] = m < M && k0 + tx < K ? X[(size_t)m * K + k0 + tx] : 0.0f;
        ws[ty][tx] = wn < N && k0 + tx < K ? W[(size_t)wn * K + k0 + tx] : 0.0f;
        __syncthreads();
        for (unsigned k = 0; k < 16; ++k)
            s = fmaf(xs[ty][k], ws[tx][k], s);
        __syncthreads();
    }
    if (m < M && n < N) {
        float v = s + b[n];
        Y[(size_t)m * N + n] = relu && v < 0.0f ? 0.0f : v;
    }
}
