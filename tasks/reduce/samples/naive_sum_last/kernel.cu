// A plain row sum: a block of 256 threads per row, each thread's columns in
// sequence in fp32, then a tree in shared memory. Deterministic: the same
// order on every run.
extern "C" __global__ void sum_last(const float *X, float *Y, unsigned R, unsigned C)
{
    __shared__ float part[256];
    const float *x = X + (size_t)blockIdx.x * C;
    float s = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += 256)
        s += x[c];
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
