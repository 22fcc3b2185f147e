/*
 * test_blas.c: the cuBLASLt baseline (host/libraries/blas.c).
 *
 * Without a GPU: names and parsing, the row-major to column-major mapping
 * (checked by running a plain column-major GEMM with the mapped arguments
 * and comparing with C = A·Bᵀ computed directly), status names and codes,
 * loading cuBLASLt through dynlib, its version, a missing library
 * (KS_ENOLIB, in a child process so the process-wide handle is not
 * involved), and plan creation without a driver (KS_ENODRIVER).
 *
 * The variants: every A/B layout and a strided batch, checked the same way
 * (a column-major GEMM per batch member with the mapped arguments), the
 * rejections of descriptions cuBLASLt cannot take, operand sizes and batch
 * alignments, and blas_gemm_describe, which has the loaded cuBLASLt create
 * the matmul descriptor (epilogue, bias type) and batched layouts without
 * a GPU; the heuristic needs a device (cublasLtCreate fails without one)
 * and is left to the GPU part.
 *
 * With a GPU (cuda_available): a bf16 plan on a small shape, every
 * heuristic algorithm run on integer-valued inputs and compared exactly
 * with the host result, and the bound (callback) form; a batched GEMM with
 * transposed layouts and a ReLU+bias epilogue, compared exactly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cublas_api.h>

#include "libraries/blas.h"
#include "check.h"
#include "driver/cuda.h"

/* ---- names ---- */

static void test_names(void)
{
    ks_status st;
    blas_dtype t;
    const char *names[] = {"bf16", "f16", "e4m3", "f32"};
    for (int i = 0; i < 4; i++) {
        CHECK(blas_dtype_parse(names[i], &t, &st) == KS_OK);
        CHECK(strcmp(blas_dtype_name((int)t), names[i]) == 0);
    }
    CHECK(blas_dtype_parse("fp8", &t, &st) == KS_EINVAL);
    CHECK(strstr(st.msg, "fp8") && strstr(st.msg, "e4m3"));
    CHECK(blas_dtype_parse(NULL, &t, &st) == KS_EINVAL);
    blas_compute c;
    CHECK(blas_compute_parse("tf32", &c, &st) == KS_OK && c == BLAS_COMPUTE_TF32);
    CHECK(blas_compute_parse("f32", &c, &st) == KS_OK && c == BLAS_COMPUTE_F32);
    CHECK(blas_compute_parse("f16", &c, &st) == KS_EINVAL);
    CHECK(strcmp(blas_dtype_name(42), "?") == 0);

    CHECK(blas_dtype_in_bytes(BLAS_BF16) == 2 && blas_dtype_out_bytes(BLAS_BF16) == 2);
    CHECK(blas_dtype_in_bytes(BLAS_F16) == 2 && blas_dtype_out_bytes(BLAS_F16) == 2);
    CHECK(blas_dtype_in_bytes(BLAS_E4M3) == 1 && blas_dtype_out_bytes(BLAS_E4M3) == 2);
    CHECK(blas_dtype_in_bytes(BLAS_F32) == 4 && blas_dtype_out_bytes(BLAS_F32) == 4);
    CHECK(blas_dtype_in_bytes(9) == 0);

    char b[16];
    blas_tile_name(0, b, sizeof b);
    CHECK(strcmp(b, "undefined") == 0);
    blas_tile_name(1, b, sizeof b);
    CHECK(strcmp(b, "8x8") == 0);
    blas_tile_name(20, b, sizeof b);     /* CUBLASLT_MATMUL_TILE_128x128 */
    CHECK(strcmp(b, "128x128") == 0);
    blas_tile_name(23, b, sizeof b);     /* CUBLASLT_MATMUL_TILE_128x256 */
    CHECK(strcmp(b, "128x256") == 0);
    blas_tile_name(634, b, sizeof b);    /* CUBLASLT_MATMUL_TILE_512x1024 */
    CHECK(strcmp(b, "512x1024") == 0);
    blas_tile_name(9999, b, sizeof b);
    CHECK(strcmp(b, "id9999") == 0);
    blas_stages_name(1, b, sizeof b);
    CHECK(strcmp(b, "16x1") == 0);
    blas_stages_name(16, b, sizeof b);   /* CUBLASLT_MATMUL_STAGES_64x4 */
    CHECK(strcmp(b, "64x4") == 0);
    blas_stages_name(24, b, sizeof b);
    CHECK(strcmp(b, "128x6") == 0);
    blas_stages_name(25, b, sizeof b);
    CHECK(strcmp(b, "32x10") == 0);
    blas_stages_name(36, b, sizeof b);   /* CUBLASLT_MATMUL_STAGES_128xAUTO */
    CHECK(strcmp(b, "128xAUTO") == 0);
    blas_stages_name(29, b, sizeof b);   /* a hole in the enum */
    CHECK(strcmp(b, "id29") == 0);
    char tiny[4];
    blas_tile_name(634, tiny, sizeof tiny);
    CHECK(strlen(tiny) == 3);

    blas_epilogue e;
    const char *epis[] = {"none", "bias", "relu", "relu_bias", "gelu", "gelu_bias"};
    for (int i = 0; i < 6; i++) {
        CHECK(blas_epilogue_parse(epis[i], &e, &st) == KS_OK);
        CHECK(strcmp(blas_epilogue_name((int)e), epis[i]) == 0);
    }
    CHECK(blas_epilogue_parse("silu", &e, &st) == KS_EINVAL && strstr(st.msg, "gelu_bias"));
    CHECK(blas_epilogue_has_bias(BLAS_EPI_RELU_BIAS) && blas_epilogue_has_bias(BLAS_EPI_BIAS));
    CHECK(!blas_epilogue_has_bias(BLAS_EPI_GELU) && !blas_epilogue_has_bias(BLAS_EPI_NONE));
    CHECK(strcmp(blas_epilogue_name(99), "?") == 0);
}

