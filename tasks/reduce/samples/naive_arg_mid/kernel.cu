// naive_arg_mid: argmax_mid and argmin_mid over the middle dimension of
// X[B, N, D], one thread per output (the tasks' default plans), scanning n
// in order and keeping the first strict improvement.

static __device__ void arg_mid(const float *__restrict__ X, int *__restrict__ I, unsigned B, unsigned N, unsigned D,
                               float sign)
{
    const size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= (size_t)B * D)
        return;
    const float *x = X + (o / D) * N * D + o % D;
    int at = 0;
    float best = sign * x[0];
    for (unsigned n = 1; n < N; ++n) {
        const float v = sign * x[(size_t)n * D];
        if (v > best) {
            best = v;
            at = (int)n;
        }
    }
    I[o] = at;
}

extern "C" __global__ void argmax_mid(const float *X, int *I, unsigned B, unsigned N, unsigned D)
{
    arg_mid(X, I, B, N, D, 1.0f);
}

extern "C" __global__ void argmin_mid(const float *X, int *I, unsigned B, unsigned N, unsigned D)
{
    arg_mid(X, I, B, N, D, -1.0f);
}
