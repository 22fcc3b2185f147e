/* devkern.c: launching klab's own judge kernels (see devkern.h). */
#include "driver/devkern.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern const char klab_kernel_prelude[];
extern const unsigned long klab_kernel_prelude_len;
extern const char klab_kernel_judge[];
extern const unsigned long klab_kernel_judge_len;

/* Scratch words for results: enough for k_compare's six figures. */
#define SCRATCH_WORDS 8

struct devkern {
    cuda_ctx *ctx;
    CUmodule mod;
    CUfunction fill, pattern, pattern_check, checksum, compare, bitdiff, gather, positions, convert, l2_read;
    CUdeviceptr scratch;
};

static const struct {
    const char *name;
    int dt;
} dtype_names[] = {
    {"f32", KD_F32}, {"fp32", KD_F32}, {"float32", KD_F32}, {"float", KD_F32},
    {"f16", KD_F16}, {"fp16", KD_F16}, {"float16", KD_F16}, {"half", KD_F16},
    {"bf16", KD_BF16}, {"bfloat16", KD_BF16},
    {"e4m3", KD_E4M3}, {"fp8e4m3", KD_E4M3}, {"fp8_e4m3", KD_E4M3},
    {"e5m2", KD_E5M2}, {"fp8e5m2", KD_E5M2}, {"fp8_e5m2", KD_E5M2},
    {"f64", KD_F64}, {"fp64", KD_F64}, {"float64", KD_F64}, {"double", KD_F64},
    {"i32", KD_I32}, {"int32", KD_I32},
    {"u8", KD_U8}, {"uint8", KD_U8},
    {"i8", KD_I8}, {"int8", KD_I8},
    {"i64", KD_I64}, {"int64", KD_I64},
};

int kd_dtype_from_name(const char *name)
{
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (strcasecmp(name, dtype_names[i].name) == 0)
            return dtype_names[i].dt;
    return -1;
}

const char *kd_dtype_name(int dt)
{
    static const char *names[KD_NTYPES] = {"f32", "f16", "bf16", "e4m3", "e5m2", "f64", "i32", "u8", "i8", "i64"};
    return dt >= 0 && dt < KD_NTYPES ? names[dt] : "unknown";
}

size_t kd_dtype_size(int dt)
{
    static const size_t sizes[KD_NTYPES] = {4, 2, 2, 1, 1, 8, 4, 1, 1, 8};
    return dt >= 0 && dt < KD_NTYPES ? sizes[dt] : 0;
}

const char *devkern_prelude(size_t *len)
{
    if (len)
        *len = klab_kernel_prelude_len;
    return klab_kernel_prelude;
}

const char *devkern_source(size_t *len)
{
    if (len)
        *len = klab_kernel_judge_len;
    return klab_kernel_judge;
}

int devkern_open(cuda_ctx *c, const void *cubin, size_t n, devkern **out, ks_status *st)
{
    *out = NULL;
    devkern *k = calloc(1, sizeof *k);
    if (!k)
        return ks_fail(st, KS_ENOMEM, 0, "out of host memory");
    k->ctx = c;
    char log[2048];
    int rc = cuda_module_load(c, cubin, n, &k->mod, log, sizeof log, st);
    if (rc != KS_OK) {
        free(k);
        return rc;
    }
    struct {
        const char *name;
        CUfunction *fn;
    } fns[] = {
        {"k_fill", &k->fill}, {"k_pattern", &k->pattern}, {"k_pattern_check", &k->pattern_check},
        {"k_checksum", &k->checksum}, {"k_compare", &k->compare}, {"k_bitdiff", &k->bitdiff},
        {"k_gather", &k->gather}, {"k_positions", &k->positions}, {"k_convert", &k->convert}, {DEVKERN_L2_READ, &k->l2_read},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        rc = cuda_func_get(c, k->mod, fns[i].name, fns[i].fn, st);
        if (rc != KS_OK)
            goto fail;
    }
    rc = cuda_mem_alloc(c, SCRATCH_WORDS * sizeof(uint64_t), &k->scratch, st);
    if (rc != KS_OK)
        goto fail;
    *out = k;
    return KS_OK;
fail:;
    ks_status ignore;
    cuda_module_unload(c, k->mod, &ignore);
    free(k);
    return rc;
}

