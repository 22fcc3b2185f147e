/*
 * profile.h: hardware counters for one region of GPU work, through the CUPTI
 * Range Profiler (cupti_range_profiler.h + the profiler host API), loaded at
 * run time (host/driver/dynlib.h).
 *
 * What it is for: proving which instructions a candidate executed (wgmma,
 * TMA, tcgen05 counts; tensor FLOPs by instruction path) and a compact
 * performance profile, in a run that is never timed.
 *
 * The metric list is data: one table, per chip (profile_metrics_for). A
 * session is made once per worker process for one context with the chip's
 * whole list (names the chip does not know are skipped, with the reason);
 * the host side (config image) is built once and reused for every
 * measurement. Each measurement is the call sequence verified on an H200:
 *
 *   enable the range profiler on the context, set the config (user range,
 *   user replay, one range), then per pass: prepare(pass) outside the
 *   range, start, push range, run(pass), synchronise, pop range, stop,
 *   until CUPTI says every pass was submitted; decode, evaluate each
 *   metric to a double, disable.
 *
 * With user replay the region runs once per pass (the number depends on the
 * metric list), so it must be idempotent: prepare restores inputs and
 * poisons outputs for each pass, outside the profiled range, so that its own
 * kernels (memsets, copies) are not counted.
 *
 * Never use profiled runs for timing (replay and counter collection slow
 * them). Never run a measurement inside a CUPTI activity session (the
 * function refuses).
 *
 * Failures: KS_ENOLIB (no libcupti), KS_ENODRIVER (no driver or device),
 * KS_EUNSUPPORTED with st->sub = the CUptiResult and the CUPTI error name in
 * the message (profiling not permitted, another profiler attached,
 * confidential computing, vGPU, ...), KS_ECUDA from the region's own
 * synchronisation, KS_EINVAL for misuse. The host-side functions
 * (profile_chips, profile_check_metrics) need no GPU.
 */
#ifndef KLAB_HOST_PROFILE_H
#define KLAB_HOST_PROFILE_H

#include <stddef.h>

#include "driver/cuda.h"
#include "base/status.h"

/* ---- the metric table ---- */

/* One metric of a chip's list. role groups metrics for the analysis
 * (klab.eval.profile): values of metrics that share a role are added up. */
typedef struct profile_metric {
    const char *chip;       /* "GH100", "GB100" */
    const char *name;       /* full name with roll-up: "sm__inst_executed_pipe_tensor_op_gmma.sum" */
    const char *role;       /* "inst.wgmma", "flops.hgmma", "pct.sm", ... (see profile.c) */
    int verified;           /* 1: checked on hardware (H200, Nov 2026); 0: from CUPTI's
                               offline chip tables only */
    const char *src;        /* flops.* rows: the operands' type ("bf16", "fp8", ...); else NULL */
} profile_metric;

/* The table row range for chip (exact name; GB102/GB110 etc. use GB100's
 * rows, see profile_table_chip). *n = 0 and NULL when klab has no list. */
const profile_metric *profile_metrics_for(const char *chip, size_t *n);

/* The chip whose table applies to chip ("GB110" -> "GB100"), or NULL. */
const char *profile_table_chip(const char *chip);

/* Every row of the table, for listing (*n rows). */
const profile_metric *profile_metric_table(size_t *n);

/* ---- host side (no GPU needed) ---- */

/* Loads libcupti (and preloads libnvperf_host/target, which CUPTI opens
 * itself) and resolves the profiler entry points, once. */
int profile_load(ks_status *st);

/* The chips CUPTI's host API supports (static strings owned by CUPTI). */
int profile_chips(const char *const **names, size_t *n, ks_status *st);

/* For each of names[0..n), whether chip's metric tables know it:
 * known[i] = 1 or 0. Needs no GPU (uses the host API with no counter
 * availability image). */
int profile_check_metrics(const char *chip, const char *const *names, size_t n, int *known,
                          ks_status *st);

/* How many passes CUPTI needs to collect names[0..n) on chip, from the
 * config image built offline (no GPU, no counter availability image):
 * *passes = the count, 0 when CUPTI does not say. */
int profile_count_passes(const char *chip, const char *const *names, size_t n, int *passes, ks_status *st);

/* ---- sessions (GPU) ---- */

