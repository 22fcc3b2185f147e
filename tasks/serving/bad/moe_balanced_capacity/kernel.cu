// Known-bad: a softmax top-k router whose permutation assumes balanced
// experts. moe_route_softmax is right (a thread per token, serial top-k,
// ties to the lower index); moe_permute gives every expert a fixed
// capacity of ceil(T*K/E) rows (expert e's rows start at e * capacity) and
// drops the assignments past an expert's capacity (their dest is never
// written). Right only when every expert gets exactly its share; the
// inputs' loads are uneven (one hot expert takes every token in one
// distribution, and random logits never split evenly). Needs E <= 256.
extern "C" __global__ void moe_route_softmax(const float *logits, const float *bias, int *topk_ids,
                                             float *topk_weights, unsigned T, unsigned E, unsigned K, unsigned G,
                                             unsigned TG)
{
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T)
        return;
    const float *l = logits + (size_t)t * E;
    float s[256];
    float m = l[0], z = 0.0f;
    for (unsigned e = 1; e < E; e++)
        m = fmaxf(m, l[e]);
    for (unsigned e = 0; e < E; e++)
        z += (s[e] = expf(l[e] - m));
    unsigned taken[8] = { 0 };
    int pick[32];
    float total = 0.0f;
    for (unsigned k = 0; k < K; k++) {
        int best = -1;
        for (unsigned e = 0; e < E; e++)
            if (!(taken[e / 32] >> (e % 32) & 1u) &&
                (best < 0 || s[e] / z + bias[e] > s[best] / z + bias[best]))
                best = (int)e;
        taken[best / 32] |= 1u << (best % 32);
        pick[k] = best;
        total += s[best] / z;
    }
    for (unsigned k = 0; k < K; k++) {
        topk_ids[(size_t)t * K + k] = pick[k];
        topk_weights[(size_t)t * K + k] = s[pick[k]] / z / total;
    }
}

extern "C" __global__ void moe_permute(const int *topk_ids, int *dest, unsigned T, unsigned E, unsigned K)
{
    const size_t n = (size_t)T * K;
    const unsigned capacity = (unsigned)((n + E - 1) / E); // the bug: every expert gets its even share
    for (unsigned e = threadIdx.x; e < E; e += blockDim.x) {
        unsigned used = 0;
        for (size_t a = 0; a < n; a++)
            if (topk_ids[a] == (int)e && used < capacity)
                dest[a] = (int)(e * capacity + used++);
    }
}
