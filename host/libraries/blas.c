/*
 * blas.c: the cuBLASLt GEMM baseline (see blas.h).
 *
 * cuBLASLt is opened through dynlib and every entry point used here is
 * resolved by name into a pointer of the exact type the header declares
 * (__typeof__ of the declaration, which does not reference the symbol), so
 * the binary never links the library.
 */
#include "libraries/blas.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cublasLt.h declares cublasLtLoggerForceDisable() without a prototype. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cublasLt.h>
#pragma GCC diagnostic pop

#include "driver/dynlib.h"

/* ---- names ------------------------------------------------------------- */

const char *blas_dtype_name(int dtype)
{
    switch (dtype) {
    case BLAS_BF16: return "bf16";
    case BLAS_F16: return "f16";
    case BLAS_E4M3: return "e4m3";
    case BLAS_F32: return "f32";
    default: return "?";
    }
}

const char *blas_compute_name(int compute)
{
    switch (compute) {
    case BLAS_COMPUTE_F32: return "f32";
    case BLAS_COMPUTE_TF32: return "tf32";
    default: return "?";
    }
}

int blas_dtype_parse(const char *s, blas_dtype *out, ks_status *st)
{
    static const blas_dtype all[] = {BLAS_BF16, BLAS_F16, BLAS_E4M3, BLAS_F32};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, blas_dtype_name(all[i])) == 0) {
            *out = all[i];
            return KS_OK;
        }
    return ks_fail(st, KS_EINVAL, 0, "unknown GEMM dtype '%s' (expected bf16, f16, e4m3 or f32)",
                   s ? s : "(null)");
}

int blas_compute_parse(const char *s, blas_compute *out, ks_status *st)
{
    if (s && strcmp(s, "f32") == 0) {
        *out = BLAS_COMPUTE_F32;
        return KS_OK;
    }
    if (s && strcmp(s, "tf32") == 0) {
        *out = BLAS_COMPUTE_TF32;
        return KS_OK;
    }
    return ks_fail(st, KS_EINVAL, 0, "unknown GEMM compute mode '%s' (expected f32 or tf32)",
                   s ? s : "(null)");
}

size_t blas_dtype_in_bytes(int dtype)
{
    switch (dtype) {
    case BLAS_BF16: case BLAS_F16: return 2;
    case BLAS_E4M3: return 1;
    case BLAS_F32: return 4;
    default: return 0;
    }
}

size_t blas_dtype_out_bytes(int dtype)
{
    switch (dtype) {
    case BLAS_BF16: case BLAS_F16: case BLAS_E4M3: return 2;
    case BLAS_F32: return 4;
    default: return 0;
    }
}

static const char *const epi_names[BLAS_EPI_COUNT] = {
    [BLAS_EPI_NONE] = "none", [BLAS_EPI_BIAS] = "bias", [BLAS_EPI_RELU] = "relu",
    [BLAS_EPI_RELU_BIAS] = "relu_bias", [BLAS_EPI_GELU] = "gelu", [BLAS_EPI_GELU_BIAS] = "gelu_bias",
};

const char *blas_epilogue_name(int epilogue)
{
    return epilogue >= 0 && epilogue < BLAS_EPI_COUNT ? epi_names[epilogue] : "?";
}

int blas_epilogue_parse(const char *s, blas_epilogue *out, ks_status *st)
{
    for (int i = 0; s && i < BLAS_EPI_COUNT; i++)
        if (strcmp(s, epi_names[i]) == 0) {
            *out = (blas_epilogue)i;
            return KS_OK;
        }
    return ks_fail(st, KS_EINVAL, 0,
                   "unknown GEMM epilogue '%s' (expected none, bias, relu, relu_bias, gelu or gelu_bias)",
                   s ? s : "(null)");
}

int blas_epilogue_has_bias(int epilogue)
{
    return epilogue == BLAS_EPI_BIAS || epilogue == BLAS_EPI_RELU_BIAS || epilogue == BLAS_EPI_GELU_BIAS;
}

static int64_t batch_of(const blas_gemm_desc *d)
{
    return d->batch > 1 ? d->batch : 1;
}

void blas_gemm_operand_bytes(const blas_gemm_desc *d, blas_gemm_bytes *out)
{
    memset(out, 0, sizeof *out);
    int64_t b = batch_of(d);
    size_t in = blas_dtype_in_bytes((int)d->dtype), o = blas_dtype_out_bytes((int)d->dtype);
    int64_t ma = d->M * d->K, mb = d->N * d->K, mc = d->M * d->N;
    int64_t sa = d->stride_a ? d->stride_a : ma, sb = d->stride_b ? d->stride_b : mb;
    int64_t sc = d->stride_c ? d->stride_c : mc;
    out->a = (size_t)((b - 1) * sa + ma) * in;
    out->b = (size_t)((b - 1) * sb + mb) * in;
    out->c = (size_t)((b - 1) * sc + mc) * o;
    if (blas_epilogue_has_bias(d->epilogue))
        out->bias = (size_t)d->N * (d->bias_f32 ? 4 : o);
}

/* The alignment in bytes (a power of two, at most BLAS_PTR_ALIGN) of every
 * batch member when the first is BLAS_PTR_ALIGN-aligned. */
static int member_align(int64_t batch, int64_t stride, size_t elem)
{
    if (batch <= 1)
        return BLAS_PTR_ALIGN;
    uint64_t bytes = (uint64_t)stride * elem;
    int a = BLAS_PTR_ALIGN;
    while (a > 1 && bytes % (uint64_t)a)
        a /= 2;
    return a;
}

/* ---- the mapping ------------------------------------------------------- */

/*
 * Row-major to cuBLASLt's column-major. A row-major X[r,c] (row stride c)
 * is, byte for byte, the column-major matrix Xᵀ with c rows, r columns and
 * leading dimension c. So:
 *
 *   the result C[M,N] row-major  = column-major Cᵀ (N×M, ld N);
 *   Cᵀ = (A·Bᵀ)ᵀ = B·Aᵀ, so cuBLASLt computes D = op(A_lt)·op(B_lt) with
 *   m = N, n = M, k = K;
 *   op(A_lt) must be B (N×K). The caller's B[N,K] row-major is stored as
 *   column-major Bᵀ (K×N, ld K): A_lt = that buffer, TRANSA = T;
 *   op(B_lt) must be Aᵀ (K×M). The caller's A[M,K] row-major is stored as
 *   column-major Aᵀ (K×M, ld K): B_lt = that buffer, TRANSB = N.
 *
 * Hence TRANSA=T, TRANSB=N ("TN"), lda = ldb = K, ldc = N, and cuBLASLt's
 * A is the caller's B (their fp8 scales swap too). TN is exactly what
 * Hopper's fp8 kernels require (A transposed, B not; both K-major), so all
 * four dtypes share one mapping.
 *
 * The other layouts change only how each buffer is read. B stored [K,N]
 * is column-major N×K (ld N), already B' = op(A_lt): TRANSA = N. A stored
 * [K,M] is column-major M×K (ld M), whose transpose is the K×M wanted:
 * TRANSB = T. A batch keeps the mapping per member; cuBLASLt's A and B
 * strides are the caller's B and A strides.
 */
