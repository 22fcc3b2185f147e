/*
 * timing.c: see timing.h and docs/timing.md.
 */
#include "base/clock.h"
#include "measure/timing.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cudaTypedefs.h>

#include "driver/devkern.h"
#include "driver/dynlib.h"

/* ---- names and defaults ---- */

const char *timing_method_name(int m)
{
    switch (m) {
    case TIMING_AUTO: return "auto";
    case TIMING_CUPTI: return "cupti";
    case TIMING_EVENTS: return "events";
    }
    return "unknown";
}

int timing_method_parse(const char *s)
{
    if (!s)
        return -1;
    if (strcmp(s, "auto") == 0)
        return TIMING_AUTO;
    if (strcmp(s, "cupti") == 0)
        return TIMING_CUPTI;
    if (strcmp(s, "events") == 0)
        return TIMING_EVENTS;
    return -1;
}

void timing_opts_default(timing_opts *o)
{
    memset(o, 0, sizeof *o);
    o->warmup = 3;
    o->warmup_s = 0.05;
    o->max_samples = 1000;
    o->budget_s = 10.0;
    o->confidence = 0.95;
    o->method = TIMING_AUTO;
    ks_status ignore;
    stop_list_add(&o->stop, "converged", NULL, &ignore);
}

void timing_result_free(timing_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < 2; i++) {
        free(r->t[i].samples_us);
        free(r->t[i].event_us);
        r->t[i].samples_us = r->t[i].event_us = NULL;
    }
}

/* ---- NVML (optional) ---- */

/* The few NVML declarations used (nvml.h is not part of the toolkit
 * headers klab builds against). */
typedef struct nvml_dev_s *nvml_dev;
enum { NVML_OK = 0, NVML_CLOCK_SM_ = 1 };

static const char *const nvml_names[] = {"libnvidia-ml.so.1", NULL};
static const dynlib_desc dynlib_nvml = {"nvml", "KLAB_NVML", nvml_names, NULL};

static struct {
    pthread_mutex_t mu;
    int tried;
    int rc;                 /* ks_code of the load */
    char msg[KS_MSG_MAX];
    int (*init)(void);
    int (*by_uuid)(const char *, nvml_dev *);
    int (*clock)(nvml_dev, int, unsigned *);
    int (*reasons)(nvml_dev, unsigned long long *);
    int (*driver)(char *, unsigned);
    const char *(*error_string)(int);
} nvml = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int nvml_load(ks_status *st)
{
    pthread_mutex_lock(&nvml.mu);
    if (!nvml.tried) {
        nvml.tried = 1;
        ks_status s;
        ks_clear(&s);
        const dynlib *lib = dynlib_get(&dynlib_nvml, &s);
        /* The clock-event reasons were renamed in newer drivers; either
         * will do, neither is needed. */
        void *throttle = NULL;
        const dynlib_symbol syms[] = {
            {"nvmlInit_v2", (void **)&nvml.init, 0},
            {"nvmlDeviceGetHandleByUUID", (void **)&nvml.by_uuid, 0},
            {"nvmlDeviceGetClockInfo", (void **)&nvml.clock, 0},
            {"nvmlDeviceGetCurrentClocksEventReasons", (void **)&nvml.reasons, 1},
            {"nvmlDeviceGetCurrentClocksThrottleReasons", &throttle, 1},
            {"nvmlErrorString", (void **)&nvml.error_string, 1},
            {"nvmlSystemGetDriverVersion", (void **)&nvml.driver, 1},
        };
        if (dynlib_bind(lib, syms, DYNLIB_COUNT(syms), &s) == KS_OK) {
            if (!nvml.reasons)
                memcpy(&nvml.reasons, &throttle, sizeof throttle);
            int r = nvml.init();
            if (r != NVML_OK)
                ks_fail(&s, KS_EUNSUPPORTED, r, "nvmlInit_v2 failed (%d)", r);
        }
        nvml.rc = s.code;
        snprintf(nvml.msg, sizeof nvml.msg, "%s", s.msg);
    }
    int rc = nvml.rc;
    if (rc)
        ks_fail(st, rc, 0, "%s", nvml.msg);
    pthread_mutex_unlock(&nvml.mu);
    return rc;
}

int timing_sm_clock(int ordinal, int *mhz, unsigned long long *reasons, ks_status *st)
{
    *mhz = -1;
    if (reasons)
        *reasons = 0;
    if (nvml_load(st))
        return st->code;
    cuda_props p;
    if (cuda_device_props(ordinal, &p, st))
        return st->code;
    nvml_dev d = NULL;
    int r = nvml.by_uuid(p.uuid_str, &d);
    if (r != NVML_OK)
        return ks_fail(st, KS_EUNSUPPORTED, r, "nvmlDeviceGetHandleByUUID(%s): %s", p.uuid_str,
                       nvml.error_string ? nvml.error_string(r) : "error");
    unsigned v = 0;
    r = nvml.clock(d, NVML_CLOCK_SM_, &v);
    if (r != NVML_OK)
        return ks_fail(st, KS_EUNSUPPORTED, r, "nvmlDeviceGetClockInfo: %s",
                       nvml.error_string ? nvml.error_string(r) : "error");
    *mhz = (int)v;
    if (reasons && nvml.reasons) {
        unsigned long long bits = 0;
        if (nvml.reasons(d, &bits) == NVML_OK)
            *reasons = bits;
    }
    return KS_OK;
}

