/*
 * dnn_backend.h: cuDNN's backend (graph) API as klab's cuDNN baselines use
 * it, shared by the attention graphs (dnn.c) and the generic graph builder
 * (dnn_graph.c). Internal to host/libraries: callers outside use dnn.h and
 * dnn_graph.h.
 *
 *   - the library, opened at run time and resolved by name (dnn_api_get);
 *   - a failed cuDNN call as a status with cuDNN's own message (dnn_fail);
 *   - a graph builder (dnn_gb): tensors and operations created, set and
 *     finalized one after another; the first failure is kept and every
 *     later call is a no-op, so a builder reads as straight-line code;
 *   - engine choice (dnn_engines_plan): the operation graph, the heuristic
 *     (mode A, then FALLBACK, as the frontend's default list), execution
 *     plans for the first configurations that finalize and pass a filter,
 *     with what was tried and why each was refused;
 *   - execution (dnn_exec_run): the variant pack, rebuilt only when the
 *     addresses change, and cudnnBackendExecute on a stream.
 */
#ifndef KLAB_HOST_LIBRARIES_DNN_BACKEND_H
#define KLAB_HOST_LIBRARIES_DNN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cudnn_graph.h>
#pragma GCC diagnostic pop

#include "base/status.h"
#include "libraries/dnn.h"

/* ---- the library ---- */

typedef struct dnn_api {
    __typeof__(cudnnGetVersion) *get_version;
    __typeof__(cudnnGetErrorString) *error_string;
    __typeof__(cudnnGetLastErrorString) *last_error;   /* optional */
    __typeof__(cudnnCreate) *create;
    __typeof__(cudnnDestroy) *destroy;
    __typeof__(cudnnSetStream) *set_stream;
    __typeof__(cudnnBackendCreateDescriptor) *bcreate;
    __typeof__(cudnnBackendDestroyDescriptor) *bdestroy;
    __typeof__(cudnnBackendSetAttribute) *bset;
    __typeof__(cudnnBackendGetAttribute) *bget;
    __typeof__(cudnnBackendFinalize) *bfinalize;
    __typeof__(cudnnBackendExecute) *bexecute;
    size_t version;
} dnn_api;

/* Loads cuDNN and resolves its entry points, once (thread-safe); a failure
 * is not remembered. NULL with st filled (KS_ENOLIB, KS_ENOTFOUND). */
const dnn_api *dnn_api_get(ks_status *st);

/* Fills st for a failed cuDNN call `what` and returns the code: refusals
 * (BAD_PARAM and NOT_SUPPORTED families) are KS_EUNSUPPORTED, allocation
 * failures KS_ENOMEM, the rest KS_ECUDA; st->sub is the cudnnStatus_t and
 * the message ends with cudnnGetLastErrorString's text when there is one. */
int dnn_fail(ks_status *st, const dnn_api *a, int status, const char *what);

/* "9.19.0" for 91900. */
void dnn_version_string(size_t version, char *buf, size_t n);

/* ---- the graph builder ---- */

#define DNN_GB_MAX_DESC 512
#define DNN_GB_MAX_OPS 64
#define DNN_GB_MAX_DIMS 8

typedef struct dnn_tens {
    cudnnBackendDescriptor_t d;
    int64_t uid;
    int nd;
    int64_t dim[DNN_GB_MAX_DIMS], str[DNN_GB_MAX_DIMS];
    cudnnDataType_t dt;
} dnn_tens;

typedef struct dnn_gb {
    const dnn_api *a;
    cudnnBackendDescriptor_t all[DNN_GB_MAX_DESC];
    int nall;
    cudnnBackendDescriptor_t ops[DNN_GB_MAX_OPS];
    const char *opname[DNN_GB_MAX_OPS];   /* borrowed; must outlive the builder's use */
    int nops;
    int ntensors;
    int64_t next_uid;       /* for virtual tensors */
    int rc;                 /* first failure, KS_OK while none */
    ks_status *st;
} dnn_gb;

void dnn_gb_init(dnn_gb *g, const dnn_api *a, ks_status *st);
/* Destroys every descriptor made (newest first); the builder can be reused. */
void dnn_gb_destroy(dnn_gb *g);

cudnnBackendDescriptor_t dnn_gb_new(dnn_gb *g, cudnnBackendDescriptorType_t type, const char *what);
void dnn_gb_set(dnn_gb *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t attr,
                cudnnBackendAttributeType_t type, int64_t count, const void *v, const char *what);
void dnn_gb_set_desc(dnn_gb *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t attr,
                     cudnnBackendDescriptor_t v, const char *what);
void dnn_gb_fin(dnn_gb *g, cudnnBackendDescriptor_t d, const char *what);
/* Appends a finalized operation to the graph's list under name. */
void dnn_gb_op(dnn_gb *g, cudnnBackendDescriptor_t op, const char *name);

/* A tensor. uid 0 takes a fresh one (virtual tensors). 16-byte alignment. */
dnn_tens dnn_gb_tensor(dnn_gb *g, int64_t uid, int nd, const int64_t *dim, const int64_t *str,
                       cudnnDataType_t dt, int is_virtual, int by_value);

/* Pointwise y = mode(x [, b [, t]]) in precision prec. axis >= 0 only for
 * GEN_INDEX; param is the mode's scalar (ELU alpha, softplus beta, swish
 * beta), NaN for none. */