int blas_gemm_map_dims(const blas_gemm_desc *d, blas_gemm_map *out, ks_status *st)
{
    if (!d || !out)
        return ks_fail(st, KS_EINVAL, 0, "blas_gemm_map_dims: NULL argument");
    if (blas_dtype_in_bytes((int)d->dtype) == 0)
        return ks_fail(st, KS_EINVAL, 0, "unknown GEMM dtype %d", (int)d->dtype);
    if (d->compute != BLAS_COMPUTE_F32 && d->compute != BLAS_COMPUTE_TF32)
        return ks_fail(st, KS_EINVAL, 0, "unknown GEMM compute mode %d", (int)d->compute);
    if (d->compute == BLAS_COMPUTE_TF32 && d->dtype != BLAS_F32)
        return ks_fail(st, KS_EINVAL, 0, "compute tf32 applies to f32 GEMMs only, not %s",
                       blas_dtype_name((int)d->dtype));
    if (d->M < 1 || d->N < 1 || d->K < 1)
        return ks_fail(st, KS_EINVAL, 0, "GEMM dimensions must be >= 1 (M=%lld N=%lld K=%lld)",
                       (long long)d->M, (long long)d->N, (long long)d->K);
    /* cuBLASLt takes uint64 rows/cols and int64 leading dimensions; the
     * largest buffer must still be addressable. */
    const int64_t lim = (int64_t)1 << 40;
    if (d->M > lim || d->N > lim || d->K > lim || (double)d->M * (double)d->N > (double)lim
        || (double)d->M * (double)d->K > (double)lim || (double)d->N * (double)d->K > (double)lim)
        return ks_fail(st, KS_EINVAL, 0, "GEMM too large (M=%lld N=%lld K=%lld)",
                       (long long)d->M, (long long)d->N, (long long)d->K);
    if (d->dtype == BLAS_E4M3 && d->K % 16 != 0)
        return ks_fail(st, KS_EINVAL, 0,
                       "e4m3 GEMM needs K a multiple of 16 (16-byte aligned K-major rows), got K=%lld",
                       (long long)d->K);
    if (d->a_layout != BLAS_A_MK && d->a_layout != BLAS_A_KM)
        return ks_fail(st, KS_EINVAL, 0, "unknown layout %d for A (mk or km)", d->a_layout);
    if (d->b_layout != BLAS_B_NK && d->b_layout != BLAS_B_KN)
        return ks_fail(st, KS_EINVAL, 0, "unknown layout %d for B (nk or kn)", d->b_layout);
    if (d->dtype == BLAS_E4M3 && (d->a_layout != BLAS_A_MK || d->b_layout != BLAS_B_NK))
        return ks_fail(st, KS_EINVAL, 0, "e4m3 GEMM needs A [M,K] and B [N,K] (the TN layout Hopper's fp8 "
                       "kernels take)");
    if (d->epilogue < 0 || d->epilogue >= BLAS_EPI_COUNT)
        return ks_fail(st, KS_EINVAL, 0, "unknown GEMM epilogue %d", d->epilogue);
    if (d->bias_f32 && !blas_epilogue_has_bias(d->epilogue))
        return ks_fail(st, KS_EINVAL, 0, "an fp32 bias needs an epilogue with a bias (bias, relu_bias, gelu_bias)");
    int64_t b = batch_of(d);
    if (d->batch < 0 || b > lim)
        return ks_fail(st, KS_EINVAL, 0, "GEMM batch must be >= 1, got %lld", (long long)d->batch);
    const struct { const char *name; int64_t v, min; } strides[3] = {
        {"stride_a", d->stride_a, d->M * d->K}, {"stride_b", d->stride_b, d->N * d->K},
        {"stride_c", d->stride_c, d->M * d->N}};
    for (int i = 0; i < 3; i++) {
        if (strides[i].v && b == 1)
            return ks_fail(st, KS_EINVAL, 0, "%s applies to batched GEMMs (batch > 1)", strides[i].name);
        if (strides[i].v && strides[i].v < strides[i].min)
            return ks_fail(st, KS_EINVAL, 0, "%s (%lld elements) is less than one matrix (%lld): batch members "
                           "would overlap", strides[i].name, (long long)strides[i].v, (long long)strides[i].min);
        if ((double)(strides[i].v ? strides[i].v : strides[i].min) * (double)b > (double)lim * 16)
            return ks_fail(st, KS_EINVAL, 0, "batched GEMM too large (%s x batch)", strides[i].name);
    }

    memset(out, 0, sizeof *out);
    out->m = (uint64_t)d->N;
    out->n = (uint64_t)d->M;
    out->k = (uint64_t)d->K;
    out->a_is_user_b = 1;
    /* cuBLASLt's A is the caller's B: op(A_lt) must be B' (N×K). */
    if (d->b_layout == BLAS_B_NK) {
        out->transa = 1;
        out->a_rows = (uint64_t)d->K;
        out->a_cols = (uint64_t)d->N;
        out->lda = d->K;
    } else {
        out->transa = 0;
        out->a_rows = (uint64_t)d->N;
        out->a_cols = (uint64_t)d->K;
        out->lda = d->N;
    }
    /* cuBLASLt's B is the caller's A: op(B_lt) must be A'ᵀ (K×M). */
    if (d->a_layout == BLAS_A_MK) {
        out->transb = 0;
        out->b_rows = (uint64_t)d->K;
        out->b_cols = (uint64_t)d->M;
        out->ldb = d->K;
    } else {
        out->transb = 1;
        out->b_rows = (uint64_t)d->M;
        out->b_cols = (uint64_t)d->K;
        out->ldb = d->M;
    }
    out->c_rows = (uint64_t)d->N;
    out->c_cols = (uint64_t)d->M;
    out->ldc = d->N;
    out->batch = b;
    out->stride_a = d->stride_b ? d->stride_b : d->N * d->K;
    out->stride_b = d->stride_a ? d->stride_a : d->M * d->K;
    out->stride_c = d->stride_c ? d->stride_c : d->M * d->N;
    size_t in = blas_dtype_in_bytes((int)d->dtype), o = blas_dtype_out_bytes((int)d->dtype);
    out->align_a = member_align(b, out->stride_a, in);
    out->align_b = member_align(b, out->stride_b, in);
    out->align_c = member_align(b, out->stride_c, o);
    return KS_OK;
}

/* ---- statuses ---------------------------------------------------------- */

const char *blas_status_name(int status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: {
        static _Thread_local char buf[32];
        snprintf(buf, sizeof buf, "CUBLAS_STATUS_%d", status);
        return buf;
    }
    }
}

/* A short explanation to follow the name, so a message is useful alone. */
static const char *status_hint(int status)
{
    switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "cuBLASLt could not initialise (no usable CUDA context?)";
    case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid or conflicting parameters";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "not available on this GPU architecture";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal cuBLAS failure";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "configuration not supported";
    default: return "";
    }
}

int blas_fail(ks_status *st, int status, const char *what)
{
    if (status == CUBLAS_STATUS_SUCCESS)
        return KS_OK;
    int code = KS_ECUDA;
    if (status == CUBLAS_STATUS_ALLOC_FAILED)
        code = KS_ENOMEM;
    else if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH)
        code = KS_EUNSUPPORTED;
    const char *hint = status_hint(status);
    return ks_fail(st, code, status, "%s: %s (%d)%s%s", what, blas_status_name(status), status,
                   *hint ? ": " : "", hint);
}

