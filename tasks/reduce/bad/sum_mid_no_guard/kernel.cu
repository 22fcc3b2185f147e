// Known bad: a sum over the middle dimension, a thread per output, with no
// check that the thread's column is inside D. The default plan rounds D up
// to a multiple of 256, so on D = 129 the spare threads of the last batch
// write past the end of Y (and the others write over the next batch's
// outputs).
extern "C" __global__ void sum_mid(const float *X, float *Y, unsigned B, unsigned N, unsigned D)
{
    const unsigned b = blockIdx.y;
    const unsigned d = blockIdx.x * 256 + threadIdx.x;
    const float *x = X + (size_t)b * N * D + d;
    float s = 0.0f;
    for (unsigned k = 0; k < N; k++)
        s += x[(size_t)k * D];
    Y[(size_t)b * D + d] = s;
}