int timing_driver_version(char *buf, size_t n, ks_status *st)
{
    if (n)
        buf[0] = 0;
    if (nvml_load(st))
        return st->code;
    if (!nvml.driver)
        return ks_fail(st, KS_EUNSUPPORTED, 0, "NVML has no nvmlSystemGetDriverVersion");
    char v[96] = {0};
    int r = nvml.driver(v, sizeof v);
    if (r != NVML_OK)
        return ks_fail(st, KS_EUNSUPPORTED, r, "nvmlSystemGetDriverVersion: %s",
                       nvml.error_string ? nvml.error_string(r) : "error");
    snprintf(buf, n, "%s", v);
    return KS_OK;
}

/* ---- checking one sample's records ---- */

/* Adds a record to an aggregation table. */
static void seen_add(timing_seen *seen, size_t *nseen, unsigned long *overflow,
                     const cupti_act_rec *rec, uint32_t stream_id)
{
    for (size_t i = 0; i < *nseen; i++) {
        timing_seen *s = &seen[i];
        if (s->kind == rec->kind && s->stream_id == rec->stream_id &&
            strcmp(s->name, rec->name) == 0) {
            s->count++;
            return;
        }
    }
    if (*nseen >= TIMING_SEEN_MAX) {
        (*overflow)++;
        return;
    }
    timing_seen *s = &seen[(*nseen)++];
    memset(s, 0, sizeof *s);
    s->kind = rec->kind;
    memcpy(s->name, rec->name, sizeof s->name);
    s->stream_id = rec->stream_id;
    s->klab_stream = rec->stream_id == stream_id;
    s->count = 1;
}

/* Appends "; text" (or "text" first) to why, truncating. */
static void why_add(char *why, size_t n, const char *text)
{
    if (!why || n == 0)
        return;
    size_t len = strlen(why);
    if (len + 1 >= n)
        return;
    snprintf(why + len, n - len, "%s%s", len ? "; " : "", text);
}

/* Is r the L2 flush of this sample? (a memset of exactly flush_bytes on
 * klab's stream; only the first such record counts) */
static int is_flush(const cupti_act_rec *r, uint32_t stream_id, uint32_t context_id,
                    size_t flush_bytes)
{
    return flush_bytes > 0 && r->kind == CUPTI_ACT_MEMSET && r->stream_id == stream_id &&
           r->context_id == context_id && r->bytes == flush_bytes;
}

/* The index of the flush's read in recs, or -1: the earliest kernel named
 * flush_kernel on klab's stream. The judge enqueues it before the run on
 * the same stream, so nothing of the run can start before it; a candidate
 * kernel of the same name starts later and is counted as the candidate's. */
static long flush_read_index(const cupti_act_list *recs, uint32_t stream_id, uint32_t context_id,
                             const char *flush_kernel)
{
    long best = -1;
    if (!flush_kernel)
        return -1;
    for (size_t i = 0; i < recs->n; i++) {
        const cupti_act_rec *r = &recs->v[i];
        if (r->kind == CUPTI_ACT_KERNEL && r->stream_id == stream_id && r->context_id == context_id &&
            !r->device_launched && !strcmp(r->name, flush_kernel) &&
            (best < 0 || r->start < recs->v[best].start))
            best = (long)i;
    }
    return best;
}

