// A plain sampler for the three sampling tasks (one entry point each): a
// block of 512 threads per row. Each threshold is found by bisection over
// whole grains g (a pass over the row per step, counting or summing the
// grains above g), then each thread sums the kept mass of its contiguous
// chunk of the row, thread 0 turns the chunk sums into running sums, and
// the thread whose chunk holds the draw finds it. All in fp32, which is
// exact for these inputs: sums of whole grains and single products.
#define NT 512

static __device__ float block_sum(float v, float *red)
{
    __syncthreads();
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned k = NT / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    return red[0];
}

// Count (mass == false) or mass in grains of the row's grains above g.
static __device__ float above(const float *row, unsigned V, float g, bool mass, float *red)
{
    float s = 0.0f;
    for (unsigned i = threadIdx.x; i < V; i += NT) {
        float q = row[i] * 65536.0f;
        if (q > g)
            s += mass ? q : 1.0f;
    }
    return block_sum(s, red);
}

// The smallest whole g in [lo, 65536] with stat(q > g) < limit.
static __device__ float threshold(const float *row, unsigned V, bool mass, float limit, float lo, float *red)
{
    if (above(row, V, lo, mass, red) < limit)
        return lo;
    float a = lo, b = 65536.0f;
    while (b - a > 1.0f) {
        float m = floorf((a + b) * 0.5f);
        if (above(row, V, m, mass, red) < limit)
            b = m;
        else
            a = m;
    }
    return b;
}

// The smallest i with q_i >= g whose running kept mass exceeds u * S.
static __device__ void draw(const float *row, unsigned V, float g, float u, int *out, float *red)
{
    __shared__ float chunk[NT];
    __shared__ int found;
    const unsigned per = (V + NT - 1) / NT, from = threadIdx.x * per;
    const unsigned to = from + per < V ? from + per : V;
    float own = 0.0f;
    for (unsigned i = from; i < to; i++) {
        float q = row[i] * 65536.0f;
        if (q >= g)
            own += q;
    }
    __syncthreads();
    chunk[threadIdx.x] = own;
    if (threadIdx.x == 0)
        found = -1;
    __syncthreads();
    if (threadIdx.x == 0) {
        float run = 0.0f;
        for (unsigned t = 0; t < NT; t++) {
            float c = chunk[t];
            chunk[t] = run;
            run += c;
        }
        red[0] = run;
    }
    __syncthreads();
    const float limit = u * red[0];
    float run = chunk[threadIdx.x];
    if (run <= limit && run + own > limit) {
        for (unsigned i = from; i < to; i++) {
            float q = row[i] * 65536.0f;
            if (q >= g) {
                run += q;
                if (run > limit) {
                    found = (int)i;
                    break;
                }
            }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0)
        *out = found;
}

extern "C" __global__ void __launch_bounds__(NT)
top_k_sampling(const float *probs, const int *top_k, const float *uniform, int *samples, unsigned B, unsigned V)
{
    __shared__ float red[NT];
    const float *row = probs + (size_t)blockIdx.x * V;
    float g = threshold(row, V, false, (float)top_k[blockIdx.x], 0.0f, red);
    draw(row, V, g, uniform[blockIdx.x], samples + blockIdx.x, red);
}

extern "C" __global__ void __launch_bounds__(NT)
top_p_sampling(const float *probs, const float *top_p, const float *uniform, int *samples, unsigned B, unsigned V)
{
    __shared__ float red[NT];
    const float *row = probs + (size_t)blockIdx.x * V;
    float g = threshold(row, V, true, top_p[blockIdx.x] * 65536.0f, 0.0f, red);
    draw(row, V, g, uniform[blockIdx.x], samples + blockIdx.x, red);
}

extern "C" __global__ void __launch_bounds__(NT)
top_k_top_p_sampling(const float *probs, const int *top_k, const float *top_p, const float *uniform, int *samples,
                     unsigned B, unsigned V)
{
    __shared__ float red[NT];
    const float *row = probs + (size_t)blockIdx.x * V;
    float gk = threshold(row, V, false, (float)top_k[blockIdx.x], 0.0f, red);
    float sk = above(row, V, gk - 0.5f, true, red); // the mass top-k keeps
    float g = threshold(row, V, true, top_p[blockIdx.x] * sk, gk, red);
    draw(row, V, g, uniform[blockIdx.x], samples + blockIdx.x, red);
}
