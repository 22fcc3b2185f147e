// tests/gpu/l2_flush_bench.cu: which L2 flush takes away the gain of an
// L2::evict_last hint? Times, alone and with CUDA events, a ReLU and a row
// sum over 999x1021 floats (8 MB: they fit in L2), plain and with
// evict_last (and, for the ReLU, evict_normal) cache hints, after each of
// several flushes: a memset of 2 x L2 as klab's timing does, the persisting
// lines reset before it or not, a clean buffer of 2 x L2 read after it,
// the timed buffers' lines demoted, a flush written with evict_last, a
// synchronisation. Prints the median of each kernel and the hints' gain
// per flush (docs/timing.md has an H100's figures). Not part of the build:
//
//   nvcc -O2 -arch=sm_90a -o build/l2_flush_bench tests/gpu/l2_flush_bench.cu -lcuda
//   build/l2_flush_bench [SAMPLES]        (default 200)
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>

__global__ void relu_plain(const float *X, float *Y, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = X[i]; Y[i] = x > 0.f ? x : 0.f;
}
template <int LAST>
__global__ void relu_hint(const float *X, float *Y, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long policy;
  if (LAST) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  else asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(policy));
  float x;
  asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(x) : "l"(X + i), "l"(policy));
  float y = x > 0.f ? x : 0.f;
  asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;" ::"l"(Y + i), "f"(y), "l"(policy) : "memory");
}
// sum of rows, one block per row
template <int LAST>
__global__ void rowsum(const float *X, float *Y, unsigned C) {
  __shared__ float red[256];
  const float *x = X + (size_t)blockIdx.x * C;
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  float s = 0;
  for (unsigned c = threadIdx.x; c < C; c += 256) {
    float v;
    if (LAST) asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(x + c), "l"(policy));
    else v = x[c];
    s += v;
  }
  red[threadIdx.x] = s; __syncthreads();
  for (int k = 128; k > 0; k >>= 1) { if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k]; __syncthreads(); }
  if (threadIdx.x == 0) Y[blockIdx.x] = red[0];
}
__global__ void readbuf(const unsigned *b, size_t n, unsigned *sink, int mode) {
  unsigned acc = 0;
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned v;
    if (mode == 1) asm volatile("ld.global.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(b + i), "l"(policy));
    else asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(b + i));
    acc ^= v;
  }
  if (acc == 0x12345678u) *sink = acc;
}
__global__ void writebuf_last(unsigned *b, size_t n, unsigned val) {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    asm volatile("st.global.L2::cache_hint.b32 [%0], %1, %2;" ::"l"(b + i), "r"(val), "l"(policy) : "memory");
}
__global__ void demote(const char *b, size_t lines) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < lines; i += (size_t)gridDim.x * blockDim.x)
    asm volatile("applypriority.global.L2::evict_normal [%0], 128;" ::"l"(b + 128 * i) : "memory");
}

#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)

int main(int argc, char **argv) {
  int dev = 0; cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, dev));
  size_t l2 = p.l2CacheSize, fb = 2 * l2;
  printf("%s L2 %zu MB persistingMax %d\n", p.name, l2 >> 20, p.persistingL2CacheMaxSize);
  int samples = argc > 1 ? atoi(argv[1]) : 200;
  unsigned long long n = 999ull * 1021;
  float *X, *Y; CK(cudaMalloc(&X, n * 4)); CK(cudaMalloc(&Y, n * 4));
  std::vector<float> h(n); for (auto &v : h) v = (rand() / (float)RAND_MAX) - 0.5f;
  CK(cudaMemcpy(X, h.data(), n * 4, cudaMemcpyHostToDevice));
  unsigned *F, *G, *sink; CK(cudaMalloc(&F, fb)); CK(cudaMalloc(&G, fb)); CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(G, 1, fb));
  cudaStream_t s; CK(cudaStreamCreate(&s));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  unsigned val = 0;
  const char *modes[] = {"memset", "reset+memset", "memset+read", "read", "reset+memset+read", "lastwrite+read",
                         "memset+demoteXY+read", "memset+sync", "reset+memset+read+sync"};
  int nm = 9;
  const char *kn[] = {"relu_plain", "relu_last", "relu_normal", "sum_plain", "sum_last"};
  int nk = 5;
  for (int m = 0; m < nm; m++) {
    std::vector<std::vector<float>> t(nk);
    for (int smp = 0; smp < samples + 5; smp++)
      for (int k = 0; k < nk; k++) {
        bool reset = (m == 1 || m == 4 || m == 8), read = (m == 2 || m == 3 || m == 4 || m == 5 || m == 6 || m == 8);
        if (reset) { CK(cudaStreamSynchronize(s)); CK(cudaCtxResetPersistingL2Cache()); }
        if (m == 5) writebuf_last<<<264 * 4, 256, 0, s>>>(F, fb / 4, ++val);
        else if (m != 3) CK(cuMemsetD32Async((CUdeviceptr)F, ++val, fb / 4, s) ? cudaErrorUnknown : cudaSuccess);
        if (m == 6) { demote<<<264, 256, 0, s>>>((const char *)X, n * 4 / 128); demote<<<264, 256, 0, s>>>((const char *)Y, n * 4 / 128); }
        if (read) readbuf<<<264 * 4, 256, 0, s>>>(G, fb / 4, sink, 0);
        if (m == 7 || m == 8) CK(cudaStreamSynchronize(s));
        cudaEventRecord(e0, s);
        unsigned g = (unsigned)((n + 255) / 256);
        if (k == 0) relu_plain<<<g, 256, 0, s>>>(X, Y, n);
        if (k == 1) relu_hint<1><<<g, 256, 0, s>>>(X, Y, n);
        if (k == 2) relu_hint<0><<<g, 256, 0, s>>>(X, Y, n);
        if (k == 3) rowsum<0><<<999, 256, 0, s>>>(X, Y, 1021);
        if (k == 4) rowsum<1><<<999, 256, 0, s>>>(X, Y, 1021);
        cudaEventRecord(e1, s);
        CK(cudaStreamSynchronize(s));
        float ms; cudaEventElapsedTime(&ms, e0, e1);
        if (smp >= 5) t[k].push_back(ms * 1000);
      }
    printf("%-22s", modes[m]);
    double med[5];
    for (int k = 0; k < nk; k++) { std::sort(t[k].begin(), t[k].end()); med[k] = t[k][t[k].size() / 2]; printf(" %s %.3f", kn[k], med[k]); }
    printf(" | relu gain %+.1f%% (normal %+.1f%%) sum gain %+.1f%%\n", 100 * (med[0] / med[1] - 1), 100 * (med[0] / med[2] - 1), 100 * (med[3] / med[4] - 1));
  }
  CK(cudaGetLastError());
  return 0;
}