int timing_check_records(const cupti_act_list *recs, int planned, uint32_t stream_id,
                         uint32_t context_id, size_t flush_bytes, const char *flush_kernel,
                         double *us, char *why, size_t n, ks_status *st)
{
    if (why && n)
        why[0] = 0;
    *us = NAN;
    if (recs->dropped)
        return ks_fail(st, KS_EPROTO, 0,
                       "CUPTI dropped %llu activity records: the run cannot be verified",
                       (unsigned long long)recs->dropped);
    int flush_seen = 0, offences = 0;
    long kernels = 0;
    uint64_t first = UINT64_MAX, last = 0;
    char line[CUPTI_ACT_NAME_MAX + 160];
    long read = flush_read_index(recs, stream_id, context_id, flush_kernel);
    for (size_t i = 0; i < recs->n; i++) {
        const cupti_act_rec *r = &recs->v[i];
        if ((long)i == read)
            continue;
        if (!flush_seen && is_flush(r, stream_id, context_id, flush_bytes)) {
            flush_seen = 1;
            continue;
        }
        int ours = r->stream_id == stream_id && r->context_id == context_id;
        /* A library call (klab's baseline, never a candidate) may fork its
         * work onto streams of its own in klab's context: cuDNN runs a
         * grouped convolution's groups so. Those kernels are its run's. */
        int library_own = planned < 0 && r->context_id == context_id;
        if (r->kind == CUPTI_ACT_KERNEL) {
            if (!ours && !library_own) {
                offences++;
                snprintf(line, sizeof line, "kernel %s on stream %u (context %u), not klab's stream %u",
                         r->name[0] ? r->name : "?", r->stream_id, r->context_id, stream_id);
                why_add(why, n, line);
                continue;
            }
            if (r->device_launched) {
                offences++;
                snprintf(line, sizeof line, "kernel %s was launched from the device",
                         r->name[0] ? r->name : "?");
                why_add(why, n, line);
                continue;
            }
            if (r->start == 0 || r->end < r->start)
                return ks_fail(st, KS_EPROTO, 0,
                               "CUPTI record of kernel %s has incomplete timestamps (%llu..%llu)",
                               r->name, (unsigned long long)r->start,
                               (unsigned long long)r->end);
            kernels++;
            if (r->start < first)
                first = r->start;
            if (r->end > last)
                last = r->end;
        } else if (planned < 0 && ours) {
            /* A library call may clear or copy on its own stream. */
            continue;
        } else {
            offences++;
            snprintf(line, sizeof line, "%s of %llu bytes on stream %u%s",
                     cupti_act_kind_name(r->kind), (unsigned long long)r->bytes, r->stream_id,
                     ours ? " (klab's stream)" : "");
            why_add(why, n, line);
        }
    }
    if (planned >= 0 && kernels != planned) {
        offences++;
        snprintf(line, sizeof line, "%ld kernel launch%s on klab's stream, %d planned", kernels,
                 kernels == 1 ? "" : "es", planned);
        why_add(why, n, line);
    }
    if (offences)
        return ks_fail(st, KS_EREJECT, 0, "unexpected launches: %s", why ? why : "");
    if (kernels == 0)
        return ks_fail(st, KS_EPROTO, 0, "CUPTI recorded no kernel on klab's stream for this run");
    *us = (double)(last - first) / 1000.0;
    return KS_OK;
}

/* ---- the measurement ---- */

typedef struct run_state {
    cuda_ctx *c;
    const timing_opts *o;
    timing_result *r;
    const timing_target *tg[2];
    size_t nt;
    CUstream stream;
    CUevent e0, e1;
    CUdeviceptr flush;       /* the buffer flushed */
    size_t flush_bytes;      /* 0: no flush */
    PFN_cuMemsetD32Async_v3020 memset_async;
    PFN_cuCtxResetPersistingL2Cache_v11000 reset_l2; /* NULL: not reset (no flush, or no such call) */
    unsigned flush_value;
    CUdeviceptr clean;       /* read through L2 after each flush; 0: no read */
    int cupti;               /* 1 when CUPTI records are used */
    uint32_t ctx_id, stream_id;
    cupti_act_list recs;
    double *sorted[2];       /* sorted copies of samples for the stopping rules */
    int own_flush;           /* 1 when timing allocated the flush buffer */
    int events;              /* events created: 1 e0, 3 both */
    int begun;               /* 1 once setting up began: finish must run */
} run_state;

static int after_hooks(run_state *s, ks_status *st);

/* The flush before a run. With a clean buffer, a read of it follows the
 * memset on the same stream. Neither is waited for: both land in the run's
 * records and timing_check_records sets them apart (the first memset of the
 * flush's size, the earliest DEVKERN_L2_READ on klab's stream), which spares a
 * context synchronisation and a CUPTI flush per sample. */
static int flush_l2(run_state *s, ks_status *st)
{
    if (!s->flush_bytes)
        return KS_OK;
    /* A different value each time: a real write of every line. */
    CUresult cr = s->memset_async(s->flush, ++s->flush_value, s->flush_bytes / 4, s->stream);
    if (cr != CUDA_SUCCESS)
        return cuda_fail(st, (int)cr, "cuMemsetD32Async (L2 flush)");
    if (!s->clean)
        return KS_OK;
    if (devkern_l2_read(s->o->l2_read, s->stream, s->clean, s->flush_bytes, st))
        return st->code;
    return KS_OK;
}

/* The name of the flush's read kernel in the run's records, or NULL. */
static const char *flush_kernel(const run_state *s)
{
    return s->clean ? DEVKERN_L2_READ : NULL;
}

/* Before every run: lines a kernel marked as persisting (an access policy
 * window, createpolicy with L2::evict_last) go back to normal, so that the
 * flush that follows evicts them like any other; the context's persisting
 * limit is 0 from the start. Whatever the reset itself does on the device
 * is waited for and its records discarded, as for klab's hooks. */
