// chain.cu: the composed tasks' chain after their matrix product or
// convolution (klab.task.compose builds a composed task from a list of
// operations). A composed task's reference is tasks/activation/reference.cu,
// tasks/matmul/reference.cu (or tasks/conv/reference.cu) and this file in
// one source, compiled after klab's prelude; its baseline is cuBLASLt's
// product followed by this file's chain_baseline, or cuDNN's convolution
// followed by chain_baseline_inplace. The chain is one program of up to
// CH_MAX_OPS steps, each (code, a, b), run over one row of the product at a
// time; a convolution's row is one output channel's plane of one image
// (row = n*K + k, its OD*OH*OW values), and K is then the number of channels:
//   code < 100   an activation of tasks/activation/reference.cu (ACT_*),
//                parameter a
//   CH_ADD       x + a (a subtraction is an addition of -a)
//   CH_DIV       x / a
//   CH_MIN, CH_MAX          torch.min(x, a), torch.max(x, a)
//   CH_CLAMP     min(max(x, a), b)
//   CH_VEC_ADD, CH_VEC_MUL  x + v[j], x * v[j] with the vector v = V0 (a = 0)
//                or V1 (a = 1), j the column; CH_VEC_ADD with b = 1 is x - v[j]
//   CH_RESIDUAL  x + the product's own value at the same place
//   CH_MAT_ADD, CH_MAT_MUL  x + v[i,j], x * v[i,j] with the matrix v[M,N] =
//                V0 (a = 0) or V1 (a = 1), i the row
//   CH_MISH_GATE x * mish(x)
//   CH_CHAN_ADD, CH_CHAN_MUL  x + v[k], x * v[k] with the vector v = V0 (a = 0)
//                or V1 (a = 1), k = row % K the convolution's output channel
//                (torch's parameter of shape [K, 1, 1]); CH_CHAN_ADD with b = 1
//                is x - v[k]
//   CH_HARDSWISH x * min(max(x + 3, 0), 6) / 6
//   CH_SUM, CH_MEAN, CH_ROW_MAX, CH_ROW_MIN, CH_LOGSUMEXP
//                the row reduced to one value (logsumexp: max + log of the
//                sum of exp(x - max))
//   CH_CENTER    x - the row's mean
//   CH_SOFTMAX   exp(x - max) / sum over the row
//   CH_MAXPOOL, CH_AVGPOOL   windows of a elements, stride a, the tail
//                dropped (torch's MaxPool1d/AvgPool1d with kernel_size a)
//   CH_PLANE_MAX, CH_PLANE_AVG  a convolution's plane pooled by windows of
//                a elements per axis, stride a, the tails dropped (torch's
//                MaxPool2d/3d, AvgPool2d/3d): b = nd·2^42 + IH·2^21 + IW, the
//                plane's last two extents (its depth is W / (IH·IW)) and
//                whether the depth is pooled too (nd = 3)
//   CH_GROUPNORM the row cut into a groups, each normalised to mean 0 and
//                variance 1 (biased variance, epsilon b; GroupNorm's weight
//                1 and bias 0, as torch initialises them)
//   CH_ADD_X     a row of one value v becomes the K values v + X[i,k]: the
//                layer's own input added back (torch's broadcast of [M,1]
//                and [M,K])
// A chain after a convolution may also reduce across the channels once
// (klab.task.compose's channel_*): the program before it runs on every
// channel's plane, chain_across_* reduces the K planes of each image place
// by place (CH_ACROSS_*), and the program after it runs on the one plane
// left per image (row n, K = 1).
// The reference runs the chain in fp64 on the product's exact sums; the
// baseline runs the same program in fp32 on cuBLASLt's fp32 product, the
// row staged in shared memory. Every reduction has a fixed order (a
// strided share per thread, then a tree), so both are deterministic.

enum { CH_ADD = 100, CH_DIV = 101, CH_MIN = 102, CH_MAX = 103, CH_CLAMP = 104, CH_VEC_ADD = 105,
       CH_VEC_MUL = 106, CH_RESIDUAL = 107, CH_MAT_ADD = 108, CH_MAT_MUL = 109, CH_MISH_GATE = 110, CH_CHAN_ADD = 111,
       CH_CHAN_MUL = 112, CH_HARDSWISH = 113, CH_SUM = 120, CH_MEAN = 121, CH_ROW_MAX = 122, CH_ROW_MIN = 123,
       CH_LOGSUMEXP = 124, CH_CENTER = 125, CH_SOFTMAX = 126, CH_MAXPOOL = 127, CH_AVGPOOL = 128,
       CH_GROUPNORM = 129, CH_ADD_X = 130, CH_PLANE_MAX = 131, CH_PLANE_AVG = 132 };