/* ---- the library ------------------------------------------------------- */

typedef struct lt_api {
    __typeof__(cublasLtCreate) *create;
    __typeof__(cublasLtDestroy) *destroy;
    __typeof__(cublasLtMatmulDescCreate) *desc_create;
    __typeof__(cublasLtMatmulDescDestroy) *desc_destroy;
    __typeof__(cublasLtMatmulDescSetAttribute) *desc_set;
    __typeof__(cublasLtMatrixLayoutCreate) *layout_create;
    __typeof__(cublasLtMatrixLayoutDestroy) *layout_destroy;
    __typeof__(cublasLtMatrixLayoutSetAttribute) *layout_set;
    __typeof__(cublasLtMatmulPreferenceCreate) *pref_create;
    __typeof__(cublasLtMatmulPreferenceDestroy) *pref_destroy;
    __typeof__(cublasLtMatmulPreferenceSetAttribute) *pref_set;
    __typeof__(cublasLtMatmulAlgoGetHeuristic) *heuristic;
    __typeof__(cublasLtMatmulAlgoConfigGetAttribute) *algo_get;
    __typeof__(cublasLtMatmul) *matmul;
} lt_api;

static lt_api g_api;
static int g_api_ready;
static pthread_mutex_t g_api_lock = PTHREAD_MUTEX_INITIALIZER;

/* Loads cuBLASLt and resolves every entry point, once; a failure is not
 * remembered, so a later call tries again. */
static const lt_api *api_load(ks_status *st)
{
    pthread_mutex_lock(&g_api_lock);
    if (g_api_ready) {
        pthread_mutex_unlock(&g_api_lock);
        return &g_api;
    }
    const dynlib *lib = dynlib_get(&dynlib_cublaslt, st);
    lt_api a;
    const dynlib_symbol syms[] = {
        {"cublasLtCreate", (void **)&a.create, 0},
        {"cublasLtDestroy", (void **)&a.destroy, 0},
        {"cublasLtMatmulDescCreate", (void **)&a.desc_create, 0},
        {"cublasLtMatmulDescDestroy", (void **)&a.desc_destroy, 0},
        {"cublasLtMatmulDescSetAttribute", (void **)&a.desc_set, 0},
        {"cublasLtMatrixLayoutCreate", (void **)&a.layout_create, 0},
        {"cublasLtMatrixLayoutDestroy", (void **)&a.layout_destroy, 0},
        {"cublasLtMatrixLayoutSetAttribute", (void **)&a.layout_set, 0},
        {"cublasLtMatmulPreferenceCreate", (void **)&a.pref_create, 0},
        {"cublasLtMatmulPreferenceDestroy", (void **)&a.pref_destroy, 0},
        {"cublasLtMatmulPreferenceSetAttribute", (void **)&a.pref_set, 0},
        {"cublasLtMatmulAlgoGetHeuristic", (void **)&a.heuristic, 0},
        {"cublasLtMatmulAlgoConfigGetAttribute", (void **)&a.algo_get, 0},
        {"cublasLtMatmul", (void **)&a.matmul, 0},
    };
    int ok = dynlib_bind(lib, syms, DYNLIB_COUNT(syms), st) == KS_OK;
    if (ok) {
        g_api = a;
        g_api_ready = 1;
    }
    pthread_mutex_unlock(&g_api_lock);
    return ok ? &g_api : NULL;
}

int blas_load(ks_status *st)
{
    return api_load(st) ? KS_OK : st->code;
}

int blas_version(char *buf, size_t n, ks_status *st)
{
    if (buf && n)
        buf[0] = '\0';
    if (!buf || n == 0)
        return ks_fail(st, KS_EINVAL, 0, "blas_version: no buffer");
    return dynlib_version(&dynlib_cublaslt, buf, n, st);
}

const char *blas_library_path(ks_status *st)
{
    const dynlib *lib = dynlib_get(&dynlib_cublaslt, st);
    return lib ? lib->path : NULL;
}

/* ---- algorithm descriptions -------------------------------------------- */

/* cublasLtMatmulTile_t as rows x columns, index = enum value (cuBLAS 13;
 * the values are part of the ABI and only ever appended to). */