static int normal_l2(run_state *s, ks_status *st)
{
    if (!s->reset_l2)
        return KS_OK;
    CUresult cr = s->reset_l2();
    if (cr != CUDA_SUCCESS)
        return cuda_fail(st, (int)cr, "cuCtxResetPersistingL2Cache");
    return after_hooks(s, st);
}

/* After klab's own hooks ran: waits for their GPU work, and with CUPTI
 * discards its records (they belong to no timed run). */
static int after_hooks(run_state *s, ks_status *st)
{
    if (cuda_ctx_sync(s->c, st))
        return st->code;
    if (!s->cupti)
        return KS_OK;
    cupti_act_list_clear(&s->recs);
    int rc = cupti_act_collect(&s->recs, st);
    cupti_act_list_clear(&s->recs);
    return rc;
}

/* One run of target i: flush, events, run, sync, records. `sample` is the
 * sample index, or -1 - k for warm-up run k. On success *us (CUPTI or
 * events) and *ev_us (events) hold the durations. */
static int one_run(run_state *s, size_t i, long sample, double *us, double *ev_us, ks_status *st)
{
    const timing_target *t = s->tg[i];
    timing_result *r = s->r;
    int planned = 0;
    if (flush_l2(s, st))
        return st->code;
    if (cuda_event_record(s->c, s->e0, s->stream, st))
        return st->code;
    int rc = t->run(t->user, s->stream, &planned, st);
    if (rc) {
        /* Let whatever was enqueued finish before anyone reuses buffers. */
        ks_status ignore;
        cuda_ctx_sync(s->c, &ignore);
        return rc;
    }
    if (planned == 0)
        return ks_fail(st, KS_EINVAL, 0, "%s: the run planned no kernel launch",
                       t->label ? t->label : "target");
    r->t[i].planned = planned;
    if (cuda_event_record(s->c, s->e1, s->stream, st))
        return st->code;
    /* The whole context: work on any other stream finishes inside this
     * sample and is attributed to it. */
    if (cuda_ctx_sync(s->c, st))
        return st->code;
    float ms = 0;
    if (cuda_event_elapsed(s->c, s->e0, s->e1, &ms, st))
        return st->code;
    *ev_us = (double)ms * 1000.0;
    if (!s->cupti) {
        *us = *ev_us;
        return KS_OK;
    }
    cupti_act_list_clear(&s->recs);
    if (cupti_act_collect(&s->recs, st))
        return st->code;
    r->dropped += s->recs.dropped;
    long read = flush_read_index(&s->recs, s->stream_id, s->ctx_id, flush_kernel(s));
    for (size_t k = 0, flushed = 0; k < s->recs.n; k++) {
        const cupti_act_rec *rec = &s->recs.v[k];
        if ((long)k == read)
            continue;
        if (!flushed && is_flush(rec, s->stream_id, s->ctx_id, s->flush_bytes)) {
            flushed = 1;
            continue;
        }
        seen_add(r->seen, &r->nseen, &r->seen_overflow, rec, s->stream_id);
    }
    char why[KS_MSG_MAX - 32];
    rc = timing_check_records(&s->recs, planned, s->stream_id, s->ctx_id, s->flush_bytes, flush_kernel(s),
                              us, why, sizeof why, st);
    if (rc == KS_EREJECT) {
        r->unexpected = 1;
        r->unexpected_target = (int)i;
        r->unexpected_sample = sample;
        snprintf(r->unexpected_why, sizeof r->unexpected_why, "%s", why);
        snprintf(r->stop_reason, sizeof r->stop_reason, "unexpected_launches");
        char where[64];
        if (sample < 0)
            snprintf(where, sizeof where, "warm-up run %ld", -1 - sample);
        else
            snprintf(where, sizeof where, "sample %ld", sample);
        return ks_fail(st, KS_EREJECT, 0, "unexpected launches in %s of %s: %s", where,
                       t->label ? t->label : "target", why);
    }
    return rc;
}

/* Chooses the method, starting CUPTI when it is used. */
static int setup_method(run_state *s, ks_status *st)
{
    timing_result *r = s->r;
    if (s->o->method == TIMING_EVENTS) {
        r->method = TIMING_EVENTS;
        return KS_OK;
    }
    ks_status cs;
    ks_clear(&cs);
    int rc = cupti_act_start(&cs);
    if (rc == KS_OK) {
        CUcontext h = cuda_ctx_handle(s->c);
        rc = cupti_act_context_id(h, &s->ctx_id, &cs);
        if (!rc)
            rc = cupti_act_stream_id(h, s->stream, &s->stream_id, &cs);
        if (rc) {
            ks_status ignore;
            cupti_act_stop(&ignore);
        }
    }
    if (rc == KS_OK) {
        s->cupti = 1;
        r->method = TIMING_CUPTI;
        r->launch_checked = 1;
        r->stream_id = s->stream_id;
        return KS_OK;
    }
    if (s->o->method == TIMING_CUPTI) {
        *st = cs;
        return rc;
    }
    r->method = TIMING_EVENTS;
    snprintf(r->fallback, sizeof r->fallback, "%s", cs.msg);
    return KS_OK;
}

