/*
 * cupti_act.c: CUPTI Activity API through dlopen. See cupti_act.h.
 *
 * Records arrive in CUPTI's buffers; the completion callback (which CUPTI
 * may call on its own thread, or inside cuptiActivityFlushAll on ours)
 * decodes them into a pending list under a mutex; cupti_act_collect moves
 * the pending list to the caller.
 */
/* The CUPTI library is LP64 and its record layouts have padding only under
 * this macro (the headers do not define it themselves). The fields read
 * below all come before any such padding, but the sizes must match too. */
#if defined(__LP64__) && !defined(CUPTILP64)
#define CUPTILP64 1
#endif

#include "measure/cupti_act.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "driver/dynlib.h"

/* ---- entry points ---- */

typedef struct cupti_api {
    CUptiResult (*GetVersion)(uint32_t *);
    CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                             CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*ActivityEnable)(CUpti_ActivityKind);
    CUptiResult (*ActivityDisable)(CUpti_ActivityKind);
    CUptiResult (*ActivityFlushAll)(uint32_t);
    CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
    CUptiResult (*GetStreamIdEx)(CUcontext, CUstream, uint8_t, uint32_t *);
    CUptiResult (*GetContextId)(CUcontext, uint32_t *);
} cupti_api;

static cupti_api api;
static unsigned api_version;
static int api_loaded;            /* 1 once every symbol resolved */
static int callbacks_registered;
static int session_active;

/* Guards api/api_loaded/callbacks_registered/session_active (g_state) and
 * the pending list (g_pending). Never held while calling into CUPTI
 * functions that may call back (FlushAll). */
static pthread_mutex_t g_state = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_pending = PTHREAD_MUTEX_INITIALIZER;
static cupti_act_list pending;

#define BUF_BYTES (1u << 20)

/* ---- names ---- */


const char *cupti_act_kind_name(int kind)
{
    switch (kind) {
    case CUPTI_ACT_KERNEL: return "kernel";
    case CUPTI_ACT_MEMCPY: return "memcpy";
    case CUPTI_ACT_MEMSET: return "memset";
    }
    return "unknown";
}


/* ---- lists ---- */

void cupti_act_list_clear(cupti_act_list *l)
{
    l->n = 0;
    l->dropped = 0;
}

void cupti_act_list_free(cupti_act_list *l)
{
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
    l->dropped = 0;
}

static int list_reserve(cupti_act_list *l, size_t need)
{
    if (need <= l->cap)
        return 0;
    size_t cap = l->cap ? l->cap : 64;
    while (cap < need)
        cap *= 2;
    cupti_act_rec *v = realloc(l->v, cap * sizeof *v);
    if (!v)
        return -1;
    l->v = v;
    l->cap = cap;
    return 0;
}

/* ---- decoding ---- */

static void copy_name(char *dst, const char *src)
{
    if (!src) {
        dst[0] = 0;
        return;
    }
    size_t n = strlen(src);
    if (n >= CUPTI_ACT_NAME_MAX)
        n = CUPTI_ACT_NAME_MAX - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* Converts one CUPTI record; 0 when it is a kind we keep, -1 otherwise. */
static int decode_one(const CUpti_Activity *a, cupti_act_rec *r)
{
    memset(r, 0, sizeof *r);
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
        r->kind = CUPTI_ACT_KERNEL;
        r->start = k->start;
        r->end = k->end;
        r->device_id = k->deviceId;
        r->context_id = k->contextId;
        r->stream_id = k->streamId;
        r->correlation_id = k->correlationId;
        r->grid[0] = k->gridX, r->grid[1] = k->gridY, r->grid[2] = k->gridZ;
        r->block[0] = k->blockX, r->block[1] = k->blockY, r->block[2] = k->blockZ;
        r->cluster[0] = k->clusterX, r->cluster[1] = k->clusterY, r->cluster[2] = k->clusterZ;
        r->dynamic_smem = k->dynamicSharedMemory;
        r->device_launched = k->isDeviceLaunched;
        copy_name(r->name, k->name);
        return 0;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)a;
        r->kind = CUPTI_ACT_MEMCPY;
        r->start = m->start;
        r->end = m->end;
        r->device_id = m->deviceId;
        r->context_id = m->contextId;
        r->stream_id = m->streamId;
        r->correlation_id = m->correlationId;
        r->bytes = m->bytes;
        return 0;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)a;
        r->kind = CUPTI_ACT_MEMSET;
        r->start = m->start;
        r->end = m->end;
        r->device_id = m->deviceId;
        r->context_id = m->contextId;
        r->stream_id = m->streamId;
        r->correlation_id = m->correlationId;
        r->bytes = m->bytes;
        r->value = m->value;
        return 0;
    }
    default:
        return -1;
    }
}

