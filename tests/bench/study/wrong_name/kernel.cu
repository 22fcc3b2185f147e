// A reply that compiles but names its kernel after nothing the task's plan
// launches: the study batch's plan errors.
extern "C" __global__ void my_fast_kernel(const float *x, float *y, unsigned long long n)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
}