static int validate(const timing_target *const *tg, size_t nt, const timing_opts *o,
                    ks_status *st)
{
    for (size_t i = 0; i < nt; i++)
        if (!tg[i] || !tg[i]->run)
            return ks_fail(st, KS_EINVAL, 0, "timing: target %zu has no run function", i + 1);
    if (!o)
        return ks_fail(st, KS_EINVAL, 0, "timing: options are required");
    if (o->method != TIMING_AUTO && o->method != TIMING_CUPTI && o->method != TIMING_EVENTS)
        return ks_fail(st, KS_EINVAL, 0, "timing: unknown method %d", o->method);
    if (o->max_samples < 1)
        return ks_fail(st, KS_EINVAL, 0, "timing: max_samples must be at least 1");
    if (o->max_samples > 10000000)
        return ks_fail(st, KS_EINVAL, 0, "timing: max_samples %zu is too large", o->max_samples);
    if (stop_list_check(&o->stop, o->max_samples, st))
        return st->code;
    if (o->warmup < 0 || o->warmup > 100000)
        return ks_fail(st, KS_EINVAL, 0, "timing: warmup must be in 0..100000");
    if (!(o->confidence > 0 && o->confidence < 1))
        return ks_fail(st, KS_EINVAL, 0, "timing: confidence must be in (0, 1)");
    if (o->flush_bytes % 4)
        return ks_fail(st, KS_EINVAL, 0, "timing: flush_bytes must be a multiple of 4");
    if (o->flush_buf % 4)
        return ks_fail(st, KS_EINVAL, 0, "timing: the flush buffer must be 4-byte aligned");
    if (o->flush_buf && !o->flush_bytes && !o->no_flush)
        return ks_fail(st, KS_EINVAL, 0, "timing: a flush buffer needs flush_bytes");
    return KS_OK;
}

static void finish_series(timing_result *r, size_t i, const timing_opts *o,
                          const timing_target *t)
{
    timing_series *ts = &r->t[i];
    stats_summarize(ts->samples_us, ts->n, o->confidence, &ts->stats);
    if (ts->event_us)
        stats_summarize(ts->event_us, ts->n, o->confidence, &ts->event_stats);
    if (t->flops > 0 && ts->n && ts->stats.median > 0) {
        ts->tflops = t->flops / (ts->stats.median * 1e-6) / 1e12;
        if (o->peak_tflops > 0)
            ts->frac_peak = ts->tflops / o->peak_tflops;
    }
}

/* The L2 flush buffer: at least twice the L2, so that no line of the timed
 * run's data survives it; and no line may stay in L2 across samples: the
 * persisting carve-out is 0, and persisting lines are reset before every
 * run. */
static int setup_flush(run_state *s, ks_status *st)
{
    const timing_opts *o = s->o;
    timing_result *r = s->r;
    cuda_props p;
    if (cuda_device_props(cuda_ctx_ordinal(s->c), &p, st))
        return st->code;
    size_t need = 2 * (size_t)(p.l2_bytes > 0 ? p.l2_bytes : 0);
    need = (need + 3) & ~(size_t)3;
    s->flush_bytes = o->flush_bytes ? o->flush_bytes : need;
    if (s->flush_bytes < need)
        return ks_fail(st, KS_EINVAL, 0, "timing: flush_bytes %zu is less than twice the L2 (%d bytes)",
                       s->flush_bytes, p.l2_bytes);
    if (s->flush_bytes == 0)
        s->flush_bytes = 4;
    if (cuda_proc("cuMemsetD32Async", CUDA_VERSION, (void **)&s->memset_async, st))
        return st->code;
    r->l2_persisting_limit = -1;
    if (!o->keep_persisting_l2) {
        PFN_cuCtxSetLimit_v3010 set_limit = NULL;
        PFN_cuCtxGetLimit_v3010 get_limit = NULL;
        ks_status lst;
        if (cuda_proc("cuCtxSetLimit", CUDA_VERSION, (void **)&set_limit, &lst) == KS_OK &&
            cuda_proc("cuCtxGetLimit", CUDA_VERSION, (void **)&get_limit, &lst) == KS_OK &&
            set_limit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0) == CUDA_SUCCESS) {
            size_t v = 0;
            if (get_limit(&v, CU_LIMIT_PERSISTING_L2_CACHE_SIZE) == CUDA_SUCCESS)
                r->l2_persisting_limit = (long long)v;
        }
        if (cuda_proc("cuCtxResetPersistingL2Cache", CUDA_VERSION, (void **)&s->reset_l2, &lst) != KS_OK)
            s->reset_l2 = NULL;
        r->l2_reset = s->reset_l2 != NULL;
    }
    if (o->flush_buf) {
        s->flush = o->flush_buf;
    } else {
        if (cuda_mem_alloc(s->c, s->flush_bytes, &s->flush, st))
            return st->code;
        s->own_flush = 1;
    }
    r->flush_bytes = s->flush_bytes;
    return KS_OK;
}