#define CH_MAX_OPS 8
#define CH_THREADS 256

struct ch_program {
    int n;
    int code[CH_MAX_OPS];
    double a[CH_MAX_OPS], b[CH_MAX_OPS];
};

enum { CH_RED_SUM = 0, CH_RED_MAX = 1, CH_RED_MIN = 2 };

template <typename R> static __device__ __forceinline__ R ch_combine(int how, R x, R y)
{
    return how == CH_RED_MAX ? fmax(x, y) : how == CH_RED_MIN ? fmin(x, y) : x + y;
}

static __device__ __forceinline__ double ch_inf() { return __longlong_as_double(0x7ff0000000000000ULL); }

template <typename R> static __device__ __forceinline__ R ch_start(int how)
{
    return how == CH_RED_MAX ? -(R)ch_inf() : how == CH_RED_MIN ? (R)ch_inf() : (R)0;
}

// The block's reduction of each thread's v: a tree in shared memory, the
// same order every time.
template <typename R> static __device__ R ch_block(int how, R v, R *red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned half = CH_THREADS / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half)
            red[threadIdx.x] = ch_combine(how, red[threadIdx.x], red[threadIdx.x + half]);
        __syncthreads();
    }
    R r = red[0];
    __syncthreads();
    return r;
}

// The reduction of u[lo..hi) (with f applied to each element first when
// shift is finite: exp(x - shift), for logsumexp and softmax).
template <typename R> static __device__ R ch_reduce(int how, const R *u, u32 lo, u32 hi, R shift, bool exp_of, R *red)
{
    R acc = ch_start<R>(how);
    for (u32 j = lo + threadIdx.x; j < hi; j += CH_THREADS)
        acc = ch_combine(how, acc, exp_of ? (R)exp(u[j] - shift) : u[j]);
    return ch_block(how, acc, red);
}

