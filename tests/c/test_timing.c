/*
 * test_timing.c: host/cupti_act and host/timing.
 *
 * Without a GPU: CUPTI loads and refuses cleanly (no crash), records decode
 * from a hand-built CUPTI buffer, the launch check of one sample's records
 * (every offence kind), option validation, and timing_measure returning
 * KS_ENODRIVER. With a GPU (cuda_available): a small PTX kernel timed with
 * CUPTI and with events (CUPTI durations below event durations), an
 * unplanned launch on another stream flagged, a wrong launch count
 * flagged, interleaved candidate/baseline, and the check hooks.
 */
#if defined(__LP64__) && !defined(CUPTILP64)
#define CUPTILP64 1
#endif

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <cupti.h>

#include "check.h"
#include "driver/devkern.h"
#include "driver/cuda.h"
#include "measure/cupti_act.h"
#include "measure/timing.h"

/* ---- no GPU needed ---- */

static void test_names(void)
{
    CHECK(strcmp(cupti_result_name(35), "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES") == 0);
    CHECK(strcmp(cupti_result_name(0), "CUPTI_SUCCESS") == 0);
    CHECK(strcmp(cupti_result_name(999), "CUPTI_ERROR_UNKNOWN") == 0);
    CHECK(strcmp(cupti_result_name(500), "CUPTI_ERROR_500") == 0);
    /* A failed CUPTI call's status: the name, the number, and CUPTI's text
     * only when it says more than the name. */
    ks_status fs;
    ks_clear(&fs);
    CHECK(cupti_fail_text(&fs, 35, "cuptiProfilerInitialize", "needs admin rights") == KS_EUNSUPPORTED);
    CHECKF(strcmp(fs.msg, "cuptiProfilerInitialize: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35): needs admin rights")
           == 0 && fs.sub == 35, "%s", fs.msg);
    CHECK(cupti_fail_text(&fs, 35, "x", "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES") == KS_EUNSUPPORTED);
    CHECKF(strcmp(fs.msg, "x: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35)") == 0, "%s", fs.msg);
    CHECK(cupti_fail_text(&fs, 35, "x", NULL) == KS_EUNSUPPORTED &&
          strcmp(fs.msg, "x: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35)") == 0);
    CHECK(cupti_fail_text(&fs, 8, "x", NULL) == KS_ENOMEM); /* CUPTI_ERROR_OUT_OF_MEMORY */
    CHECK(strcmp(cupti_act_kind_name(CUPTI_ACT_KERNEL), "kernel") == 0);
    CHECK(strcmp(cupti_act_kind_name(CUPTI_ACT_MEMSET), "memset") == 0);
    CHECK(timing_method_parse("cupti") == TIMING_CUPTI);
    CHECK(timing_method_parse("events") == TIMING_EVENTS);
    CHECK(timing_method_parse("auto") == TIMING_AUTO);
    CHECK(timing_method_parse("wallclock") == -1);
    CHECK(strcmp(timing_method_name(TIMING_EVENTS), "events") == 0);

    timing_opts o;
    timing_opts_default(&o);
    CHECK(o.warmup == 3 && o.max_samples == 1000);
    CHECK(o.confidence == 0.95 && o.method == TIMING_AUTO);
    /* The stopping rule by default: convergence, with its defaults. */
    CHECK(o.stop.n == 1 && strcmp(o.stop.v[0].rule->name, "converged") == 0);
    CHECK(stop_choice_get(&o.stop.v[0], "min_samples") == 10 && stop_choice_get(&o.stop.v[0], "target_ci") == 0.005);
    CHECK(o.budget_s == 10.0 && o.flush_bytes == 0 && !o.no_flush);
}

/* CUPTI loads here (the toolkit ships it); without a driver, enabling
 * activity must fail with a clean status, and the session calls must be
 * safe in any order. */