static const unsigned short tile_dims[][2] = {
    {0, 0}, {8,8}, {8,16}, {16,8}, {8,32}, {16,16}, {32,8}, {8,64}, {16,32},
    {32,16}, {64,8}, {32,32}, {32,64}, {64,32}, {32,128}, {64,64}, {128,32}, {64,128},
    {128,64}, {64,256}, {128,128}, {256,64}, {64,512}, {128,256}, {256,128}, {512,64}, {64,96},
    {96,64}, {96,128}, {128,160}, {160,128}, {192,128}, {128,192}, {128,96}, {32,256}, {256,32},
    {8,128}, {8,192}, {8,256}, {8,320}, {8,384}, {8,448}, {8,512}, {8,576}, {8,640},
    {8,704}, {8,768}, {16,64}, {16,128}, {16,192}, {16,256}, {16,320}, {16,384}, {16,448},
    {16,512}, {16,576}, {16,640}, {16,704}, {16,768}, {24,64}, {24,128}, {24,192}, {24,256},
    {24,320}, {24,384}, {24,448}, {24,512}, {24,576}, {24,640}, {24,704}, {24,768}, {32,192},
    {32,320}, {32,384}, {32,448}, {32,512}, {32,576}, {32,640}, {32,704}, {32,768}, {40,64},
    {40,128}, {40,192}, {40,256}, {40,320}, {40,384}, {40,448}, {40,512}, {40,576}, {40,640},
    {40,704}, {40,768}, {48,64}, {48,128}, {48,192}, {48,256}, {48,320}, {48,384}, {48,448},
    {48,512}, {48,576}, {48,640}, {48,704}, {48,768}, {56,64}, {56,128}, {56,192}, {56,256},
    {56,320}, {56,384}, {56,448}, {56,512}, {56,576}, {56,640}, {56,704}, {56,768}, {64,192},
    {64,320}, {64,384}, {64,448}, {64,576}, {64,640}, {64,704}, {64,768}, {72,64}, {72,128},
    {72,192}, {72,256}, {72,320}, {72,384}, {72,448}, {72,512}, {72,576}, {72,640}, {80,64},
    {80,128}, {80,192}, {80,256}, {80,320}, {80,384}, {80,448}, {80,512}, {80,576}, {88,64},
    {88,128}, {88,192}, {88,256}, {88,320}, {88,384}, {88,448}, {88,512}, {96,192}, {96,256},
    {96,320}, {96,384}, {96,448}, {96,512}, {104,64}, {104,128}, {104,192}, {104,256}, {104,320},
    {104,384}, {104,448}, {112,64}, {112,128}, {112,192}, {112,256}, {112,320}, {112,384}, {120,64},
    {120,128}, {120,192}, {120,256}, {120,320}, {120,384}, {128,320}, {128,384}, {136,64}, {136,128},
    {136,192}, {136,256}, {136,320}, {144,64}, {144,128}, {144,192}, {144,256}, {144,320}, {152,64},
    {152,128}, {152,192}, {152,256}, {152,320}, {160,64}, {160,192}, {160,256}, {168,64}, {168,128},
    {168,192}, {168,256}, {176,64}, {176,128}, {176,192}, {176,256}, {184,64}, {184,128}, {184,192},
    {184,256}, {192,64}, {192,192}, {192,256}, {200,64}, {200,128}, {200,192}, {208,64}, {208,128},
    {208,192}, {216,64}, {216,128}, {216,192}, {224,64}, {224,128}, {224,192}, {232,64}, {232,128},
    {232,192}, {240,64}, {240,128}, {240,192}, {248,64}, {248,128}, {248,192}, {256,192}, {264,64},
    {264,128}, {272,64}, {272,128}, {280,64}, {280,128}, {288,64}, {288,128}, {296,64}, {296,128},
    {304,64}, {304,128}, {312,64}, {312,128}, {320,64}, {320,128}, {328,64}, {328,128}, {336,64},
    {336,128}, {344,64}, {344,128}, {352,64}, {352,128}, {360,64}, {360,128}, {368,64}, {368,128},
    {376,64}, {376,128}, {384,64}, {384,128}, {392,64}, {400,64}, {408,64}, {416,64}, {424,64},
    {432,64}, {440,64}, {448,64}, {456,64}, {464,64}, {472,64}, {480,64}, {488,64}, {496,64},
    {504,64}, {520,64}, {528,64}, {536,64}, {544,64}, {552,64}, {560,64}, {568,64}, {576,64},
    {584,64}, {592,64}, {600,64}, {608,64}, {616,64}, {624,64}, {632,64}, {640,64}, {648,64},
    {656,64}, {664,64}, {672,64}, {680,64}, {688,64}, {696,64}, {704,64}, {712,64}, {720,64},
    {728,64}, {736,64}, {744,64}, {752,64}, {760,64}, {768,64}, {64,16}, {64,24}, {64,40},
    {64,48}, {64,56}, {64,72}, {64,80}, {64,88}, {64,104}, {64,112}, {64,120}, {64,136},
    {64,144}, {64,152}, {64,160}, {64,168}, {64,176}, {64,184}, {64,200}, {64,208}, {64,216},
    {64,224}, {64,232}, {64,240}, {64,248}, {64,264}, {64,272}, {64,280}, {64,288}, {64,296},
    {64,304}, {64,312}, {64,328}, {64,336}, {64,344}, {64,352}, {64,360}, {64,368}, {64,376},
    {64,392}, {64,400}, {64,408}, {64,416}, {64,424}, {64,432}, {64,440}, {64,456}, {64,464},
    {64,472}, {64,480}, {64,488}, {64,496}, {64,504}, {64,520}, {64,528}, {64,536}, {64,544},
    {64,552}, {64,560}, {64,568}, {64,584}, {64,592}, {64,600}, {64,608}, {64,616}, {64,624},
    {64,632}, {64,648}, {64,656}, {64,664}, {64,672}, {64,680}, {64,688}, {64,696}, {64,712},
    {64,720}, {64,728}, {64,736}, {64,744}, {64,752}, {64,760}, {128,8}, {128,16}, {128,24},
    {128,40}, {128,48}, {128,56}, {128,72}, {128,80}, {128,88}, {128,104}, {128,112}, {128,120},
    {128,136}, {128,144}, {128,152}, {128,168}, {128,176}, {128,184}, {128,200}, {128,208}, {128,216},
    {128,224}, {128,232}, {128,240}, {128,248}, {128,264}, {128,272}, {128,280}, {128,288}, {128,296},
    {128,304}, {128,312}, {128,328}, {128,336}, {128,344}, {128,352}, {128,360}, {128,368}, {128,376},
    {128,392}, {128,400}, {128,408}, {128,416}, {128,424}, {128,432}, {128,440}, {128,448}, {128,456},
    {128,464}, {128,472}, {128,480}, {128,488}, {128,496}, {128,504}, {128,512}, {192,8}, {192,16},
    {192,24}, {192,32}, {192,40}, {192,48}, {192,56}, {192,72}, {192,80}, {192,88}, {192,96},
    {192,104}, {192,112}, {192,120}, {192,136}, {192,144}, {192,152}, {192,160}, {192,168}, {192,176},
    {192,184}, {192,200}, {192,208}, {192,216}, {192,224}, {192,232}, {192,240}, {192,248}, {192,264},
    {192,272}, {192,280}, {192,288}, {192,296}, {192,304}, {192,312}, {192,320}, {192,328}, {192,336},
    {256,8}, {256,16}, {256,24}, {256,40}, {256,48}, {256,56}, {256,72}, {256,80}, {256,88},
    {256,96}, {256,104}, {256,112}, {256,120}, {256,136}, {256,144}, {256,152}, {256,160}, {256,168},
    {256,176}, {256,184}, {256,200}, {256,208}, {256,216}, {256,224}, {256,232}, {256,240}, {256,248},
    {256,256}, {320,8}, {320,16}, {320,24}, {320,32}, {320,40}, {320,48}, {320,56}, {320,72},
    {320,80}, {320,88}, {320,96}, {320,104}, {320,112}, {320,120}, {320,136}, {320,144}, {320,152},
    {320,160}, {320,168}, {320,176}, {320,184}, {320,192}, {320,200}, {384,8}, {384,16}, {384,24},
    {384,32}, {384,40}, {384,48}, {384,56}, {384,72}, {384,80}, {384,88}, {384,96}, {384,104},
    {384,112}, {384,120}, {384,136}, {384,144}, {384,152}, {384,160}, {384,168}, {448,8}, {448,16},
    {448,24}, {448,32}, {448,40}, {448,48}, {448,56}, {448,72}, {448,80}, {448,88}, {448,96},
    {448,104}, {448,112}, {448,120}, {448,128}, {448,136}, {448,144}, {512,8}, {512,16}, {512,24},
    {512,32}, {512,40}, {512,48}, {512,56}, {512,72}, {512,80}, {512,88}, {512,96}, {512,104},
    {512,112}, {512,120}, {512,128}, {576,8}, {576,16}, {576,24}, {576,32}, {576,40}, {576,48},
    {576,56}, {576,72}, {576,80}, {576,88}, {576,96}, {576,104}, {576,112}, {640,8}, {640,16},
    {640,24}, {640,32}, {640,40}, {640,48}, {640,56}, {640,72}, {640,80}, {640,88}, {640,96},
    {704,8}, {704,16}, {704,24}, {704,32}, {704,40}, {704,48}, {704,56}, {704,72}, {704,80},
    {704,88}, {768,8}, {768,16}, {768,24}, {768,32}, {768,40}, {768,48}, {768,56}, {768,72},
    {768,80}, {256,512}, {256,1024}, {512,512}, {512,1024},
};

void blas_tile_name(int id, char *buf, size_t n)
{
    if (id == 0)
        snprintf(buf, n, "undefined");
    else if (id > 0 && (size_t)id < sizeof tile_dims / sizeof tile_dims[0])
        snprintf(buf, n, "%ux%u", tile_dims[id][0], tile_dims[id][1]);
    else
        snprintf(buf, n, "id%d", id);
}