// Runs the program over row `row` of the output: u[0..N) holds the
// product's row on entry (t is the same row, kept for CH_RESIDUAL; u has
// room for max(N, K) values) and the chain's output row on return; the
// output's width is returned.
template <typename R, typename TT>
static __device__ u32 ch_row(R *u, const TT *t, u64 row, u32 N, const float *X, u32 K, const ch_program &p,
                             const void *V0, int dt0, const void *V1, int dt1, R *red)
{
    u32 W = N;
    for (int i = 0; i < p.n; i++) {
        const int code = p.code[i];
        const R a = (R)p.a[i], b = (R)p.b[i];
        if (code < CH_SUM) {
            for (u32 j = threadIdx.x; j < W; j += CH_THREADS) {
                R x = u[j];
                switch (code) {
                case CH_ADD: x = x + a; break;
                case CH_DIV: x = x / a; break;
                case CH_MIN: x = fmin(x, a); break;
                case CH_MAX: x = fmax(x, a); break;
                case CH_CLAMP: x = fmin(fmax(x, a), b); break;
                case CH_VEC_ADD: {
                    const R v = (R)klab_load(a == (R)0 ? V0 : V1, j, a == (R)0 ? dt0 : dt1);
                    x = b == (R)0 ? x + v : x - v;
                    break;
                }
                case CH_VEC_MUL: x = x * (R)klab_load(a == (R)0 ? V0 : V1, j, a == (R)0 ? dt0 : dt1); break;
                case CH_RESIDUAL: x = x + (R)t[j]; break;
                case CH_MAT_ADD: x = x + (R)klab_load(a == (R)0 ? V0 : V1, row * N + j, a == (R)0 ? dt0 : dt1); break;
                case CH_MAT_MUL: x = x * (R)klab_load(a == (R)0 ? V0 : V1, row * N + j, a == (R)0 ? dt0 : dt1); break;
                case CH_MISH_GATE: x = x * act_apply<R>(ACT_MISH, x, (R)0); break;
                case CH_CHAN_ADD: {
                    const R v = (R)klab_load(a == (R)0 ? V0 : V1, row % K, a == (R)0 ? dt0 : dt1);
                    x = b == (R)0 ? x + v : x - v;
                    break;
                }
                case CH_CHAN_MUL: x = x * (R)klab_load(a == (R)0 ? V0 : V1, row % K, a == (R)0 ? dt0 : dt1); break;
                case CH_HARDSWISH: x = x * fmin(fmax(x + (R)3, (R)0), (R)6) / (R)6; break;
                default: x = act_apply<R>(code, x, a); break;
                }
                u[j] = x;
            }
            __syncthreads();
            continue;
        }
        switch (code) {
        case CH_SUM:
        case CH_MEAN: {
            R s = ch_reduce<R>(CH_RED_SUM, u, 0, W, 0, false, red);
            if (threadIdx.x == 0)
                u[0] = code == CH_MEAN ? s / (R)W : s;
            W = 1;
            break;
        }
        case CH_ROW_MAX:
        case CH_ROW_MIN: {
            R s = ch_reduce<R>(code == CH_ROW_MAX ? CH_RED_MAX : CH_RED_MIN, u, 0, W, 0, false, red);
            if (threadIdx.x == 0)
                u[0] = s;
            W = 1;
            break;
        }
        case CH_LOGSUMEXP: {
            R m = ch_reduce<R>(CH_RED_MAX, u, 0, W, 0, false, red);
            R s = ch_reduce<R>(CH_RED_SUM, u, 0, W, m, true, red);
            if (threadIdx.x == 0)
                u[0] = m + (R)log(s);
            W = 1;
            break;
        }
        case CH_CENTER:
        case CH_SOFTMAX: {
            if (code == CH_CENTER) {
                R mean = ch_reduce<R>(CH_RED_SUM, u, 0, W, 0, false, red) / (R)W;
                for (u32 j = threadIdx.x; j < W; j += CH_THREADS)
                    u[j] = u[j] - mean;
            } else {
                R m = ch_reduce<R>(CH_RED_MAX, u, 0, W, 0, false, red);
                R s = ch_reduce<R>(CH_RED_SUM, u, 0, W, m, true, red);
                for (u32 j = threadIdx.x; j < W; j += CH_THREADS)
                    u[j] = (R)exp(u[j] - m) / s;
            }
            break;
        }
        case CH_MAXPOOL:
        case CH_AVGPOOL: {
            const u32 k = (u32)p.a[i], out = W / k;
            // In chunks of one value per thread: a chunk reads only places
            // at or past the places it writes.
            for (u32 c0 = 0; c0 < out; c0 += CH_THREADS) {
                const u32 j = c0 + threadIdx.x;
                R v = 0;
                if (j < out) {
                    v = code == CH_MAXPOOL ? -(R)ch_inf() : (R)0;
                    for (u32 q = 0; q < k; q++)
                        v = code == CH_MAXPOOL ? fmax(v, u[j * k + q]) : v + u[j * k + q];
                    if (code == CH_AVGPOOL)
                        v = v / (R)k;
                }
                __syncthreads();
                if (j < out)
                    u[j] = v;
                __syncthreads();
            }
            W = out;
            break;
        }
        case CH_PLANE_MAX:
        case CH_PLANE_AVG: {
            const u32 k = (u32)p.a[i];
            const u64 shape = (u64)p.b[i];
            const u32 nd = (u32)(shape >> 42), IH = (u32)((shape >> 21) & 0x1FFFFF), IW = (u32)(shape & 0x1FFFFF);
            const u32 ID = W / (IH * IW), kd = nd == 3 ? k : 1;
            const u32 PD = ID / kd, PH = IH / k, PW = IW / k, out = PD * PH * PW;
            // In chunks of one window per thread, as the 1-D pools: a window
            // reads only places at or past the place it writes.
            for (u32 c0 = 0; c0 < out; c0 += CH_THREADS) {
                const u32 j = c0 + threadIdx.x;
                R v = 0;
                if (j < out) {
                    const u32 od = j / (PH * PW), oh = j / PW % PH, ow = j % PW;
                    v = code == CH_PLANE_MAX ? -(R)ch_inf() : (R)0;
                    for (u32 a = 0; a < kd; a++)
                        for (u32 r = 0; r < k; r++)
                            for (u32 q = 0; q < k; q++) {
                                const R x = u[((u64)(od * kd + a) * IH + oh * k + r) * IW + ow * k + q];
                                v = code == CH_PLANE_MAX ? fmax(v, x) : v + x;
                            }
                    if (code == CH_PLANE_AVG)
                        v = v / (R)(kd * k * k);
                }
                __syncthreads();
                if (j < out)
                    u[j] = v;
                __syncthreads();
            }
            W = out;
            break;
        }
        case CH_GROUPNORM: {
            const u32 groups = (u32)p.a[i], size = W / groups;
            for (u32 g = 0; g < groups; g++) {
                const u32 lo = g * size, hi = lo + size;
                R mean = ch_reduce<R>(CH_RED_SUM, u, lo, hi, 0, false, red) / (R)size;
                R sq = 0;
                for (u32 j = lo + threadIdx.x; j < hi; j += CH_THREADS)
                    sq += (u[j] - mean) * (u[j] - mean);
                R var = ch_block<R>(CH_RED_SUM, sq, red) / (R)size;
                R inv = (R)1 / (R)sqrt(var + b);
                for (u32 j = lo + threadIdx.x; j < hi; j += CH_THREADS)
                    u[j] = (u[j] - mean) * inv;
                __syncthreads();
            }
            break;
        }
        case CH_ADD_X: {
            const R v = u[0];
            __syncthreads();
            for (u32 j = threadIdx.x; j < K; j += CH_THREADS)
                u[j] = v + (R)X[row * K + j];
            W = K;
            break;
        }
        }
        __syncthreads();
    }
    return W;
}