/* ---- the mapping ---- */

static blas_gemm_desc desc(blas_dtype t, blas_compute c, int64_t M, int64_t N, int64_t K)
{
    blas_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = t;
    d.compute = c;
    d.M = M;
    d.N = N;
    d.K = K;
    return d;
}

/* A plain column-major GEMM as cuBLASLt defines it: D (m×n, ld ldc) =
 * op(A)·op(B), with X(r,c) stored at X[r + c*ld]. */
static void colmajor_gemm(const blas_gemm_map *mp, const double *A, const double *B, double *D)
{
    for (uint64_t i = 0; i < mp->m; i++)
        for (uint64_t j = 0; j < mp->n; j++) {
            double s = 0;
            for (uint64_t p = 0; p < mp->k; p++) {
                double a = mp->transa ? A[p + i * mp->lda] : A[i + p * mp->lda];
                double b = mp->transb ? B[j + p * mp->ldb] : B[p + j * mp->ldb];
                s += a * b;
            }
            D[i + j * mp->ldc] = s;
        }
}

static void test_map_semantics(int64_t M, int64_t N, int64_t K)
{
    blas_gemm_desc d = desc(BLAS_BF16, BLAS_COMPUTE_F32, M, N, K);
    blas_gemm_map mp;
    ks_status st;
    CHECKF(blas_gemm_map_dims(&d, &mp, &st) == KS_OK, "%s", st.msg);

    /* The stored shapes agree with the operations and the lds. */
    CHECK((mp.transa ? mp.a_cols : mp.a_rows) == mp.m);
    CHECK((mp.transa ? mp.a_rows : mp.a_cols) == mp.k);
    CHECK((mp.transb ? mp.b_cols : mp.b_rows) == mp.k);
    CHECK((mp.transb ? mp.b_rows : mp.b_cols) == mp.n);
    CHECK(mp.c_rows == mp.m && mp.c_cols == mp.n);
    CHECK(mp.lda >= (int64_t)mp.a_rows && mp.ldb >= (int64_t)mp.b_rows
          && mp.ldc >= (int64_t)mp.c_rows);

    double *A = malloc(sizeof(double) * (size_t)(M * K));
    double *B = malloc(sizeof(double) * (size_t)(N * K));
    double *C = malloc(sizeof(double) * (size_t)(M * N));
    double *D = malloc(sizeof(double) * (size_t)(M * N));
    for (int64_t i = 0; i < M * K; i++)
        A[i] = (double)((i * 7 + 3) % 11) - 5;
    for (int64_t i = 0; i < N * K; i++)
        B[i] = (double)((i * 5 + 1) % 13) - 6;
    /* Row-major C = A·Bᵀ, directly. */
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += A[m * K + k] * B[n * K + k];
            C[m * N + n] = s;
        }
    /* The same buffers handed to a column-major GEMM by the mapping; D's
     * bytes must be row-major C. */
    colmajor_gemm(&mp, mp.a_is_user_b ? B : A, mp.a_is_user_b ? A : B, D);
    int same = 1;
    for (int64_t i = 0; i < M * N; i++)
        same &= D[i] == C[i];
    CHECKF(same, "mapped column-major GEMM differs from row-major A*B^T (M=%lld N=%lld K=%lld)",
           (long long)M, (long long)N, (long long)K);
    free(A);
    free(B);
    free(C);
    free(D);
}

/* The mapping for layouts (al, bl) and a batch with the given strides (0:
 * packed): a column-major GEMM per batch member on the mapped buffers
 * equals the row-major C[b] = op(A[b])·op(B[b]) computed directly. */