void dnn_gb_pw(dnn_gb *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, const dnn_tens *x,
               const dnn_tens *b, const dnn_tens *t, const dnn_tens *y, int64_t axis, double param,
               const char *name);
/* c = a . b, batched over the leading dimensions, compute type comp. */
void dnn_gb_matmul(dnn_gb *g, const dnn_tens *a, const dnn_tens *b, const dnn_tens *c, cudnnDataType_t comp,
                   const char *name);
/* y = how(x) over the dimensions where y has extent 1. */
void dnn_gb_reduce(dnn_gb *g, cudnnReduceTensorOp_t how, cudnnDataType_t comp, const dnn_tens *x,
                   const dnn_tens *y, const char *name);
/* y, a view of x with other dimensions and strides. */
void dnn_gb_reshape(dnn_gb *g, const dnn_tens *x, const dnn_tens *y, const char *name);

/* ---- engines ---- */

/* Numerical notes of an engine, as bits (1u << cudnnBackendNumericalNote_t). */
#define DNN_NOTE_BIT(n) (1u << (unsigned)(n))

/* "tensor_core,down_convert_inputs" for a notes mask ("" for none). */
void dnn_notes_string(unsigned notes, char *buf, size_t n);

#define DNN_MAX_CFGS 32
#define DNN_MAX_TRIED 16

typedef struct dnn_engine_try {
    int64_t engine;         /* global index, -1 unknown */
    int rank;               /* in its heuristic's list, 0-based */
    int mode;               /* cudnnBackendHeurMode_t */
    char why[256];          /* why it was not kept */
} dnn_engine_try;

typedef struct dnn_engine_filter {
    int want;               /* execution plans to keep, >= 1 */
    int64_t engine;         /* only this global index; -1 any */
    unsigned need_notes;    /* every one of these numerical notes */
    unsigned refuse_notes;  /* none of these */
} dnn_engine_filter;

typedef struct dnn_engines {
    cudnnBackendDescriptor_t graph, heur;
    cudnnBackendDescriptor_t cfgs[DNN_MAX_CFGS];
    int ncfg;
    cudnnBackendDescriptor_t plan[DNN_MAX_PLANS];
    int nplan;
    int64_t engine[DNN_MAX_PLANS];  /* global index of each kept plan */
    int rank[DNN_MAX_PLANS];        /* its position in the heuristic's list */
    int mode[DNN_MAX_PLANS];        /* the heuristic mode that listed it */
    size_t workspace[DNN_MAX_PLANS];
    unsigned notes[DNN_MAX_PLANS];  /* numerical notes */
    int tried;                      /* configurations looked at */
    int heur_count;                 /* configurations mode A returned */
    int filtered;                   /* skipped by the filter */
    dnn_engine_try log[DNN_MAX_TRIED];  /* the first refusals, with reasons */
    int nlog;
} dnn_engines;

/* Builds the operation graph of g's operations on handle h (NULL: without
 * a handle, which newer libraries accept), asks the heuristic for engine
 * configurations (mode A, then FALLBACK while fewer than f->want are kept)
 * and keeps execution plans for the first that pass f and finalize. On
 * failure e holds nothing (released) and st says why: KS_EUNSUPPORTED "cuDNN
 * refused the <what> (operation graph): ..." or "cuDNN X has no engine for
 * the <what>: <the last refusal>". e must be zeroed before the first call. */
int dnn_engines_plan(const dnn_api *a, cudnnHandle_t h, const dnn_gb *g, const dnn_engine_filter *f,
                     const char *what, dnn_engines *e, ks_status *st);

/* Finalizes the operation graph of g without a handle (*graph_ok = 1 when
 * it did) and asks the FALLBACK heuristic how many engine configurations
 * can run it (*count); builds no execution plan, so no GPU is needed where
 * the library allows it. A failure says which step cuDNN refused. */
int dnn_engines_count(const dnn_api *a, const dnn_gb *g, const char *what, int *graph_ok, int64_t *count,
                      ks_status *st);

/* Releases every descriptor e holds; e can be planned again. */
void dnn_engines_release(const dnn_api *a, dnn_engines *e);

/* ---- execution ---- */

#define DNN_VP_MAX 96

typedef struct dnn_exec {
    cudnnBackendDescriptor_t vp;    /* the last variant pack */
    int n;
    int64_t uids[DNN_VP_MAX];
    void *ptrs[DNN_VP_MAX];
    CUdeviceptr ws;
    CUstream stream;                /* what the handle was last set to */
    int stream_known;
} dnn_exec;

/* Enqueues plan with n (uid, pointer) pairs and workspace ws on stream s
 * (NULL: the legacy default stream). The variant pack is reused while the
 * pairs and ws stay the same (a timed loop passes the same operands every
 * time). A failure to execute is KS_ECUDA (even where cuDNN calls it a
 * refusal: the plan was accepted), with what in the message. */
int dnn_exec_run(const dnn_api *a, cudnnHandle_t h, dnn_exec *x, cudnnBackendDescriptor_t plan, int n,
                 const int64_t *uids, void *const *ptrs, CUdeviceptr ws, CUstream s, const char *what,
                 ks_status *st);

void dnn_exec_release(const dnn_api *a, dnn_exec *x);

#endif