#define CH_PARAMS                                                                                                 \
    int nops, int c0, double a0, double b0, int c1, double a1, double b1, int c2, double a2, double b2, int c3,    \
        double a3, double b3, int c4, double a4, double b4, int c5, double a5, double b5, int c6, double a6,       \
        double b6, int c7, double a7, double b7

static __device__ ch_program ch_make(CH_PARAMS)
{
    ch_program p;
    p.n = nops;
    const int c[CH_MAX_OPS] = { c0, c1, c2, c3, c4, c5, c6, c7 };
    const double a[CH_MAX_OPS] = { a0, a1, a2, a3, a4, a5, a6, a7 }, b[CH_MAX_OPS] = { b0, b1, b2, b3, b4, b5, b6, b7 };
    for (int i = 0; i < CH_MAX_OPS; i++) {
        p.code[i] = c[i];
        p.a[i] = a[i];
        p.b[i] = b[i];
    }
    return p;
}

#define CH_ARGS nops, c0, a0, b0, c1, a1, b1, c2, a2, b2, c3, a3, b3, c4, a4, b4, c5, a5, b5, c6, a6, b6, c7, a7, b7

// The reference: T[rows][N] holds the product in fp64 (slot r: row r of
// the output, or the sampled row positions[r]), U a work row of ustride
// (max(N, K)) values per slot; Y[rows][wout] gets the chain's output as fp32.
extern "C" __global__ void __launch_bounds__(CH_THREADS)
chain_ref(const double *T, double *U, u32 ustride, u32 N, float *Y, u32 wout, const u64 *positions,
          const float *X, u32 K, const void *V0, int dt0, const void *V1, int dt1, CH_PARAMS)
{
    __shared__ double red[CH_THREADS];
    const ch_program p = ch_make(CH_ARGS);
    const u64 r = blockIdx.x;
    const double *t = T + r * N;
    double *u = U + r * ustride;
    for (u32 j = threadIdx.x; j < N; j += CH_THREADS)
        u[j] = t[j];
    __syncthreads();
    ch_row<double, double>(u, t, klab_unit(positions, r), N, X, K, p, V0, dt0, V1, dt1, red);
    for (u32 j = threadIdx.x; j < wout; j += CH_THREADS)
        Y[r * wout + j] = (float)u[j];
}

// The sampled reference's units: each of the n rows in positions becomes
// its N element units (row * N + j), for mm_ref_units.
extern "C" __global__ void chain_row_units(const u64 *positions, u64 n, u32 N, u64 *units)
{
    const u64 total = n * N;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x)
        units[i] = klab_unit(positions, i / N) * N + i % N;
}

