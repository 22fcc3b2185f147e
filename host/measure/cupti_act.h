/*
 * cupti_act.h: CUPTI Activity API records (kernels, memcpys, memsets) for a
 * region of GPU work, through a libcupti opened at run time (host/driver/dynlib.h).
 *
 * Used by host/measure/timing.c to time a region by GPU timestamps (first kernel
 * start to last kernel end) and to prove that exactly the planned launches
 * ran, on klab's stream, and nothing else. CONCURRENT_KERNEL is used (it does
 * not serialise kernels); MEMCPY and MEMSET are enabled too, to catch side
 * work.
 *
 * CUPTI's activity buffers and callbacks are process-wide, so this module is
 * a process-wide singleton: one tracing session at a time (cupti_act_start ..
 * cupti_act_stop), guarded by a mutex. Any other user of
 * cuptiActivityRegisterCallbacks in the process would replace our callbacks;
 * klab's other CUPTI users (range profiler, SASS metrics) must not run inside
 * a tracing session.
 *
 * Degrades cleanly: when libcupti cannot be loaded, KS_ENOLIB; when CUPTI
 * refuses (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, another profiler attached,
 * no driver, an old library, ...), KS_EUNSUPPORTED with st->sub = the
 * CUptiResult and the CUPTI error name in the message. Callers then fall
 * back to CUDA events.
 */
#ifndef KLAB_HOST_CUPTI_ACT_H
#define KLAB_HOST_CUPTI_ACT_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "base/status.h"
#include "measure/cupti.h"

typedef enum {
    CUPTI_ACT_KERNEL = 1,
    CUPTI_ACT_MEMCPY = 2,
    CUPTI_ACT_MEMSET = 3
} cupti_act_kind;

#define CUPTI_ACT_NAME_MAX 256

typedef struct cupti_act_rec {
    int kind;                 /* cupti_act_kind */
    uint64_t start, end;      /* GPU timestamps, ns; 0 when CUPTI did not fill them */
    uint32_t device_id;
    uint32_t context_id;
    uint32_t stream_id;       /* CUPTI's stream id (cupti_act_stream_id) */
    uint32_t correlation_id;  /* ties the record to its driver API call */
    int grid[3], block[3];    /* kernels */
    unsigned cluster[3];      /* kernels; 0 when not a cluster launch */
    int dynamic_smem;         /* kernels */
    int device_launched;      /* 1 when launched from the device (CDP) */
    uint64_t bytes;           /* memcpy/memset */
    uint32_t value;           /* memset: the value written */
    char name[CUPTI_ACT_NAME_MAX]; /* kernel name (mangled, maybe truncated); "" otherwise */
} cupti_act_rec;

/* A growable list of records. Zero-initialise; release with cupti_act_list_free. */
typedef struct cupti_act_list {
    cupti_act_rec *v;
    size_t n, cap;
    uint64_t dropped;         /* records CUPTI or this module could not keep */
} cupti_act_list;

/* Empties l (keeps its memory). */
void cupti_act_list_clear(cupti_act_list *l);
void cupti_act_list_free(cupti_act_list *l);

/* "kernel", "memcpy", "memset". */
const char *cupti_act_kind_name(int kind);

/* "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" for 35 etc.; "CUPTI_ERROR_<n>"
 * when unknown (a static buffer then: not thread-safe). Works without the
 * library. */


/* Loads libcupti and resolves every entry point used here, once. KS_ENOLIB
 * when the library is missing, KS_ENOTFOUND when it lacks a symbol,
 * KS_EUNSUPPORTED when its major version differs from the headers'. */
int cupti_act_load(ks_status *st);

/* The loaded CUPTI's API version (cuptiGetVersion), 0 when not loaded. */
unsigned cupti_act_version(void);

/* Starts a tracing session: registers the buffer callbacks (first time),
 * enables CONCURRENT_KERNEL, MEMCPY and MEMSET activity and discards
 * records left from before. KS_EINVAL when a session is already active;
 * KS_EUNSUPPORTED (sub = CUptiResult) when CUPTI refuses; nothing stays
 * enabled on failure. */
int cupti_act_start(ks_status *st);

/* 1 while a session is active. */
int cupti_act_active(void);

/* Flushes CUPTI's buffers (forced) and appends every record delivered since
 * the last collect to out, in delivery order. Synchronise the GPU work of
 * interest first (cuCtxSynchronize), or its records may be late or
 * incomplete. KS_EINVAL without an active session; KS_ENOMEM when out
 * cannot grow (records are then counted in out->dropped). */
int cupti_act_collect(cupti_act_list *out, ks_status *st);

/* Ends the session: disables the activity kinds, flushes and discards what
 * remains. Idempotent (KS_OK when no session is active). */
int cupti_act_stop(ks_status *st);

/* CUPTI's id for stream s of context ctx (what cupti_act_rec.stream_id
 * holds for work on s), and its id for ctx. Need a loaded library. */
int cupti_act_stream_id(CUcontext ctx, CUstream s, uint32_t *id, ks_status *st);
int cupti_act_context_id(CUcontext ctx, uint32_t *id, ks_status *st);

/* Test hook: feeds a raw CUPTI activity buffer (records as CUPTI lays them
 * out, valid bytes `valid`) through the same decoding as the completion
 * callback, appending to out. Lets tests check decoding without a GPU. Needs
 * a loaded library (for cuptiActivityGetNextRecord). */
int cupti_act_decode(uint8_t *buf, size_t valid, cupti_act_list *out, ks_status *st);

#endif
