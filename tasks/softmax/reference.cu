// reference.cu: the softmax family's trusted reference. A block per row
// unit: the maximum (exact on bf16 inputs), the sum of exp(x - max) in
// fp64, then each probability in fp32. Compiled after klab's prelude
// (klab_load, klab_unit, u32, u64); the plan in softmax.lua runs it over all
// rows or over the rows listed in positions.

extern "C" __global__ void __launch_bounds__(256)
softmax_ref(const __nv_bfloat16 *X, const u64 *positions, u64 n, float *Y, u32 C)
{
    __shared__ double red[256];
    u64 slot = blockIdx.x;
    u64 row = klab_unit(positions, slot);
    const __nv_bfloat16 *x = X + row * C;
    float *y = Y + (positions ? slot : row) * C;

    double m = __longlong_as_double(0xfff0000000000000ULL);
    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        m = fmax(m, (double)__bfloat162float(x[c]));
    red[threadIdx.x] = m;
    __syncthreads();
    for (u32 s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();

    double sum = 0.0;
    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        sum += exp((double)__bfloat162float(x[c]) - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (u32 s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    sum = red[0];

    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        y[c] = (float)(exp((double)__bfloat162float(x[c]) - m) / sum);
}

// The log-softmax reference (logsoftmax.lua): a block per row unit, the row
// maximum and the log of the sum of exp(x - max) in fp64, then each
// x - max - log(sum) in fp32. Written without the probabilities, so that
// no exp underflows on rows spread wider than fp32's exponent range.

// The blockDim.x values v combine into one (the maximum, or the sum), in a
// fixed order; every thread gets it. blockDim.x must be a power of two.
static __device__ double block_all(double v, bool take_max, double *red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (u32 half = blockDim.x >> 1; half > 0; half >>= 1) {
        if (threadIdx.x < half) {
            double o = red[threadIdx.x + half];
            red[threadIdx.x] = take_max ? fmax(red[threadIdx.x], o) : red[threadIdx.x] + o;
        }
        __syncthreads();
    }
    double all = red[0];
    __syncthreads();
    return all;
}

extern "C" __global__ void __launch_bounds__(256)
logsoftmax_ref(const __nv_bfloat16 *X, const u64 *positions, float *Y, u32 C)
{
    __shared__ double red[256];
    const u64 slot = blockIdx.x;
    const __nv_bfloat16 *x = X + klab_unit(positions, slot) * C;
    float *y = Y + slot * C;

    double top = __longlong_as_double(0xfff0000000000000ULL);
    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        top = fmax(top, (double)__bfloat162float(x[c]));
    top = block_all(top, true, red);

    double total = 0.0;
    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        total += exp((double)__bfloat162float(x[c]) - top);
    const double log_total = log(block_all(total, false, red));

    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        y[c] = (float)(((double)__bfloat162float(x[c]) - top) - log_total);
}
