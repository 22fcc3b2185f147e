/*
 * devkern.h: klab's own device kernels (host/driver/kernels/judge.cu), the trusted
 * side of an evaluation: seeded fills, poison and guard patterns, checksums,
 * the element-wise comparison and the reference GEMM.
 *
 * The source is embedded in the binary and compiled with NVRTC for the
 * device's exact architecture by the caller (jit), so that the same compiler
 * path serves candidates and the judge. A devkern is loaded once per worker
 * and reused for every candidate.
 *
 * All operations are enqueued on the given stream. The ones that return a
 * figure (checks, checksums, comparisons) synchronise that stream.
 */
#ifndef KLAB_HOST_DEVKERN_H
#define KLAB_HOST_DEVKERN_H

#include <stddef.h>
#include <stdint.h>

#include "driver/cuda.h"
#include "base/status.h"

/* Element types, shared with judge.cu. */
enum {
    KD_F32 = 0, KD_F16 = 1, KD_BF16 = 2, KD_E4M3 = 3, KD_E5M2 = 4, KD_F64 = 5,
    KD_I32 = 6, KD_U8 = 7, KD_I8 = 8, KD_I64 = 9, KD_NTYPES = 10
};

/* Distributions of devkern_fill. */
enum { KD_NORMAL = 0, KD_UNIFORM = 1, KD_SPIKY = 2, KD_INT = 3, KD_CONST = 4 };

/* "bf16" -> KD_BF16, ...; -1 when unknown. Accepts the common spellings
 * (f32/fp32/float32, f16/fp16/half, bf16/bfloat16, e4m3/fp8e4m3, e5m2/fp8e5m2,
 * f64/fp64, i32/int32, u8/uint8, i8/int8, i64/int64). */
int kd_dtype_from_name(const char *name);
const char *kd_dtype_name(int dt);
/* Bytes per element, 0 for an unknown type. */
size_t kd_dtype_size(int dt);

/* The embedded CUDA source of the judge kernels; compile it after the
 * prelude. */
const char *devkern_source(size_t *len);

/* The embedded prelude (host/driver/kernels/prelude.cu): klab's element
 * types, compiled in front of the judge kernels and of every task's
 * reference and shipped baseline kernels. */
const char *devkern_prelude(size_t *len);

typedef struct devkern devkern;

/* Loads the judge kernels from a cubin compiled from the prelude and devkern_source() for
 * this device. */
int devkern_open(cuda_ctx *c, const void *cubin, size_t n, devkern **out, ks_status *st);

/* Unloads; NULL is a no-op. */
void devkern_close(devkern *k);

int devkern_fill(devkern *k, CUstream s, CUdeviceptr p, size_t n, int dt, int dist, uint64_t seed,
                 double a, double b, double scale, ks_status *st);

/* Writes the little-endian 32-bit pattern over nbytes starting at p. */
int devkern_pattern(devkern *k, CUstream s, CUdeviceptr p, size_t nbytes, uint32_t pattern,
                    ks_status *st);

/* Reads the nbytes at p through L2 (the second half of the timing flush);
 * enqueued only. DEVKERN_L2_READ is its name in a profiler's records. */
#define DEVKERN_L2_READ "k_l2_read"
int devkern_l2_read(devkern *k, CUstream s, CUdeviceptr p, size_t nbytes, ks_status *st);

/* Counts the bytes that differ from the pattern and the first such offset
 * (UINT64_MAX when none). */
int devkern_pattern_check(devkern *k, CUstream s, CUdeviceptr p, size_t nbytes, uint32_t pattern,
                          uint64_t *bad, uint64_t *first, ks_status *st);

/* An order-independent 64-bit checksum of nbytes. */
int devkern_checksum(devkern *k, CUstream s, CUdeviceptr p, size_t nbytes, uint64_t *sum,
                     ks_status *st);

typedef struct kd_compare {
    uint64_t total;       /* elements compared */
    uint64_t failed;      /* elements outside tolerance, NaN and Inf included */
    uint64_t nan, inf;
    double max_abs;       /* largest |x - y| (inf when a NaN/Inf was seen) */
    uint64_t max_abs_at;  /* its element index */
    double max_rel;
    uint64_t max_rel_at;
    uint64_t first_fail;  /* UINT64_MAX when none */
} kd_compare;

/* Compares n elements of got (type dt) with the fp32 reference want by the
 * rule |x-y| > atol and |x-y|/(|y|+1e-8) > rtol (NaN and Inf always fail).
 * Indices are exact for n < 2^32. */
int devkern_compare(devkern *k, CUstream s, CUdeviceptr got, int dt, CUdeviceptr want, size_t n,
                    double atol, double rtol, kd_compare *r, ks_status *st);

/* Counts bytes that differ between a and b, and the first offset. */
int devkern_bitdiff(devkern *k, CUstream s, CUdeviceptr a, CUdeviceptr b, size_t nbytes,
                    uint64_t *count, uint64_t *first, ks_status *st);

/* dst[i*unit + e] = src[positions[i]*unit + e] for i < n, e < unit, both of
 * type dt; positions is a device array of n u64 unit indices. */
int devkern_gather(devkern *k, CUstream s, CUdeviceptr src, int dt, CUdeviceptr positions, size_t n,
                   size_t unit, CUdeviceptr dst, ks_status *st);

/* out[i] (u64, i < n) = a position drawn uniformly from [0, total), a pure
 * function of (seed, i). */
int devkern_positions(devkern *k, CUstream s, CUdeviceptr out, size_t n, uint64_t total, uint64_t seed,
                      ks_status *st);

/* Converts n elements from type dts at src to type dtd at dst. */
int devkern_convert(devkern *k, CUstream s, CUdeviceptr src, int dts, CUdeviceptr dst, int dtd,
                    size_t n, ks_status *st);

#endif
