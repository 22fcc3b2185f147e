// naive_gemv: y = A * x in fp32, a warp per row.
//
// A[M,K] row-major, x[K], y[M], all fp32. Lane l of the warp for row m sums
// A[m,k]*x[k] for k = l, l+32, ... in fp32 (coalesced loads of the row);
// the 32 partial sums are added with shuffles in a fixed order, so the
// result is deterministic. Launch: 256 threads (8 rows) per block, grid
// ceil(M/8).

extern "C" __global__ void gemv(const float *__restrict__ A, const float *__restrict__ x, float *__restrict__ y,
                                unsigned M, unsigned K)
{
    unsigned row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    unsigned lane = threadIdx.x % 32;
    if (row >= M)
        return;
    const float *a = A + (size_t)row * K;
    float acc = 0.0f;
    for (unsigned k = lane; k < K; k += 32)
        acc = fmaf(a[k], x[k], acc);
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0)
        y[row] = acc;
}
