/*
 * blas.h: the cuBLASLt GEMM baseline. Plans and enqueues C = A·Bᵀ (and
 * its variants below) through cuBLASLt, so that a candidate GEMM kernel can
 * be timed against the vendor library with the same method, on the same
 * stream, in the same worker.
 *
 * Task semantics: A[M,K], B[N,K] and C[M,N] are row-major, C = A·Bᵀ
 * (both operands K-major, the layout of a linear layer's x·Wᵀ). Variants,
 * all off in a zeroed description:
 *   - layouts: A stored [K,M] (a_layout BLAS_A_KM, C = Aᵀ·...) and B stored
 *     [K,N] (b_layout BLAS_B_KN, C = ...·B); C is always [M,N] row-major;
 *   - a strided batch: batch GEMMs, the b-th operands at b·stride_x
 *     elements (0: packed, one matrix after the other);
 *   - epilogues: C = act(A·Bᵀ + bias) with bias[N] (one value per column
 *     of C, shared by the batch) in C's dtype or fp32 (bias_f32); act is
 *     none, ReLU or GELU (cuBLASLt's GELU is the tanh approximation);
 *   - matrix-vector shapes are M = 1 or N = 1 of the same GEMM.
 * Types:
 *
 *   BLAS_BF16   bf16 in,  fp32 accumulate, bf16 out
 *   BLAS_F16    fp16 in,  fp32 accumulate, fp16 out
 *   BLAS_E4M3   fp8 e4m3 in with per-tensor fp32 scales (device pointers),
 *               fp32 accumulate, bf16 out: C = (sa·A)·(sb·B)ᵀ
 *   BLAS_F32    fp32 in and out, compute BLAS_COMPUTE_F32 (strict fp32) or
 *               BLAS_COMPUTE_TF32 (inputs may be rounded to TF32)
 *
 * cuBLASLt is column-major; blas_gemm_map (a pure function, unit-tested)
 * says how the row-major problem is handed to it; docs/baselines.md has the
 * derivation. The mapping is always "TN", which is also the only layout
 * Hopper's fp8 kernels accept.
 *
 * cuBLASLt is never linked: it is opened through host/driver/dynlib.h
 * (dynlib_cublaslt) and each entry point is resolved by name. Without the
 * library every function here fails with KS_ENOLIB; without a driver or GPU,
 * plan creation fails with KS_ENODRIVER. A failed cuBLAS call gives KS_ECUDA
 * (KS_ENOMEM for CUBLAS_STATUS_ALLOC_FAILED, KS_EUNSUPPORTED for
 * CUBLAS_STATUS_NOT_SUPPORTED and CUBLAS_STATUS_ARCH_MISMATCH) with
 * st->sub = the cublasStatus_t and a message "<call>: CUBLAS_STATUS_X (n)".
 * A heuristic that returns no algorithm is KS_EUNSUPPORTED with a message
 * naming the case (dtypes, compute, shape).
 *
 * Choosing the algorithm: the plan asks cublasLtMatmulAlgoGetHeuristic for
 * the top `algos` candidates (default 8) under a 32 MiB workspace. Index 0
 * is the heuristic's own first choice (what PyTorch runs); the caller times
 * every index with its own timer (blas_gemm_enqueue, or the bound form
 * blas_matmul_enqueue for callback-style timers) and keeps the best,
 * recording both.
 */
#ifndef KLAB_HOST_BLAS_H
#define KLAB_HOST_BLAS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "driver/cuda.h"
#include "measure/stats.h"
#include "base/status.h"
#include "measure/timing.h"

typedef enum {
    BLAS_BF16 = 0,
    BLAS_F16 = 1,
    BLAS_E4M3 = 2,
    BLAS_F32 = 3
} blas_dtype;

typedef enum {
    BLAS_COMPUTE_F32 = 0,   /* CUBLAS_COMPUTE_32F */
    BLAS_COMPUTE_TF32 = 1   /* CUBLAS_COMPUTE_32F_FAST_TF32; BLAS_F32 only */
} blas_compute;

/* The default number of heuristic results asked for and the workspace. */
#define BLAS_DEFAULT_ALGOS 8
#define BLAS_MAX_ALGOS 64
#define BLAS_DEFAULT_WORKSPACE ((size_t)32 << 20)
/* The pointer alignment the plan promises cuBLASLt (its default
 * preference); blas_gemm_enqueue refuses A, B, C less aligned than this. */
#define BLAS_PTR_ALIGN 256