static void test_cupti_no_driver(int have_gpu)
{
    ks_status st;
    ks_clear(&st);
    int rc = cupti_act_load(&st);
    if (rc == KS_ENOLIB) {
        SKIP("libcupti is not installed");
        return;
    }
    CHECKF(rc == KS_OK, "cupti_act_load: %s", st.msg);
    CHECKF(cupti_act_version() / 10000 == 13, "version %u", cupti_act_version());
    if (have_gpu) {
        SKIP("a GPU is present: the no-driver CUPTI path is not testable");
        return;
    }
    ks_clear(&st);
    rc = cupti_act_start(&st);
    CHECKF(rc == KS_EUNSUPPORTED, "cupti_act_start without a driver: %d %s", rc, st.msg);
    CHECKF(strstr(st.msg, "CUPTI_ERROR_") != NULL, "message names the CUPTI error: %s", st.msg);
    CHECK(st.sub != 0);
    CHECK(!cupti_act_active());
    cupti_act_list l = {0};
    CHECK(cupti_act_collect(&l, &st) == KS_EINVAL);
    CHECK(l.n == 0);
    CHECK(cupti_act_stop(&st) == KS_OK);
    CHECK(cupti_act_stop(&st) == KS_OK);
    /* A second attempt fails the same way (nothing half-enabled). */
    ks_clear(&st);
    CHECK(cupti_act_start(&st) == KS_EUNSUPPORTED);
    cupti_act_list_free(&l);
}

/* A CUPTI activity buffer laid out by hand, decoded by CUPTI's own
 * cuptiActivityGetNextRecord and this module's decoding. */
static void test_decode(void)
{
    ks_status st;
    if (cupti_act_load(&st) != KS_OK) {
        SKIP("libcupti is not loadable");
        return;
    }
    size_t cap = 4096;
    uint8_t *buf = aligned_alloc(8, cap);
    memset(buf, 0, cap);
    size_t off = 0;
    CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)(buf + off);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->start = 1000;
    k->end = 3500;
    k->streamId = 13;
    k->contextId = 1;
    k->correlationId = 77;
    k->gridX = 128, k->gridY = 2, k->gridZ = 1;
    k->blockX = 256, k->blockY = 1, k->blockZ = 1;
    k->clusterX = 2, k->clusterY = 1, k->clusterZ = 1;
    k->dynamicSharedMemory = 49152;
    k->name = "gemm_candidate";
    off += sizeof *k;
    CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)(buf + off);
    m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m->start = 10, m->end = 900, m->bytes = 1u << 27, m->streamId = 13, m->value = 5;
    off += sizeof *m;
    CUpti_ActivityMemcpy6 *c = (CUpti_ActivityMemcpy6 *)(buf + off);
    c->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    c->start = 4000, c->end = 4100, c->bytes = 64, c->streamId = 7;
    off += sizeof *c;

    cupti_act_list l = {0};
    CHECK(cupti_act_decode(buf, off, &l, &st) == KS_OK);
    CHECKF(l.n == 3, "decoded %zu records", l.n);
    if (l.n == 3) {
        CHECK(l.v[0].kind == CUPTI_ACT_KERNEL && l.v[0].start == 1000 && l.v[0].end == 3500);
        CHECK(l.v[0].stream_id == 13 && l.v[0].context_id == 1 && l.v[0].correlation_id == 77);
        CHECK(l.v[0].grid[0] == 128 && l.v[0].grid[1] == 2 && l.v[0].block[0] == 256);
        CHECK(l.v[0].cluster[0] == 2 && l.v[0].dynamic_smem == 49152);
        CHECK(strcmp(l.v[0].name, "gemm_candidate") == 0);
        CHECK(l.v[1].kind == CUPTI_ACT_MEMSET && l.v[1].bytes == (1u << 27) && l.v[1].value == 5);
        CHECK(l.v[2].kind == CUPTI_ACT_MEMCPY && l.v[2].stream_id == 7 && l.v[2].bytes == 64);
    }
    /* Long names are truncated, NUL-terminated. */
    char longname[600];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    k->name = longname;
    cupti_act_list_clear(&l);
    CHECK(cupti_act_decode(buf, sizeof *k, &l, &st) == KS_OK);
    CHECK(l.n == 1 && strlen(l.v[0].name) == CUPTI_ACT_NAME_MAX - 1);
    cupti_act_list_free(&l);
    free(buf);
}