/* Walks a completed buffer into out. Caller holds whatever protects out. */
static void decode_buffer(uint8_t *buf, size_t valid, cupti_act_list *out)
{
    CUpti_Activity *a = NULL;
    while (api.ActivityGetNextRecord(buf, valid, &a) == CUPTI_SUCCESS) {
        cupti_act_rec r;
        if (decode_one(a, &r) != 0)
            continue;
        if (list_reserve(out, out->n + 1) != 0) {
            out->dropped++;
            continue;
        }
        out->v[out->n++] = r;
    }
}

/* ---- callbacks (CUPTI calls these, possibly on its own thread) ---- */

static void CUPTIAPI on_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    /* CUPTI needs 8-byte alignment; malloc gives at least that. A NULL
     * buffer makes CUPTI drop records, which we then see as dropped. */
    *buffer = malloc(BUF_BYTES);
    *size = *buffer ? BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                         size_t size, size_t valid)
{
    (void)size;
    pthread_mutex_lock(&g_pending);
    if (buffer && valid > 0)
        decode_buffer(buffer, valid, &pending);
    size_t dropped = 0;
    if (api.ActivityGetNumDroppedRecords &&
        api.ActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
        pending.dropped += dropped;
    pthread_mutex_unlock(&g_pending);
    free(buffer);
}

/* ---- loading ---- */

int cupti_act_load(ks_status *st)
{
    pthread_mutex_lock(&g_state);
    if (api_loaded) {
        pthread_mutex_unlock(&g_state);
        return KS_OK;
    }
    cupti_api tmp;
    memset(&tmp, 0, sizeof tmp);
    const dynlib_symbol syms[] = {
        {"cuptiGetVersion", (void **)&tmp.GetVersion, 0},
        {"cuptiActivityRegisterCallbacks", (void **)&tmp.ActivityRegisterCallbacks, 0},
        {"cuptiActivityEnable", (void **)&tmp.ActivityEnable, 0},
        {"cuptiActivityDisable", (void **)&tmp.ActivityDisable, 0},
        {"cuptiActivityFlushAll", (void **)&tmp.ActivityFlushAll, 0},
        {"cuptiActivityGetNextRecord", (void **)&tmp.ActivityGetNextRecord, 0},
        {"cuptiActivityGetNumDroppedRecords", (void **)&tmp.ActivityGetNumDroppedRecords, 0},
        {"cuptiGetStreamIdEx", (void **)&tmp.GetStreamIdEx, 0},
        {"cuptiGetContextId", (void **)&tmp.GetContextId, 0},
    };
    const dynlib *lib = cupti_lib(0, st);
    if (dynlib_bind(lib, syms, DYNLIB_COUNT(syms), st))
        goto fail;

    uint32_t v = 0;
    CUptiResult r = tmp.GetVersion(&v);
    if (r != CUPTI_SUCCESS) {
        cupti_fail(st, r, "cuptiGetVersion");
        goto fail;
    }
    /* The record layouts (CUpti_ActivityKernel10, ...) are those of the
     * headers klab was built with; another major version may lay them out
     * differently. CUPTI_API_VERSION is e.g. 130001 for CUDA 13.0. */
    if (v / 10000 != CUPTI_API_VERSION / 10000) {
        ks_fail(st, KS_EUNSUPPORTED, (int)v,
                "libcupti (%s) has API version %u; klab was built for %d (another major version "
                "may lay out activity records differently)",
                lib->path, v, CUPTI_API_VERSION);
        goto fail;
    }
    api = tmp;
    api_version = v;
    api_loaded = 1;
    pthread_mutex_unlock(&g_state);
    return KS_OK;
fail:
    pthread_mutex_unlock(&g_state);
    return st->code;
}

unsigned cupti_act_version(void)
{
    pthread_mutex_lock(&g_state);
    unsigned v = api_loaded ? api_version : 0;
    pthread_mutex_unlock(&g_state);
    return v;
}

/* ---- sessions ---- */

static const CUpti_ActivityKind session_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};
static const char *const session_kind_names[] = {
    "CONCURRENT_KERNEL",
    "MEMCPY",
    "MEMSET",
};
#define NKINDS (sizeof session_kinds / sizeof session_kinds[0])

