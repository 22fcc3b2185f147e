/*
 * l_blas.c: require "klab.blas", the cuBLASLt GEMM baseline (host/libraries/blas.h).
 *
 *   blas.version()             -> "13.1.0" | nil, msg, code   (no driver needed)
 *   blas.library()             -> path of the loaded libcublasLt | nil, msg, code
 *   blas.map(spec)             -> how C = A·Bᵀ is posed to cuBLASLt (pure):
 *                                 {m=, n=, k=, transa="T", transb="N", lda=, ldb=,
 *                                  ldc=, a_is_user_b=true, batch=, stride_a=,
 *                                  stride_b=, stride_c=, align_a=, align_b=, align_c=}
 *                                 (strides and alignments are cuBLASLt's A, B, C)
 *   blas.describe(spec)        -> the map above plus {descriptors=true, epilogue=,
 *                                 bias_dtype=, a_bytes=, b_bytes=, c_bytes=,
 *                                 bias_bytes=} | nil, msg, code
 *       No GPU: the matmul descriptor and layouts are created and every
 *       attribute set by the loaded cuBLASLt; the heuristic needs a device.
 *   blas.gemm_plan(ctx, spec)  -> Plan | nil, msg, code
 *       spec = {dtype="bf16"|"f16"|"e4m3"|"f32", compute="f32"|"tf32" (f32 only),
 *               M=, N=, K=, algos=8, workspace=bytes (32 MiB), fast_accum=false,
 *               a_layout="mk"|"km", b_layout="nk"|"kn", batch=1, stride_a=,
 *               stride_b=, stride_c= (elements; default packed),
 *               epilogue="none"|"bias"|"relu"|"relu_bias"|"gelu"|"gelu_bias",
 *               bias_dtype="f32" (default: C's dtype)}
 *       A[M,K] (or [K,M]), B[N,K] (or [K,N]), C[M,N] row-major; C =
 *       act(A·Bᵀ + bias), bias[N] per column of C. Out dtype: bf16 for e4m3,
 *       the in dtype otherwise. A bad spec raises; no driver (ENODRIVER), no
 *       cuBLASLt (ENOLIB) or no algorithm for the case (EUNSUPPORTED) return
 *       nil, msg, code.
 *   plan:algos()               -> list of {index=1.., algo_id=, tile="128x256",
 *                                 tile_id=, stages="64x4", stages_id=, splitk=,
 *                                 reduction_scheme=, swizzle=, custom_option=,
 *                                 inner_shape_id=, cluster_shape_id=,
 *                                 workspace_bytes=, waves=}
 *                                 in the heuristic's order: index 1 is its own
 *                                 first choice (what PyTorch would run).
 *   plan:info()                -> {dtype=, out_dtype=, compute=, M=, N=, K=, algos=,
 *                                 workspace_bytes=, fast_accum=, flops=, a_bytes=,
 *                                 b_bytes=, c_bytes=, bias_bytes=, a_layout=,
 *                                 b_layout=, batch=, epilogue=, bias_dtype=, and the
 *                                 map's fields (m=, n=, k=, transa=, ..., align_c=)}
 *                                 (byte sizes cover the whole batch)
 *   plan:run(A, B, C [, opts]) -> true | nil, msg, code
 *       A, B, C: gpu.Buffer of the plan's context, large enough;
 *       opts = {algo=1, scale_a=Buffer, scale_b=Buffer (e4m3 only, one fp32
 *       each; default 1.0), workspace=Buffer (>= the plan's workspace; default
 *       the plan's own), bias=Buffer (bias epilogues: required, else
 *       refused)}. Enqueued asynchronously on the context's stream
 *       (the legacy default stream, the one ctx:launch uses); ctx:sync()
 *       waits for it.
 *   plan:time(A, B, C [, opts]) -> {method=, fallback=, flush_bytes=,
 *                                 clock_before_mhz=, clock_after_mhz=, best_index=,
 *                                 first=T, best=T, algos={T...}} | nil, msg, code
 *       Times every algorithm with host/measure/timing (L2 flush before every sample,
 *       CUPTI or events, adaptive sampling). T = {index=, algo_id=, tile=,
 *       stages=, splitk=, median_us=, mean_us=, min_us=, max_us=, p10_us=,
 *       p90_us=, ci_low_us=, ci_high_us=, rel_halfwidth=, samples=, tflops=,
 *       stop_reason=}; first is the heuristic's choice, best the fastest.
 *       opts: the run options above (algo is ignored) and method="auto"|
 *       "cupti"|"events", warmup=, min_samples=, max_samples=, budget_s=,
 *       target_ci=, no_flush=.
 *   plan:free() -> true | false; __close, __gc, __tostring.
 *
 * A Plan holds its Context in user value 1 and counts as one of the
 * context's children, so the driver context outlives the plan even when
 * ctx:free() is called first.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lhost.h"
#include "lgpu.h"
#include "libraries/blas.h"
#include "driver/cuda.h"

#define PLAN_T "klab.blas.Plan"

/* [-0, +0, v] luaL_error with the full printf formats (%zu, %lld), which
 * lua_pushfstring lacks. */