/* cublasLtMatmulStages_t: 1..24 run 16/32/64/128 bytes x 1..6 stages;
 * the later values are irregular. */
void blas_stages_name(int id, char *buf, size_t n)
{
    static const char *const late[] = {
        /* 25 */ "32x10", "8x4", "16x10", "8x5", NULL, NULL, "8x3", "8xAUTO", "16xAUTO",
        /* 34 */ "32xAUTO", "64xAUTO", "128xAUTO", "256xAUTO", "768xAUTO"};
    if (id == 0)
        snprintf(buf, n, "undefined");
    else if (id >= 1 && id <= 24)
        snprintf(buf, n, "%dx%d", 16 << ((id - 1) / 6), (id - 1) % 6 + 1);
    else if (id >= 25 && id < 25 + (int)(sizeof late / sizeof late[0]) && late[id - 25])
        snprintf(buf, n, "%s", late[id - 25]);
    else
        snprintf(buf, n, "id%d", id);
}

/* Reads one algo configuration attribute whatever its width (the widths
 * differ between attributes and have changed between releases); -1 when
 * cuBLASLt cannot report it. */
static long long algo_attr(const lt_api *api, const cublasLtMatmulAlgo_t *algo,
                           cublasLtMatmulAlgoConfigAttributes_t attr)
{
    size_t need = 0;
    if (api->algo_get(algo, attr, NULL, 0, &need) != CUBLAS_STATUS_SUCCESS)
        return -1;
    size_t got = 0;
    switch (need) {
    case 1: { int8_t v; if (api->algo_get(algo, attr, &v, 1, &got)) return -1; return v; }
    case 2: { uint16_t v; if (api->algo_get(algo, attr, &v, 2, &got)) return -1; return v; }
    case 4: { int32_t v; if (api->algo_get(algo, attr, &v, 4, &got)) return -1; return v; }
    case 8: { int64_t v; if (api->algo_get(algo, attr, &v, 8, &got)) return -1; return v; }
    default: return -1;
    }
}

