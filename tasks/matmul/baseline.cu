// baseline.cu: the shipped baselines of the matmul family: the diagonal product
// (cuBLASLt's matmul would treat diag(a) as a full N x N matrix): a
// grid-stride loop over B's elements, each multiplied by its row's a[i] in
// fp32. Compiled after klab's prelude.
extern "C" __global__ void __launch_bounds__(256)
diag_baseline(const float *a, const float *B, float *Y, u64 n, u32 M)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        Y[i] = a[i / M] * B[i];
}

// The MLP tasks' baseline (_mlp.lua): cuBLASLt computes every layer into
// the baseline's workspace; this copies the last one into the output.
extern "C" __global__ void __launch_bounds__(256) copy_f32(const float *src, float *dst, u64 n)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        dst[i] = src[i];
}