static void test_layout_semantics(int al, int bl, int64_t M, int64_t N, int64_t K, int64_t batch, int64_t sa,
                                  int64_t sb, int64_t sc)
{
    blas_gemm_desc d = desc(BLAS_F32, BLAS_COMPUTE_F32, M, N, K);
    d.a_layout = al;
    d.b_layout = bl;
    d.batch = batch;
    d.stride_a = sa;
    d.stride_b = sb;
    d.stride_c = sc;
    blas_gemm_map mp;
    ks_status st;
    CHECKF(blas_gemm_map_dims(&d, &mp, &st) == KS_OK, "%s", st.msg);
    CHECK(mp.batch == batch);
    blas_gemm_bytes by;
    blas_gemm_operand_bytes(&d, &by);
    size_t na = by.a / 4, nb = by.b / 4, nc = by.c / 4;
    double *A = calloc(na, sizeof(double)), *B = calloc(nb, sizeof(double));
    double *C = calloc(nc, sizeof(double)), *D = calloc(nc, sizeof(double));
    for (size_t i = 0; i < na; i++)
        A[i] = (double)((i * 7 + 3) % 11) - 5;
    for (size_t i = 0; i < nb; i++)
        B[i] = (double)((i * 5 + 1) % 13) - 6;
    int64_t SA = sa ? sa : M * K, SB = sb ? sb : N * K, SC = sc ? sc : M * N;
    for (int64_t b = 0; b < batch; b++) {
        const double *Ab = A + b * SA, *Bb = B + b * SB;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++) {
                    double a = al == BLAS_A_MK ? Ab[m * K + k] : Ab[k * M + m];
                    double x = bl == BLAS_B_NK ? Bb[n * K + k] : Bb[k * N + n];
                    s += a * x;
                }
                C[b * SC + m * N + n] = s;
            }
        colmajor_gemm(&mp, (mp.a_is_user_b ? B : A) + b * mp.stride_a, (mp.a_is_user_b ? A : B) + b * mp.stride_b,
                      D + b * mp.stride_c);
    }
    int same = 1;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < M * N; i++)
            same &= D[b * SC + i] == C[b * SC + i];
    CHECKF(same, "layouts %s/%s batch %lld: mapped column-major GEMM differs (M=%lld N=%lld K=%lld)",
           al ? "km" : "mk", bl ? "kn" : "nk", (long long)batch, (long long)M, (long long)N, (long long)K);
    free(A);
    free(B);
    free(C);
    free(D);
}

static void test_variants(void)
{
    ks_status st;
    blas_gemm_map mp;
    for (int al = 0; al < 2; al++)
        for (int bl = 0; bl < 2; bl++) {
            test_layout_semantics(al, bl, 3, 5, 7, 1, 0, 0, 0);
            test_layout_semantics(al, bl, 1, 9, 4, 1, 0, 0, 0);    /* M = 1: vector-matrix */
            test_layout_semantics(al, bl, 8, 1, 6, 1, 0, 0, 0);    /* N = 1: matrix-vector */
            test_layout_semantics(al, bl, 4, 6, 5, 3, 0, 0, 0);    /* packed batch */
            test_layout_semantics(al, bl, 4, 6, 5, 2, 29, 33, 31); /* padded strides */
        }
    /* The transposes follow the layouts; the lds are the stored rows. */
    blas_gemm_desc d = desc(BLAS_BF16, BLAS_COMPUTE_F32, 64, 128, 256);
    d.a_layout = BLAS_A_KM;
    d.b_layout = BLAS_B_KN;
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_OK);
    CHECK(mp.transa == 0 && mp.transb == 1 && mp.lda == 128 && mp.ldb == 64 && mp.ldc == 128);
    CHECK(mp.batch == 1 && mp.align_a == BLAS_PTR_ALIGN && mp.align_c == BLAS_PTR_ALIGN);

    /* Batch sizes and the alignment of batch members. */
    d = desc(BLAS_BF16, BLAS_COMPUTE_F32, 3, 5, 7);
    d.batch = 4;
    blas_gemm_bytes by;
    blas_gemm_operand_bytes(&d, &by);
    CHECK(by.a == 4 * 21 * 2 && by.b == 4 * 35 * 2 && by.c == 4 * 15 * 2 && by.bias == 0);
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_OK);
    CHECK(mp.stride_a == 35 && mp.stride_b == 21 && mp.stride_c == 15);   /* cuBLASLt's A is the caller's B */
    CHECK(mp.align_a == 2 && mp.align_b == 2 && mp.align_c == 2);         /* 70, 42 and 30 bytes apart */
    d.stride_a = d.stride_b = d.stride_c = 128;
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_OK && mp.align_a == 256 && mp.align_c == 256);
    d.epilogue = BLAS_EPI_GELU_BIAS;
    blas_gemm_operand_bytes(&d, &by);
    CHECK(by.bias == 5 * 2 && by.a == (3 * 128 + 21) * 2);
    d.bias_f32 = 1;
    blas_gemm_operand_bytes(&d, &by);
    CHECK(by.bias == 5 * 4);
    d = desc(BLAS_F32, BLAS_COMPUTE_TF32, 8, 8, 8);
    blas_gemm_operand_bytes(&d, &by);
    CHECK(by.a == 256 && by.c == 256);

    /* Rejections. */
    d = desc(BLAS_E4M3, BLAS_COMPUTE_F32, 64, 64, 64);
    d.b_layout = BLAS_B_KN;
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL && strstr(st.msg, "TN layout"));
    d = desc(BLAS_BF16, BLAS_COMPUTE_F32, 64, 64, 64);
    d.a_layout = 5;
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL && strstr(st.msg, "layout"));
    d = desc(BLAS_BF16, BLAS_COMPUTE_F32, 64, 64, 64);
    d.stride_a = 8192;
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL && strstr(st.msg, "batch > 1"));
    d.batch = 2;
    d.stride_a = 100;
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL && strstr(st.msg, "overlap"));
    d = desc(BLAS_BF16, BLAS_COMPUTE_F32, 64, 64, 64);
    d.batch = -3;
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL && strstr(st.msg, "batch"));
    d = desc(BLAS_BF16, BLAS_COMPUTE_F32, 64, 64, 64);
    d.epilogue = 42;
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL && strstr(st.msg, "epilogue"));
    d.epilogue = BLAS_EPI_RELU;
    d.bias_f32 = 1;
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL && strstr(st.msg, "fp32 bias"));
}