/* The driver, libcupti and cuptiProfilerInitialize (once per process), in
 * that order. Shared with host/measure/sass.c. */
int profile_ready(ks_status *st);

typedef struct profile_session profile_session;

/* The chip name of device ordinal (cuptiDeviceGetChipName): "GH100". */
int profile_chip_name(int ordinal, char *buf, size_t n, ks_status *st);

/* Whether profiling can work on device ordinal (cuptiProfilerDeviceSupported
 * for the range profiler): KS_OK, or KS_EUNSUPPORTED naming the reason
 * (vGPU, confidential computing, CMP, WSL, architecture). */
int profile_device_supported(int ordinal, ks_status *st);

/* Creates a session for context c with names[0..n) (NULL, 0: the chip's
 * table). Unknown names are skipped and listed (profile_session_skipped);
 * when none is left, KS_EINVAL. Builds the config image once. */
int profile_session_create(cuda_ctx *c, const char *const *names, size_t n,
                           profile_session **out, ks_status *st);

/* Releases everything; NULL is a no-op. */
void profile_session_destroy(profile_session *s);

/* One pass's hooks. Each returns KS_OK or a ks_code with st filled; a
 * failure stops the measurement and is returned as is. */
typedef int (*profile_pass_fn)(void *ud, int pass, ks_status *st);

/* Measures one region: prepare (may be NULL) before each pass, outside
 * the range; run inside it. On success the values are read with
 * profile_session_value. Returns the number of passes in *passes (may be
 * NULL). */
int profile_session_measure(profile_session *s, profile_pass_fn prepare, profile_pass_fn run,
                            void *ud, int *passes, ks_status *st);

/* With profile_set_persistent(1) the range profiler stays enabled on its
 * context between measurements of one session: the first start after an
 * enable costs 140 to 190 ms on an H200, paid then once per worker instead
 * of once per candidate. A session with a patched metric
 * (profile_metric_patched) is disabled after each measurement all the same.
 * profile_release disables a kept one now. */
void profile_release(void);
void profile_set_persistent(int on);
int profile_persistent(void);

/* 1 when the metric is counted by SASS patching (the "sass" metrics), not
 * by a hardware counter; a session holding one is never kept enabled. */
int profile_metric_patched(const char *name);

/* 1 when the session's last measurement found the profiler already enabled. */
int profile_session_reused(const profile_session *s);

/* The chip of the session ("GH100"). */
const char *profile_session_chip(const profile_session *s);

/* The metrics measured (after skipping): count, and name/role of each. */
size_t profile_session_count(const profile_session *s);
const char *profile_session_name(const profile_session *s, size_t i);

/* The value of metric i from the last successful measurement; NaN before
 * one. */
double profile_session_value(const profile_session *s, size_t i);

/* Skipped metrics: count, and name and reason of each. */
size_t profile_session_skipped(const profile_session *s);
const char *profile_session_skipped_name(const profile_session *s, size_t i);
const char *profile_session_skipped_reason(const profile_session *s, size_t i);

/* Passes CUPTI plans for the config (0 when unknown). */
int profile_session_passes(const profile_session *s);

/* Where the last measurement's time went, in seconds, summed over its
 * passes: enabling the range profiler, its counter data and config, the
 * caller's prepare callbacks, starting each pass, the runs (launches and
 * the wait for them), ending each pass, decoding and evaluating the
 * counters, disabling. */
enum {
    PROFILE_PHASE_ENABLE,
    PROFILE_PHASE_CONFIG,
    PROFILE_PHASE_PREPARE,
    PROFILE_PHASE_START,
    PROFILE_PHASE_RUN,
    PROFILE_PHASE_STOP,
    PROFILE_PHASE_EVALUATE,
    PROFILE_PHASE_DISABLE,
    PROFILE_PHASES
};
double profile_session_phase(const profile_session *s, int phase);
const char *profile_phase_name(int phase);

/* ---- occupancy (driver) ---- */

/* Blocks of f that fit on one SM with `threads` threads per block and
 * `dyn_smem` bytes of dynamic shared memory
 * (cuOccupancyMaxActiveBlocksPerMultiprocessor). */
int profile_occupancy(cuda_ctx *c, CUfunction f, int threads, size_t dyn_smem, int *blocks,
                      ks_status *st);

#endif