/* The clean buffer read after each flush's memset (o->l2_read): filled once
 * and never written again, so its lines are clean and reading them evicts
 * without write-backs. */
static int setup_clean_read(run_state *s, ks_status *st)
{
    if (!s->o->l2_read)
        return KS_OK;
    if (cuda_mem_alloc(s->c, s->flush_bytes, &s->clean, st))
        return st->code;
    if (devkern_pattern(s->o->l2_read, s->stream, s->clean, s->flush_bytes, 0x01010101u, st) ||
        cuda_ctx_sync(s->c, st))
        return st->code;
    s->r->l2_read_bytes = s->flush_bytes;
    return KS_OK;
}

/* The sample arrays, the event pair, and the method (CUPTI started). */
static int setup_run(run_state *s, ks_status *st)
{
    const timing_opts *o = s->o;
    timing_result *r = s->r;
    for (size_t i = 0; i < s->nt; i++) {
        r->t[i].samples_us = malloc(o->max_samples * sizeof(double));
        s->sorted[i] = malloc(o->max_samples * sizeof(double));
        if (!r->t[i].samples_us || !s->sorted[i])
            return ks_fail(st, KS_ENOMEM, 0, "timing: out of memory for %zu samples", o->max_samples);
    }
    if (cuda_event_create(s->c, &s->e0, st))
        return st->code;
    s->events = 1;
    if (cuda_event_create(s->c, &s->e1, st))
        return st->code;
    s->events = 3;
    /* Nothing of earlier work may land in our first sample. */
    if (cuda_ctx_sync(s->c, st) || setup_method(s, st))
        return st->code;
    for (size_t i = 0; s->cupti && i < s->nt; i++)
        if (!(r->t[i].event_us = malloc(o->max_samples * sizeof(double))))
            return ks_fail(st, KS_ENOMEM, 0, "timing: out of memory");
    return KS_OK;
}

/* Warm-up: the same steps, checked, discarded. A target whose warm-up has
 * already kept the GPU busy for warmup_s (a slow kernel: clocks and caches
 * are as warm as they get) needs no more of it; every target has at least
 * one warm-up run. */
static int warm_up(run_state *s, ks_status *st)
{
    const timing_opts *o = s->o;
    double warm_us[2] = {0, 0};
    int rc, warm_runs = 0;
    for (int k = 0; k < o->warmup; k++) {
        int any = 0;
        for (size_t i = 0; i < s->nt; i++) {
            double us, ev;
            if (k > 0 && o->warmup_s > 0 && warm_us[i] >= o->warmup_s * 1e6)
                continue;
            if ((rc = normal_l2(s, st)) != KS_OK || (rc = one_run(s, i, -1 - (long)k, &us, &ev, st)) != KS_OK)
                return rc;
            warm_us[i] += us;
            any = 1;
        }
        if (!any)
            break;
        warm_runs = k + 1;
    }
    s->r->warmup = warm_runs;
    return KS_OK;
}

/* Round n: one sample of every target (ABAB... with two), each checked
 * when the before-hook asks; *check_failed set when a check failed. */
static int sample_round(run_state *s, size_t n, int *check_failed, ks_status *st)
{
    const timing_opts *o = s->o;
    int hooks = o->before || o->check;
    int rc;
    for (size_t i = 0; i < s->nt; i++) {
        int check = 0;
        if ((rc = normal_l2(s, st)) != KS_OK)
            return rc;
        if (o->before && (rc = o->before(o->hook_user, (int)i, n, &check, st)) != KS_OK)
            return rc;
        if (hooks && (rc = after_hooks(s, st)) != KS_OK)
            return rc;
        double us = 0, ev = 0;
        if ((rc = one_run(s, i, (long)n, &us, &ev, st)) != KS_OK)
            return rc;
        timing_series *ts = &s->r->t[i];
        ts->samples_us[ts->n] = us;
        if (ts->event_us)
            ts->event_us[ts->n] = ev;
        stats_insert_sorted(s->sorted[i], ts->n, us);
        ts->n++;
        if (check && o->check) {
            int ok = 0;
            if ((rc = o->check(o->hook_user, (int)i, n, &ok, st)) != KS_OK)
                return rc;
            ts->checks++;
            if (!ok) {
                if (ts->check_failures++ == 0)
                    ts->first_failed_sample = (long)n;
                *check_failed = 1;
            }
        }
    }
    return KS_OK;
}