// The baseline's chain: block r runs row r of cuBLASLt's fp32 product
// T[M][N] in fp32, the row staged in dynamic shared memory (4·max(N, K)
// bytes), and writes Y[M][wout].
extern "C" __global__ void __launch_bounds__(CH_THREADS)
chain_baseline(const float *T, u32 N, float *Y, u32 wout, const float *X, u32 K, const void *V0, int dt0,
               const void *V1, int dt1, CH_PARAMS)
{
    extern __shared__ float row[];
    __shared__ float red[CH_THREADS];
    const ch_program p = ch_make(CH_ARGS);
    const u64 r = blockIdx.x;
    const float *t = T + r * N;
    for (u32 j = threadIdx.x; j < N; j += CH_THREADS)
        row[j] = t[j];
    __syncthreads();
    ch_row<float, float>(row, t, r, N, X, K, p, V0, dt0, V1, dt1, red);
    for (u32 j = threadIdx.x; j < wout; j += CH_THREADS)
        Y[r * wout + j] = row[j];
}

// The baseline's chain after a convolution: block r adds the convolution's
// bias of its channel (cbias[r % K], where cbias is not null) to row r of
// cuDNN's fp32 output T[rows][N] and runs the chain on it in place in
// global memory (a channel's plane can outgrow shared memory; T is the
// baseline's own workspace), then writes Y[rows][wout]. K is the number of
// output channels (CH_CHAN_*); the chains it runs have no CH_RESIDUAL or
// CH_ADD_X.
extern "C" __global__ void __launch_bounds__(CH_THREADS)
chain_baseline_inplace(float *T, u32 N, float *Y, u32 wout, u32 K, const float *cbias, const void *V0, int dt0,
                       const void *V1, int dt1, CH_PARAMS)
{
    __shared__ float red[CH_THREADS];
    const ch_program p = ch_make(CH_ARGS);
    const u64 r = blockIdx.x;
    float *u = T + r * N;
    if (cbias) {
        const float c = cbias[r % K];
        for (u32 j = threadIdx.x; j < N; j += CH_THREADS)
            u[j] += c;
        __syncthreads();
    }
    ch_row<float, float>(u, u, r, N, nullptr, K, p, V0, dt0, V1, dt1, red);
    for (u32 j = threadIdx.x; j < wout; j += CH_THREADS)
        Y[r * wout + j] = u[j];
}

// Across the channels: dst[n][j] = the reduction over k < K of
// src[(n*K + k)*stride + j] for j < width and the images n < images, one
// thread per place, the channels in order (so both versions are
// deterministic): CH_ACROSS_SUM, _MEAN, _MAX, _MIN or _LOGSUMEXP (max + log
// of the sum of exp(x - max)).
enum { CH_ACROSS_SUM = 0, CH_ACROSS_MEAN = 1, CH_ACROSS_MAX = 2, CH_ACROSS_MIN = 3, CH_ACROSS_LOGSUMEXP = 4 };

template <typename R>
static __device__ void ch_across(const R *src, u32 stride, u32 K, u32 width, int how, R *dst, u64 images)
{
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= images * width)
        return;
    const u64 n = i / width, j = i % width;
    const R *s = src + n * K * stride + j;
    const int red = how == CH_ACROSS_MAX || how == CH_ACROSS_LOGSUMEXP ? CH_RED_MAX
                  : how == CH_ACROSS_MIN                              ? CH_RED_MIN
                                                                      : CH_RED_SUM;
    R acc = ch_start<R>(red);
    for (u32 k = 0; k < K; k++)
        acc = ch_combine(red, acc, s[(u64)k * stride]);
    if (how == CH_ACROSS_MEAN)
        acc = acc / (R)K;
    if (how == CH_ACROSS_LOGSUMEXP) {
        R e = 0;
        for (u32 k = 0; k < K; k++)
            e += (R)exp(s[(u64)k * stride] - acc);
        acc = acc + (R)log(e);
    }
    dst[i] = acc;
}

extern "C" __global__ void chain_across_ref(const double *src, u32 stride, u32 K, u32 width, int how, double *dst,
                                            u64 images)
{
    ch_across<double>(src, stride, K, width, how, dst, images);
}

extern "C" __global__ void chain_across_baseline(const float *src, u32 stride, u32 K, u32 width, int how, float *dst,
                                                 u64 images)
{
    ch_across<float>(src, stride, K, width, how, dst, images);
}

// The sampled reference's units when a chain reduces across channels: each
// of the n images in positions becomes the K*P element units of its K
// channel planes (P places each), for conv_ncdhw_ref64.
extern "C" __global__ void chain_image_units(const u64 *positions, u64 n, u32 K, u32 P, u64 *units)
{
    const u64 per = (u64)K * P, total = n * per;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x)
        units[i] = klab_unit(positions, i / per) * per + i % per;
}
