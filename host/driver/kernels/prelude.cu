// prelude.cu: what klab compiles in front of its own judge kernels and of
// every task's reference and shipped baseline kernels (never in front of a
// candidate's code). It holds the one definition of klab's element types:
// reading and writing an element of any task dtype as a double, so a
// reference kernel written once serves bf16, f16, fp8 and fp32 tasks.
//
// Element type codes (the same numbers as host/driver/devkern.h's KD_*):
//   KLAB_F32 0, KLAB_F16 1, KLAB_BF16 2, KLAB_E4M3 3, KLAB_E5M2 4, KLAB_F64 5,
//   KLAB_I32 6, KLAB_U8 7, KLAB_I8 8, KLAB_I64 9 (int64: exact as a double below 2^53).
//
// Sample units. A task's reference computes its outputs in units (an
// element, or a row: the task's reference.units). A full run has
// positions == 0 and computes unit u into slot u of each output; a sampled
// run (a check of a timed run) computes the units positions[0..n) into
// slots 0..n. klab_unit(positions, i) is the unit of slot i in both cases.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

typedef unsigned long long u64;
typedef unsigned int u32;
typedef long long i64;

enum { KLAB_F32 = 0, KLAB_F16 = 1, KLAB_BF16 = 2, KLAB_E4M3 = 3, KLAB_E5M2 = 4, KLAB_F64 = 5,
       KLAB_I32 = 6, KLAB_U8 = 7, KLAB_I8 = 8, KLAB_I64 = 9 };

static __device__ __forceinline__ double klab_load(const void *p, u64 i, int dt)
{
    switch (dt) {
    case KLAB_F32: return ((const float *)p)[i];
    case KLAB_F16: return __half2float(((const __half *)p)[i]);
    case KLAB_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case KLAB_E4M3: { __nv_fp8_e4m3 v; v.__x = ((const unsigned char *)p)[i]; return (float)v; }
    case KLAB_E5M2: { __nv_fp8_e5m2 v; v.__x = ((const unsigned char *)p)[i]; return (float)v; }
    case KLAB_F64: return ((const double *)p)[i];
    case KLAB_I32: return ((const int *)p)[i];
    case KLAB_U8: return ((const unsigned char *)p)[i];
    case KLAB_I8: return ((const signed char *)p)[i];
    case KLAB_I64: return (double)((const long long *)p)[i];
    }
    return 0.0;
}

static __device__ __forceinline__ void klab_store(void *p, u64 i, int dt, double v)
{
    switch (dt) {
    case KLAB_F32: ((float *)p)[i] = (float)v; break;
    case KLAB_F16: ((__half *)p)[i] = __double2half(v); break;
    case KLAB_BF16: ((__nv_bfloat16 *)p)[i] = __double2bfloat16(v); break;
    case KLAB_E4M3: { __nv_fp8_e4m3 q((float)v); ((unsigned char *)p)[i] = q.__x; break; }
    case KLAB_E5M2: { __nv_fp8_e5m2 q((float)v); ((unsigned char *)p)[i] = q.__x; break; }
    case KLAB_F64: ((double *)p)[i] = v; break;
    case KLAB_I32: ((int *)p)[i] = (int)v; break;
    case KLAB_U8: ((unsigned char *)p)[i] = (unsigned char)v; break;
    case KLAB_I8: ((signed char *)p)[i] = (signed char)v; break;
    case KLAB_I64: ((long long *)p)[i] = (long long)v; break;
    }
}

static __device__ __forceinline__ u64 klab_unit(const u64 *positions, u64 i)
{
    return positions ? positions[i] : i;
}

// Rounds to bf16 and back, the way a bf16 output holds a value.
static __device__ __forceinline__ float klab_round_bf16(float v)
{
    return __bfloat162float(__float2bfloat16_rn(v));
}

// The fp64 GEMM core of the references that multiply matrices (gemm,
// matmul, composed tasks): block (blockIdx.x, blockIdx.y) of 16x16 threads
// computes the 64x64 tile of C at columns 64*blockIdx.x and rows
// 64*blockIdx.y. load_a(m, k) and load_b(n, k) give an operand's value as a
// double (called only inside the matrix); store(m, n, sum) receives each sum
// of C inside the matrix. Launch: grid (ceil(N/64), ceil(M/64)), block
// (16, 16).
//
// Every sum runs over k = 0..K-1 in order, one fused multiply-add at a time,
// so a value does not depend on the tiling. From sm_80 the
// sums run on the fp64 tensor cores (mma m8n8k4: c + a0*b0 + ... + a3*b3 as
// four fused multiply-adds in order, checked bitwise against the SIMT loop
// on an H200), 1.6x the SIMT loop at 8192x7168x5120 (29.6 against 47.6
// ms); a GEMM task's correctness run computes its reference for eight input
// sets, so this is most of its cost.
#define KLAB_GT 16
#define KLAB_GB 64