static void describe(const lt_api *api, const cublasLtMatmulHeuristicResult_t *r, int index,
                     blas_algo_info *o)
{
    memset(o, 0, sizeof *o);
    o->index = index;
    o->algo_id = (int)algo_attr(api, &r->algo, CUBLASLT_ALGO_CONFIG_ID);
    o->tile_id = (int)algo_attr(api, &r->algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
    o->stages_id = (int)algo_attr(api, &r->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
    o->splitk = (int)algo_attr(api, &r->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
    o->reduction_scheme = (int)algo_attr(api, &r->algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
    o->swizzle = (int)algo_attr(api, &r->algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
    o->custom_option = (int)algo_attr(api, &r->algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
    o->inner_shape_id = (int)algo_attr(api, &r->algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID);
    o->cluster_shape_id = (int)algo_attr(api, &r->algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
    if (o->tile_id >= 0)
        blas_tile_name(o->tile_id, o->tile, sizeof o->tile);
    else
        snprintf(o->tile, sizeof o->tile, "unknown");
    if (o->stages_id >= 0)
        blas_stages_name(o->stages_id, o->stages, sizeof o->stages);
    else
        snprintf(o->stages, sizeof o->stages, "unknown");
    o->workspace_bytes = r->workspaceSize;
    o->waves = r->wavesCount;
}

/* ---- plans ------------------------------------------------------------- */

struct blas_gemm_plan {
    cuda_ctx *ctx;                  /* borrowed */
    const lt_api *api;
    blas_gemm_desc d;               /* defaults filled in */
    blas_gemm_map map;
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
    int nalgo;
    cublasLtMatmulHeuristicResult_t res[BLAS_MAX_ALGOS];
    blas_algo_info info[BLAS_MAX_ALGOS];
    CUdeviceptr ws;                 /* the plan's own workspace */
    CUdeviceptr unit;               /* fp8: 1.0f at +0 and at +16 */
    CUdeviceptr set_a, set_b;       /* the scale pointers now in op (cuBLASLt's A and B) */
    CUdeviceptr set_bias;           /* the bias pointer now in op */
    int bound;
    blas_gemm_args args;
};

static cudaDataType_t in_type(blas_dtype t)
{
    switch (t) {
    case BLAS_BF16: return CUDA_R_16BF;
    case BLAS_F16: return CUDA_R_16F;
    case BLAS_E4M3: return CUDA_R_8F_E4M3;
    default: return CUDA_R_32F;
    }
}

static cudaDataType_t out_type(blas_dtype t)
{
    switch (t) {
    case BLAS_BF16: case BLAS_E4M3: return CUDA_R_16BF;
    case BLAS_F16: return CUDA_R_16F;
    default: return CUDA_R_32F;
    }
}

static void with_defaults(const blas_gemm_desc *in, blas_gemm_desc *d);

/* "e4m3 x e4m3 -> bf16 (compute f32), M=.. N=.. K=.." for messages, with
 * the batch and epilogue when there are. */
static void case_name(const blas_gemm_desc *d, char *buf, size_t n)
{
    const char *out = d->dtype == BLAS_E4M3 ? "bf16" : blas_dtype_name((int)d->dtype);
    char batch[48] = "", epi[48] = "";
    if (batch_of(d) > 1)
        snprintf(batch, sizeof batch, ", batch %lld", (long long)batch_of(d));
    if (d->epilogue != BLAS_EPI_NONE)
        snprintf(epi, sizeof epi, ", epilogue %s%s", blas_epilogue_name(d->epilogue),
                 d->bias_f32 ? " (f32 bias)" : "");
    snprintf(buf, n, "%s x %s -> %s (compute %s%s), M=%lld N=%lld K=%lld%s%s",
             blas_dtype_name((int)d->dtype), blas_dtype_name((int)d->dtype), out,
             blas_compute_name((int)d->compute),
             d->dtype == BLAS_E4M3 && d->fast_accum ? ", fast accum" : "",
             (long long)d->M, (long long)d->N, (long long)d->K, batch, epi);
}

static cublasLtEpilogue_t lt_epilogue(int e)
{
    switch (e) {
    case BLAS_EPI_BIAS: return CUBLASLT_EPILOGUE_BIAS;
    case BLAS_EPI_RELU: return CUBLASLT_EPILOGUE_RELU;
    case BLAS_EPI_RELU_BIAS: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case BLAS_EPI_GELU: return CUBLASLT_EPILOGUE_GELU;
    case BLAS_EPI_GELU_BIAS: return CUBLASLT_EPILOGUE_GELU_BIAS;
    default: return CUBLASLT_EPILOGUE_DEFAULT;
    }
}

/* A layout of type t, rows × cols, leading dimension ld, with the batch. */
static int make_layout(const lt_api *api, cublasLtMatrixLayout_t *l, cudaDataType_t t, uint64_t rows,
                       uint64_t cols, int64_t ld, int64_t batch, int64_t stride, const char *what, ks_status *st)
{
    char w[96];
    snprintf(w, sizeof w, "cublasLtMatrixLayoutCreate(%s)", what);
    if (blas_fail(st, api->layout_create(l, t, rows, cols, ld), w))
        return st->code;
    if (batch > 1) {
        int32_t count = (int32_t)batch;
        snprintf(w, sizeof w, "cublasLtMatrixLayoutSetAttribute(%s, BATCH_COUNT)", what);
        if (blas_fail(st, api->layout_set(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), w))
            return st->code;
        snprintf(w, sizeof w, "cublasLtMatrixLayoutSetAttribute(%s, STRIDED_BATCH_OFFSET)", what);
        if (blas_fail(st, api->layout_set(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
                      w))
            return st->code;
    }
    return KS_OK;
}

/* The matmul descriptor and the three layouts of d (mapped by map); on
 * failure the caller destroys what was made (non-NULL handles). */
static int make_descs(const lt_api *api, const blas_gemm_desc *d, const blas_gemm_map *map,
                      cublasLtMatmulDesc_t *op, cublasLtMatrixLayout_t *la, cublasLtMatrixLayout_t *lb,
                      cublasLtMatrixLayout_t *lc, ks_status *st)
{
    cudaDataType_t ti = in_type(d->dtype), to = out_type(d->dtype);
    cublasComputeType_t ct = d->compute == BLAS_COMPUTE_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    int32_t ta = map->transa ? CUBLAS_OP_T : CUBLAS_OP_N;
    int32_t tb = map->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (blas_fail(st, api->desc_create(op, ct, CUDA_R_32F), "cublasLtMatmulDescCreate")
        || blas_fail(st, api->desc_set(*op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
                     "cublasLtMatmulDescSetAttribute(TRANSA)")
        || blas_fail(st, api->desc_set(*op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
                     "cublasLtMatmulDescSetAttribute(TRANSB)"))
        return st->code;
    if (d->epilogue != BLAS_EPI_NONE) {
        cublasLtEpilogue_t e = lt_epilogue(d->epilogue);
        if (blas_fail(st, api->desc_set(*op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e),
                      "cublasLtMatmulDescSetAttribute(EPILOGUE)"))
            return st->code;
    }
    if (d->bias_f32) {
        int32_t bt = CUDA_R_32F;
        if (blas_fail(st, api->desc_set(*op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt),
                      "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)"))
            return st->code;
    }
    if (d->dtype == BLAS_E4M3) {
        int8_t fast = (int8_t)(d->fast_accum != 0);
        if (blas_fail(st, api->desc_set(*op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast),
                      "cublasLtMatmulDescSetAttribute(FAST_ACCUM)"))
            return st->code;
    }
    if (make_layout(api, la, ti, map->a_rows, map->a_cols, map->lda, map->batch, map->stride_a, "A", st)
        || make_layout(api, lb, ti, map->b_rows, map->b_cols, map->ldb, map->batch, map->stride_b, "B", st)
        || make_layout(api, lc, to, map->c_rows, map->c_cols, map->ldc, map->batch, map->stride_c, "C", st))
        return st->code;
    return KS_OK;
}

int blas_gemm_describe(const blas_gemm_desc *d, blas_gemm_map *out, ks_status *st)
{
    if (!d || !out)
        return ks_fail(st, KS_EINVAL, 0, "blas_gemm_describe: NULL argument");
    blas_gemm_desc dd;
    with_defaults(d, &dd);
    if (blas_gemm_map_dims(&dd, out, st))
        return st->code;
    const lt_api *api = api_load(st);
    if (!api)
        return st->code;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    int rc = make_descs(api, &dd, out, &op, &la, &lb, &lc, st);
    if (lc)
        api->layout_destroy(lc);
    if (lb)
        api->layout_destroy(lb);
    if (la)
        api->layout_destroy(la);
    if (op)
        api->desc_destroy(op);
    return rc;
}

/* Sets a pointer attribute of the matmul descriptor. */
static int set_ptr(blas_gemm_plan *p, cublasLtMatmulDescAttributes_t attr, CUdeviceptr v,
                   const char *what, ks_status *st)
{
    void *ptr = (void *)(uintptr_t)v;
    return blas_fail(st, p->api->desc_set(p->op, attr, &ptr, sizeof ptr), what);
}

/* Points cuBLASLt's A/B scales at the caller's (swapped: cuBLASLt's A is
 * the caller's B), 0 meaning the plan's unit scales. */
static int set_scales(blas_gemm_plan *p, CUdeviceptr scale_a, CUdeviceptr scale_b, ks_status *st)
{
    CUdeviceptr lt_a = scale_b ? scale_b : p->unit;
    CUdeviceptr lt_b = scale_a ? scale_a : p->unit + 16;
    if (!p->map.a_is_user_b) {
        CUdeviceptr t = lt_a;
        lt_a = lt_b;
        lt_b = t;
    }
    if (lt_a != p->set_a) {
        if (set_ptr(p, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, lt_a,
                    "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)", st))
            return st->code;
        p->set_a = lt_a;
    }
    if (lt_b != p->set_b) {
        if (set_ptr(p, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, lt_b,
                    "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)", st))
            return st->code;
        p->set_b = lt_b;
    }
    return KS_OK;
}

int blas_gemm_plan_free(blas_gemm_plan *p, ks_status *st)
{
    ks_status local;
    if (!st)
        st = &local;
    if (!p)
        return KS_OK;
    ks_status tmp;
    ks_clear(&tmp);
    int rc = KS_OK;
    /* Make the context current for cuBLASLt's own teardown; carry on if
     * that fails (after a sticky error, say) and free what can be freed. */
    if (p->ctx)
        (void)cuda_ctx_use(p->ctx, &tmp);
    if (p->api) {
        if (p->pref)
            p->api->pref_destroy(p->pref);
        if (p->lc)
            p->api->layout_destroy(p->lc);
        if (p->lb)
            p->api->layout_destroy(p->lb);
        if (p->la)
            p->api->layout_destroy(p->la);
        if (p->op)
            p->api->desc_destroy(p->op);
        if (p->lt) {
            int s = p->api->destroy(p->lt);
            if (s != CUBLAS_STATUS_SUCCESS && rc == KS_OK)
                rc = blas_fail(st, s, "cublasLtDestroy");
        }
    }
    if (p->ws && cuda_mem_free(p->ctx, p->ws, &tmp) && rc == KS_OK) {
        rc = tmp.code;
        *st = tmp;
    }
    if (p->unit && cuda_mem_free(p->ctx, p->unit, &tmp) && rc == KS_OK) {
        rc = tmp.code;
        *st = tmp;
    }
    free(p);
    return rc;
}

/* Fills in the descriptor's defaults. */
static void with_defaults(const blas_gemm_desc *in, blas_gemm_desc *d)
{
    *d = *in;
    if (d->algos <= 0)
        d->algos = BLAS_DEFAULT_ALGOS;
    if (d->workspace_bytes == 0)
        d->workspace_bytes = BLAS_DEFAULT_WORKSPACE;
    if (d->dtype != BLAS_E4M3)
        d->fast_accum = 0;
    d->fast_accum = d->fast_accum != 0;
}

int blas_gemm_plan_create(const blas_gemm_desc *din, cuda_ctx *c, blas_gemm_plan **out,
                          ks_status *st)
{
    if (!out)
        return ks_fail(st, KS_EINVAL, 0, "blas_gemm_plan_create: NULL out");
    *out = NULL;
    if (!din)
        return ks_fail(st, KS_EINVAL, 0, "blas_gemm_plan_create: NULL descriptor");
    if (din->algos > BLAS_MAX_ALGOS)
        return ks_fail(st, KS_EINVAL, 0, "at most %d algorithms can be asked for, not %d",
                       BLAS_MAX_ALGOS, din->algos);
    blas_gemm_desc d;
    with_defaults(din, &d);
    blas_gemm_map map;
    if (blas_gemm_map_dims(&d, &map, st))
        return st->code;
    /* Driver first: without one there is no context to plan on, whatever
     * the caller passed. */
    if (cuda_load(st))
        return st->code;
    if (!c)
        return ks_fail(st, KS_EINVAL, 0, "blas_gemm_plan_create: no CUDA context");
    const lt_api *api = api_load(st);
    if (!api)
        return st->code;
    if (cuda_ctx_use(c, st))
        return st->code;

    blas_gemm_plan *p = calloc(1, sizeof *p);
    if (!p)
        return ks_fail(st, KS_ENOMEM, 0, "out of host memory");
    p->ctx = c;
    p->api = api;
    p->d = d;
    p->map = map;

    uint64_t wsb = d.workspace_bytes;
    char what[320];

    if (blas_fail(st, api->create(&p->lt), "cublasLtCreate")
        || make_descs(api, &d, &map, &p->op, &p->la, &p->lb, &p->lc, st)
        || blas_fail(st, api->pref_create(&p->pref), "cublasLtMatmulPreferenceCreate")
        || blas_fail(st, api->pref_set(p->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb,
                                       sizeof wsb),
                     "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)"))
        goto fail;
    /* Batch members less aligned than the base pointers: say so, so the
     * heuristic offers only algorithms that can take them. */
    const struct { cublasLtMatmulPreferenceAttributes_t attr; int align; const char *name; } al[4] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, map.align_a, "MIN_ALIGNMENT_A_BYTES"},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, map.align_b, "MIN_ALIGNMENT_B_BYTES"},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, map.align_c, "MIN_ALIGNMENT_C_BYTES"},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, map.align_c, "MIN_ALIGNMENT_D_BYTES"}};
    for (int i = 0; i < 4; i++) {
        if (al[i].align >= BLAS_PTR_ALIGN)
            continue;
        uint32_t v = (uint32_t)al[i].align;
        snprintf(what, sizeof what, "cublasLtMatmulPreferenceSetAttribute(%s)", al[i].name);
        if (blas_fail(st, api->pref_set(p->pref, al[i].attr, &v, sizeof v), what))
            goto fail;
    }
    /* Split-K partial sums kept in a 16-bit output type lose what the fp32
     * accumulation keeps, whether in the workspace (OUTPUT_TYPE) or in the
     * output itself (INPLACE): on an H200, cuBLASLt 13.0's split-K
     * algorithm for a bf16 123x457x789 GELU_BIAS GEMM put 31 of 56,211
     * outputs outside the bf16 tolerance, and its in-place split-K
     * algorithms for the f16 and bf16 8191x7169x5120 GEMMs 1.4% and 4.5% of
     * C. Only partial sums in the compute type (fp32) are allowed: a
     * baseline accumulates in fp32, as the tasks ask candidates to. With an
     * epilogue, not even those: the same 123x457x789 GEMM with RELU_BIAS,
     * split into fp32 partial sums, put one output 0.48 off. */
    if (d.dtype != BLAS_F32) {
        uint32_t mask = d.epilogue != BLAS_EPI_NONE ? (uint32_t)CUBLASLT_REDUCTION_SCHEME_NONE
                                                    : (uint32_t)CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
        if (blas_fail(st, api->pref_set(p->pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask),
                      "cublasLtMatmulPreferenceSetAttribute(REDUCTION_SCHEME_MASK)"))
            goto fail;
    }

    if (d.dtype == BLAS_E4M3) {
        /* The heuristic sees real scale pointers, as at run time, and a
         * caller that passes no scales gets 1.0 from this pair. */
        const float ones[8] = {1.0f, 0, 0, 0, 1.0f, 0, 0, 0};
        if (cuda_mem_alloc(c, sizeof ones, &p->unit, st)
            || cuda_memcpy_htod(c, p->unit, ones, sizeof ones, st)
            || set_scales(p, 0, 0, st))
            goto fail;
    }

    int got = 0;
    int s = api->heuristic(p->lt, p->op, p->la, p->lb, p->lc, p->lc, p->pref, d.algos, p->res,
                           &got);
    if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED) {
        blas_fail(st, s, "cublasLtMatmulAlgoGetHeuristic");
        goto fail;
    }
    /* Keep the usable results, in the heuristic's order. */
    int n = 0;
    for (int i = 0; s == CUBLAS_STATUS_SUCCESS && i < got && i < d.algos; i++)
        if (p->res[i].state == CUBLAS_STATUS_SUCCESS) {
            if (n != i)
                p->res[n] = p->res[i];
            describe(api, &p->res[n], n, &p->info[n]);
            n++;
        }
    if (n == 0) {
        case_name(&d, what, sizeof what);
        ks_fail(st, KS_EUNSUPPORTED, s,
                "cuBLASLt has no algorithm for %s (%c%c layout, workspace %zu bytes)%s%s", what,
                map.transa ? 'T' : 'N', map.transb ? 'T' : 'N', d.workspace_bytes, s ? ": " : "",
                s ? blas_status_name(s) : "");
        goto fail;
    }
    p->nalgo = n;

    if (cuda_mem_alloc(c, d.workspace_bytes, &p->ws, st))
        goto fail;
    *out = p;
    return KS_OK;

fail:;
    ks_status keep = *st;
    blas_gemm_plan_free(p, NULL);
    *st = keep;
    return st->code;
}

const blas_gemm_desc *blas_gemm_plan_desc(const blas_gemm_plan *p)
{
    return p ? &p->d : NULL;
}

const blas_gemm_map *blas_gemm_plan_map(const blas_gemm_plan *p)
{
    return p ? &p->map : NULL;
}

int blas_gemm_plan_algo_count(const blas_gemm_plan *p)
{
    return p ? p->nalgo : 0;
}

const blas_algo_info *blas_gemm_plan_algo(const blas_gemm_plan *p, int i)
{
    return p && i >= 0 && i < p->nalgo ? &p->info[i] : NULL;
}

double blas_gemm_plan_flops(const blas_gemm_plan *p)
{
    return p ? 2.0 * (double)p->d.M * (double)p->d.N * (double)p->d.K * (double)batch_of(&p->d) : 0.0;
}

/* The argument checks shared by the direct and the bound forms. */
static int check_args(const blas_gemm_plan *p, const blas_gemm_args *a, ks_status *st)
{
    const struct { const char *name; CUdeviceptr v; } ops[] = {{"A", a->A}, {"B", a->B}, {"C", a->C}};
    for (size_t i = 0; i < 3; i++) {
        if (!ops[i].v)
            return ks_fail(st, KS_EINVAL, 0, "GEMM operand %s is a NULL device pointer", ops[i].name);
        if (ops[i].v % BLAS_PTR_ALIGN)
            return ks_fail(st, KS_EINVAL, 0,
                           "GEMM operand %s (0x%llx) is not %d-byte aligned, which the plan "
                           "promised cuBLASLt", ops[i].name, (unsigned long long)ops[i].v,
                           BLAS_PTR_ALIGN);
    }
    if (p->d.dtype != BLAS_E4M3 && (a->scale_a || a->scale_b))
        return ks_fail(st, KS_EINVAL, 0, "scales apply to e4m3 GEMMs only, not %s",
                       blas_dtype_name((int)p->d.dtype));
    if ((a->scale_a % 4) || (a->scale_b % 4))
        return ks_fail(st, KS_EINVAL, 0, "fp8 scale pointers must be 4-byte aligned");
    int need_bias = blas_epilogue_has_bias(p->d.epilogue);
    if (need_bias && !a->bias)
        return ks_fail(st, KS_EINVAL, 0, "the %s epilogue needs a bias vector", blas_epilogue_name(p->d.epilogue));
    if (!need_bias && a->bias)
        return ks_fail(st, KS_EINVAL, 0, "a bias was given, but the plan's epilogue is %s",
                       blas_epilogue_name(p->d.epilogue));
    if (a->bias % 16)
        return ks_fail(st, KS_EINVAL, 0, "the bias (0x%llx) is not 16-byte aligned", (unsigned long long)a->bias);
    return KS_OK;
}

static int enqueue(blas_gemm_plan *p, int i, const blas_gemm_args *a, CUstream stream,
                   ks_status *st)
{
    if (i < 0 || i >= p->nalgo)
        return ks_fail(st, KS_EINVAL, 0, "algorithm index %d out of range (plan has %d)", i,
                       p->nalgo);
    if (cuda_ctx_use(p->ctx, st))
        return st->code;
    if (p->d.dtype == BLAS_E4M3 && set_scales(p, a->scale_a, a->scale_b, st))
        return st->code;
    if (a->bias && a->bias != p->set_bias) {
        if (set_ptr(p, CUBLASLT_MATMUL_DESC_BIAS_POINTER, a->bias,
                    "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", st))
            return st->code;
        p->set_bias = a->bias;
    }
    const float alpha = 1.0f, beta = 0.0f;
    CUdeviceptr ws = a->workspace ? a->workspace : p->ws;
    const void *lt_a = (const void *)(uintptr_t)(p->map.a_is_user_b ? a->B : a->A);
    const void *lt_b = (const void *)(uintptr_t)(p->map.a_is_user_b ? a->A : a->B);
    void *c = (void *)(uintptr_t)a->C;
    /* beta = 0: C is not read, so it doubles as D. */
    int s = p->api->matmul(p->lt, p->op, &alpha, lt_a, p->la, lt_b, p->lb, &beta, c, p->lc, c,
                           p->lc, &p->res[i].algo, (void *)(uintptr_t)ws, p->d.workspace_bytes,
                           (cudaStream_t)stream);
    if (s != CUBLAS_STATUS_SUCCESS) {
        char what[320], call[400];
        case_name(&p->d, what, sizeof what);
        snprintf(call, sizeof call, "cublasLtMatmul (%s, algorithm %d)", what, i);
        return blas_fail(st, s, call);
    }
    return KS_OK;
}

int blas_gemm_enqueue_args(blas_gemm_plan *p, int algo_index, const blas_gemm_args *a, CUstream stream,
                           ks_status *st)
{
    if (!p || !a)
        return ks_fail(st, KS_EINVAL, 0, "blas_gemm_enqueue_args: NULL argument");
    if (check_args(p, a, st))
        return st->code;
    return enqueue(p, algo_index, a, stream, st);
}

int blas_gemm_enqueue(blas_gemm_plan *p, int algo_index, CUdeviceptr A, CUdeviceptr B,
                      CUdeviceptr C, CUdeviceptr scale_a, CUdeviceptr scale_b,
                      CUdeviceptr workspace, CUstream stream, ks_status *st)
{
    blas_gemm_args a = {A, B, C, scale_a, scale_b, workspace, 0};
    return blas_gemm_enqueue_args(p, algo_index, &a, stream, st);
}

int blas_gemm_bind(blas_gemm_plan *p, const blas_gemm_args *a, ks_status *st)
{
    if (!p || !a)
        return ks_fail(st, KS_EINVAL, 0, "blas_gemm_bind: NULL argument");
    if (check_args(p, a, st))
        return st->code;
    p->args = *a;
    p->bound = 1;
    return KS_OK;
}

int blas_matmul_enqueue(void *plan, int algo_index, CUstream stream, ks_status *st)
{
    blas_gemm_plan *p = plan;
    if (!p)
        return ks_fail(st, KS_EINVAL, 0, "blas_matmul_enqueue: NULL plan");
    if (!p->bound)
        return ks_fail(st, KS_EINVAL, 0, "blas_matmul_enqueue: no operands bound (blas_gemm_bind)");
    return enqueue(p, algo_index, &p->args, stream, st);
}

/* ---- timing ------------------------------------------------------------ */

int blas_gemm_run_fn(void *user, CUstream stream, int *planned, ks_status *st)
{
    blas_gemm_run *r = user;
    if (planned)
        *planned = -1;
    if (!r)
        return ks_fail(st, KS_EINVAL, 0, "blas_gemm_run_fn: NULL user");
    return blas_matmul_enqueue(r->plan, r->algo, stream, st);
}

int blas_gemm_time(blas_gemm_plan *p, const timing_opts *o, blas_gemm_timing *out,
                   ks_status *st)
{
    if (!p || !out)
        return ks_fail(st, KS_EINVAL, 0, "blas_gemm_time: NULL argument");
    memset(out, 0, sizeof *out);
    out->clock_before_mhz = out->clock_after_mhz = -1;
    if (!p->bound)
        return ks_fail(st, KS_EINVAL, 0, "blas_gemm_time: no operands bound (blas_gemm_bind)");
    timing_opts def;
    if (!o) {
        timing_opts_default(&def);
        o = &def;
    }
    char label[64];
    for (int i = 0; i < p->nalgo; i++) {
        blas_gemm_run run = {p, i};
        snprintf(label, sizeof label, "cublasLt algo %d", i);
        timing_target t = {label, blas_gemm_run_fn, &run, blas_gemm_plan_flops(p)};
        timing_result r;
        memset(&r, 0, sizeof r);
        int rc = timing_measure(p->ctx, &t, o, &r, st);
        if (rc == KS_OK) {
            blas_algo_timing *a = &out->a[i];
            a->index = i;
            a->stats = r.t[0].stats;
            a->tflops = r.t[0].tflops;
            snprintf(a->stop_reason, sizeof a->stop_reason, "%s", r.stop_reason);
            if (i == 0) {
                out->method = r.method;
                snprintf(out->fallback, sizeof out->fallback, "%s", r.fallback);
                out->flush_bytes = r.flush_bytes;
                out->clock_before_mhz = r.clock_before_mhz;
            }
            out->clock_after_mhz = r.clock_after_mhz;
            out->n = i + 1;
            if (out->a[i].stats.median < out->a[out->best].stats.median)
                out->best = i;
        }
        timing_result_free(&r);
        if (rc)
            return rc;
    }
    return KS_OK;
}
