/*
 * timing.h: timing GPU work honestly (docs/timing.md).
 *
 * timing_measure runs a caller-supplied "run" callback, which enqueues one
 * run of the timed thing (a candidate's planned launches, a cuBLASLt call)
 * on klab's stream, many times, and reports per-sample durations and their
 * statistics. Per sample:
 *
 *   1. the optional before-hook (rotate input sets; choose to check this
 *      sample's outputs);
 *   2. an L2 flush: cuMemsetD32Async over a buffer of at least 2 x L2 on
 *      the same stream, with a value that changes every sample; it is
 *      outside the measured span;
 *   3. the run, bracketed by an event pair on the stream;
 *   4. cuCtxSynchronize (every stream of the context);
 *   5. with CUPTI: the activity records of the sample. The sample is the
 *      first kernel's start to the last kernel's end on klab's stream, and
 *      the records must hold exactly the planned kernel launches, all on
 *      klab's stream, and nothing else (no kernel on another stream or
 *      context, no memcpy, no memset other than the flush, no
 *      device-launched kernel); otherwise the measurement stops with
 *      KS_EREJECT and result->unexpected = 1, naming what was seen.
 *      With events (the fallback, or forced): the event pair.
 *   6. the optional check-hook when the before-hook asked for it.
 *
 * Warm-up runs go through the same steps (and the same launch checks) and
 * are discarded. After every round sampling stops when a chosen stopping
 * rule says so (host/measure/stop.h: "converged", the median's relative CI
 * half-width below its target; "hopeless", the speedup decided below a
 * threshold) or a limit is reached (max_samples, the time budget). Two
 * targets (candidate and baseline) are interleaved sample by sample
 * (ABAB...) so that clock drift affects both alike.
 *
 * Method: TIMING_AUTO uses CUPTI when it can be loaded and enabled, else
 * events, and says why in result->fallback. TIMING_CUPTI fails when CUPTI is
 * unavailable. TIMING_EVENTS never touches CUPTI.
 *
 * SM clock before and after: NVML (libnvidia-ml.so.1, opened at run time)
 * when present, else unknown (-1).
 */
#ifndef KLAB_HOST_TIMING_H
#define KLAB_HOST_TIMING_H

#include <stddef.h>
#include <stdint.h>

#include "driver/cuda.h"
#include "measure/cupti_act.h"
#include "measure/stats.h"
#include "measure/stop.h"
#include "base/status.h"

typedef enum {
    TIMING_AUTO = 0,
    TIMING_CUPTI = 1,
    TIMING_EVENTS = 2
} timing_method;

/* "auto", "cupti", "events"; and back (-1 when unknown). */
const char *timing_method_name(int m);
int timing_method_parse(const char *s);

/* Enqueues one run on `stream` (no synchronisation, nothing on other
 * streams) and sets *planned to the number of kernel launches it made.
 * *planned = -1 means "not known in advance" (a library call): then any
 * number >= 1 of kernels on klab's stream is accepted, and memsets/memcpys
 * on klab's stream too; work on any other stream is still rejected. */
typedef int (*timing_run_fn)(void *user, CUstream stream, int *planned, ks_status *st);

/* Before each timed sample of target `target` (0 = first), outside the
 * measured span: may rotate inputs; sets *check = 1 to have this sample's
 * outputs checked after it completes. */
typedef int (*timing_before_fn)(void *hook_user, int target, size_t sample, int *check,
                                ks_status *st);

/* After a sample whose before-hook set *check: checks its outputs (the GPU
 * is idle); *ok = 1 when they are right. */
typedef int (*timing_check_fn)(void *hook_user, int target, size_t sample, int *ok,
                               ks_status *st);

typedef struct timing_target {
    const char *label;      /* "candidate", "baseline" (for messages) */
    timing_run_fn run;
    void *user;
    double flops;           /* floating-point operations per run; 0 if unknown */
} timing_target;

