// reference.cu: the loss family's trusted reference, compiled after klab's
// prelude (klab_unit, u32, u64). fp64 sums in a fixed order (no atomics).
// Mean squared error: one unit, the scalar, computed in two launches (block
// partial sums into the reference's workspace, then one block adds them).
// Cross-entropy: a unit is one row's loss.

// The block's values v combined (the maximum, or the sum) in a fixed tree;
// every thread gets the result. blockDim.x must be a power of two no larger
// than 256.
static __device__ double block_all(double v, bool take_max)
{
    __shared__ double red[256];
    red[threadIdx.x] = v;
    __syncthreads();
    for (u32 half = blockDim.x >> 1; half > 0; half >>= 1) {
        if (threadIdx.x < half) {
            const double o = red[threadIdx.x + half];
            red[threadIdx.x] = take_max ? fmax(red[threadIdx.x], o) : red[threadIdx.x] + o;
        }
        __syncthreads();
    }
    const double all = red[0];
    __syncthreads();
    return all;
}

// part[b] = sum of (P[i] - T[i])^2 over the elements block b visits.
extern "C" __global__ void __launch_bounds__(256)
mse_ref_partial(const float *P, const float *T, u64 n, double *part)
{
    double acc = 0.0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const double d = (double)P[i] - (double)T[i];
        acc += d * d;
    }
    acc = block_all(acc, false);
    if (threadIdx.x == 0)
        part[blockIdx.x] = acc;
}

// L[0] = (sum of the g partial sums) / n, in one block.
extern "C" __global__ void __launch_bounds__(256)
mse_ref_final(const double *part, u32 g, u64 n, float *L)
{
    double acc = 0.0;
    for (u32 i = threadIdx.x; i < g; i += blockDim.x)
        acc += part[i];
    acc = block_all(acc, false);
    if (threadIdx.x == 0)
        L[0] = (float)(acc / (double)n);
}

// Targets: each drawn integer reduced modulo C, so that they cover every
// class of the variant (the task's input law cannot name C).
extern "C" __global__ void ce_targets(int *T, u64 R, u32 C)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < R; i += (u64)gridDim.x * blockDim.x)
        T[i] = (int)((u32)T[i] % C);
}

// log(sum_c exp(X[row, c])) - X[row, T[row]] for X of element type dt (the
// prelude's KLAB_*), through the row maximum so that no exp overflows or
// underflows; a block per row, every thread gets it.
static __device__ double ce_row(const void *X, int dt, const int *T, u64 row, u32 C)
{
    const u64 at = row * C;
    double top = __longlong_as_double(0xfff0000000000000ULL);
    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        top = fmax(top, klab_load(X, at + c, dt));
    top = block_all(top, true);
    double sum = 0.0;
    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        sum += exp(klab_load(X, at + c, dt) - top);
    sum = block_all(sum, false);
    return top + log(sum) - klab_load(X, at + T[row], dt);
}

// L[slot] = the loss of the row unit of the slot (cross_entropy_bf16).
extern "C" __global__ void __launch_bounds__(256)
ce_ref(const __nv_bfloat16 *X, const int *T, const u64 *positions, float *L, u32 C)
{
    const double loss = ce_row(X, KLAB_BF16, T, klab_unit(positions, blockIdx.x), C);
    if (threadIdx.x == 0)
        L[blockIdx.x] = (float)loss;
}

// part[r] = row r's loss of fp32 logits, in fp64 (cross_entropy_mean_f32;
// mse_ref_final then takes their mean).
extern "C" __global__ void __launch_bounds__(256)
ce_rows_ref(const float *X, const int *T, double *part, u32 C)
{
    const double loss = ce_row(X, KLAB_F32, T, blockIdx.x, C);
    if (threadIdx.x == 0)
        part[blockIdx.x] = loss;
}

// The pointwise losses (_pointwise.lua), in fp64 from the stored values:
// op 0 Huber (smooth L1, beta 1), op 1 hinge, op 2 KL divergence
// t (log t - log p) (0 where t is 0).
static __device__ double pointwise_loss(int op, double p, double t)
{
    if (op == 0) {
        const double d = fabs(p - t);
        return d < 1.0 ? 0.5 * d * d : d - 0.5;
    }
    if (op == 2)
        return t > 0.0 ? t * (log(t) - log(p)) : 0.0;
    return fmax(1.0 - p * t, 0.0);
}

// part[b] = sum of the loss over the elements block b visits (then
// mse_ref_final divides the total by n). Element i's target is T[i % tn]:
// tn = n for targets of P's shape, C for one target per column broadcast
// over the rows (KernelBench's hinge).
extern "C" __global__ void __launch_bounds__(256)
loss_ref_partial(const float *P, const float *T, u64 n, double *part, int op, u64 tn)
{
    double acc = 0.0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        acc += pointwise_loss(op, (double)P[i], (double)T[i % tn]);
    acc = block_all(acc, false);
    if (threadIdx.x == 0)
        part[blockIdx.x] = acc;
}

// Hinge targets: each drawn value made its sign, +1 or -1 (0 counts as +1).
extern "C" __global__ void hinge_targets(float *T, u64 n)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        T[i] = T[i] < 0.0f ? -1.0f : 1.0f;
}

// The KL divergence's inputs: each row of P and of T replaced by its
// softmax (fp64 inside, fp32 stored), so that both are distributions over
// the C columns as KernelBench's are. A block of 256 per row of either
// (blockIdx.y: 0 for P, 1 for T).
extern "C" __global__ void __launch_bounds__(256)
softmax_rows(float *P, float *T, u32 C)
{
    float *x = (blockIdx.y == 0 ? P : T) + (u64)blockIdx.x * C;
    double m = __longlong_as_double(0xfff0000000000000ULL);
    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        m = fmax(m, (double)x[c]);
    m = block_all(m, true);
    double s = 0.0;
    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        s += exp((double)x[c] - m);
    s = block_all(s, false);
    for (u32 c = threadIdx.x; c < C; c += blockDim.x)
        x[c] = (float)(exp((double)x[c] - m) / s);
}

// The triplet margin loss (triplet_f32.lua): for each row b, with
// torch's pairwise distance ||x - y + eps||_2 (eps = 1e-6),
//   part[b] = max(d(A_b, P_b) - d(A_b, N_b) + margin, 0)
// in fp64, a block per row (mse_ref_final then averages the B rows).
extern "C" __global__ void __launch_bounds__(256)
triplet_ref_rows(const float *A, const float *P, const float *N, u32 D, double margin, double eps, double *part)
{
    const u64 base = (u64)blockIdx.x * D;
    double sp = 0.0, sn = 0.0;
    for (u32 c = threadIdx.x; c < D; c += blockDim.x) {
        const double a = A[base + c];
        const double dp = a - (double)P[base + c] + eps, dn = a - (double)N[base + c] + eps;
        sp += dp * dp;
        sn += dn * dn;
    }
    sp = block_all(sp, false);
    sn = block_all(sn, false);
    if (threadIdx.x == 0)
        part[blockIdx.x] = fmax(sqrt(sp) - sqrt(sn) + margin, 0.0);
}
