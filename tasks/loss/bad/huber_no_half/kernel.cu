// Known bad: the Huber loss with d^2 where it is d^2 / 2 (|P - T| < 1):
// about a third too large on normal inputs. Otherwise the default plan's
// two kernels, deterministic.
extern "C" __global__ void huber_partial(const float *P, const float *T, float *part, unsigned long long n)
{
    __shared__ float red[256];
    float acc = 0.0f;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float d = fabsf(P[i] - T[i]);
        acc += d < 1.0f ? d * d : d - 0.5f;
    }
    red[threadIdx.x] = acc;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = red[0];
}

extern "C" __global__ void huber_final(const float *part, float *L, unsigned long long n)
{
    __shared__ double red[256];
    double s = 0.0;
    for (unsigned i = threadIdx.x; i < 1024; i += blockDim.x) s += part[i];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) L[0] = (float)(red[0] / (double)n);
}