typedef struct timing_opts {
    CUstream stream;        /* klab's stream (NULL: the legacy stream) */
    CUdeviceptr flush_buf;  /* 0: timing allocates one of flush_bytes */
    size_t flush_bytes;     /* 0: 2 x the device's L2; must be >= 2 x L2 */
    int no_flush;           /* 1: skip the L2 flush (warm-cache timing; recorded) */
    int keep_persisting_l2; /* 1: leave persisting L2 lines alone (to measure what resetting them does) */
    struct devkern *l2_read; /* the judge's kernels: after the flush's memset, a clean buffer of
                               flush_bytes is read through L2, which evicts the lines a kernel
                               kept with L2::evict_last (a memset does not); NULL: memset only */
    int warmup;             /* runs per target before sampling (default 3) */
    double warmup_s;        /* a target's warm-up ends once its runs took this long,
                               after one run at least (default 0.05; <= 0: all runs) */
    size_t max_samples;     /* default 1000 (>= 1) */
    double budget_s;        /* sampling time cap, seconds (default 10; <= 0: none) */
    double confidence;      /* default 0.95 */
    stop_list stop;         /* the stopping rules (default: "converged" with its
                               defaults, target_ci 0.005 and min_samples 10) */
    int method;             /* timing_method (default AUTO) */
    timing_before_fn before; /* optional */
    timing_check_fn check;  /* optional; called when before set *check */
    void *hook_user;
    double peak_tflops;     /* for fraction of peak; 0 if unknown */
} timing_opts;

/* Fills o with the defaults above. */
void timing_opts_default(timing_opts *o);

#define TIMING_SEEN_MAX 32

/* One kind of activity record seen, aggregated. */
typedef struct timing_seen {
    int kind;               /* cupti_act_kind */
    char name[CUPTI_ACT_NAME_MAX]; /* kernel name; "" for memcpy/memset */
    uint32_t stream_id;
    int klab_stream;        /* 1 when on klab's stream */
    unsigned long count;
} timing_seen;

typedef struct timing_series {
    char label[64];
    double *samples_us;     /* n samples in the order taken (malloc'd) */
    double *event_us;       /* with CUPTI: the event pair of each sample too; else NULL */
    size_t n;
    stats_summary stats;    /* of samples_us */
    stats_summary event_stats; /* of event_us (n = 0 when none) */
    int planned;            /* launches per run, as the run last said (-1: library call) */
    size_t checks;          /* samples whose outputs were checked */
    size_t check_failures;
    long first_failed_sample; /* -1 when none */
    double tflops;          /* flops / median; 0 when flops unknown */
    double frac_peak;       /* tflops / peak_tflops; 0 when unknown */
} timing_series;

typedef struct timing_result {
    int method;             /* TIMING_CUPTI or TIMING_EVENTS, the one used */
    char fallback[KS_MSG_MAX]; /* why AUTO fell back to events; "" otherwise */
    size_t ntargets;
    timing_series t[2];     /* [0] candidate, [1] baseline when two */
    double speedup;         /* t[1] median / t[0] median; 0 with one target */
    double speedup_lo, speedup_hi; /* its interval (stats_speedup_ci_sorted at the
                               options' confidence); 0, +inf when undefined */
    double speedup_upper;   /* its one-sided upper bound (stats_speedup_upper_sorted),
                               what the hopeless rule reads; +inf when undefined */
    char stop_reason[32];   /* converged, max_samples, budget, hopeless,
                               check_failed, unexpected_launches */
    stop_choice stopped_by; /* the rule that ended sampling, with its parameters
                               (stop_reason is its name); rule NULL when a
                               limit, a failed check or a failure did */
    double wall_s;          /* sampling time (after warm-up) */
    int warmup;             /* warm-up rounds run (fewer than asked for a slow target) */
    size_t flush_bytes;     /* 0 when not flushed */
    long long l2_persisting_limit; /* the context's persisting-L2 limit timing set (0); -1 not set */
    int l2_reset;           /* 1 when persisting L2 lines were reset before every run */
    size_t l2_read_bytes;   /* bytes read through L2 after every flush; 0 when not read */
    int launch_checked;     /* 1 when every run's launches were checked (CUPTI) */
    uint32_t stream_id;     /* CUPTI's id of klab's stream (CUPTI only) */
    uint64_t dropped;       /* CUPTI records lost (then the run fails) */

    /* Every record seen during warm-up and sampling except the L2 flushes. */
    timing_seen seen[TIMING_SEEN_MAX];
    size_t nseen;
    unsigned long seen_overflow; /* records of kinds beyond TIMING_SEEN_MAX */

    /* Set when the launch check failed: the first offending run. */
    int unexpected;
    int unexpected_target;
    long unexpected_sample; /* -1 - k for warm-up run k */
    char unexpected_why[KS_MSG_MAX];

    /* SM clock in MHz and NVML clock-event (throttle) reasons; -1 / 0 when
     * unknown. clock_source is "nvml" or "unknown". */
    int clock_before_mhz, clock_after_mhz;
    unsigned long long throttle_before, throttle_after;
    char clock_source[16];
} timing_result;

