// Known-bad: a top-k sampler that ignores top_k and draws from the whole
// row (an inverse-CDF draw over every token). Right only on rows where the
// draw falls inside the top-k tokens' part of the distribution.
#define NT 512

extern "C" __global__ void __launch_bounds__(NT)
top_k_sampling(const float *probs, const int *top_k, const float *uniform, int *samples, unsigned B, unsigned V)
{
    __shared__ float chunk[NT];
    __shared__ int found;
    const float *row = probs + (size_t)blockIdx.x * V;
    const unsigned per = (V + NT - 1) / NT, from = threadIdx.x * per;
    const unsigned to = from + per < V ? from + per : V;
    float own = 0.0f;
    for (unsigned i = from; i < to; i++)
        own += row[i] * 65536.0f;
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
    }
    __syncthreads();
    const float limit = uniform[blockIdx.x] * 65536.0f; // the whole row: S = 1
    float run = chunk[threadIdx.x];
    if (run <= limit && run + own > limit) {
        for (unsigned i = from; i < to; i++) {
            run += row[i] * 65536.0f;
            if (run > limit) {
                found = (int)i;
                break;
            }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0)
        samples[blockIdx.x] = found;
}