static int raisef(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int raisef(lua_State *L, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return luaL_error(L, "%s", msg);
}

/* ---- Plan ---- */

typedef struct l_plan {
    blas_gemm_plan *plan;   /* NULL once released */
    l_ctx *ctx;           /* the context userdata (also user value 1) */
} l_plan;

/* Idempotent release shared by :free, __close and __gc: 1 if freed now. */
static int plan_release(l_plan *p)
{
    if (!p->plan)
        return 0;
    blas_gemm_plan *bp = p->plan;
    p->plan = NULL;
    ks_status st;
    ks_clear(&st);
    blas_gemm_plan_free(bp, &st);
    lgpu_child_release(&p->ctx);
    return 1;
}

static l_plan *check_plan(lua_State *L, int idx)
{
    l_plan *p = luaL_checkudata(L, idx, PLAN_T);
    if (!p->plan)
        luaL_error(L, "attempt to use a freed " PLAN_T);
    return p;
}

/* Reads a GEMM spec table at absolute index t into d. Raises on misuse
 * (missing or bad fields). */
static void read_spec(lua_State *L, int t, blas_gemm_desc *d)
{
    luaL_checktype(L, t, LUA_TTABLE);
    memset(d, 0, sizeof *d);
    ks_status st;
    ks_clear(&st);
    const char *dt = lh_optstrfield(L, t, "dtype", NULL);
    if (!dt)
        luaL_error(L, "GEMM spec needs dtype (bf16, f16, e4m3 or f32)");
    if (blas_dtype_parse(dt, &d->dtype, &st))
        lh_raise(L, &st);
    const char *cm = lh_optstrfield(L, t, "compute", "f32");
    if (blas_compute_parse(cm, &d->compute, &st))
        lh_raise(L, &st);
    const char *dims[] = {"M", "N", "K"};
    int64_t *vals[] = {&d->M, &d->N, &d->K};
    for (int i = 0; i < 3; i++) {
        lua_Integer v = lh_optintfield(L, t, dims[i], 0);
        if (v < 1)
            luaL_error(L, "GEMM spec needs %s >= 1", dims[i]);
        *vals[i] = (int64_t)v;
    }
    lua_Integer algos = lh_optintfield(L, t, "algos", BLAS_DEFAULT_ALGOS);
    if (algos < 1 || algos > BLAS_MAX_ALGOS)
        luaL_error(L, "algos must be between 1 and %d", BLAS_MAX_ALGOS);
    d->algos = (int)algos;
    lua_Integer ws = lh_optintfield(L, t, "workspace", (lua_Integer)BLAS_DEFAULT_WORKSPACE);
    if (ws < 1)
        luaL_error(L, "workspace must be a positive number of bytes");
    d->workspace_bytes = (size_t)ws;
    d->fast_accum = lh_optboolfield(L, t, "fast_accum", 0);
    if (d->fast_accum && d->dtype != BLAS_E4M3)
        luaL_error(L, "fast_accum applies to e4m3 GEMMs only");
    const char *al = lh_optstrfield(L, t, "a_layout", "mk");
    if (strcmp(al, "mk") != 0 && strcmp(al, "km") != 0)
        luaL_error(L, "a_layout must be mk (A[M,K]) or km (A[K,M]), not '%s'", al);
    d->a_layout = al[0] == 'k' ? BLAS_A_KM : BLAS_A_MK;
    const char *bl = lh_optstrfield(L, t, "b_layout", "nk");
    if (strcmp(bl, "nk") != 0 && strcmp(bl, "kn") != 0)
        luaL_error(L, "b_layout must be nk (B[N,K]) or kn (B[K,N]), not '%s'", bl);
    d->b_layout = bl[0] == 'k' ? BLAS_B_KN : BLAS_B_NK;
    lua_Integer batch = lh_optintfield(L, t, "batch", 1);
    if (batch < 1)
        luaL_error(L, "batch must be >= 1");
    d->batch = (int64_t)batch;
    const char *sn[] = {"stride_a", "stride_b", "stride_c"};
    int64_t *sv[] = {&d->stride_a, &d->stride_b, &d->stride_c};
    for (int i = 0; i < 3; i++) {
        lua_Integer v = lh_optintfield(L, t, sn[i], 0);
        if (v < 0)
            luaL_error(L, "%s must be >= 0 elements", sn[i]);
        *sv[i] = (int64_t)v;
    }
    blas_epilogue e;
    if (blas_epilogue_parse(lh_optstrfield(L, t, "epilogue", "none"), &e, &st))
        lh_raise(L, &st);
    d->epilogue = (int)e;
    const char *bt = lh_optstrfield(L, t, "bias_dtype", NULL);
    const char *outname = d->dtype == BLAS_E4M3 ? "bf16" : blas_dtype_name((int)d->dtype);
    if (bt && strcmp(bt, "f32") != 0 && strcmp(bt, outname) != 0)
        luaL_error(L, "bias_dtype must be f32 or %s (C's dtype), not '%s'", outname, bt);
    d->bias_f32 = bt && strcmp(bt, "f32") == 0 && strcmp(outname, "f32") != 0;
    if (bt && !blas_epilogue_has_bias(d->epilogue))
        luaL_error(L, "bias_dtype needs an epilogue with a bias (bias, relu_bias, gelu_bias)");
}

/* [-0, +0, m] Adds the mapping's fields to the table on top. */
static void set_map(lua_State *L, const blas_gemm_map *mp)
{
    lh_setint(L, "m", (lua_Integer)mp->m);
    lh_setint(L, "n", (lua_Integer)mp->n);
    lh_setint(L, "k", (lua_Integer)mp->k);
    lh_setstr(L, "transa", mp->transa ? "T" : "N");
    lh_setstr(L, "transb", mp->transb ? "T" : "N");
    lh_setint(L, "lda", mp->lda);
    lh_setint(L, "ldb", mp->ldb);
    lh_setint(L, "ldc", mp->ldc);
    lh_setbool(L, "a_is_user_b", mp->a_is_user_b);
    lh_setint(L, "batch", mp->batch);
    lh_setint(L, "stride_a", mp->stride_a);
    lh_setint(L, "stride_b", mp->stride_b);
    lh_setint(L, "stride_c", mp->stride_c);
    lh_setint(L, "align_a", mp->align_a);
    lh_setint(L, "align_b", mp->align_b);
    lh_setint(L, "align_c", mp->align_c);
}

/* [-0, +0, m] The spec's layout, batch, epilogue and operand sizes, added
 * to the table on top. */
static void set_shape(lua_State *L, const blas_gemm_desc *d)
{
    lh_setstr(L, "a_layout", d->a_layout == BLAS_A_KM ? "km" : "mk");
    lh_setstr(L, "b_layout", d->b_layout == BLAS_B_KN ? "kn" : "nk");
    lh_setint(L, "batch", d->batch > 1 ? d->batch : 1);
    lh_setstr(L, "epilogue", blas_epilogue_name(d->epilogue));
    if (blas_epilogue_has_bias(d->epilogue))
        lh_setstr(L, "bias_dtype", d->bias_f32 ? "f32" : d->dtype == BLAS_E4M3 ? "bf16"
                                                 : blas_dtype_name((int)d->dtype));
    blas_gemm_bytes by;
    blas_gemm_operand_bytes(d, &by);
    lh_setint(L, "a_bytes", (lua_Integer)by.a);
    lh_setint(L, "b_bytes", (lua_Integer)by.b);
    lh_setint(L, "c_bytes", (lua_Integer)by.c);
    lh_setint(L, "bias_bytes", (lua_Integer)by.bias);
}

/* ---- module functions ---- */

static int l_version(lua_State *L)
{
    char v[64];
    ks_status st;
    ks_clear(&st);
    if (blas_version(v, sizeof v, &st))
        return lh_pushfail(L, &st);
    lua_pushstring(L, v);
    return 1;
}

static int l_library(lua_State *L)
{
    ks_status st;
    ks_clear(&st);
    const char *path = blas_library_path(&st);
    if (!path)
        return lh_pushfail(L, &st);
    lua_pushstring(L, path);
    return 1;
}

static int l_map(lua_State *L)
{
    blas_gemm_desc d;
    read_spec(L, 1, &d);
    blas_gemm_map mp;
    ks_status st;
    ks_clear(&st);
    if (blas_gemm_map_dims(&d, &mp, &st))
        return lh_raise(L, &st);
    lua_createtable(L, 0, 9);
    set_map(L, &mp);
    return 1;
}

static int l_describe(lua_State *L)
{
    blas_gemm_desc d;
    read_spec(L, 1, &d);
    blas_gemm_map mp;
    ks_status st;
    ks_clear(&st);
    if (blas_gemm_map_dims(&d, &mp, &st))   /* a bad shape for the dtype is misuse */
        return lh_raise(L, &st);
    if (blas_gemm_describe(&d, &mp, &st))
        return lh_pushfail(L, &st);
    lua_createtable(L, 0, 24);
    set_map(L, &mp);
    set_shape(L, &d);
    lh_setbool(L, "descriptors", 1);
    return 1;
}

static int l_gemm_plan(lua_State *L)
{
    l_ctx *c = lgpu_check_ctx(L, 1);
    blas_gemm_desc d;
    read_spec(L, 2, &d);
    ks_status st;
    ks_clear(&st);
    blas_gemm_map mp;
    if (blas_gemm_map_dims(&d, &mp, &st))   /* a bad shape for the dtype is misuse */
        return lh_raise(L, &st);

    /* Released first: a failure below leaves nothing to free. */
    l_plan *p = lgpu_new_child(L, sizeof *p, PLAN_T, 1);

    blas_gemm_plan *bp = NULL;
    if (blas_gemm_plan_create(&d, c->ctx, &bp, &st))
        return lh_pushfail(L, &st);
    p->plan = bp;
    lgpu_child_hold(&p->ctx, c);
    return 1;
}

/* ---- methods ---- */

static int plan_algos(lua_State *L)
{
    l_plan *p = check_plan(L, 1);
    int n = blas_gemm_plan_algo_count(p->plan);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        const blas_algo_info *a = blas_gemm_plan_algo(p->plan, i);
        lua_createtable(L, 0, 15);
        lh_setint(L, "index", a->index + 1);
        lh_setint(L, "algo_id", a->algo_id);
        lh_setstr(L, "tile", a->tile);
        lh_setint(L, "tile_id", a->tile_id);
        lh_setstr(L, "stages", a->stages);
        lh_setint(L, "stages_id", a->stages_id);
        lh_setint(L, "splitk", a->splitk);
        lh_setint(L, "reduction_scheme", a->reduction_scheme);
        lh_setint(L, "swizzle", a->swizzle);
        lh_setint(L, "custom_option", a->custom_option);
        lh_setint(L, "inner_shape_id", a->inner_shape_id);
        lh_setint(L, "cluster_shape_id", a->cluster_shape_id);
        lh_setint(L, "workspace_bytes", (lua_Integer)a->workspace_bytes);
        lh_setnum(L, "waves", a->waves);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int plan_info(lua_State *L)
{
    l_plan *p = check_plan(L, 1);
    const blas_gemm_desc *d = blas_gemm_plan_desc(p->plan);
    lua_createtable(L, 0, 24);
    lh_setstr(L, "dtype", blas_dtype_name((int)d->dtype));
    lh_setstr(L, "out_dtype", d->dtype == BLAS_E4M3 ? "bf16" : blas_dtype_name((int)d->dtype));
    lh_setstr(L, "compute", blas_compute_name((int)d->compute));
    lh_setint(L, "M", d->M);
    lh_setint(L, "N", d->N);
    lh_setint(L, "K", d->K);
    lh_setint(L, "algos", blas_gemm_plan_algo_count(p->plan));
    lh_setint(L, "algos_requested", d->algos);
    lh_setint(L, "workspace_bytes", (lua_Integer)d->workspace_bytes);
    lh_setbool(L, "fast_accum", d->fast_accum);
    lh_setnum(L, "flops", blas_gemm_plan_flops(p->plan));
    set_map(L, blas_gemm_plan_map(p->plan));
    set_shape(L, d);
    return 1;
}

/* An optional buffer field of opts (absolute index o, may be 0 for none):
 * its device pointer, or 0. Checks context and size. */
static CUdeviceptr opt_buf(lua_State *L, int o, const char *k, const l_ctx *c, size_t need)
{
    if (!o)
        return 0;
    if (lua_getfield(L, o, k) == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    CUdeviceptr p = lgpu_check_region(L, lua_gettop(L), c, k, need);
    lua_pop(L, 1);
    return p;
}

/* Checks plan:run/plan:time's operands (A, B, C at 2..4, opts at 5) and
 * fills a; returns the 1-based algo option (default 1) and the opts index
 * (0 when absent) in *opts. Raises on misuse. */
static lua_Integer read_operands(lua_State *L, l_plan *p, blas_gemm_args *a, int *opts)
{
    l_ctx *c = p->ctx;
    if (c->n.closed)
        luaL_error(L, "the plan's " CTX_T " was freed");
    const blas_gemm_desc *d = blas_gemm_plan_desc(p->plan);
    blas_gemm_bytes by;
    blas_gemm_operand_bytes(d, &by);
    size_t need[3] = {by.a, by.b, by.c};
    const char *names[3] = {"A", "B", "C"};
    CUdeviceptr ptr[3];
    for (int i = 0; i < 3; i++)
        ptr[i] = lgpu_check_region(L, i + 2, c, names[i], need[i]);
    int o = 0;
    if (!lua_isnoneornil(L, 5)) {
        luaL_checktype(L, 5, LUA_TTABLE);
        o = 5;
    }
    int n = blas_gemm_plan_algo_count(p->plan);
    lua_Integer algo = o ? lh_optintfield(L, o, "algo", 1) : 1;
    if (algo < 1 || algo > n)
        raisef(L, "algo must be between 1 and %d, got %lld", n, (long long)algo);
    if (d->dtype != BLAS_E4M3 && o) {
        lua_getfield(L, o, "scale_a");
        lua_getfield(L, o, "scale_b");
        int any = !lua_isnil(L, -1) || !lua_isnil(L, -2);
        lua_pop(L, 2);
        if (any)
            luaL_error(L, "scale_a/scale_b apply to e4m3 GEMMs only, not %s",
                       blas_dtype_name((int)d->dtype));
    }
    memset(a, 0, sizeof *a);
    a->A = ptr[0];
    a->B = ptr[1];
    a->C = ptr[2];
    a->scale_a = opt_buf(L, o, "scale_a", c, sizeof(float));
    a->scale_b = opt_buf(L, o, "scale_b", c, sizeof(float));
    a->workspace = opt_buf(L, o, "workspace", c, d->workspace_bytes);
    a->bias = opt_buf(L, o, "bias", c, by.bias);
    if (blas_epilogue_has_bias(d->epilogue) && !a->bias)
        luaL_error(L, "the %s epilogue needs opts.bias (a Buffer of %d bytes)", blas_epilogue_name(d->epilogue),
                   (int)by.bias);
    if (!blas_epilogue_has_bias(d->epilogue) && a->bias)
        luaL_error(L, "opts.bias given, but the plan's epilogue is %s", blas_epilogue_name(d->epilogue));
    *opts = o;
    return algo;
}

static int plan_run(lua_State *L)
{
    l_plan *p = check_plan(L, 1);
    blas_gemm_args a;
    int o;
    lua_Integer algo = read_operands(L, p, &a, &o);
    ks_status st;
    ks_clear(&st);
    if (blas_gemm_enqueue_args(p->plan, (int)algo - 1, &a, NULL, &st))
        return lh_pushfail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

/* [-0, +1, m] One algorithm's timing as a table. */
static void push_timing(lua_State *L, const blas_gemm_plan *bp, const blas_algo_timing *t)
{
    const blas_algo_info *a = blas_gemm_plan_algo(bp, t->index);
    const stats_summary *s = &t->stats;
    lua_createtable(L, 0, 16);
    lh_setint(L, "index", t->index + 1);
    lh_setint(L, "algo_id", a ? a->algo_id : -1);
    lh_setstr(L, "tile", a ? a->tile : "");
    lh_setstr(L, "stages", a ? a->stages : "");
    lh_setint(L, "splitk", a ? a->splitk : -1);
    lh_setnum(L, "median_us", s->median);
    lh_setnum(L, "mean_us", s->mean);
    lh_setnum(L, "min_us", s->min);
    lh_setnum(L, "max_us", s->max);
    lh_setnum(L, "p10_us", s->p10);
    lh_setnum(L, "p90_us", s->p90);
    lh_setnum(L, "ci_low_us", s->ci_low);
    lh_setnum(L, "ci_high_us", s->ci_high);
    lh_setnum(L, "rel_halfwidth", s->rel_halfwidth);
    lh_setint(L, "samples", (lua_Integer)s->n);
    lh_setnum(L, "tflops", t->tflops);
    lh_setstr(L, "stop_reason", t->stop_reason);
}

static int plan_time(lua_State *L)
{
    l_plan *p = check_plan(L, 1);
    blas_gemm_args a;
    int o;
    (void)read_operands(L, p, &a, &o);
    timing_opts to;
    timing_opts_default(&to);
    if (o) {
        const char *m = lh_optstrfield(L, o, "method", "auto");
        to.method = timing_method_parse(m);
        if (to.method < 0)
            luaL_error(L, "method must be auto, cupti or events, not '%s'", m);
        to.warmup = (int)lh_optintfield(L, o, "warmup", to.warmup);
        /* The convergence rule's parameters (timing_opts_default chose it). */
        stop_choice *conv = &to.stop.v[0];
        lua_Integer mn = lh_optintfield(L, o, "min_samples", (lua_Integer)stop_choice_get(conv, "min_samples"));
        lua_Integer mx = lh_optintfield(L, o, "max_samples", (lua_Integer)to.max_samples);
        if (mn < 1 || mx < mn)
            luaL_error(L, "need 1 <= min_samples <= max_samples");
        to.max_samples = (size_t)mx;
        to.budget_s = lh_optnumfield(L, o, "budget_s", to.budget_s);
        ks_status sst;
        if (stop_choice_set(conv, "min_samples", (double)mn, &sst) ||
            stop_choice_set(conv, "target_ci", lh_optnumfield(L, o, "target_ci", stop_choice_get(conv, "target_ci")),
                            &sst))
            luaL_error(L, "%s", sst.msg);
        to.no_flush = lh_optboolfield(L, o, "no_flush", 0);
        if (to.warmup < 0)
            luaL_error(L, "warmup must be >= 0");
    }
    ks_status st;
    ks_clear(&st);
    if (blas_gemm_bind(p->plan, &a, &st))
        return lh_pushfail(L, &st);
    /* The result lives in a Lua-owned block, so a raise below leaks nothing. */
    blas_gemm_timing *t = lua_newuserdatauv(L, sizeof *t, 0);
    int tidx = lua_gettop(L);
    if (blas_gemm_time(p->plan, &to, t, &st))
        return lh_pushfail(L, &st);
    lua_createtable(L, 0, 10);
    lh_setstr(L, "method", timing_method_name(t->method));
    lh_setstr(L, "fallback", t->fallback);
    lh_setint(L, "flush_bytes", (lua_Integer)t->flush_bytes);
    lh_setint(L, "clock_before_mhz", t->clock_before_mhz);
    lh_setint(L, "clock_after_mhz", t->clock_after_mhz);
    lh_setint(L, "best_index", t->best + 1);
    lua_createtable(L, t->n, 0);
    for (int i = 0; i < t->n; i++) {
        push_timing(L, p->plan, &t->a[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "algos");
    lua_getfield(L, -1, "algos");
    lua_rawgeti(L, -1, 1);
    lua_setfield(L, -3, "first");
    lua_rawgeti(L, -1, t->best + 1);
    lua_setfield(L, -3, "best");
    lua_pop(L, 1);
    lua_remove(L, tidx);
    return 1;
}

/* ---- metamethods ---- */

static int plan_free(lua_State *L)
{
    lua_pushboolean(L, plan_release(luaL_checkudata(L, 1, PLAN_T)));
    return 1;
}

static int plan_gc(lua_State *L)
{
    plan_release(luaL_checkudata(L, 1, PLAN_T));
    return 0;
}

static int plan_tostring(lua_State *L)
{
    l_plan *p = luaL_checkudata(L, 1, PLAN_T);
    if (!p->plan) {
        lua_pushstring(L, PLAN_T " (freed)");
        return 1;
    }
    const blas_gemm_desc *d = blas_gemm_plan_desc(p->plan);
    char s[160];
    snprintf(s, sizeof s, PLAN_T " (%s%s M=%lld N=%lld K=%lld%s%s, %d algos)",
             blas_dtype_name((int)d->dtype), d->compute == BLAS_COMPUTE_TF32 ? "/tf32" : "",
             (long long)d->M, (long long)d->N, (long long)d->K, d->epilogue ? " " : "",
             d->epilogue ? blas_epilogue_name(d->epilogue) : "", blas_gemm_plan_algo_count(p->plan));
    lua_pushstring(L, s);
    return 1;
}

static const luaL_Reg blas_funcs[] = {
    {"version", l_version}, {"library", l_library}, {"map", l_map}, {"describe", l_describe},
    {"gemm_plan", l_gemm_plan}, {NULL, NULL},
};

static const luaL_Reg plan_methods[] = {
    {"algos", plan_algos}, {"info", plan_info}, {"run", plan_run}, {"time", plan_time},
    {"free", plan_free},
    {NULL, NULL},
};

static const luaL_Reg plan_meta[] = {
    {"__gc", plan_gc}, {"__close", plan_gc}, {"__tostring", plan_tostring}, {NULL, NULL},
};

int luaopen_klab_blas(lua_State *L)
{
    lh_newclass(L, PLAN_T, plan_methods, plan_meta);
    lua_pop(L, 1);
    luaL_newlib(L, blas_funcs);
    return 1;
}