typedef enum { BLAS_A_MK = 0, BLAS_A_KM = 1 } blas_a_layout;
typedef enum { BLAS_B_NK = 0, BLAS_B_KN = 1 } blas_b_layout;

typedef enum {
    BLAS_EPI_NONE = 0,
    BLAS_EPI_BIAS,              /* CUBLASLT_EPILOGUE_BIAS */
    BLAS_EPI_RELU,              /* CUBLASLT_EPILOGUE_RELU */
    BLAS_EPI_RELU_BIAS,         /* CUBLASLT_EPILOGUE_RELU_BIAS: relu(x + bias) */
    BLAS_EPI_GELU,              /* CUBLASLT_EPILOGUE_GELU */
    BLAS_EPI_GELU_BIAS,         /* CUBLASLT_EPILOGUE_GELU_BIAS: gelu(x + bias) */
    BLAS_EPI_COUNT
} blas_epilogue;

typedef struct blas_gemm_desc {
    blas_dtype dtype;
    blas_compute compute;       /* BLAS_COMPUTE_F32 unless dtype is BLAS_F32 */
    int64_t M, N, K;            /* all >= 1 */
    int algos;                  /* heuristic results wanted; 0: 8; max 64 */
    size_t workspace_bytes;     /* 0: 32 MiB */
    int fast_accum;             /* fp8 only: CUBLASLT_MATMUL_DESC_FAST_ACCUM (default 0) */
    int a_layout;               /* blas_a_layout; fp8 only BLAS_A_MK */
    int b_layout;               /* blas_b_layout; fp8 only BLAS_B_NK */
    int64_t batch;              /* 0 or 1: one GEMM */
    int64_t stride_a, stride_b, stride_c;   /* elements between batch members; 0: packed */
    int epilogue;               /* blas_epilogue */
    int bias_f32;               /* the bias is fp32 (else C's dtype) */
} blas_gemm_desc;

/* "bf16", "f16", "e4m3", "f32"; "?" when unknown. */
const char *blas_dtype_name(int dtype);
/* "f32", "tf32"; "?" when unknown. */
const char *blas_compute_name(int compute);
/* Parses the names above; KS_EINVAL naming the accepted values otherwise. */
int blas_dtype_parse(const char *s, blas_dtype *out, ks_status *st);
int blas_compute_parse(const char *s, blas_compute *out, ks_status *st);

/* Bytes of one element of A/B (in) and of C (out) for a dtype; 0 when unknown. */
size_t blas_dtype_in_bytes(int dtype);
size_t blas_dtype_out_bytes(int dtype);

/* "none", "bias", "relu", "relu_bias", "gelu", "gelu_bias"; "?" when unknown. */
const char *blas_epilogue_name(int epilogue);
/* Parses those names; KS_EINVAL naming the accepted values otherwise. */
int blas_epilogue_parse(const char *s, blas_epilogue *out, ks_status *st);
/* Whether the epilogue reads a bias vector. */
int blas_epilogue_has_bias(int epilogue);

/* Bytes the operands of a checked description span: A, B and C with the
 * batch and its strides, and the bias (0 without one). */
typedef struct blas_gemm_bytes {
    size_t a, b, c, bias;
} blas_gemm_bytes;
void blas_gemm_operand_bytes(const blas_gemm_desc *d, blas_gemm_bytes *out);

/* How the row-major problem is posed to cuBLASLt (column-major):
 * D = op(A_lt)·op(B_lt) with D_lt m×n. a_is_user_b is 1: cuBLASLt's "A" is
 * the caller's B and cuBLASLt's "B" is the caller's A (so the fp8 scale of
 * cuBLASLt's A is the caller's scale_b). transa/transb are 1 for
 * CUBLAS_OP_T, 0 for CUBLAS_OP_N. a_rows/a_cols (b_..., c_...) are the
 * stored column-major shapes given to cublasLtMatrixLayoutCreate. */
typedef struct blas_gemm_map {
    uint64_t m, n, k;
    int transa, transb;
    int a_is_user_b;
    uint64_t a_rows, a_cols, b_rows, b_cols, c_rows, c_cols;
    int64_t lda, ldb, ldc;
    int64_t batch;                              /* >= 1 */
    int64_t stride_a, stride_b, stride_c;       /* of cuBLASLt's A, B and C, in elements */
    int align_a, align_b, align_c;              /* bytes every batch member of cuBLASLt's A, B, C is
                                                 * aligned to, given BLAS_PTR_ALIGN base pointers */
} blas_gemm_map;