static cupti_act_rec mk(int kind, const char *name, uint32_t stream, uint64_t start, uint64_t end,
                        uint64_t bytes)
{
    cupti_act_rec r;
    memset(&r, 0, sizeof r);
    r.kind = kind;
    snprintf(r.name, sizeof r.name, "%s", name);
    r.stream_id = stream;
    r.context_id = 1;
    r.start = start;
    r.end = end;
    r.bytes = bytes;
    return r;
}

static void push(cupti_act_list *l, cupti_act_rec r)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = r;
}

static void test_check_records(void)
{
    enum { S = 13, FLUSH = 1 << 20 };
    cupti_act_list l = {0};
    ks_status st;
    char why[512];
    double us = 0;

    /* The flush, then two planned kernels: 2 us from first start to last end. */
    push(&l, mk(CUPTI_ACT_MEMSET, "", S, 0, 500, FLUSH));
    push(&l, mk(CUPTI_ACT_KERNEL, "k1", S, 1000, 1800, 0));
    push(&l, mk(CUPTI_ACT_KERNEL, "k2", S, 1900, 3000, 0));
    CHECK(timing_check_records(&l, 2, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_OK);
    CHECK(us == 2.0);
    /* Record order does not matter for the span. */
    cupti_act_rec tmp = l.v[1];
    l.v[1] = l.v[2];
    l.v[2] = tmp;
    CHECK(timing_check_records(&l, 2, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_OK);
    CHECK(us == 2.0);

    /* Wrong count. */
    CHECK(timing_check_records(&l, 1, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EREJECT);
    CHECKF(strstr(why, "2 kernel launches on klab's stream, 1 planned") != NULL, "%s", why);
    CHECK(isnan(us));
    CHECK(strstr(st.msg, "unexpected launches") != NULL);

    /* An extra kernel on another stream. */
    push(&l, mk(CUPTI_ACT_KERNEL, "sneaky", 99, 1100, 1200, 0));
    CHECK(timing_check_records(&l, 2, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EREJECT);
    CHECKF(strstr(why, "kernel sneaky on stream 99") != NULL, "%s", why);
    /* A library call (planned -1) may fork onto its own streams in klab's
     * context (cuDNN's grouped convolutions): those kernels are its run's
     * and count in its span; in another context they are not. */
    CHECK(timing_check_records(&l, -1, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_OK);
    CHECK(us == 2.0);
    l.v[l.n - 1].end = 3500;
    CHECK(timing_check_records(&l, -1, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_OK);
    CHECK(us == 2.5);
    l.v[l.n - 1].context_id = 2;
    CHECK(timing_check_records(&l, -1, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EREJECT);
    CHECKF(strstr(why, "kernel sneaky on stream 99") != NULL, "%s", why);
    l.v[l.n - 1].context_id = 1;
    l.v[l.n - 1].device_launched = 1;
    CHECK(timing_check_records(&l, -1, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EREJECT);
    l.n--;

    /* The same stream id in another context is not klab's stream. */
    cupti_act_rec other = mk(CUPTI_ACT_KERNEL, "elsewhere", S, 1100, 1200, 0);
    other.context_id = 2;
    push(&l, other);
    CHECK(timing_check_records(&l, 2, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EREJECT);
    CHECKF(strstr(why, "elsewhere") != NULL, "%s", why);
    l.n--;

    /* A device-launched kernel. */
    cupti_act_rec dev = mk(CUPTI_ACT_KERNEL, "child", S, 1100, 1200, 0);
    dev.device_launched = 1;
    push(&l, dev);
    CHECK(timing_check_records(&l, 3, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EREJECT);
    CHECKF(strstr(why, "launched from the device") != NULL, "%s", why);
    l.n--;

    /* A memcpy anywhere; a second memset of the flush size. */
    push(&l, mk(CUPTI_ACT_MEMCPY, "", S, 3100, 3200, 4096));
    CHECK(timing_check_records(&l, 2, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EREJECT);
    CHECKF(strstr(why, "memcpy of 4096 bytes on stream 13") != NULL, "%s", why);
    /* ...which a library call may do on its own stream. */
    CHECK(timing_check_records(&l, -1, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_OK);
    CHECK(us == 2.0);
    l.n--;
    push(&l, mk(CUPTI_ACT_MEMSET, "", S, 3100, 3200, FLUSH));
    CHECK(timing_check_records(&l, 2, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EREJECT);
    l.n--;

    /* Without a flush expected, the flush memset itself is an offence. */
    CHECK(timing_check_records(&l, 2, S, 1, 0, NULL, &us, why, sizeof why, &st) == KS_EREJECT);
    CHECKF(strstr(why, "memset of 1048576 bytes") != NULL, "%s", why);

    /* Nothing provable: no kernel at all, dropped records, bad timestamps. */
    cupti_act_list e = {0};
    push(&e, mk(CUPTI_ACT_MEMSET, "", S, 0, 500, FLUSH));
    CHECK(timing_check_records(&e, -1, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EPROTO);
    CHECK(timing_check_records(&e, 1, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EREJECT);
    l.dropped = 3;
    CHECK(timing_check_records(&l, 2, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EPROTO);
    CHECK(strstr(st.msg, "dropped 3") != NULL);
    l.dropped = 0;
    uint64_t end = l.v[1].end;
    l.v[1].end = 0;
    CHECK(timing_check_records(&l, 2, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EPROTO);
    CHECK(strstr(st.msg, "incomplete timestamps") != NULL);

    /* The flush's read kernel runs on klab's stream before the run, and its
     * record comes with the run's: the earliest kernel of that name is the
     * flush's, outside the count and the span. */
    cupti_act_list rl = {0};
    push(&rl, mk(CUPTI_ACT_MEMSET, "", S, 0, 500, FLUSH));
    push(&rl, mk(CUPTI_ACT_KERNEL, "k1", S, 1000, 1800, 0));
    push(&rl, mk(CUPTI_ACT_KERNEL, DEVKERN_L2_READ, S, 600, 900, 0));
    CHECK(timing_check_records(&rl, 1, S, 1, FLUSH, DEVKERN_L2_READ, &us, why, sizeof why, &st) == KS_OK);
    CHECK(us == 0.8);
    /* Not expected, it is one launch too many. */
    CHECK(timing_check_records(&rl, 1, S, 1, FLUSH, NULL, &us, why, sizeof why, &st) == KS_EREJECT);
    CHECKF(strstr(why, "2 kernel launches on klab's stream, 1 planned") != NULL, "%s", why);
    /* A candidate's kernel of the same name starts later: it is the run's. */
    push(&rl, mk(CUPTI_ACT_KERNEL, DEVKERN_L2_READ, S, 1900, 2500, 0));
    CHECK(timing_check_records(&rl, 1, S, 1, FLUSH, DEVKERN_L2_READ, &us, why, sizeof why, &st) == KS_EREJECT);
    CHECK(timing_check_records(&rl, 2, S, 1, FLUSH, DEVKERN_L2_READ, &us, why, sizeof why, &st) == KS_OK);
    CHECK(us == 1.5);
    /* On another stream a kernel of that name is never the flush's. */
    rl.n--;
    rl.v[2].stream_id = 99;
    CHECK(timing_check_records(&rl, 1, S, 1, FLUSH, DEVKERN_L2_READ, &us, why, sizeof why, &st) == KS_EREJECT);
    CHECKF(strstr(why, "kernel k_l2_read on stream 99") != NULL, "%s", why);
    cupti_act_list_free(&rl);

    /* why may be NULL. */
    l.v[1].end = end;
    CHECK(timing_check_records(&l, 5, S, 1, FLUSH, NULL, &us, NULL, 0, &st) == KS_EREJECT);

    cupti_act_list_free(&l);
    cupti_act_list_free(&e);
}

static int run_nothing(void *user, CUstream s, int *planned, ks_status *st)
{
    (void)user, (void)s, (void)st;
    *planned = 1;
    return KS_OK;
}

static void test_measure_validation(int have_gpu)
{
    timing_target t = {"cand", run_nothing, NULL, 0};
    timing_target none = {"cand", NULL, NULL, 0};
    timing_opts o;
    timing_result r;
    ks_status st;

    timing_opts_default(&o);
    CHECK(timing_measure(NULL, &none, &o, &r, &st) == KS_EINVAL);
    CHECK(timing_measure(NULL, &t, NULL, &r, &st) == KS_EINVAL);
    o.max_samples = 0;
    CHECK(timing_measure(NULL, &t, &o, &r, &st) == KS_EINVAL);
    timing_opts_default(&o);
    CHECK(stop_list_set(&o.stop, "converged", "min_samples", 2000, &st) == KS_OK);
    CHECK(timing_measure(NULL, &t, &o, &r, &st) == KS_EINVAL);
    CHECK(strcmp(st.msg, "timing: min_samples 2000 exceeds max_samples 1000") == 0);
    timing_opts_default(&o);
    o.method = 7;
    CHECK(timing_measure(NULL, &t, &o, &r, &st) == KS_EINVAL);
    timing_opts_default(&o);
    o.flush_bytes = 1001;
    CHECK(timing_measure(NULL, &t, &o, &r, &st) == KS_EINVAL);
    timing_result_free(&r);

    if (have_gpu)
        return;
    timing_opts_default(&o);
    CHECK(timing_measure(NULL, &t, &o, &r, &st) == KS_ENODRIVER);
    CHECK(strstr(st.msg, "CUDA") != NULL);
    CHECK(timing_measure2(NULL, &t, &t, &o, &r, &st) == KS_ENODRIVER);
    CHECK(r.t[0].n == 0 && r.t[0].samples_us == NULL);
    timing_result_free(&r);
    timing_result_free(&r); /* idempotent */

    /* A session is refused the same way, and holds nothing after. */
    timing_session *sess = (timing_session *)&o;
    CHECK(timing_session_open(NULL, NULL, &sess, &st) == KS_EINVAL && sess == NULL);
    CHECK(timing_session_open(NULL, &o, &sess, &st) == KS_ENODRIVER && sess == NULL);
    o.max_samples = 0;
    CHECK(timing_session_open(NULL, &o, &sess, &st) == KS_EINVAL && sess == NULL);
    double us = 0;
    CHECK(timing_session_run(NULL, &t, &us, &st) == KS_EINVAL && isnan(us));
    timing_session_close(NULL, NULL); /* nothing to close */

    int mhz = 0;
    int rc = timing_sm_clock(0, &mhz, NULL, &st);
    CHECKF(rc == KS_ENOLIB || rc == KS_ENODRIVER || rc == KS_EUNSUPPORTED, "%d %s", rc, st.msg);
    CHECK(mhz == -1);
}

/* ---- with a GPU ---- */

static const char busy_ptx[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry klab_busy(.param .u64 out, .param .u32 iters)\n"
    "{\n"
    "    .reg .u64 %rd<5>;\n"
    "    .reg .u32 %r<6>;\n"
    "    .reg .pred %p;\n"
    "    ld.param.u64 %rd1, [out];\n"
    "    ld.param.u32 %r1, [iters];\n"
    "    mov.u32 %r2, %tid.x;\n"
    "    mov.u32 %r3, 0;\n"
    "    mov.u32 %r4, 0;\n"
    "LOOP:\n"
    "    add.u32 %r4, %r4, %r3;\n"
    "    add.u32 %r3, %r3, 1;\n"
    "    setp.lt.u32 %p, %r3, %r1;\n"
    "    @%p bra LOOP;\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n"
    "    mul.wide.u32 %rd3, %r2, 4;\n"
    "    add.u64 %rd4, %rd2, %rd3;\n"
    "    st.global.u32 [%rd4], %r4;\n"
    "    ret;\n"
    "}\n";

typedef struct busy {
    cuda_ctx *c;
    CUfunction f;
    CUdeviceptr out;
    unsigned iters;
    int launches;         /* launched on the given stream per run */
    CUstream extra;       /* when set: one more launch there (unplanned) */
    int say_planned;      /* what the run claims; 0: the truth */
} busy;

static int busy_launch(busy *b, CUstream s, ks_status *st)
{
    cuda_launch l;
    memset(&l, 0, sizeof l);
    l.grid[0] = l.grid[1] = l.grid[2] = 1;
    l.block[0] = 32, l.block[1] = l.block[2] = 1;
    l.stream = s;
    void *params[] = {&b->out, &b->iters};
    return cuda_launch_kernel(b->c, b->f, &l, params, st);
}

static int run_busy(void *user, CUstream s, int *planned, ks_status *st)
{
    busy *b = user;
    for (int i = 0; i < b->launches; i++)
        if (busy_launch(b, s, st))
            return st->code;
    if (b->extra && busy_launch(b, b->extra, st))
        return st->code;
    *planned = b->say_planned ? b->say_planned : b->launches;
    return KS_OK;
}

typedef struct hooks {
    size_t before_calls, check_calls;
    long fail_at;         /* check fails at this sample; -1 never */
} hooks;

static int hook_before(void *u, int target, size_t sample, int *check, ks_status *st)
{
    (void)target, (void)st;
    hooks *h = u;
    h->before_calls++;
    *check = sample % 3 == 0;
    return KS_OK;
}

static int hook_check(void *u, int target, size_t sample, int *ok, ks_status *st)
{
    (void)target, (void)st;
    hooks *h = u;
    h->check_calls++;
    *ok = (long)sample != h->fail_at;
    return KS_OK;
}

static int seen_count(const timing_result *r, const char *name, int klab_stream)
{
    unsigned long n = 0;
    for (size_t i = 0; i < r->nseen; i++)
        if (r->seen[i].kind == CUPTI_ACT_KERNEL && strcmp(r->seen[i].name, name) == 0 &&
            r->seen[i].klab_stream == klab_stream)
            n += r->seen[i].count;
    return (int)n;
}

static void test_gpu(void)
{
    ks_status st;
    cuda_ctx *c = NULL;
    CUmodule m = NULL;
    CUstream s = NULL, other = NULL;
    busy b;
    memset(&b, 0, sizeof b);
    char log[4096];
    if (cuda_ctx_open(0, &c, &st)) {
        CHECKF(0, "cuda_ctx_open: %s", st.msg);
        return;
    }
    CHECKF(cuda_module_load(c, busy_ptx, sizeof busy_ptx - 1, &m, log, sizeof log, &st) == KS_OK,
           "%s %s", st.msg, log);
    CHECK(cuda_func_get(c, m, "klab_busy", &b.f, &st) == KS_OK);
    CHECK(cuda_mem_alloc(c, 4096, &b.out, &st) == KS_OK);
    CHECK(cuda_stream_create(c, &s, &st) == KS_OK);
    CHECK(cuda_stream_create(c, &other, &st) == KS_OK);
    b.c = c;
    b.iters = 2000;
    b.launches = 1;

    timing_target t = {"busy", run_busy, &b, 1e6};
    timing_opts o;
    timing_result r;
    timing_opts_default(&o);
    o.stream = s;
    CHECK(stop_list_set(&o.stop, "converged", "min_samples", 20, &st) == KS_OK);
    o.max_samples = 200;
    o.budget_s = 5;

    /* CUPTI. */
    o.method = TIMING_CUPTI;
    int rc = timing_measure(c, &t, &o, &r, &st);
    int have_cupti = rc != KS_EUNSUPPORTED && rc != KS_ENOLIB;
    double cupti_median = NAN;
    if (!have_cupti) {
        SKIP("CUPTI activity tracing is not available on this machine");
        fprintf(stderr, "  (%s)\n", st.msg);
    } else {
        CHECKF(rc == KS_OK, "cupti measure: %s", st.msg);
        CHECK(r.method == TIMING_CUPTI && r.launch_checked);
        CHECKF(r.t[0].n >= 20 && r.t[0].n <= 200, "n=%zu", r.t[0].n);
        CHECK(r.t[0].stats.median > 0 && r.t[0].stats.min <= r.t[0].stats.median);
        CHECK(r.t[0].stats.p10 <= r.t[0].stats.median && r.t[0].stats.median <= r.t[0].stats.p90);
        /* Both figures per sample: the kernel's own span is shorter than the
         * event pair around it. */
        CHECKF(r.t[0].event_us && r.t[0].stats.median < r.t[0].event_stats.median,
               "cupti %.3f us vs events %.3f us", r.t[0].stats.median,
               r.t[0].event_stats.median);
        CHECKF(seen_count(&r, "klab_busy", 1) == (int)r.t[0].n + r.warmup,
               "seen %d klab_busy, n=%zu", seen_count(&r, "klab_busy", 1), r.t[0].n);
        CHECK(r.flush_bytes > 0 && !r.unexpected);
        CHECK(r.t[0].tflops > 0);
        CHECK(strcmp(r.stop_reason, "converged") == 0 || strcmp(r.stop_reason, "max_samples") == 0 ||
              strcmp(r.stop_reason, "budget") == 0);
        if (strcmp(r.clock_source, "nvml") == 0)
            CHECK(r.clock_before_mhz > 0 && r.clock_after_mhz > 0);
        else
            CHECK(r.clock_before_mhz == -1);
        cupti_median = r.t[0].stats.median;
        fprintf(stderr, "  cupti: median %.3f us (events %.3f us), n=%zu, %s, clock %d->%d MHz\n",
                r.t[0].stats.median, r.t[0].event_stats.median, r.t[0].n, r.stop_reason,
                r.clock_before_mhz, r.clock_after_mhz);
    }
    timing_result_free(&r);

    /* Events. */
    o.method = TIMING_EVENTS;
    rc = timing_measure(c, &t, &o, &r, &st);
    CHECKF(rc == KS_OK, "events measure: %s", st.msg);
    CHECK(r.method == TIMING_EVENTS && !r.launch_checked && r.t[0].event_us == NULL);
    CHECK(r.t[0].n >= 20 && r.t[0].stats.median > 0);
    if (have_cupti)
        CHECKF(cupti_median < r.t[0].stats.median, "cupti %.3f us < events %.3f us", cupti_median,
               r.t[0].stats.median);
    timing_result_free(&r);

    if (have_cupti) {
        /* An unplanned launch on another stream. */
        b.extra = other;
        o.method = TIMING_AUTO;
        rc = timing_measure(c, &t, &o, &r, &st);
        CHECKF(rc == KS_EREJECT, "extra stream: %d %s", rc, st.msg);
        CHECK(r.unexpected && r.unexpected_sample == -1); /* caught in warm-up run 0 */
        CHECKF(strstr(r.unexpected_why, "klab_busy on stream") != NULL, "%s", r.unexpected_why);
        CHECK(seen_count(&r, "klab_busy", 0) >= 1);
        CHECK(strcmp(r.stop_reason, "unexpected_launches") == 0);
        timing_result_free(&r);
        /* Events cannot see it (the documented weakness of the fallback). */
        o.method = TIMING_EVENTS;
        CHECK(timing_measure(c, &t, &o, &r, &st) == KS_OK);
        timing_result_free(&r);
        b.extra = NULL;

        /* Two launches, one planned. */
        b.launches = 2;
        b.say_planned = 1;
        o.method = TIMING_CUPTI;
        rc = timing_measure(c, &t, &o, &r, &st);
        CHECKF(rc == KS_EREJECT && strstr(r.unexpected_why, "2 kernel launches") != NULL, "%s",
               r.unexpected_why);
        timing_result_free(&r);
        b.launches = 1;
        b.say_planned = 0;
    }

    /* A session: runs made one at a time between work of the caller's own
     * (here a launch on klab's stream that no run owns), each timed like a
     * sample; a run with an unplanned launch is refused and ends it. */
    if (have_cupti) {
        timing_session *sess = NULL;
        o.method = TIMING_CUPTI;
        CHECKF(timing_session_open(c, &o, &sess, &st) == KS_OK, "session: %s", st.msg);
        double us[4];
        busy b4 = b;
        b4.iters = 4 * b.iters;
        timing_target t4 = {"busy x4", run_busy, &b4, 0};
        for (int k = 0; k < 4 && sess; k++) {
            CHECK(busy_launch(&b, s, &st) == KS_OK); /* the caller's own work */
            CHECKF(timing_session_run(sess, k < 2 ? &t : &t4, &us[k], &st) == KS_OK, "run %d: %s", k, st.msg);
        }
        CHECKF(us[2] > 2 * us[0] && us[3] > 2 * us[1], "%.2f %.2f %.2f %.2f us", us[0], us[1], us[2], us[3]);
        b.launches = 2;
        b.say_planned = 1;
        CHECK(timing_session_run(sess, &t, &us[0], &st) == KS_EREJECT);
        CHECK(timing_session_run(sess, &t, &us[0], &st) == KS_EINVAL);
        b.launches = 1;
        b.say_planned = 0;
        timing_session_close(sess, &r);
        CHECKF(r.t[0].n == 4 && r.method == TIMING_CUPTI && r.flush_bytes > 0 && r.unexpected, "n=%zu", r.t[0].n);
        CHECK(r.t[0].samples_us[2] == us[2]);
        /* The caller's launches are not the runs': one per run plus the
         * refused run's two. */
        CHECKF(seen_count(&r, "klab_busy", 1) == 6, "seen %d", seen_count(&r, "klab_busy", 1));
        timing_result_free(&r);
    }

    /* Interleaved: a baseline doing 4x the work is slower. */
    busy b2 = b;
    b2.iters = 4 * b.iters;
    timing_target base = {"baseline", run_busy, &b2, 1e6};
    o.method = TIMING_AUTO;
    rc = timing_measure2(c, &t, &base, &o, &r, &st);
    CHECKF(rc == KS_OK, "measure2: %s", st.msg);
    CHECK(r.ntargets == 2 && r.t[0].n == r.t[1].n && r.t[0].n >= 20);
    CHECKF(r.speedup > 1.5, "speedup %.3f", r.speedup);
    CHECK(strcmp(r.t[1].label, "baseline") == 0);
    timing_result_free(&r);

    /* Hooks: every third sample checked; a failed check stops sampling. */
    hooks h = {0, 0, -1};
    o.before = hook_before;
    o.check = hook_check;
    o.hook_user = &h;
    CHECK(stop_list_set(&o.stop, "converged", "min_samples", 30, &st) == KS_OK);
    o.max_samples = 30;
    rc = timing_measure(c, &t, &o, &r, &st);
    CHECKF(rc == KS_OK, "hooks: %s", st.msg);
    CHECK(h.before_calls == 30 && h.check_calls == 10 && r.t[0].checks == 10);
    CHECK(r.t[0].check_failures == 0 && !r.unexpected);
    timing_result_free(&r);
    h = (hooks){0, 0, 6};
    rc = timing_measure(c, &t, &o, &r, &st);
    CHECK(rc == KS_OK && r.t[0].check_failures == 1 && r.t[0].first_failed_sample == 6);
    CHECK(strcmp(r.stop_reason, "check_failed") == 0 && r.t[0].n == 7);
    timing_result_free(&r);
    o.before = NULL;
    o.check = NULL;

    /* A flush buffer smaller than 2 x L2 is refused. */
    o.flush_bytes = 1 << 20;
    CHECK(timing_measure(c, &t, &o, &r, &st) == KS_EINVAL);
    timing_result_free(&r);

    cuda_stream_destroy(c, s, &st);
    cuda_stream_destroy(c, other, &st);
    cuda_mem_free(c, b.out, &st);
    cuda_module_unload(c, m, &st);
    cuda_ctx_close(c, &st);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_prog = argv[0];
    char reason[256] = "";
    int have_gpu = cuda_available(reason, sizeof reason);
    test_names();
    test_cupti_no_driver(have_gpu);
    test_decode();
    test_check_records();
    test_measure_validation(have_gpu);
    if (have_gpu)
        test_gpu();
    else
        SKIP("no GPU: CUPTI and event timing of a kernel, unexpected launches, interleaving");
    return check_done();
}
