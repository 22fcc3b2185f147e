// reference.cu: the LLM-serving family's trusted references. Plain fp64
// arithmetic, a fixed reduction order, no atomics; outputs in fp32.
// Compiled after klab's prelude (klab_unit, u32, u64); the task files'
// plans run each kernel over every unit (positions == 0) or over the units
// listed in positions (a timed run's check).

#define RB 256

// Fused residual add + RMSNorm, a block per token row unit: s = x + r,
// residual_out = s, Y = s / sqrt(mean(s^2) + eps) * w.
extern "C" __global__ void __launch_bounds__(RB)
add_rmsnorm_ref(const __nv_bfloat16 *X, const __nv_bfloat16 *R, const __nv_bfloat16 *W, const u64 *positions, u64 n,
                float *Y, float *Rout, u32 H, float eps)
{
    __shared__ double red[RB];
    u64 slot = blockIdx.x;
    u64 in = klab_unit(positions, slot) * H;
    u64 out = slot * H;
    double q = 0.0;
    for (u32 c = threadIdx.x; c < H; c += blockDim.x) {
        double s = (double)__bfloat162float(X[in + c]) + (double)__bfloat162float(R[in + c]);
        q += s * s;
    }
    red[threadIdx.x] = q;
    __syncthreads();
    for (u32 k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    double rstd = 1.0 / sqrt(red[0] / H + (double)eps);
    for (u32 c = threadIdx.x; c < H; c += blockDim.x) {
        double s = (double)__bfloat162float(X[in + c]) + (double)__bfloat162float(R[in + c]);
        Rout[out + c] = (float)s;
        Y[out + c] = (float)(s * rstd * (double)__bfloat162float(W[c]));
    }
}

// Rotary embedding, GPT-NeoX rotate-half, a block per token unit: for the
// Hq query heads then the Hk key heads, element e of a head's row x with
// i = e mod D/2, c = cs[p, i], s = cs[p, D/2 + i]:
//   e <  D/2: x[i] c - x[i + D/2] s;   e >= D/2: x[i + D/2] c + x[i] s.
extern "C" __global__ void rope_ref(const int *pos, const __nv_bfloat16 *Q, const __nv_bfloat16 *K, const float *cs,
                                    const u64 *positions, u64 n, float *Qo, float *Ko, u32 Hq, u32 Hk, u32 D)
{
    u64 slot = blockIdx.x;
    u64 t = klab_unit(positions, slot);
    u32 half = D / 2;
    const float *row = cs + (u64)pos[t] * D;
    for (u32 j = threadIdx.x; j < (Hq + Hk) * D; j += blockDim.x) {
        u32 h = j / D, e = j % D, i = e % half;
        bool q = h < Hq;
        const __nv_bfloat16 *x = q ? Q + (t * Hq + h) * D : K + (t * Hk + (h - Hq)) * D;
        double lo = __bfloat162float(x[i]), hi = __bfloat162float(x[i + half]);
        double c = row[i], s = row[half + i];
        double v = e < half ? lo * c - hi * s : hi * c + lo * s;
        if (q)
            Qo[(slot * Hq + h) * D + e] = (float)v;
        else
            Ko[(slot * Hk + (h - Hq)) * D + e] = (float)v;
    }
}

// SwiGLU, a thread per element unit of Y[T, D]: with a = X[t, j] and
// b = X[t, D + j], Y = a / (1 + exp(-a)) * b.
extern "C" __global__ void swiglu_ref(const __nv_bfloat16 *X, const u64 *positions, u64 n, float *Y, u32 D)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    u64 u = klab_unit(positions, i);
    u64 t = u / D, j = u % D;
    double a = __bfloat162float(X[t * 2 * D + j]);
    double b = __bfloat162float(X[t * 2 * D + D + j]);
    Y[i] = (float)(a / (1.0 + exp(-a)) * b);
}