/* Rounds until the stopping rules or a limit say stop (stop.h), or a check
 * fails (a failed output needs no more samples). */
static int sample_all(run_state *s, ks_status *st)
{
    const timing_opts *o = s->o;
    timing_result *r = s->r;
    stop_limits lim = {o->max_samples, o->budget_s};
    double t0 = clock_now();
    const char *why = NULL;
    const stop_choice *by = NULL;
    int check_failed = 0, rc;
    for (size_t n = 0; !why && !check_failed; n++) {
        if ((rc = sample_round(s, n, &check_failed, st)) != KS_OK)
            return rc;
        if (check_failed)
            break;
        stop_view v = {s->nt, {s->sorted[0], s->sorted[1]}, {r->t[0].n, r->t[1].n}, clock_now() - t0,
                       o->confidence};
        why = stop_decide(&o->stop, &lim, &v, &by);
    }
    r->wall_s = clock_now() - t0;
    snprintf(r->stop_reason, sizeof r->stop_reason, "%s", check_failed ? "check_failed" : why);
    if (by)
        r->stopped_by = *by;
    return KS_OK;
}

/* After sampling, whatever ended it: the clock, the summaries and the
 * speedup; then everything the measurement holds is released. */
static void finish(run_state *s, const timing_target *const *tg)
{
    const timing_opts *o = s->o;
    timing_result *r = s->r;
    size_t nt = s->nt;
    if (s->cupti) {
        ks_status ignore;
        cupti_act_stop(&ignore);
    }
    ks_status cs;
    ks_clear(&cs);
    if (timing_sm_clock(cuda_ctx_ordinal(s->c), &r->clock_after_mhz, &r->throttle_after, &cs) == KS_OK)
        snprintf(r->clock_source, sizeof r->clock_source, "nvml");
    for (size_t i = 0; i < nt; i++)
        finish_series(r, i, o, tg[i]);
    r->speedup_lo = 0;
    r->speedup_hi = INFINITY;
    r->speedup_upper = INFINITY;
    if (nt == 2 && r->t[0].n && r->t[1].n && r->t[0].stats.median > 0) {
        r->speedup = r->t[1].stats.median / r->t[0].stats.median;
        if (s->sorted[0] && s->sorted[1]) {
            stats_speedup_ci_sorted(s->sorted[0], r->t[0].n, s->sorted[1], r->t[1].n, o->confidence,
                                    &r->speedup_lo, &r->speedup_hi);
            stats_speedup_upper_sorted(s->sorted[0], r->t[0].n, s->sorted[1], r->t[1].n, o->confidence,
                                       &r->speedup_upper);
        }
    }
    for (size_t i = 0; i < nt; i++)
        free(s->sorted[i]);
    /* Cleanup must not overwrite the first failure's status. */
    ks_status ignore;
    if (s->events >= 1)
        cuda_event_destroy(s->c, s->e0, &ignore);
    if (s->events >= 3)
        cuda_event_destroy(s->c, s->e1, &ignore);
    if (s->own_flush || s->clean)
        cuda_ctx_sync(s->c, &ignore);
    if (s->own_flush)
        cuda_mem_free(s->c, s->flush, &ignore);
    if (s->clean)
        cuda_mem_free(s->c, s->clean, &ignore);
    cupti_act_list_free(&s->recs);
}

/* Everything before the first run: the result's defaults, the options
 * checked, the context made current, the flush, CUPTI and the clock before.
 * s is filled whatever happens, so that finish can release it. */
static int measure_begin(run_state *s, cuda_ctx *c, const timing_target *const *tg, size_t nt,
                         const timing_opts *o, timing_result *r, ks_status *st)
{
    memset(s, 0, sizeof *s);
    s->c = c;
    s->o = o;
    s->r = r;
    s->nt = nt;
    s->stream = o ? o->stream : NULL;
    memset(r, 0, sizeof *r);
    r->clock_before_mhz = r->clock_after_mhz = -1;
    r->unexpected_sample = -1;
    r->t[0].first_failed_sample = r->t[1].first_failed_sample = -1;
    snprintf(r->clock_source, sizeof r->clock_source, "unknown");
    r->ntargets = nt;
    if (validate(tg, nt, o, st))
        return st->code;
    if (cuda_load(st))
        return st->code;
    if (!c)
        return ks_fail(st, KS_EINVAL, 0, "timing: a CUDA context is required");
    if (cuda_ctx_use(c, st))
        return st->code;
    s->begun = 1;
    for (size_t i = 0; i < nt; i++) {
        s->tg[i] = tg[i];
        snprintf(r->t[i].label, sizeof r->t[i].label, "%s",
                 tg[i]->label ? tg[i]->label : (i ? "baseline" : "candidate"));
    }
    r->warmup = o->warmup;
    int rc = o->no_flush ? KS_OK : setup_flush(s, st);
    if (rc == KS_OK && !o->no_flush)
        rc = setup_clean_read(s, st);
    if (rc == KS_OK)
        rc = setup_run(s, st);
    if (rc == KS_OK) {
        ks_status cs;
        ks_clear(&cs);
        if (timing_sm_clock(cuda_ctx_ordinal(c), &r->clock_before_mhz, &r->throttle_before, &cs) == KS_OK)
            snprintf(r->clock_source, sizeof r->clock_source, "nvml");
    }
    return rc;
}

