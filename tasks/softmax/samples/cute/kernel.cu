// Row softmax written with CuTe, bf16 in and out, fp32 inside: X and Y as
// R x C tensors, a block of 256 threads per row (the default plan), three
// passes over the row (the maximum, the sum of exponentials, the output).
// local_partition gives thread t the columns t, t + 256, ...; an identity
// tensor divided the same way says which of them exist.
#include <cute/tensor.hpp>

using namespace cute;

namespace {

// The block's combination of one value per thread (op: max or sum), the same
// order on every run; every thread gets the result.
template <class Op>
__device__ float block_reduce(float v, Op op, float *scratch)
{
    for (int off = 16; off > 0; off >>= 1)
        v = op(v, __shfl_xor_sync(0xffffffffu, v, off));
    if (threadIdx.x % 32 == 0)
        scratch[threadIdx.x / 32] = v;
    __syncthreads();
    float r = scratch[0];
    for (int w = 1; w < 8; ++w)
        r = op(r, scratch[w]);
    __syncthreads();            // scratch is reused by the next call
    return r;
}

} // namespace

extern "C" __global__ void softmax(const cute::bfloat16_t *X, cute::bfloat16_t *Y, unsigned R, unsigned C)
{
    __shared__ float scratch[8];
    auto shape = make_shape(R, C);
    auto stride = make_stride(size_t(C), Int<1>{});
    Tensor x = make_tensor(make_gmem_ptr(X), shape, stride)(blockIdx.x, _);   // (C)
    Tensor y = make_tensor(make_gmem_ptr(Y), shape, stride)(blockIdx.x, _);
    Tensor cols = make_identity_tensor(make_shape(C));
    auto threads = make_layout(Int<256>{});
    Tensor tX = local_partition(x, threads, threadIdx.x);
    Tensor tY = local_partition(y, threads, threadIdx.x);
    Tensor tC = local_partition(cols, threads, threadIdx.x);

    float m = __int_as_float(0xff800000);   // -inf
    for (int i = 0; i < size(tX); ++i)
        if (get<0>(tC(i)) < C)
            m = fmaxf(m, float(tX(i)));
    m = block_reduce(m, [](float a, float b) { return fmaxf(a, b); }, scratch);

    float s = 0.0f;
    for (int i = 0; i < size(tX); ++i)
        if (get<0>(tC(i)) < C)
            s += expf(float(tX(i)) - m);
    s = block_reduce(s, [](float a, float b) { return a + b; }, scratch);

    const float inv = 1.0f / s;
    for (int i = 0; i < size(tX); ++i)
        if (get<0>(tC(i)) < C)
            tY(i) = cute::bfloat16_t(expf(float(tX(i)) - m) * inv);
}
