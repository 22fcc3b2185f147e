// A plain MoE router for both routing tasks. moe_route_grouped and
// moe_route_softmax: a thread per token doing the selection serially in
// fp32 (scans in increasing index with a strict comparison, so ties go to
// the lower index). moe_permute: one block, a thread per expert: the
// experts' counts, their offsets, then each expert walks every assignment
// in order, numbering its own. Needs E <= 256.
#define MAXE 256

static __device__ void route(const float *logits, const float *bias, int *ids, float *wts, unsigned T, unsigned E,
                             unsigned K, unsigned G, unsigned TG, bool sigmoid, float scale)
{
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T)
        return;
    const float *l = logits + (size_t)t * E;
    float s[MAXE], key[MAXE];
    float m = l[0];
    for (unsigned e = 1; e < E; e++)
        m = fmaxf(m, l[e]);
    float z = 0.0f;
    for (unsigned e = 0; e < E; e++) {
        s[e] = sigmoid ? 1.0f / (1.0f + expf(-l[e])) : expf(l[e] - m);
        z += s[e];
    }
    for (unsigned e = 0; e < E; e++) {
        if (!sigmoid)
            s[e] /= z;
        key[e] = s[e] + bias[e];
    }
    unsigned groups = 0xffffffffu;
    const unsigned EG = E / G;
    if (G > 1) {
        float gs[32];
        for (unsigned g = 0; g < G; g++) {
            unsigned a = g * EG;
            for (unsigned e = g * EG + 1; e < (g + 1) * EG; e++)
                if (key[e] > key[a])
                    a = e;
            unsigned b = a == g * EG ? g * EG + 1 : g * EG;
            for (unsigned e = g * EG; e < (g + 1) * EG; e++)
                if (e != a && key[e] > key[b])
                    b = e;
            gs[g] = key[a] + key[b];
        }
        groups = 0;
        for (unsigned r = 0; r < TG; r++) {
            int best = -1;
            for (unsigned g = 0; g < G; g++)
                if (!(groups >> g & 1u) && (best < 0 || gs[g] > gs[best]))
                    best = (int)g;
            groups |= 1u << best;
        }
    }
    unsigned taken[MAXE / 32] = { 0 };
    int pick[32];
    float total = 0.0f;
    for (unsigned k = 0; k < K; k++) {
        int best = -1;
        for (unsigned e = 0; e < E; e++)
            if ((groups >> (e / EG) & 1u) && !(taken[e / 32] >> (e % 32) & 1u) && (best < 0 || key[e] > key[best]))
                best = (int)e;
        taken[best / 32] |= 1u << (best % 32);
        pick[k] = best;
        total += s[best];
    }
    for (unsigned k = 0; k < K; k++) {
        ids[(size_t)t * K + k] = pick[k];
        wts[(size_t)t * K + k] = s[pick[k]] / total * scale;
    }
}

extern "C" __global__ void moe_route_grouped(const float *logits, const float *bias, int *topk_ids,
                                             float *topk_weights, unsigned T, unsigned E, unsigned K, unsigned G,
                                             unsigned TG)
{
    route(logits, bias, topk_ids, topk_weights, T, E, K, G, TG, true, 2.5f);
}

extern "C" __global__ void moe_route_softmax(const float *logits, const float *bias, int *topk_ids,
                                             float *topk_weights, unsigned T, unsigned E, unsigned K, unsigned G,
                                             unsigned TG)
{
    route(logits, bias, topk_ids, topk_weights, T, E, K, G, TG, false, 1.0f);
}

extern "C" __global__ void moe_permute(const int *topk_ids, int *dest, unsigned T, unsigned E, unsigned K)
{
    __shared__ unsigned first[1024];
    const size_t n = (size_t)T * K;
    for (unsigned e = threadIdx.x; e < E; e += blockDim.x) {
        unsigned c = 0;
        for (size_t a = 0; a < n; a++)
            c += topk_ids[a] == (int)e;
        first[e] = c;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned run = 0;
        for (unsigned e = 0; e < E; e++) {
            const unsigned c = first[e];
            first[e] = run;
            run += c;
        }
    }
    __syncthreads();
    for (unsigned e = threadIdx.x; e < E; e += blockDim.x) {
        unsigned row = first[e];
        for (size_t a = 0; a < n; a++)
            if (topk_ids[a] == (int)e)
                dest[a] = (int)row++;
    }
}