static void discard_pending(void)
{
    pthread_mutex_lock(&g_pending);
    cupti_act_list_clear(&pending);
    pthread_mutex_unlock(&g_pending);
}

int cupti_act_start(ks_status *st)
{
    if (cupti_act_load(st))
        return st->code;
    pthread_mutex_lock(&g_state);
    if (session_active) {
        pthread_mutex_unlock(&g_state);
        return ks_fail(st, KS_EINVAL, 0, "a CUPTI activity session is already active");
    }
    CUptiResult r;
    if (!callbacks_registered) {
        r = api.ActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed);
        if (r != CUPTI_SUCCESS) {
            pthread_mutex_unlock(&g_state);
            return cupti_fail(st, r, "cuptiActivityRegisterCallbacks");
        }
        callbacks_registered = 1;
    }
    for (size_t i = 0; i < NKINDS; i++) {
        r = api.ActivityEnable(session_kinds[i]);
        if (r != CUPTI_SUCCESS) {
            for (size_t j = 0; j < i; j++)
                api.ActivityDisable(session_kinds[j]);
            pthread_mutex_unlock(&g_state);
            char what[64];
            snprintf(what, sizeof what, "cuptiActivityEnable(%s)", session_kind_names[i]);
            return cupti_fail(st, r, what);
        }
    }
    session_active = 1;
    pthread_mutex_unlock(&g_state);
    /* Anything CUPTI still held belongs to no session of ours. */
    api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    discard_pending();
    return KS_OK;
}

int cupti_act_active(void)
{
    pthread_mutex_lock(&g_state);
    int a = session_active;
    pthread_mutex_unlock(&g_state);
    return a;
}

int cupti_act_collect(cupti_act_list *out, ks_status *st)
{
    if (!cupti_act_active())
        return ks_fail(st, KS_EINVAL, 0, "cupti_act_collect: no active CUPTI activity session");
    /* Not under g_pending: a forced flush calls on_buffer_completed. */
    CUptiResult r = api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiActivityFlushAll");
    int rc = KS_OK;
    pthread_mutex_lock(&g_pending);
    if (pending.n > 0) {
        if (list_reserve(out, out->n + pending.n) != 0) {
            out->dropped += pending.n;
            rc = ks_fail(st, KS_ENOMEM, 0, "cupti_act_collect: out of memory for %zu records",
                         pending.n);
        } else {
            memcpy(out->v + out->n, pending.v, pending.n * sizeof *pending.v);
            out->n += pending.n;
        }
    }
    out->dropped += pending.dropped;
    cupti_act_list_clear(&pending);
    pthread_mutex_unlock(&g_pending);
    return rc;
}

int cupti_act_stop(ks_status *st)
{
    pthread_mutex_lock(&g_state);
    if (!session_active) {
        pthread_mutex_unlock(&g_state);
        return KS_OK;
    }
    CUptiResult first = CUPTI_SUCCESS;
    for (size_t i = 0; i < NKINDS; i++) {
        CUptiResult r = api.ActivityDisable(session_kinds[i]);
        if (r != CUPTI_SUCCESS && first == CUPTI_SUCCESS)
            first = r;
    }
    session_active = 0;
    pthread_mutex_unlock(&g_state);
    api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    discard_pending();
    if (first != CUPTI_SUCCESS)
        return cupti_fail(st, first, "cuptiActivityDisable");
    return KS_OK;
}

int cupti_act_stream_id(CUcontext ctx, CUstream s, uint32_t *id, ks_status *st)
{
    if (cupti_act_load(st))
        return st->code;
    /* perThreadStream = 0: klab uses explicit streams, never the
     * per-thread default stream. */
    CUptiResult r = api.GetStreamIdEx(ctx, s, 0, id);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiGetStreamIdEx");
    return KS_OK;
}

int cupti_act_context_id(CUcontext ctx, uint32_t *id, ks_status *st)
{
    if (cupti_act_load(st))
        return st->code;
    CUptiResult r = api.GetContextId(ctx, id);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiGetContextId");
    return KS_OK;
}

int cupti_act_decode(uint8_t *buf, size_t valid, cupti_act_list *out, ks_status *st)
{
    if (cupti_act_load(st))
        return st->code;
    size_t before = out->dropped;
    decode_buffer(buf, valid, out);
    if (out->dropped != before)
        return ks_fail(st, KS_ENOMEM, 0, "cupti_act_decode: out of memory");
    return KS_OK;
}
