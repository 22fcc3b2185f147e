// naive_convt: a direct NHWC transposed convolution, one thread per output
// element, gathering.
//
// x[N,OH,OW,K], w[K,R,S,C], y[N,H,W,C], bf16; OH, OW as the forward
// convolution's output, padding P, stride U. Output (h, w) takes input
// pixel (i, j) through filter tap (r, s) when h = i*U - P + r and
// w = j*U - P + s: for each tap, h + P - r must be a non-negative multiple
// of U below OH*U. Sums in fp32 in the order r, s, k; rounded once to bf16.

#include <cuda_bf16.h>

extern "C" __global__ void conv_transpose2d(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ w,
                                            __nv_bfloat16 *__restrict__ y, unsigned N, unsigned H, unsigned W,
                                            unsigned C, unsigned K, unsigned R, unsigned S, unsigned P, unsigned U)
{
    const unsigned OH = (H + 2 * P - R) / U + 1, OW = (W + 2 * P - S) / U + 1;
    const size_t total = (size_t)N * H * W * C;
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total)
        return;
    const unsigned c = t % C;
    size_t p = t / C;
    const unsigned col = p % W;
    p /= W;
    const unsigned row = p % H;
    const size_t n = p / H;
    float acc = 0.0f;
    for (unsigned r = 0; r < R; ++r) {
        const int a = (int)(row + P) - (int)r;
        if (a < 0 || a % (int)U != 0 || a / (int)U >= (int)OH)
            continue;
        const unsigned i = a / (int)U;
        for (unsigned s = 0; s < S; ++s) {
            const int b = (int)(col + P) - (int)s;
            if (b < 0 || b % (int)U != 0 || b / (int)U >= (int)OW)
                continue;
            const unsigned j = b / (int)U;
            const __nv_bfloat16 *xp = x + ((n * OH + i) * OW + j) * K;
            for (unsigned k = 0; k < K; ++k)
                acc = fmaf(__bfloat162float(xp[k]), __bfloat162float(w[(((size_t)k * R + r) * S + s) * C + c]), acc);
        }
    }
    y[t] = __float2bfloat16_rn(acc);
}
