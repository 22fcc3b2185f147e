// ReLU with CuTe that skips the last tile: the tiles are counted as
// n / 256, rounded down, so the last (partial) tile of 999 x 1021 elements
// is never written and keeps the poison klab put there.
#include <cute/tensor.hpp>

using namespace cute;

extern "C" __global__ void relu(const float *X, float *Y, unsigned long long n)
{
    Tensor x = make_tensor(make_gmem_ptr(X), make_shape(n));
    Tensor y = make_tensor(make_gmem_ptr(Y), make_shape(n));
    auto tile = make_shape(Int<256>{});
    if (blockIdx.x >= n / 256)
        return;
    Tensor bx = local_tile(x, tile, make_coord(blockIdx.x));
    Tensor by = local_tile(y, tile, make_coord(blockIdx.x));
    float v = bx(threadIdx.x);
    by(threadIdx.x) = v > 0.0f ? v : 0.0f;
}
