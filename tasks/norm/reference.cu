// reference.cu: the normalization family's trusted references. Plain fp64
// arithmetic, statistics in two passes (the mean, then the mean squared
// deviation from it), a fixed reduction order, no atomics; outputs in fp32.
// Compiled after klab's prelude (klab_load, klab_unit, u32, u64); the task
// files' plans run each kernel over every unit (positions == 0) or over
// the units listed in positions (a timed run's check).

#define RB 256

// The sum of v over the block (blockDim.x a power of two, at most RB), in
// a fixed tree; every thread gets it.
static __device__ double block_sum(double v, double *red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (u32 s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    double r = red[0];
    __syncthreads();
    return r;
}

// Row normalizations of X[R, C], a block per row unit (slot blockIdx.x):
//   mode 0, LayerNorm: Y = (x - mean) / sqrt(var + eps) * w + b (biased var)
//   mode 1, RMSNorm:   Y = x / sqrt(mean(x^2) + eps) * w
// B may be null (no bias). dtx, dtw, dtb: klab element types.
extern "C" __global__ void __launch_bounds__(RB)
rownorm_ref(const void *X, int dtx, const void *W, int dtw, const void *B, int dtb, const u64 *positions, u64 n,
            float *Y, u32 C, float eps, int mode)
{
    __shared__ double red[RB];
    u64 slot = blockIdx.x;
    u64 row = klab_unit(positions, slot);
    u64 in = row * C;
    float *y = Y + slot * C;

    double mean = 0.0;
    if (mode == 0) {
        double s = 0.0;
        for (u32 c = threadIdx.x; c < C; c += blockDim.x)
            s += klab_load(X, in + c, dtx);
        mean = block_sum(s, red) / C;
    }
    double q = 0.0;
    for (u32 c = threadIdx.x; c < C; c += blockDim.x) {
        double d = klab_load(X, in + c, dtx) - mean;
        q += d * d;
    }
    double rstd = 1.0 / sqrt(block_sum(q, red) / C + (double)eps);
    for (u32 c = threadIdx.x; c < C; c += blockDim.x) {
        double v = (klab_load(X, in + c, dtx) - mean) * rstd * klab_load(W, c, dtw);
        if (B)
            v += klab_load(B, c, dtb);
        y[c] = (float)v;
    }
}

// BatchNorm in inference, NHWC: X[P, C] with P = N*H*W pixels, per-channel
// running mean and var, weight and bias (fp32):
//   Y = (x - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c].
// A unit is a pixel (C elements); n units, a thread per element of them.
extern "C" __global__ void batchnorm_ref(const void *X, int dtx, const float *mean, const float *var,
                                         const float *weight, const float *bias, const u64 *positions, u64 n,
                                         float *Y, u32 C, float eps)
{
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * C)
        return;
    u64 slot = i / C;
    u32 c = (u32)(i % C);
    u64 pixel = klab_unit(positions, slot);
    double x = klab_load(X, pixel * C + c, dtx);
    double v = (x - (double)mean[c]) / sqrt((double)var[c] + (double)eps) * (double)weight[c] + (double)bias[c];
    Y[i] = (float)v;
}

// GroupNorm, NCHW: X[N, C, H, W] with C channels in G groups of C/G; the
// group (n, g) is the contiguous block of (C/G)*HW elements at
// (n*G + g) * (C/G)*HW, normalized with its own mean and biased variance,
// then Y = xhat * weight[c] + bias[c] for its channel c (W and B null: no
// affine step, InstanceNorm's default). A unit is a group; a block per
// group unit.
extern "C" __global__ void __launch_bounds__(RB)
groupnorm_ref(const void *X, int dtx, const void *W, int dtw, const void *B, int dtb, const u64 *positions, u64 n,
              float *Y, u32 C, u32 HW, u32 G, float eps)
{
    __shared__ double red[RB];
    u64 slot = blockIdx.x;
    u64 group = klab_unit(positions, slot);
    u32 cpg = C / G;
    u64 len = (u64)cpg * HW;
    u64 in = group * len;
    u32 c0 = (u32)(group % G) * cpg;
    float *y = Y + slot * len;

    double s = 0.0;
    for (u64 e = threadIdx.x; e < len; e += blockDim.x)
        s += klab_load(X, in + e, dtx);
    double mean = block_sum(s, red) / (double)len;
    double q = 0.0;
    for (u64 e = threadIdx.x; e < len; e += blockDim.x) {
        double d = klab_load(X, in + e, dtx) - mean;
        q += d * d;
    }
    double rstd = 1.0 / sqrt(block_sum(q, red) / (double)len + (double)eps);
    for (u64 e = threadIdx.x; e < len; e += blockDim.x) {
        u32 c = c0 + (u32)(e / HW);
        double v = (klab_load(X, in + e, dtx) - mean) * rstd * (W ? klab_load(W, c, dtw) : 1.0) +
                   (B ? klab_load(B, c, dtb) : 0.0);
        y[e] = (float)v;
    }
}

