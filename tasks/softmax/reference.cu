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