/* What cuBLASLt checks without a GPU: descriptors and layouts. */
static void test_describe(void)
{
    ks_status st;
    blas_gemm_map mp;
    struct { blas_dtype t; blas_compute c; int64_t M, N, K, batch; int al, bl, epi, bias_f32, fast; } cases[] = {
        {BLAS_BF16, BLAS_COMPUTE_F32, 4096, 4096, 4096, 1, 0, 0, 0, 0, 0},
        {BLAS_BF16, BLAS_COMPUTE_F32, 512, 512, 512, 16, 0, 0, 0, 0, 0},
        {BLAS_BF16, BLAS_COMPUTE_F32, 1024, 4096, 1024, 1, 0, 0, BLAS_EPI_BIAS, 0, 0},
        {BLAS_BF16, BLAS_COMPUTE_F32, 1024, 4096, 1024, 1, 0, 0, BLAS_EPI_RELU_BIAS, 0, 0},
        {BLAS_BF16, BLAS_COMPUTE_F32, 1024, 4096, 1024, 1, 0, 0, BLAS_EPI_GELU_BIAS, 1, 0},
        {BLAS_F16, BLAS_COMPUTE_F32, 1024, 1024, 1024, 4, 1, 1, BLAS_EPI_GELU, 0, 0},
        {BLAS_F32, BLAS_COMPUTE_F32, 8192, 1, 8192, 1, 0, 0, 0, 0, 0},
        {BLAS_F32, BLAS_COMPUTE_TF32, 1, 8192, 8192, 1, 0, 1, 0, 0, 0},
        {BLAS_F32, BLAS_COMPUTE_TF32, 2048, 2048, 2048, 1, 0, 0, BLAS_EPI_RELU_BIAS, 0, 0},
        {BLAS_E4M3, BLAS_COMPUTE_F32, 2048, 2048, 2048, 1, 0, 0, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        blas_gemm_desc d = desc(cases[i].t, cases[i].c, cases[i].M, cases[i].N, cases[i].K);
        d.batch = cases[i].batch;
        d.a_layout = cases[i].al;
        d.b_layout = cases[i].bl;
        d.epilogue = cases[i].epi;
        d.bias_f32 = cases[i].bias_f32;
        d.fast_accum = cases[i].fast;
        ks_clear(&st);
        int rc = blas_gemm_describe(&d, &mp, &st);
        CHECKF(rc == KS_OK, "describe case %zu (%s, %s): %s", i, blas_dtype_name((int)d.dtype),
               blas_epilogue_name(d.epilogue), st.msg);
        CHECK(mp.batch == (cases[i].batch > 1 ? cases[i].batch : 1));
    }
    blas_gemm_desc bad = desc(BLAS_BF16, BLAS_COMPUTE_TF32, 8, 8, 8);
    CHECK(blas_gemm_describe(&bad, &mp, &st) == KS_EINVAL);
    CHECK(blas_gemm_describe(NULL, &mp, &st) == KS_EINVAL);
}

static void test_map(void)
{
    ks_status st;
    blas_gemm_map mp;
    blas_gemm_desc d = desc(BLAS_BF16, BLAS_COMPUTE_F32, 64, 128, 256);
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_OK);
    CHECK(mp.m == 128 && mp.n == 64 && mp.k == 256);
    CHECK(mp.transa == 1 && mp.transb == 0);        /* TN */
    CHECK(mp.lda == 256 && mp.ldb == 256 && mp.ldc == 128);
    CHECK(mp.a_is_user_b == 1);
    CHECK(mp.a_rows == 256 && mp.a_cols == 128);    /* B[N,K] row-major = K×N col-major */
    CHECK(mp.b_rows == 256 && mp.b_cols == 64);     /* A[M,K] row-major = K×M col-major */
    CHECK(mp.c_rows == 128 && mp.c_cols == 64);

    /* fp8 gets the same TN mapping, which is what Hopper requires. */
    d = desc(BLAS_E4M3, BLAS_COMPUTE_F32, 48, 80, 32);
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_OK);
    CHECK(mp.transa == 1 && mp.transb == 0 && mp.m == 80 && mp.n == 48 && mp.k == 32);
    CHECK(mp.lda == 32 && mp.ldb == 32 && mp.ldc == 80);

    d = desc(BLAS_F32, BLAS_COMPUTE_TF32, 3, 5, 7);
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_OK);
    CHECK(mp.m == 5 && mp.n == 3 && mp.k == 7 && mp.lda == 7 && mp.ldc == 5);

    /* Rejections. */
    d = desc(BLAS_BF16, BLAS_COMPUTE_TF32, 64, 64, 64);
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL);
    CHECK(strstr(st.msg, "tf32") != NULL);
    d = desc(BLAS_E4M3, BLAS_COMPUTE_F32, 64, 64, 40);
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL);
    CHECK(strstr(st.msg, "multiple of 16") != NULL);
    d = desc(BLAS_BF16, BLAS_COMPUTE_F32, 0, 64, 64);
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL);
    d = desc(BLAS_BF16, BLAS_COMPUTE_F32, 64, -1, 64);
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL);
    d = desc((blas_dtype)7, BLAS_COMPUTE_F32, 64, 64, 64);
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL);
    d = desc(BLAS_BF16, BLAS_COMPUTE_F32, (int64_t)1 << 30, (int64_t)1 << 30, 64);
    CHECK(blas_gemm_map_dims(&d, &mp, &st) == KS_EINVAL);

    test_map_semantics(3, 5, 7);
    test_map_semantics(1, 9, 4);
    test_map_semantics(8, 1, 1);
    test_map_semantics(16, 16, 16);
}

