// A row sum written with CuTe: X as an R x C tensor, a block of 256 threads
// per row (the default plan). The row is divided among the threads by
// local_partition (thread t takes columns t, t + 256, ...), an identity
// tensor divided the same way says which of those columns exist, each thread
// sums its columns in order in fp32, then the warps and the block combine
// their sums in a fixed order: the same result on every run.
#include <cute/tensor.hpp>

using namespace cute;

extern "C" __global__ void sum_last(const float *X, float *Y, unsigned R, unsigned C)
{
    __shared__ float warp_sums[8];
    Tensor mX = make_tensor(make_gmem_ptr(X), make_shape(R, C), make_stride(size_t(C), Int<1>{}));
    Tensor row = mX(blockIdx.x, _);                                   // (C)
    Tensor cols = make_identity_tensor(make_shape(C));                // column indices
    auto threads = make_layout(Int<256>{});
    Tensor tX = local_partition(row, threads, threadIdx.x);           // this thread's columns
    Tensor tC = local_partition(cols, threads, threadIdx.x);
    float s = 0.0f;
    for (int i = 0; i < size(tX); ++i)
        if (get<0>(tC(i)) < C)
            s += tX(i);
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, off);
    if (threadIdx.x % 32 == 0)
        warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int w = 0; w < 8; ++w)
            total += warp_sums[w];
        Y[blockIdx.x] = total;
    }
}