/* Pure: checks d (dims >= 1, a known dtype, TF32 only with BLAS_F32,
 * fp8 needs K % 16 == 0 so the K-major rows are 16-byte aligned and the
 * default layouts, batch strides at least a matrix, a known epilogue) and
 * fills out. KS_EINVAL with the reason otherwise. Needs no library. */
int blas_gemm_map_dims(const blas_gemm_desc *d, blas_gemm_map *out, ks_status *st);

/* What can be checked without a GPU: the mapping, then the matmul
 * descriptor (compute type, transposes, epilogue, bias type, fp8 flags)
 * and the three layouts (with the batch) created and set by the loaded
 * cuBLASLt, which checks every attribute value. The heuristic and the
 * handle need a device and are not tried. KS_EINVAL for a bad description,
 * KS_ENOLIB without cuBLASLt, KS_ECUDA/KS_EUNSUPPORTED naming the
 * attribute cuBLASLt refused. */
int blas_gemm_describe(const blas_gemm_desc *d, blas_gemm_map *out, ks_status *st);

/* "CUBLAS_STATUS_NOT_SUPPORTED" etc. from a built-in table; never NULL
 * ("CUBLAS_STATUS_<n>" for an unknown value, in a static buffer). */
const char *blas_status_name(int status);

/* Fills st for a failed cuBLAS call `what` returning status (see the
 * top of this file for the code chosen) and returns the code; KS_OK for
 * CUBLAS_STATUS_SUCCESS. */
int blas_fail(ks_status *st, int status, const char *what);

/* Loads cuBLASLt and resolves every entry point this file uses (needs no
 * driver). KS_ENOLIB when the library is missing, KS_ENOTFOUND naming a
 * missing entry point (a too old library). */
int blas_load(ks_status *st);

/* cuBLASLt's version, "13.0.0" style (major.minor.patch from
 * cublasLtGetVersion), loading the library. KS_ENOLIB when it is missing;
 * buf is then "". */
int blas_version(char *buf, size_t n, ks_status *st);

/* The file cuBLASLt was loaded from, or NULL (st says why). */
const char *blas_library_path(ks_status *st);

/* Names of cublasLtMatmulTile_t ("128x256", "undefined" for 0) and
 * cublasLtMatmulStages_t ("64x4", "128xAUTO"); "id<n>" when unknown.
 * Always NUL-terminate buf (n > 0). */
void blas_tile_name(int id, char *buf, size_t n);
void blas_stages_name(int id, char *buf, size_t n);

/* One heuristic result. Fields cuBLASLt cannot report are -1. */
typedef struct blas_algo_info {
    int index;                  /* position in the heuristic's order, 0 = its first choice */
    int algo_id;                /* CUBLASLT_ALGO_CONFIG_ID */
    int tile_id;                /* cublasLtMatmulTile_t */
    char tile[16];              /* "128x256", "undefined" */
    int stages_id;              /* cublasLtMatmulStages_t */
    char stages[16];            /* "64x4", "128xAUTO", "undefined" */
    int splitk;                 /* CUBLASLT_ALGO_CONFIG_SPLITK_NUM */
    int reduction_scheme;       /* cublasLtReductionScheme_t */
    int swizzle;                /* CTA swizzling */
    int custom_option;
    int inner_shape_id;
    int cluster_shape_id;       /* cublasLtClusterShape_t, 0 = auto */
    size_t workspace_bytes;     /* what this algorithm needs */
    float waves;                /* wavesCount */
} blas_algo_info;

typedef struct blas_gemm_plan blas_gemm_plan;

/* Creates a plan on c: cuBLASLt handle, matmul descriptor, layouts,
 * preference (workspace), the heuristic's top d->algos results with their
 * info, the plan's own workspace (d->workspace_bytes of device memory) and,
 * for fp8, a device pair of unit scales used when the caller passes none.
 * *out is NULL on failure. Errors: KS_EINVAL (bad desc), KS_ENODRIVER,
 * KS_ENOLIB, KS_ECUDA/KS_ENOMEM, KS_EUNSUPPORTED (no algorithm). The plan
 * borrows c; c must outlive it. */
int blas_gemm_plan_create(const blas_gemm_desc *d, cuda_ctx *c, blas_gemm_plan **out,
                          ks_status *st);

/* Frees the plan and everything it owns (device memory through its
 * context). NULL is a no-op. The plan is gone even when a call fails. */
int blas_gemm_plan_free(blas_gemm_plan *p, ks_status *st);

/* The description the plan was made from (with defaults filled in). */
const blas_gemm_desc *blas_gemm_plan_desc(const blas_gemm_plan *p);
/* The mapping it uses. */
const blas_gemm_map *blas_gemm_plan_map(const blas_gemm_plan *p);
/* Number of algorithms found (>= 1), and the info of index i (NULL when
 * out of range). */