// Row scalings of X[R, C] in fp32 (_rowscale.lua), a block per row unit:
//   mode 0, L2: Y = x / sqrt(sum x^2)     mode 1, L1: Y = x / mean |x|
// the norm in fp64.
extern "C" __global__ void __launch_bounds__(RB)
rowscale_ref(const float *X, const u64 *positions, float *Y, u32 C, int mode)
{
    __shared__ double red[RB];
    const u64 slot = blockIdx.x;
    const float *x = X + klab_unit(positions, slot) * C;
    float *y = Y + slot * C;
    double s = 0.0;
    for (u32 c = threadIdx.x; c < C; c += blockDim.x) {
        const double v = x[c];
        s += mode == 0 ? v * v : fabs(v);
    }
    const double norm = mode == 0 ? sqrt(block_sum(s, red)) : block_sum(s, red) / C;
    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        y[c] = (float)((double)x[c] / norm);
}

// The Frobenius normalization of X[R, C] in fp32 (frobenius_f32.lua):
// Y = X / sqrt(sum of every x^2). Three launches: block sums of squares in
// fp64 into part[0..g), one block adding them into part[g] = the norm,
// then a thread per element unit (every unit, or those listed).
extern "C" __global__ void __launch_bounds__(RB)
frob_ref_partial(const float *X, u64 n, double *part)
{
    __shared__ double red[RB];
    double s = 0.0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const double v = X[i];
        s += v * v;
    }
    s = block_sum(s, red);
    if (threadIdx.x == 0)
        part[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(RB)
frob_ref_norm(double *part, u32 g)
{
    __shared__ double red[RB];
    double s = 0.0;
    for (u32 i = threadIdx.x; i < g; i += blockDim.x)
        s += part[i];
    s = block_sum(s, red);
    if (threadIdx.x == 0)
        part[g] = sqrt(s);
}

extern "C" __global__ void frob_ref_scale(const float *X, const double *part, u32 g, const u64 *positions, u64 n,
                                          float *Y)
{
    const double norm = part[g];
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        Y[i] = (float)((double)X[klab_unit(positions, i)] / norm);
}

// RMSNorm over the middle dimension of X[B, F, S] (rmsnorm_mid_f32.lua,
// KernelBench's dimension 1 of [batch, features, d1, d2] with S = d1*d2):
// Y[b,f,s] = X[b,f,s] / sqrt(mean over f' of X[b,f',s]^2 + eps). A thread per
// element unit, its column's mean of squares in fp64 in index order.
extern "C" __global__ void rmsnorm_mid_ref(const float *X, const u64 *positions, u64 n, float *Y, u32 F, u32 S,
                                           double eps)
{
    const u64 slot = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (slot >= n)
        return;
    const u64 u = klab_unit(positions, slot);
    const u64 s = u % S, b = u / ((u64)S * F);
    const float *col = X + b * (u64)F * S + s;
    double sq = 0.0;
    for (u32 f = 0; f < F; f++) {
        const double v = col[(u64)f * S];
        sq += v * v;
    }
    Y[slot] = (float)((double)X[u] / sqrt(sq / F + eps));
}

// BatchNorm in training mode (batchnorm_train_f32.lua): X[N, C, S], each
// channel normalized with the mean and biased variance of its N*S elements.
// bn_stats_ref: a block per channel, two passes in fp64 (the mean, then
// the squared deviations), stats[2c] = mean, stats[2c+1] = 1/sqrt(var + eps).
extern "C" __global__ void __launch_bounds__(RB)
bn_stats_ref(const float *X, double *stats, u32 N, u32 C, u64 S, double eps)
{
    __shared__ double red[RB];
    const u32 c = blockIdx.x;
    const u64 count = (u64)N * S;
    double s = 0.0;
    for (u32 n = 0; n < N; n++)
        for (u64 i = threadIdx.x; i < S; i += blockDim.x)
            s += X[((u64)n * C + c) * S + i];
    const double mean = block_sum(s, red) / (double)count;
    double q = 0.0;
    for (u32 n = 0; n < N; n++)
        for (u64 i = threadIdx.x; i < S; i += blockDim.x) {
            const double d = X[((u64)n * C + c) * S + i] - mean;
            q += d * d;
        }
    const double var = block_sum(q, red) / (double)count;
    if (threadIdx.x == 0) {
        stats[2 * c] = mean;
        stats[2 * c + 1] = 1.0 / sqrt(var + eps);
    }
}

// Y's element units from the statistics: (x - mean) * inv * weight + bias.
extern "C" __global__ void bn_apply_ref(const float *X, const float *weight, const float *bias, const double *stats,
                                        const u64 *positions, u64 n, float *Y, u32 C, u64 S)
{
    const u64 slot = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (slot >= n)
        return;
    const u64 u = klab_unit(positions, slot);
    const u32 c = (u32)(u / S % C);
    Y[slot] = (float)(((double)X[u] - stats[2 * c]) * stats[2 * c + 1] * (double)weight[c] + (double)bias[c]);
}
