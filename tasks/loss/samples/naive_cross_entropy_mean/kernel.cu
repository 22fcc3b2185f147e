// naive_cross_entropy_mean: a block of 256 per row (the task's default
// plan): the row maximum, the sum of exp(x - max) in fp32, each reduced in
// a fixed shared-memory tree, the row's loss into part[row]; then one block
// adds the rows' losses in a fixed order and divides by R.

static __device__ float block_reduce(float v, bool take_max)
{
    __shared__ float red[256];
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned half = 128; half > 0; half >>= 1) {
        if (threadIdx.x < half)
            red[threadIdx.x] = take_max ? fmaxf(red[threadIdx.x], red[threadIdx.x + half])
                                        : red[threadIdx.x] + red[threadIdx.x + half];
        __syncthreads();
    }
    const float all = red[0];
    __syncthreads();
    return all;
}

extern "C" __global__ void cross_entropy_mean_rows(const float *X, const int *T, float *part, unsigned C)
{
    const float *x = X + (size_t)blockIdx.x * C;
    float top = __int_as_float(0xff800000);
    for (unsigned c = threadIdx.x; c < C; c += 256)
        top = fmaxf(top, x[c]);
    top = block_reduce(top, true);
    float sum = 0.0f;
    for (unsigned c = threadIdx.x; c < C; c += 256)
        sum += expf(x[c] - top);
    sum = block_reduce(sum, false);
    if (threadIdx.x == 0)
        part[blockIdx.x] = top + logf(sum) - x[T[blockIdx.x]];
}

extern "C" __global__ void cross_entropy_mean_final(const float *part, float *L, unsigned R)
{
    float acc = 0.0f;
    for (unsigned r = threadIdx.x; r < R; r += 256)
        acc += part[r];
    acc = block_reduce(acc, false);
    if (threadIdx.x == 0)
        L[0] = acc / (float)R;
}