int blas_gemm_plan_algo_count(const blas_gemm_plan *p);
const blas_algo_info *blas_gemm_plan_algo(const blas_gemm_plan *p, int i);
/* 2·M·N·K·batch, the flop count used for TFLOP/s. */
double blas_gemm_plan_flops(const blas_gemm_plan *p);

/* The operands of one call. A, B, C are device pointers (BLAS_PTR_ALIGN-
 * aligned) to the row-major arrays above. scale_a/scale_b: device float
 * pointers for fp8 (0: 1.0); must be 0 for other dtypes. workspace: a
 * device buffer of at least the plan's workspace_bytes, or 0 to use the
 * plan's own. bias: the bias vector (16-byte aligned) when the epilogue
 * has one, else 0. */
typedef struct blas_gemm_args {
    CUdeviceptr A, B, C;
    CUdeviceptr scale_a, scale_b;   /* fp8 only; 0 = 1.0 */
    CUdeviceptr workspace;          /* 0 = the plan's own */
    CUdeviceptr bias;               /* bias epilogues only */
} blas_gemm_args;

/* Enqueues one GEMM with heuristic result algo_index on stream (NULL: the
 * legacy default stream); asynchronous, returns after the launch. KS_EINVAL
 * for a bad index, a misaligned pointer, scales given for a non-fp8 dtype,
 * a bias missing or given against the plan's epilogue. */
int blas_gemm_enqueue_args(blas_gemm_plan *p, int algo_index, const blas_gemm_args *a, CUstream stream,
                           ks_status *st);

/* The same without a bias (plans without a bias epilogue). */
int blas_gemm_enqueue(blas_gemm_plan *p, int algo_index, CUdeviceptr A, CUdeviceptr B,
                      CUdeviceptr C, CUdeviceptr scale_a, CUdeviceptr scale_b,
                      CUdeviceptr workspace, CUstream stream, ks_status *st);

/* Callback-style use for timers that only know "enqueue one sample":
 * bind the operands once, then call blas_matmul_enqueue(plan, i, stream,
 * st) as often as wanted. The arguments are checked as in
 * blas_gemm_enqueue_args when bound. */

int blas_gemm_bind(blas_gemm_plan *p, const blas_gemm_args *a, ks_status *st);

/* Enqueues one matmul with the bound operands; plan is a blas_gemm_plan *
 * (void * so it fits a generic callback). KS_EINVAL when nothing is bound. */
int blas_matmul_enqueue(void *plan, int algo_index, CUstream stream, ks_status *st);

/* ---- timing (host/measure/timing.h) ---- */

/* A timing_run_fn target for one algorithm: user is a blas_gemm_run. It
 * enqueues one matmul with the bound operands (blas_gemm_bind) and sets
 * *planned = -1 (a library call: cuBLASLt may launch one kernel or two,
 * e.g. a split-K reduction). */
typedef struct blas_gemm_run {
    blas_gemm_plan *plan;
    int algo;
} blas_gemm_run;

int blas_gemm_run_fn(void *user, CUstream stream, int *planned, ks_status *st);

typedef struct blas_algo_timing {
    int index;                  /* algorithm index (0 = the heuristic's first choice) */
    stats_summary stats;        /* of the samples, microseconds */
    double tflops;              /* 2·M·N·K / median */
    char stop_reason[32];
} blas_algo_timing;

typedef struct blas_gemm_timing {
    int n;                      /* algorithms timed */
    blas_algo_timing a[BLAS_MAX_ALGOS];
    int best;                   /* index of the lowest median */
    int method;                 /* TIMING_CUPTI or TIMING_EVENTS, as used */
    char fallback[KS_MSG_MAX];  /* why AUTO fell back to events, or "" */
    size_t flush_bytes;         /* 0 when not flushed */
    int clock_before_mhz, clock_after_mhz; /* of the first and last measurement; -1 unknown */
} blas_gemm_timing;

/* Times every algorithm of p (operands bound with blas_gemm_bind) with
 * timing_measure under o (NULL: timing_opts_default), one after the other
 * on o->stream, and fills out; out->a[0] is the heuristic's first choice
 * and out->best the fastest. Fails with whatever timing_measure returned
 * for the first algorithm that failed (KS_EINVAL when nothing is bound). */
int blas_gemm_time(blas_gemm_plan *p, const timing_opts *o, blas_gemm_timing *out,
                   ks_status *st);

#endif
