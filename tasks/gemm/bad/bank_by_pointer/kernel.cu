// KNOWN BAD (a result bank keyed by pointers). Banks every result it
// computes in module globals, keyed by the addresses of A and B, and replays
// the banked C (a bulk copy) whenever it sees the same addresses again: a
// harness that times the candidate on input sets it has already checked, at
// the same addresses, with globals kept from run to run, would time the
// copies. klab restores module globals before every run and gives every
// timed run fresh inputs at shifted addresses, so the bank is always empty:
// the kernel computes every time (a naive dot product per element) and is
// timed as what it is. Launch: 16x16 blocks over C, as samples/naive.

typedef unsigned short bf16_t;
typedef unsigned long long u64;

#define SLOTS 8
#define SLOT_ELEMS (1u << 21)   /* 2 Mi elements per banked C (1000 x 1000 fits) */

__device__ bf16_t g_bank[SLOTS][SLOT_ELEMS];
__device__ u64 g_key[SLOTS][2];
__device__ unsigned g_valid[SLOTS];
__device__ unsigned g_next;     /* the slot the next miss fills */
__device__ unsigned g_done;     /* blocks of this launch that finished */

static __device__ __forceinline__ float bf(bf16_t h) { return __uint_as_float((unsigned)h << 16); }
static __device__ __forceinline__ bf16_t to_bf(float f)
{
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

extern "C" __global__ void gemm(const bf16_t *A, const bf16_t *B, bf16_t *C, unsigned M, unsigned N, unsigned K)
{
    __shared__ int hit, slot;
    const bool fits = (u64)M * N <= SLOT_ELEMS;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        hit = -1;
        for (int s = 0; s < SLOTS && fits; s++)
            if (((volatile unsigned *)g_valid)[s] && g_key[s][0] == (u64)A && g_key[s][1] == (u64)B)
                hit = s;
        slot = hit >= 0 ? hit : (int)(((volatile unsigned *)&g_next)[0] % SLOTS);
    }
    __syncthreads();
    const unsigned n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m < M && n < N) {
        const u64 i = (u64)m * N + n;
        if (hit >= 0) {
            C[i] = g_bank[hit][i];
        } else {
            float acc = 0.0f;
            for (unsigned k = 0; k < K; k++)
                acc = fmaf(bf(A[(u64)m * K + k]), bf(B[(u64)n * K + k]), acc);
            C[i] = to_bf(acc);
            if (fits)
                g_bank[slot][i] = C[i];
        }
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && atomicAdd(&g_done, 1u) == gridDim.x * gridDim.y - 1) {
        if (hit < 0 && fits) {   /* the last block out publishes the new entry */
            g_key[slot][0] = (u64)A;
            g_key[slot][1] = (u64)B;
            g_valid[slot] = 1u;
            g_next = g_next + 1;
        }
        g_done = 0u;
        __threadfence();
    }
}
