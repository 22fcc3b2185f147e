// ReLU written with CuTe (CUTLASS's layout and tensor layer): X and Y as
// 1-D global tensors of n elements, each block takes a 256-element tile of
// both (local_tile), each thread one element of its tile. The default plan
// launches it: ceil(n / 256) blocks of 256 threads.
#include <cute/tensor.hpp>

using namespace cute;

extern "C" __global__ void relu(const float *X, float *Y, unsigned long long n)
{
    Tensor x = make_tensor(make_gmem_ptr(X), make_shape(n));
    Tensor y = make_tensor(make_gmem_ptr(Y), make_shape(n));
    auto tile = make_shape(Int<256>{});
    Tensor bx = local_tile(x, tile, make_coord(blockIdx.x));
    Tensor by = local_tile(y, tile, make_coord(blockIdx.x));
    unsigned long long i = blockIdx.x * 256ull + threadIdx.x;
    if (i < n) {
        float v = bx(threadIdx.x);
        by(threadIdx.x) = v > 0.0f ? v : 0.0f;
    }
}
