// prelude.cu: what klab compiles in front of its own judge kernels and of
// every task's reference and shipped baseline kernels (never in front of a
// candidate's code). It holds the one definition of klab's element types:
// reading and writing an element of any task dtype as a double, so a
// reference kernel written once serves bf16, f16, fp8 and fp32 tasks.
//
// Element type codes (the same numbers as host/driver/devkern.h's KD_*):
//   KLAB_F32 0, KLAB_F16 1, KLAB_BF16 2, KLAB_E4M3 3, KLAB_E5M2 4, KLAB_F64 5,
//   KLAB_I32 6, KLAB_U8 7, KLAB_I8 8.
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
       KLAB_I32 = 6, KLAB_U8 = 7, KLAB_I8 = 8 };

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