static int measure_n(cuda_ctx *c, const timing_target *const *tg, size_t nt,
                     const timing_opts *o, timing_result *r, ks_status *st)
{
    if (!r)
        return ks_fail(st, KS_EINVAL, 0, "timing: a result is required");
    run_state s;
    int rc = measure_begin(&s, c, tg, nt, o, r, st);
    if (!s.begun)
        return rc;
    if (rc == KS_OK)
        rc = warm_up(&s, st);
    if (rc == KS_OK)
        rc = sample_all(&s, st);
    if (rc != KS_OK && !r->stop_reason[0])
        snprintf(r->stop_reason, sizeof r->stop_reason, "error");
    finish(&s, tg);
    return rc;
}

int timing_measure(cuda_ctx *c, const timing_target *target, const timing_opts *o,
                   timing_result *r, ks_status *st)
{
    const timing_target *tg[1] = {target};
    return measure_n(c, tg, 1, o, r, st);
}

int timing_measure2(cuda_ctx *c, const timing_target *candidate, const timing_target *baseline,
                    const timing_opts *o, timing_result *r, ks_status *st)
{
    const timing_target *tg[2] = {candidate, baseline};
    return measure_n(c, tg, 2, o, r, st);
}

/* ---- a measurement held open (timing_session_*) ---- */

struct timing_session {
    run_state s;
    timing_opts o;          /* the options the state points at */
    timing_result r;
    timing_target last;     /* the target of the latest run (finish reads its flops) */
};

/* The target a session holds before its first run. */
static int session_no_run(void *user, CUstream stream, int *planned, ks_status *st)
{
    (void)user;
    (void)stream;
    (void)planned;
    return ks_fail(st, KS_EINVAL, 0, "timing: a session's run needs a target");
}

int timing_session_open(cuda_ctx *c, const timing_opts *o, timing_session **out, ks_status *st)
{
    *out = NULL;
    if (!o)
        return ks_fail(st, KS_EINVAL, 0, "timing: options are required");
    timing_session *ts = calloc(1, sizeof *ts);
    if (!ts)
        return ks_fail(st, KS_ENOMEM, 0, "timing: out of memory for a session");
    ts->o = *o;
    ts->last = (timing_target){"candidate", session_no_run, NULL, 0};
    const timing_target *tg[1] = {&ts->last};
    int rc = measure_begin(&ts->s, c, tg, 1, &ts->o, &ts->r, st);
    if (rc != KS_OK) {
        if (ts->s.begun)
            finish(&ts->s, tg);
        timing_result_free(&ts->r);
        free(ts);
        return rc;
    }
    ts->r.warmup = 0; /* a session warms nothing up */
    *out = ts;
    return KS_OK;
}

int timing_session_run(timing_session *ts, const timing_target *t, double *us, ks_status *st)
{
    *us = NAN;
    if (!ts || !t || !t->run)
        return ks_fail(st, KS_EINVAL, 0, "timing: a session's run needs a session and a run function");
    run_state *s = &ts->s;
    timing_series *series = &ts->r.t[0];
    if (ts->r.unexpected)
        return ks_fail(st, KS_EINVAL, 0, "timing: the session's launches were refused; close it");
    if (series->n >= ts->o.max_samples)
        return ks_fail(st, KS_EINVAL, 0, "timing: the session holds max_samples (%zu) runs", ts->o.max_samples);
    ts->last = *t;
    s->tg[0] = &ts->last;
    /* What the caller did since the previous run is klab's own work, as a
     * timing hook's is: waited for, its records discarded. Then the run as
     * a timed sample is made. */
    double ev = 0;
    int rc;
    if ((rc = after_hooks(s, st)) != KS_OK || (rc = normal_l2(s, st)) != KS_OK ||
        (rc = one_run(s, 0, (long)series->n, us, &ev, st)) != KS_OK)
        return rc;
    series->samples_us[series->n] = *us;
    if (series->event_us)
        series->event_us[series->n] = ev;
    stats_insert_sorted(s->sorted[0], series->n, *us);
    series->n++;
    return KS_OK;
}

void timing_session_close(timing_session *ts, timing_result *r)
{
    if (!ts)
        return;
    const timing_target *tg[1] = {&ts->last};
    finish(&ts->s, tg);
    if (r)
        *r = ts->r;
    else
        timing_result_free(&ts->r);
    free(ts);
}
