// naive_rmsnorm_mid: RMSNorm over the middle dimension of X[B, F, S], one
// thread per (b, s) column (the task's default plan): the column's mean of
// squares in fp32, then each element divided by sqrt(mean + 1e-5).

extern "C" __global__ void rmsnorm_mid(const float *__restrict__ X, float *__restrict__ Y, unsigned B, unsigned F,
                                       unsigned S)
{
    const size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= (size_t)B * S)
        return;
    const size_t base = o / S * F * S + o % S;
    float sq = 0.0f;
    for (unsigned f = 0; f < F; ++f)
        sq += X[base + (size_t)f * S] * X[base + (size_t)f * S];
    const float rms = sqrtf(sq / F + 1e-5f);
    for (unsigned f = 0; f < F; ++f)
        Y[base + (size_t)f * S] = X[base + (size_t)f * S] / rms;
}
