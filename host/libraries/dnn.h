/*
 * dnn.h: the cuDNN attention baseline. Builds scaled-dot-product attention
 * (forward with log-sum-exp, and backward) as cuDNN backend graphs and runs
 * them on device addresses, so that candidate attention kernels are timed
 * against the vendor library with the same method, on the same stream, in
 * the same worker. (The attention tasks' reference kernels live with the
 * tasks, in tasks/attention/reference.cu.)
 *
 * Task semantics (klab's attention family): Q, K, V, O, dO, dQ, dK, dV are
 * bf16 [B, H, S, D] row-major (BHSD, D contiguous); LSE is fp32 [B, H, S],
 * the natural-log log-sum-exp of the scaled scores of each query row:
 *   S_ij = scale * q_i . k_j,  P = softmax_j(S) (masked), O = P V,
 *   LSE_i = log sum_j exp(S_ij).
 * The causal mask is top-left aligned: key j is visible to query i iff j <= i.
 *
 * Routes (dnn_route). FUSED is the backend's fused operation:
 * CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR (cuDNN >= 9.13.1, no mask
 * attribute before 9.21, so non-causal only here) and
 * CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR (cuDNN >= 9.17, non-causal).
 * COMPOSITE is the graph of matmul, pointwise, reduction and reshape
 * operations that NVIDIA's frontend (cudnn-frontend's CompositeSDPANode and
 * CompositeSDPABackwardNode) emits and cuDNN's fused-attention engines match,
 * with the causal mask as GEN_INDEX / CMP_GE / BINARY_SELECT. AUTO: forward
 * non-causal tries FUSED then COMPOSITE; forward causal and backward use
 * COMPOSITE, and the backward falls back to FUSED (non-causal) only when
 * cuDNN refuses the composite graph. What was built, and why a route was
 * refused, is in dnn_plan_info.
 *
 * cuDNN is never linked: it is opened through host/driver/dynlib.h (dynlib_cudnn:
 * KLAB_CUDNN naming a file, then $CUDA_HOME/lib64, then the system loader)
 * and every entry point is resolved by name. Without the library every
 * function fails with KS_ENOLIB; plan creation without a driver fails with
 * KS_ENODRIVER. A graph cuDNN refuses is KS_EUNSUPPORTED with cuDNN's own
 * message (cudnnGetLastErrorString where the library has it).
 */
#ifndef KLAB_HOST_DNN_H
#define KLAB_HOST_DNN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "driver/cuda.h"
#include "base/status.h"

typedef enum { DNN_FWD = 0, DNN_BWD = 1 } dnn_dir;

typedef enum {
    DNN_ROUTE_AUTO = 0,
    DNN_ROUTE_FUSED = 1,
    DNN_ROUTE_COMPOSITE = 2
} dnn_route;

#define DNN_MAX_PLANS 8

typedef struct dnn_sdpa_desc {
    int dir;            /* dnn_dir */
    int64_t b, h, s, d; /* batch, heads, sequence length, head dimension */
    int causal;         /* top-left causal mask */
    float scale;        /* score scale; 0 means 1/sqrt(d) */
    int route;          /* dnn_route */
    int plans;          /* execution plans to keep, in the heuristic's order (default 1) */
} dnn_sdpa_desc;

/* Device addresses of one call. Forward: q, k, v in; o, lse out. Backward:
 * q, k, v, o, dout, lse in; dq, dk, dv out. Unused fields are ignored. Every
 * address must be 16-byte aligned. */
typedef struct dnn_sdpa_args {
    CUdeviceptr q, k, v, o, lse, dout, dq, dk, dv;
} dnn_sdpa_args;

typedef struct dnn_plan_info {
    int route;                 /* DNN_ROUTE_FUSED or DNN_ROUTE_COMPOSITE: what was built */
    int nops;                  /* operations in the graph */
    int plans;                 /* execution plans kept (>= 1) */
    int tried;                 /* engine configurations tried */
    int heur_count;            /* configurations the heuristic returned */
    int64_t engine[DNN_MAX_PLANS];        /* CUDNN_ATTR_ENGINE_GLOBAL_INDEX of each kept plan */
    int engine_rank[DNN_MAX_PLANS];       /* its position in the heuristic's list (0-based) */
    size_t workspace[DNN_MAX_PLANS];      /* cuDNN's workspace for each kept plan */
    size_t scratch_bytes;      /* klab-owned extra tensors (softmax_sum, dQ_accum) */
    size_t version;            /* cudnnGetVersion() of the library that built it */
    char refused[KS_MSG_MAX];  /* why the other route was refused when AUTO fell back, or "" */
} dnn_plan_info;

/* A short summary of a graph built without a handle (dnn_sdpa_describe). */
#define DNN_MAX_OPS 40
typedef struct dnn_graph_summary {
    int route;
    int nops;
    int ntensors;
    const char *ops[DNN_MAX_OPS];   /* static strings: "matmul", "pointwise MUL", ... */
} dnn_graph_summary;

/* Loads cuDNN and resolves its entry points (once). */
int dnn_load(ks_status *st);

/* "9.19.0" and cudnnGetVersion() (91900). */
int dnn_version(char *buf, size_t n, size_t *code, ks_status *st);

/* The file that was loaded and how it was found ("env", "CUDA_HOME",
 * "soname"); NULL with st filled when the library cannot be loaded. */
const char *dnn_library_path(const char **how, ks_status *st);

/* Checks a descriptor (dimensions, route against direction and mask). */
int dnn_sdpa_check(const dnn_sdpa_desc *d, ks_status *st);

/* Builds and finalizes every tensor and operation of the graph for route
 * (FUSED or COMPOSITE) without a handle, so no GPU is needed: it proves
 * the descriptors are well formed for the loaded library. The operation
 * graph itself (which needs a handle) is not built. */
int dnn_sdpa_describe(const dnn_sdpa_desc *d, int route, dnn_graph_summary *out, ks_status *st);

typedef struct dnn_sdpa_plan dnn_sdpa_plan;

/* Builds the graph, asks the heuristic (mode A, then FALLBACK) for engine
 * configurations and keeps the first d->plans that finalize; allocates
 * their workspace and klab's scratch tensors on c. Driver first: without a
 * driver this is KS_ENODRIVER whatever c is. */
int dnn_sdpa_plan_create(const dnn_sdpa_desc *d, cuda_ctx *c, dnn_sdpa_plan **out, ks_status *st);

const dnn_sdpa_desc *dnn_sdpa_plan_desc(const dnn_sdpa_plan *p);
const dnn_plan_info *dnn_sdpa_plan_info(const dnn_sdpa_plan *p);

/* Enqueues one call with kept plan `index` (0 = the heuristic's first that
 * finalized) on stream s (NULL: the legacy default stream). */
int dnn_sdpa_plan_run(dnn_sdpa_plan *p, int index, const dnn_sdpa_args *a, CUstream s, ks_status *st);

/* Frees everything; NULL is a no-op. */
int dnn_sdpa_plan_free(dnn_sdpa_plan *p, ks_status *st);

/* "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN" etc. (the library's own
 * cudnnGetErrorString when loaded, else a number). */
const char *dnn_status_name(int status);

/* Names for messages. */
const char *dnn_route_name(int route);

#endif