/* ---- statuses ---- */

static void test_status(void)
{
    ks_status st;
    CHECK(strcmp(blas_status_name(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED") == 0);
    CHECK(strcmp(blas_status_name(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE") == 0);
    CHECK(strcmp(blas_status_name(CUBLAS_STATUS_EXECUTION_FAILED),
                 "CUBLAS_STATUS_EXECUTION_FAILED") == 0);
    CHECK(strcmp(blas_status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS") == 0);
    CHECK(strcmp(blas_status_name(999), "CUBLAS_STATUS_999") == 0);

    ks_clear(&st);
    CHECK(blas_fail(&st, CUBLAS_STATUS_SUCCESS, "x") == KS_OK && st.code == KS_OK);
    CHECK(blas_fail(&st, CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmul") == KS_EUNSUPPORTED);
    CHECK(st.sub == CUBLAS_STATUS_NOT_SUPPORTED);
    CHECK(strstr(st.msg, "cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED (15)") == st.msg);
    CHECK(blas_fail(&st, CUBLAS_STATUS_ALLOC_FAILED, "cublasLtCreate") == KS_ENOMEM);
    CHECK(blas_fail(&st, CUBLAS_STATUS_ARCH_MISMATCH, "y") == KS_EUNSUPPORTED);
    CHECK(blas_fail(&st, CUBLAS_STATUS_INVALID_VALUE, "z") == KS_ECUDA);
    CHECK(strstr(st.msg, "CUBLAS_STATUS_INVALID_VALUE") != NULL);
}

/* ---- the library ---- */

static void test_library(void)
{
    ks_status st;
    char v[64];
    int rc = blas_load(&st);
    CHECKF(rc == KS_OK, "blas_load: %s", st.msg);
    const char *path = blas_library_path(&st);
    CHECKF(path && strstr(path, "libcublasLt"), "path: %s", path ? path : st.msg);
    rc = blas_version(v, sizeof v, &st);
    CHECKF(rc == KS_OK, "blas_version: %s", st.msg);
    /* The library we compiled against has the same major version. */
    char want[16];
    snprintf(want, sizeof want, "%d.", CUBLAS_VER_MAJOR);
    CHECKF(strncmp(v, want, strlen(want)) == 0, "version %s, header %d", v, CUBLAS_VER_MAJOR);
    CHECK(strchr(v, '.') != strrchr(v, '.'));   /* major.minor.patch */
    CHECK(blas_version(v, 0, &st) == KS_EINVAL);
}

/* A library that cannot be found: KS_ENOLIB, from blas_load, blas_version
 * and plan creation alike. In a child, which has not opened it yet. */
static void test_missing_library(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        setenv("KLAB_CUBLASLT", "/nonexistent/libcublasLt.so.13", 1);
        ks_status st;
        char v[32];
        int bad = 0;
        if (blas_load(&st) != KS_ENOLIB)
            bad |= 1;
        if (!strstr(st.msg, "/nonexistent/libcublasLt.so.13"))
            bad |= 2;
        if (blas_version(v, sizeof v, &st) != KS_ENOLIB || v[0] != '\0')
            bad |= 4;
        blas_gemm_desc d;
        memset(&d, 0, sizeof d);
        d.M = d.N = d.K = 16;
        blas_gemm_map mp;
        if (blas_gemm_describe(&d, &mp, &st) != KS_ENOLIB)
            bad |= 8;
        _exit(bad);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/* ---- plans ---- */

static void test_plan_without_gpu(void)
{
    ks_status st;
    blas_gemm_plan *p = (blas_gemm_plan *)&st;   /* must be reset to NULL */
    blas_gemm_desc d = desc(BLAS_BF16, BLAS_COMPUTE_F32, 128, 128, 128);

    /* A bad description fails as misuse before anything is loaded. */
    blas_gemm_desc bad = desc(BLAS_BF16, BLAS_COMPUTE_TF32, 128, 128, 128);
    CHECK(blas_gemm_plan_create(&bad, NULL, &p, &st) == KS_EINVAL && p == NULL);
    bad = d;
    bad.algos = BLAS_MAX_ALGOS + 1;
    CHECK(blas_gemm_plan_create(&bad, NULL, &p, &st) == KS_EINVAL);
    CHECK(blas_gemm_plan_create(NULL, NULL, &p, &st) == KS_EINVAL);
    CHECK(blas_gemm_plan_free(NULL, &st) == KS_OK);
    CHECK(blas_gemm_plan_algo_count(NULL) == 0 && blas_gemm_plan_algo(NULL, 0) == NULL);
    blas_gemm_timing tm;
    CHECK(blas_gemm_time(NULL, NULL, &tm, &st) == KS_EINVAL);
    blas_gemm_run run = {NULL, 0};
    int planned = 7;
    CHECK(blas_gemm_run_fn(&run, NULL, &planned, &st) == KS_EINVAL && planned == -1);
    CHECK(blas_matmul_enqueue(NULL, 0, NULL, &st) == KS_EINVAL);

    char why[256];
    if (cuda_available(why, sizeof why)) {
        SKIP("a CUDA driver is present: the no-driver case cannot be checked here");
        return;
    }
    p = (blas_gemm_plan *)&st;
    int rc = blas_gemm_plan_create(&d, NULL, &p, &st);
    CHECKF(rc == KS_ENODRIVER, "rc %d: %s", rc, st.msg);
    CHECK(p == NULL);
    CHECK(st.msg[0] != '\0');
}

/* bf16 from a float that is exactly representable (small integers). */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_plan_on_gpu(void)
{
    char why[256];
    if (!cuda_available(why, sizeof why)) {
        SKIP("no GPU: bf16 plan and run");
        return;
    }
    ks_status st;
    cuda_ctx *c = NULL;
    if (cuda_ctx_open(0, &c, &st)) {
        CHECKF(0, "cuda_ctx_open: %s", st.msg);
        return;
    }
    enum { M = 64, N = 96, K = 128 };
    blas_gemm_desc d = desc(BLAS_BF16, BLAS_COMPUTE_F32, M, N, K);
    blas_gemm_plan *p = NULL;
    int rc = blas_gemm_plan_create(&d, c, &p, &st);
    CHECKF(rc == KS_OK, "plan: %s", st.msg);
    if (rc) {
        cuda_ctx_close(c, &st);
        return;
    }
    int n = blas_gemm_plan_algo_count(p);
    CHECK(n >= 1 && n <= BLAS_DEFAULT_ALGOS);
    CHECK(blas_gemm_plan_desc(p)->workspace_bytes == BLAS_DEFAULT_WORKSPACE);
    CHECK(blas_gemm_plan_flops(p) == 2.0 * M * N * K);
    for (int i = 0; i < n; i++) {
        const blas_algo_info *a = blas_gemm_plan_algo(p, i);
        CHECK(a && a->index == i && a->algo_id >= 0 && a->tile[0]);
        CHECK(a->workspace_bytes <= BLAS_DEFAULT_WORKSPACE);
    }
    CHECK(blas_gemm_plan_algo(p, n) == NULL);

    static uint16_t hA[M * K], hB[N * K], hC[M * N];
    static float want[M * N];
    for (int i = 0; i < M * K; i++)
        hA[i] = to_bf16((float)((i * 7 + 3) % 3 - 1));
    for (int i = 0; i < N * K; i++)
        hB[i] = to_bf16((float)((i * 5 + 1) % 3 - 1));
    for (int m = 0; m < M; m++)
        for (int j = 0; j < N; j++) {
            float s = 0;
            for (int k = 0; k < K; k++)
                s += from_bf16(hA[m * K + k]) * from_bf16(hB[j * K + k]);
            want[m * N + j] = s;   /* |s| <= K = 128: exact in bf16 */
        }
    CUdeviceptr dA = 0, dB = 0, dC = 0;
    CHECK(cuda_mem_alloc(c, sizeof hA, &dA, &st) == KS_OK);
    CHECK(cuda_mem_alloc(c, sizeof hB, &dB, &st) == KS_OK);
    CHECK(cuda_mem_alloc(c, sizeof hC, &dC, &st) == KS_OK);
    CHECK(cuda_memcpy_htod(c, dA, hA, sizeof hA, &st) == KS_OK);
    CHECK(cuda_memcpy_htod(c, dB, hB, sizeof hB, &st) == KS_OK);

    for (int i = 0; i < n; i++) {
        cuda_memset_d8(c, dC, 0xff, sizeof hC, &st);
        rc = blas_gemm_enqueue(p, i, dA, dB, dC, 0, 0, 0, NULL, &st);
        CHECKF(rc == KS_OK, "algo %d: %s", i, st.msg);
        CHECK(cuda_ctx_sync(c, &st) == KS_OK);
        CHECK(cuda_memcpy_dtoh(c, hC, dC, sizeof hC, &st) == KS_OK);
        int bad = 0;
        for (int j = 0; j < M * N; j++)
            bad += from_bf16(hC[j]) != from_bf16(to_bf16(want[j]));
        CHECKF(bad == 0, "algo %d: %d of %d outputs differ", i, bad, M * N);
    }

    /* Misuse. */
    CHECK(blas_gemm_enqueue(p, n, dA, dB, dC, 0, 0, 0, NULL, &st) == KS_EINVAL);
    CHECK(blas_gemm_enqueue(p, 0, dA + 2, dB, dC, 0, 0, 0, NULL, &st) == KS_EINVAL);
    CHECK(strstr(st.msg, "aligned") != NULL);
    CHECK(blas_gemm_enqueue(p, 0, dA, dB, dC, dA, 0, 0, NULL, &st) == KS_EINVAL);
    CHECK(blas_matmul_enqueue(p, 0, NULL, &st) == KS_EINVAL);   /* nothing bound */

    /* The bound form. */
    blas_gemm_args args = {dA, dB, dC, 0, 0, 0, 0};
    CHECK(blas_gemm_bind(p, &args, &st) == KS_OK);
    cuda_memset_d8(c, dC, 0, sizeof hC, &st);
    CHECKF(blas_matmul_enqueue(p, 0, NULL, &st) == KS_OK, "%s", st.msg);
    CHECK(cuda_ctx_sync(c, &st) == KS_OK);
    CHECK(cuda_memcpy_dtoh(c, hC, dC, sizeof hC, &st) == KS_OK);
    CHECK(from_bf16(hC[5]) == from_bf16(to_bf16(want[5])));

    /* Timing every algorithm (short). */
    timing_opts to;
    timing_opts_default(&to);
    CHECK(stop_list_set(&to.stop, "converged", "min_samples", 5, &st) == KS_OK);
    to.max_samples = 10;
    to.budget_s = 5;
    blas_gemm_timing *tm = calloc(1, sizeof *tm);
    rc = blas_gemm_time(p, &to, tm, &st);
    CHECKF(rc == KS_OK, "blas_gemm_time: %s", st.msg);
    if (rc == KS_OK) {
        CHECK(tm->n == n && tm->best >= 0 && tm->best < n);
        CHECK(tm->flush_bytes > 0);
        for (int i = 0; i < tm->n; i++) {
            CHECK(tm->a[i].index == i && tm->a[i].stats.n >= 5 && tm->a[i].stats.median > 0);
            CHECK(tm->a[tm->best].stats.median <= tm->a[i].stats.median);
        }
    }
    free(tm);

    CHECK(blas_gemm_plan_free(p, &st) == KS_OK);
    cuda_mem_free(c, dA, &st);
    cuda_mem_free(c, dB, &st);
    cuda_mem_free(c, dC, &st);
    cuda_ctx_close(c, &st);
}

/* A batched GEMM with both operands in their other layout and a ReLU+bias
 * epilogue, on integer values (exact in bf16), every algorithm. */
static void test_variants_on_gpu(void)
{
    char why[256];
    if (!cuda_available(why, sizeof why)) {
        SKIP("no GPU: batched, transposed, ReLU+bias GEMM");
        return;
    }
    ks_status st;
    cuda_ctx *c = NULL;
    if (cuda_ctx_open(0, &c, &st)) {
        CHECKF(0, "cuda_ctx_open: %s", st.msg);
        return;
    }
    enum { BT = 3, M = 32, N = 48, K = 64 };
    blas_gemm_desc d = desc(BLAS_BF16, BLAS_COMPUTE_F32, M, N, K);
    d.batch = BT;
    d.a_layout = BLAS_A_KM;
    d.b_layout = BLAS_B_KN;
    d.epilogue = BLAS_EPI_RELU_BIAS;
    blas_gemm_plan *p = NULL;
    int rc = blas_gemm_plan_create(&d, c, &p, &st);
    CHECKF(rc == KS_OK, "plan: %s", st.msg);
    if (rc) {
        cuda_ctx_close(c, &st);
        return;
    }
    CHECK(blas_gemm_plan_flops(p) == 2.0 * M * N * K * BT);
    static uint16_t hA[BT * K * M], hB[BT * K * N], hC[BT * M * N], hbias[N];
    static float want[BT * M * N];
    for (int i = 0; i < BT * K * M; i++)
        hA[i] = to_bf16((float)((i * 7 + 3) % 3 - 1));
    for (int i = 0; i < BT * K * N; i++)
        hB[i] = to_bf16((float)((i * 5 + 1) % 3 - 1));
    for (int n = 0; n < N; n++)
        hbias[n] = to_bf16((float)(n % 7 - 3));
    for (int b = 0; b < BT; b++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float s = from_bf16(hbias[n]);
                for (int k = 0; k < K; k++)   /* A[b] is [K,M], B[b] is [K,N] */
                    s += from_bf16(hA[b * K * M + k * M + m]) * from_bf16(hB[b * K * N + k * N + n]);
                want[b * M * N + m * N + n] = s > 0 ? s : 0;
            }
    CUdeviceptr dA = 0, dB = 0, dC = 0, dbias = 0;
    CHECK(cuda_mem_alloc(c, sizeof hA, &dA, &st) == KS_OK && cuda_mem_alloc(c, sizeof hB, &dB, &st) == KS_OK);
    CHECK(cuda_mem_alloc(c, sizeof hC, &dC, &st) == KS_OK && cuda_mem_alloc(c, sizeof hbias, &dbias, &st) == KS_OK);
    CHECK(cuda_memcpy_htod(c, dA, hA, sizeof hA, &st) == KS_OK && cuda_memcpy_htod(c, dB, hB, sizeof hB, &st) == KS_OK);
    CHECK(cuda_memcpy_htod(c, dbias, hbias, sizeof hbias, &st) == KS_OK);
    int n = blas_gemm_plan_algo_count(p);
    for (int i = 0; i < n; i++) {
        cuda_memset_d8(c, dC, 0xff, sizeof hC, &st);
        blas_gemm_args a = {dA, dB, dC, 0, 0, 0, dbias};
        rc = blas_gemm_enqueue_args(p, i, &a, NULL, &st);
        CHECKF(rc == KS_OK, "algo %d: %s", i, st.msg);
        CHECK(cuda_ctx_sync(c, &st) == KS_OK);
        CHECK(cuda_memcpy_dtoh(c, hC, dC, sizeof hC, &st) == KS_OK);
        int bad = 0;
        for (int j = 0; j < BT * M * N; j++)
            bad += from_bf16(hC[j]) != want[j];
        CHECKF(bad == 0, "algo %d: %d of %d outputs differ", i, bad, BT * M * N);
    }
    /* The bias is required, and refused where the plan has none. */
    CHECK(blas_gemm_enqueue(p, 0, dA, dB, dC, 0, 0, 0, NULL, &st) == KS_EINVAL && strstr(st.msg, "needs a bias"));
    CHECK(blas_gemm_plan_free(p, &st) == KS_OK);
    cuda_mem_free(c, dA, &st);
    cuda_mem_free(c, dB, &st);
    cuda_mem_free(c, dC, &st);
    cuda_mem_free(c, dbias, &st);
    cuda_ctx_close(c, &st);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    check_prog = "test_blas";
    test_names();
    test_map();
    test_variants();
    test_status();
    test_missing_library();   /* forks: before anything loads the driver */
    test_library();
    test_describe();
    test_plan_without_gpu();
    test_plan_on_gpu();
    test_variants_on_gpu();
    return check_done();
}