void devkern_close(devkern *k)
{
    if (!k)
        return;
    ks_status ignore;
    if (k->scratch)
        cuda_mem_free(k->ctx, k->scratch, &ignore);
    if (k->mod)
        cuda_module_unload(k->ctx, k->mod, &ignore);
    free(k);
}

/* A grid-stride launch sized for n items: enough blocks to fill the GPU
 * several times over, never more than n needs. */
static int launch_1d(devkern *k, CUstream s, CUfunction f, uint64_t n, void **params, ks_status *st)
{
    cuda_launch l;
    memset(&l, 0, sizeof l);
    uint64_t blocks = (n + 255) / 256;
    if (blocks < 1)
        blocks = 1;
    if (blocks > 4096)
        blocks = 4096;
    l.grid[0] = (unsigned)blocks;
    l.grid[1] = l.grid[2] = 1;
    l.block[0] = 256;
    l.block[1] = l.block[2] = 1;
    l.stream = s;
    return cuda_launch_kernel(k->ctx, f, &l, params, st);
}

/* Sets the scratch words to their starting values. The copy is synchronous
 * but does not wait for a non-blocking stream, so the stream is drained first
 * (an earlier check may still be reading the scratch words). */
static int scratch_reset(devkern *k, CUstream s, const uint64_t *init, size_t nwords, ks_status *st)
{
    int rc = cuda_stream_sync(k->ctx, s, st);
    if (rc != KS_OK)
        return rc;
    return cuda_memcpy_htod(k->ctx, k->scratch, init, nwords * sizeof(uint64_t), st);
}

static int scratch_read(devkern *k, CUstream s, uint64_t *out, size_t nwords, ks_status *st)
{
    int rc = cuda_stream_sync(k->ctx, s, st);
    if (rc != KS_OK)
        return rc;
    return cuda_memcpy_dtoh(k->ctx, out, k->scratch, nwords * sizeof(uint64_t), st);
}

static int check_dtype(int dt, ks_status *st)
{
    if (kd_dtype_size(dt) == 0)
        return ks_fail(st, KS_EINVAL, 0, "unknown element type %d", dt);
    return KS_OK;
}

int devkern_fill(devkern *k, CUstream s, CUdeviceptr p, size_t n, int dt, int dist, uint64_t seed,
                 double a, double b, double scale, ks_status *st)
{
    if (check_dtype(dt, st) != KS_OK)
        return st->code;
    if (dist < KD_NORMAL || dist > KD_CONST)
        return ks_fail(st, KS_EINVAL, 0, "unknown distribution %d", dist);
    unsigned long long nn = n, sd = seed;
    void *params[] = {&p, &nn, &dt, &dist, &sd, &a, &b, &scale};
    return launch_1d(k, s, k->fill, n, params, st);
}

int devkern_pattern(devkern *k, CUstream s, CUdeviceptr p, size_t nbytes, uint32_t pattern,
                    ks_status *st)
{
    unsigned long long nb = nbytes;
    unsigned pat = pattern;
    void *params[] = {&p, &nb, &pat};
    return launch_1d(k, s, k->pattern, nbytes, params, st);
}

int devkern_l2_read(devkern *k, CUstream s, CUdeviceptr p, size_t nbytes, ks_status *st)
{
    unsigned long long n = nbytes / 4;
    CUdeviceptr sink = k->scratch;
    void *params[] = {&p, &n, &sink};
    return launch_1d(k, s, k->l2_read, n, params, st);
}

int devkern_pattern_check(devkern *k, CUstream s, CUdeviceptr p, size_t nbytes, uint32_t pattern,
                          uint64_t *bad, uint64_t *first, ks_status *st)
{
    uint64_t init[2] = {0, UINT64_MAX}, res[2];
    int rc = scratch_reset(k, s, init, 2, st);
    if (rc != KS_OK)
        return rc;
    unsigned long long nb = nbytes;
    unsigned pat = pattern;
    CUdeviceptr out = k->scratch;
    void *params[] = {&p, &nb, &pat, &out};
    if ((rc = launch_1d(k, s, k->pattern_check, nbytes, params, st)) != KS_OK)
        return rc;
    if ((rc = scratch_read(k, s, res, 2, st)) != KS_OK)
        return rc;
    *bad = res[0];
    *first = res[1];
    return KS_OK;
}