#if __CUDA_ARCH__ >= 800 && !defined(KLAB_GEMM_SIMT)
// Eight warps in a 2x4 grid, each a 32x16 patch of the tile as 4x2
// fragments of 8x8 (lane l holds row l/4, columns 2(l%4) and 2(l%4)+1).
// Eight values of K at a time are staged in shared memory, rows padded to
// 12 doubles so that a half warp's fragment loads meet no bank twice. On
// the H200 at 8192x7168x5120 this measured 20.3 TFLOP/s, against 18.7 with
// 16 values of K, 17.8 with the next chunk read into registers during the
// multiply, 8.7 with a 128x128 tile and 12.5 for the SIMT loop.
template <class LoadA, class LoadB, class Store>
static __device__ __forceinline__ void klab_gemm_tile(u32 M, u32 N, u32 K, LoadA load_a, LoadB load_b, Store store)
{
    enum { KC = 8, PAD = KC + 4, NT = 256, PER = KLAB_GB * KC / NT, WM = 32, WN = 16 };
    __shared__ double As[KLAB_GB][PAD];
    __shared__ double Bs[KLAB_GB][PAD];
    u32 t = threadIdx.y * KLAB_GT + threadIdx.x, warp = t / 32, lane = t % 32, g = lane >> 2, q = lane & 3;
    u32 m0 = blockIdx.y * KLAB_GB, n0 = blockIdx.x * KLAB_GB;
    u32 wm = (warp / (KLAB_GB / WN)) * WM, wn = (warp % (KLAB_GB / WN)) * WN;
    double acc[WM / 8][WN / 8][2];
#pragma unroll
    for (int i = 0; i < WM / 8; i++)
#pragma unroll
        for (int j = 0; j < WN / 8; j++)
            acc[i][j][0] = acc[i][j][1] = 0.0;
    for (u32 k0 = 0; k0 < K; k0 += KC) {
#pragma unroll
        for (int l = 0; l < PER; l++) {
            u32 idx = t + l * NT, r = idx / KC, c = idx % KC, k = k0 + c;
            As[r][c] = (m0 + r < M && k < K) ? load_a(m0 + r, k) : 0.0;
            Bs[r][c] = (n0 + r < N && k < K) ? load_b(n0 + r, k) : 0.0;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < KC; kk += 4) {
            double a[WM / 8], b[WN / 8];
#pragma unroll
            for (int i = 0; i < WM / 8; i++)
                a[i] = As[wm + 8 * i + g][kk + q];
#pragma unroll
            for (int j = 0; j < WN / 8; j++)
                b[j] = Bs[wn + 8 * j + g][kk + q];
#pragma unroll
            for (int i = 0; i < WM / 8; i++)
#pragma unroll
                for (int j = 0; j < WN / 8; j++)
                    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                                 : "+d"(acc[i][j][0]), "+d"(acc[i][j][1])
                                 : "d"(a[i]), "d"(b[j]));
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < WM / 8; i++)
#pragma unroll
        for (int j = 0; j < WN / 8; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                u32 m = m0 + wm + 8 * i + g, n = n0 + wn + 8 * j + 2 * q + e;
                if (m < M && n < N)
                    store(m, n, acc[i][j][e]);
            }
}
#else
// Before sm_80 (and with KLAB_GEMM_SIMT defined, as the GPU check does to
// compare the two): each thread a 4x4 patch (rows ty + 16i, columns tx + 16j)
// in registers, A and B staged through shared memory 16 values of K at a
// time (one output per thread would be bound by shared-memory loads).
template <class LoadA, class LoadB, class Store>
static __device__ __forceinline__ void klab_gemm_tile(u32 M, u32 N, u32 K, LoadA load_a, LoadB load_b, Store store)
{
    enum { GP = KLAB_GB / KLAB_GT };
    __shared__ double As[KLAB_GB][KLAB_GT + 1];
    __shared__ double Bs[KLAB_GB][KLAB_GT + 1];
    u32 tx = threadIdx.x, ty = threadIdx.y, t = ty * KLAB_GT + tx;
    u32 m0 = blockIdx.y * KLAB_GB, n0 = blockIdx.x * KLAB_GB;
    double acc[GP][GP];
    for (int i = 0; i < GP; i++)
        for (int j = 0; j < GP; j++)
            acc[i][j] = 0.0;
    for (u32 k0 = 0; k0 < K; k0 += KLAB_GT) {
        for (int l = 0; l < GP; l++) {
            u32 idx = t + l * KLAB_GT * KLAB_GT, r = idx / KLAB_GT, c = idx % KLAB_GT, k = k0 + c;
            As[r][c] = (m0 + r < M && k < K) ? load_a(m0 + r, k) : 0.0;
            Bs[r][c] = (n0 + r < N && k < K) ? load_b(n0 + r, k) : 0.0;
        }
        __syncthreads();
        for (int kk = 0; kk < KLAB_GT; kk++) {
            double a[GP], b[GP];
            for (int i = 0; i < GP; i++)
                a[i] = As[ty + KLAB_GT * i][kk];
            for (int j = 0; j < GP; j++)
                b[j] = Bs[tx + KLAB_GT * j][kk];
            for (int i = 0; i < GP; i++)
                for (int j = 0; j < GP; j++)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < GP; i++)
        for (int j = 0; j < GP; j++) {
            u32 m = m0 + ty + KLAB_GT * i, n = n0 + tx + KLAB_GT * j;
            if (m < M && n < N)
                store(m, n, acc[i][j]);
        }
}
#endif