/* Frees the sample arrays of r (idempotent; r may be partly filled). */
void timing_result_free(timing_result *r);

/* Times one target. KS_OK with r filled; KS_EREJECT with r filled and
 * r->unexpected = 1 when the launch check failed; KS_ENODRIVER without a
 * driver; KS_EINVAL for bad options; KS_EUNSUPPORTED when TIMING_CUPTI was
 * asked for and CUPTI refuses; whatever the run or a hook returned when it
 * failed. A failed output check is not an error: sampling stops, r says so
 * (stop_reason "check_failed", t[i].check_failures). Call
 * timing_result_free(r) afterwards in every case. */
int timing_measure(cuda_ctx *c, const timing_target *target, const timing_opts *o,
                   timing_result *r, ks_status *st);

/* Times a candidate and a baseline, interleaved sample by sample, under the
 * same options; r->t[0] is the candidate, r->t[1] the baseline, and
 * r->speedup = baseline median / candidate median. Same codes as above. */
int timing_measure2(cuda_ctx *c, const timing_target *candidate, const timing_target *baseline,
                    const timing_opts *o, timing_result *r, ks_status *st);

/* A measurement held open, for runs its caller makes one at a time between
 * work of its own (the correctness stage's runs, docs/timing.md "Decided
 * from the correctness runs"). Each run is a timed sample of
 * timing_measure: the caller's work since the previous run waited for and
 * its records discarded, persisting L2 lines reset, the L2 flushed, the
 * run, cuCtxSynchronize, and with CUPTI its records checked (exactly its
 * planned launches, on klab's stream) and read. No warm-up, no stopping
 * rule, no hooks: the caller decides what to run and when to stop.
 *
 * timing_session_open: the options' flush, method and max_samples (the
 * most runs) are used; KS_OK with *out set, else nothing is held.
 * timing_session_run: *us gets the run's duration; the codes of
 * timing_measure (KS_EREJECT with the result's unexpected set: the session
 * takes no more runs). timing_session_close: fills r (may be NULL) as
 * timing_measure does with one target, the runs as its samples (free it
 * with timing_result_free), and releases everything. */
typedef struct timing_session timing_session;
int timing_session_open(cuda_ctx *c, const timing_opts *o, timing_session **out, ks_status *st);
int timing_session_run(timing_session *s, const timing_target *t, double *us, ks_status *st);
void timing_session_close(timing_session *s, timing_result *r);

/* Checks one sample's CUPTI records (exposed for tests): planned launches
 * (-1 for a library call), klab's stream and context ids, the flush size (0:
 * none) and the flush's read kernel (NULL: none; the earliest kernel of that
 * name on klab's stream is the flush's, not the run's). Writes the sample's duration in microseconds to *us. Returns
 * KS_OK; KS_EREJECT with `why` (n bytes) describing the offence; KS_EPROTO
 * when the records cannot prove anything (no kernel, incomplete
 * timestamps, dropped records). */
int timing_check_records(const cupti_act_list *recs, int planned, uint32_t stream_id,
                         uint32_t context_id, size_t flush_bytes, const char *flush_kernel,
                         double *us, char *why, size_t n, ks_status *st);

/* The SM clock of device `ordinal` in MHz through NVML, and the clock-event
 * reasons bitmask (may be NULL). KS_ENOLIB without NVML, KS_EUNSUPPORTED
 * when NVML cannot tell. */
int timing_sm_clock(int ordinal, int *mhz, unsigned long long *reasons, ks_status *st);

/* The display driver's version as NVML gives it ("580.95.05"), into buf (n
 * bytes). KS_ENOLIB without NVML, KS_EUNSUPPORTED when it cannot tell. */
int timing_driver_version(char *buf, size_t n, ks_status *st);

#endif