int devkern_checksum(devkern *k, CUstream s, CUdeviceptr p, size_t nbytes, uint64_t *sum,
                     ks_status *st)
{
    uint64_t init[1] = {0};
    int rc = scratch_reset(k, s, init, 1, st);
    if (rc != KS_OK)
        return rc;
    unsigned long long nb = nbytes;
    CUdeviceptr out = k->scratch;
    void *params[] = {&p, &nb, &out};
    if ((rc = launch_1d(k, s, k->checksum, nbytes / 8 + 1, params, st)) != KS_OK)
        return rc;
    return scratch_read(k, s, sum, 1, st);
}

static double key_value(uint64_t key)
{
    uint32_t bits = (uint32_t)(key >> 32);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

int devkern_compare(devkern *k, CUstream s, CUdeviceptr got, int dt, CUdeviceptr want, size_t n,
                    double atol, double rtol, kd_compare *r, ks_status *st)
{
    if (check_dtype(dt, st) != KS_OK)
        return st->code;
    uint64_t init[6] = {0, 0, 0, 0, 0, UINT64_MAX}, res[6];
    int rc = scratch_reset(k, s, init, 6, st);
    if (rc != KS_OK)
        return rc;
    unsigned long long nn = n;
    CUdeviceptr out = k->scratch;
    void *params[] = {&got, &dt, &want, &nn, &atol, &rtol, &out};
    if ((rc = launch_1d(k, s, k->compare, n, params, st)) != KS_OK)
        return rc;
    if ((rc = scratch_read(k, s, res, 6, st)) != KS_OK)
        return rc;
    memset(r, 0, sizeof *r);
    r->total = n;
    r->failed = res[0];
    r->nan = res[1];
    r->inf = res[2];
    r->max_abs = key_value(res[3]);
    r->max_abs_at = (uint32_t)res[3];
    r->max_rel = key_value(res[4]);
    r->max_rel_at = (uint32_t)res[4];
    r->first_fail = res[5];
    return KS_OK;
}

int devkern_bitdiff(devkern *k, CUstream s, CUdeviceptr a, CUdeviceptr b, size_t nbytes,
                    uint64_t *count, uint64_t *first, ks_status *st)
{
    uint64_t init[2] = {0, UINT64_MAX}, res[2];
    int rc = scratch_reset(k, s, init, 2, st);
    if (rc != KS_OK)
        return rc;
    unsigned long long nb = nbytes;
    CUdeviceptr out = k->scratch;
    void *params[] = {&a, &b, &nb, &out};
    if ((rc = launch_1d(k, s, k->bitdiff, nbytes, params, st)) != KS_OK)
        return rc;
    if ((rc = scratch_read(k, s, res, 2, st)) != KS_OK)
        return rc;
    *count = res[0];
    *first = res[1];
    return KS_OK;
}

int devkern_gather(devkern *k, CUstream s, CUdeviceptr src, int dt, CUdeviceptr positions, size_t n,
                   size_t unit, CUdeviceptr dst, ks_status *st)
{
    if (check_dtype(dt, st) != KS_OK)
        return st->code;
    if (unit == 0 || n > SIZE_MAX / unit)
        return ks_fail(st, KS_EINVAL, 0, "gather: %zu units of %zu elements", n, unit);
    unsigned long long nn = n, uu = unit;
    void *params[] = {&src, &dt, &positions, &nn, &uu, &dst};
    return launch_1d(k, s, k->gather, n * unit, params, st);
}

int devkern_positions(devkern *k, CUstream s, CUdeviceptr out, size_t n, uint64_t total, uint64_t seed,
                      ks_status *st)
{
    if (total == 0)
        return ks_fail(st, KS_EINVAL, 0, "positions: no units to draw from");
    unsigned long long nn = n, tt = total, ss = seed;
    void *params[] = {&out, &nn, &tt, &ss};
    return launch_1d(k, s, k->positions, n, params, st);
}

int devkern_convert(devkern *k, CUstream s, CUdeviceptr src, int dts, CUdeviceptr dst, int dtd,
                    size_t n, ks_status *st)
{
    if (check_dtype(dts, st) != KS_OK || check_dtype(dtd, st) != KS_OK)
        return st->code;
    unsigned long long nn = n;
    void *params[] = {&src, &dts, &dst, &dtd, &nn};
    return launch_1d(k, s, k->convert, n, params, st);
}
