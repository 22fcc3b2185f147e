// A row sum with CuTe that skips the last tile: each row is cut into tiles
// of 256 columns (local_tile), a thread per column of a tile, but the tiles
// are counted as C / 256, rounded down, so the last partial tile of a row
// (253 of the 1021 columns on 999 x 1021) is never added.
#include <cute/tensor.hpp>

using namespace cute;

extern "C" __global__ void sum_last(const float *X, float *Y, unsigned R, unsigned C)
{
    __shared__ float warp_sums[8];
    Tensor mX = make_tensor(make_gmem_ptr(X), make_shape(R, C), make_stride(size_t(C), Int<1>{}));
    Tensor row = mX(blockIdx.x, _);                                   // (C)
    float s = 0.0f;
    for (unsigned t = 0; t < C / 256; ++t) {
        Tensor tile = local_tile(row, make_shape(Int<256>{}), make_coord(t));
        s += tile(threadIdx.x);
    }
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
