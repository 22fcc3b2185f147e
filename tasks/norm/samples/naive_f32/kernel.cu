// A plain fp32 LayerNorm: a block of 256 threads per row, two passes for
// the statistics, shared-memory reductions (sums in a tree, which fp32 on
// shifted rows needs).
static __device__ float block_sum(float v, float *red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float r = red[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void layernorm(const float *X, const float *weight, const float *bias, float *Y, unsigned R,
                                     unsigned C, float eps)
{
    __shared__ float red[256];
    const float *x = X + (size_t)blockIdx.x * C;
    float *y = Y + (size_t)blockIdx.x * C;
    float s = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += blockDim.x)
        s += x[c];
    const float mean = block_sum(s, red) / C;
    float q = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += blockDim.x) {
        float d = x[c] - mean;
        q += d * d;
    }
    const float rstd = 1.0f / sqrtf(block_sum(q, red) / C + eps);
    for (unsigned c = threadIdx.x; c < C; c += blockDim.x)
        y[c] = (x[c] - mean) * rstd * weight[c] + bias[c];
}
