// Known bad: argmax that keeps the last of equal maxima (>= where > belongs,
// and the higher index in the tree). Right on rows without ties; the
// task's bf16 uniform rows have ties, and the expected index is the lowest.
#include <cuda_bf16.h>

extern "C" __global__ void argmax_last(const __nv_bfloat16 *X, int *I, unsigned R, unsigned C)
{
    __shared__ float val[256];
    __shared__ int idx[256];
    const __nv_bfloat16 *x = X + (size_t)blockIdx.x * C;
    float best = __int_as_float(0xff800000);
    int at = -1;
    for (unsigned c = threadIdx.x; c < C; c += 256) {
        float v = __bfloat162float(x[c]);
        if (v >= best) {
            best = v;
            at = (int)c;
        }
    }
    val[threadIdx.x] = best;
    idx[threadIdx.x] = at;
    __syncthreads();
    for (unsigned k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) {
            float ov = val[threadIdx.x + k];
            int oi = idx[threadIdx.x + k];
            if (ov > val[threadIdx.x] || (ov == val[threadIdx.x] && oi > idx[threadIdx.x])) {
                val[threadIdx.x] = ov;
                idx[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        I[blockIdx.x] = idx[0];
}
