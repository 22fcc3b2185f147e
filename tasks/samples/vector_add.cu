// vector_add.cu: c[i] = a[i] + b[i] for i < n, one float per thread.
//
// CUDA C++ device code for NVRTC (no host code). extern "C" keeps the
// entry name unmangled so that the loader finds it as "vector_add".
extern "C" __global__ void vector_add(const float *__restrict__ a,
                                      const float *__restrict__ b,
                                      float *__restrict__ c, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
