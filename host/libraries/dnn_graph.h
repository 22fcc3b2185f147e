/*
 * dnn_graph.h: any cuDNN graph described as data, for library baselines.
 *
 * A task's baseline says "this graph of cuDNN operations computes the task"
 * (a pointwise activation, a reduction, a matmul with a bias and an
 * activation fused, a convolution, a pooling, a normalization) and klab
 * builds it, lets cuDNN's heuristic choose an engine, and runs it on the
 * task's buffers like the attention baseline (dnn.h). Nothing here knows a
 * task: the description is tensors and operations.
 *
 * Tensors are named (unique, at most DNN_G_NAME_MAX-1 bytes) and have a
 * dtype, dimensions and strides in elements (all strides 0: packed
 * row-major, or channels-last with layout DNN_LAYOUT_NHWC, where the
 * dimensions stay in N, C, spatial... order as cuDNN wants them). A tensor
 * is real (the caller passes its device address at run time), virtual (an
 * intermediate inside the graph) or a by-value scalar (value, held by the
 * plan). Dimensions may be left out (nd 0) for a by-value scalar (all ones,
 * with the rank of the first operand of the first operation that uses it)
 * and for the output of a pointwise operation (its x input's dimensions
 * and strides).
 *
 * Operations run in order; each names its tensors by role (dnn_graph_role):
 *
 *   pointwise      x [, b [, t]] -> y     mode: ADD ... BINARY_SELECT (the
 *                                          cuDNN names without the prefix);
 *                                          axis for GEN_INDEX; param is ELU's
 *                                          alpha, SOFTPLUS's and SWISH's beta
 *   reduction      x -> y                  mode: ADD, MUL, MIN, MAX, AMAX, AVG,
 *                                          NORM1, NORM2, MUL_NO_ZEROS; y has
 *                                          extent 1 where x is reduced
 *   matmul         a, b -> c               batched over the leading dimensions
 *   conv_fwd       x, w -> y               x [N,C,spatial...], w [K,C/groups,
 *                                          r...], y [N,K,out...]; pre/post
 *                                          padding, stride, dilation per
 *                                          spatial dimension; groups are
 *                                          implied by w's channel extent
 *   conv_bwd_data  dy, w -> dx             the data gradient, i.e. a
 *                                          transposed convolution of dy
 *   resample_fwd   x -> y [, index]        mode: MAXPOOL, AVGPOOL_INCLUDE_PADDING,
 *                                          AVGPOOL_EXCLUDE_PADDING, NEAREST,
 *                                          BILINEAR; window, stride, padding,
 *                                          padding mode
 *   norm_fwd       x, scale, bias, epsilon, mean, inv_variance -> y
 *                                          mode: LAYER_NORM, RMS_NORM,
 *                                          BATCH_NORM, GROUP_NORM,
 *                                          INSTANCE_NORM; phase inference
 *                                          (mean and inv_variance are inputs
 *                                          of BATCH_NORM) or training (they
 *                                          are outputs)
 *   reshape        x -> y                  a view with other dims and strides
 *
 * What each kind requires is checked here (dnn_graph_check) with messages
 * that name the operation and the tensor; what cuDNN refuses comes back as
 * KS_EUNSUPPORTED with cuDNN's own message and the operation's name.
 *
 * dnn_graph_describe builds and finalizes every tensor and operation
 * descriptor without a handle, then tries the operation graph and the
 * FALLBACK heuristic without one (newer libraries allow both), so the
 * description is proven against the loaded library on a machine without
 * a GPU.
 */
#ifndef KLAB_HOST_LIBRARIES_DNN_GRAPH_H
#define KLAB_HOST_LIBRARIES_DNN_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "base/status.h"
#include "driver/cuda.h"
#include "libraries/dnn.h"

#define DNN_G_MAX_TENSORS 64
#define DNN_G_MAX_OPS 32
#define DNN_G_MAX_DIMS 8
#define DNN_G_MAX_SPATIAL 3
#define DNN_G_NAME_MAX 32
#define DNN_G_ROLES 7

typedef enum { DNN_DT_F32 = 0, DNN_DT_BF16, DNN_DT_F16, DNN_DT_I32, DNN_DT_I64, DNN_DT_BOOL, DNN_DT_COUNT } dnn_dtype;

typedef enum {
    DNN_K_POINTWISE = 0,
    DNN_K_REDUCTION,
    DNN_K_MATMUL,
    DNN_K_CONV_FWD,
    DNN_K_CONV_BWD_DATA,
    DNN_K_RESAMPLE_FWD,
    DNN_K_NORM_FWD,
    DNN_K_RESHAPE,
    DNN_K_COUNT
} dnn_op_kind;

typedef enum { DNN_LAYOUT_ROW = 0, DNN_LAYOUT_NHWC = 1 } dnn_layout;

/* Engine filters by numerical note: ANY keeps the heuristic's order; FP32
 * refuses engines that use tensor cores or convert inputs down (strict
 * fp32 for an fp32 graph); TF32 keeps only tensor-core engines (TF32 for
 * an fp32 graph). */
typedef enum { DNN_MATH_ANY = 0, DNN_MATH_FP32 = 1, DNN_MATH_TF32 = 2 } dnn_math;

typedef enum { DNN_PHASE_INFERENCE = 0, DNN_PHASE_TRAINING = 1 } dnn_phase;

typedef struct dnn_g_tensor {
    char name[DNN_G_NAME_MAX];
    int dtype;                      /* dnn_dtype */
    int nd;                         /* 0: inferred (see above) */
    int64_t dim[DNN_G_MAX_DIMS];
    int64_t stride[DNN_G_MAX_DIMS]; /* all 0: from layout */
    int layout;                     /* dnn_layout, when strides are 0 */
    int is_virtual;
    int by_value;
    double value;                   /* by-value scalars */
} dnn_g_tensor;

typedef struct dnn_g_op {
    int kind;                       /* dnn_op_kind */
    int mode;                       /* the cuDNN enum of the kind's mode (conv: cudnnConvolutionMode_t) */
    int io[DNN_G_ROLES];            /* tensor index per role, -1 none */
    int compute;                    /* dnn_dtype of the math; -1: the graph's */
    int64_t axis;                   /* pointwise GEN_INDEX; -1 none */
    double param;                   /* pointwise ELU alpha, SOFTPLUS/SWISH beta; NaN: cuDNN's default */
    int64_t pre_pad[DNN_G_MAX_SPATIAL], post_pad[DNN_G_MAX_SPATIAL];
    int64_t stride[DNN_G_MAX_SPATIAL], dilation[DNN_G_MAX_SPATIAL];
    int64_t window[DNN_G_MAX_SPATIAL];   /* resample */
    int padding_mode;               /* resample: cudnnPaddingMode_t; -1: NEG_INF for MAXPOOL, else ZERO */
    int phase;                      /* norm: dnn_phase */
} dnn_g_op;

typedef struct dnn_graph_desc {
    int ntensors;
    dnn_g_tensor t[DNN_G_MAX_TENSORS];
    int nops;
    dnn_g_op op[DNN_G_MAX_OPS];
    int compute;                    /* dnn_dtype; default f32 */
    int plans;                      /* execution plans to keep, 1..DNN_MAX_PLANS */
    int64_t engine;                 /* only this engine global index; -1 any */
    int math;                       /* dnn_math */
} dnn_graph_desc;

/* ---- names ---- */

/* Parsers return the value, or -1 for an unknown name (case-insensitive). */
int dnn_graph_dtype_parse(const char *s);
const char *dnn_graph_dtype_name(int dtype);          /* "f32" ... ; "?" */
size_t dnn_graph_dtype_bytes(int dtype);              /* 0 for bool and unknown */
int dnn_graph_kind_parse(const char *s);
const char *dnn_graph_kind_name(int kind);            /* "pointwise" ... ; "?" */
/* The mode of kind named s (pointwise "RELU_FWD", reduction "ADD", resample
 * "MAXPOOL", norm "LAYER_NORM", conv "CROSS_CORRELATION" | "CONVOLUTION"). */
int dnn_graph_mode_parse(int kind, const char *s);
const char *dnn_graph_mode_name(int kind, int mode);  /* "?" when unknown */
/* Every mode name of kind, NULL-terminated (for messages and tests). */
const char *const *dnn_graph_mode_names(int kind);
int dnn_graph_padding_parse(const char *s);           /* "zero", "neg_inf", "edge" */
int dnn_graph_math_parse(const char *s);              /* "any", "fp32", "tf32" */
const char *dnn_graph_math_name(int math);
int dnn_graph_layout_parse(const char *s);            /* "row", "nhwc" */
int dnn_graph_phase_parse(const char *s);             /* "inference", "training" */
/* The role index of role name r for kind (see the table above), or -1. */
int dnn_graph_role(int kind, const char *r);
const char *dnn_graph_role_name(int kind, int role);  /* NULL past the last */
/* Whether op writes its tensor in slot role (y, c, dx, index; a training
 * norm's mean and inv_variance). */
int dnn_graph_role_written(const dnn_g_op *op, int role);

/* ---- building a description ---- */

/* Empty description with the defaults (compute f32, 1 plan, any engine). */
void dnn_graph_desc_init(dnn_graph_desc *d);
/* Appends tensor name (f32, no dims, real) and returns its index, or a
 * negative ks_code (KS_EINVAL: empty, too long or duplicate name, or too
 * many tensors) with st filled. */
int dnn_graph_add_tensor(dnn_graph_desc *d, const char *name, ks_status *st);
/* The index of tensor name, or -1. */
int dnn_graph_find(const dnn_graph_desc *d, const char *name);
/* Appends an operation of kind with its defaults (no tensors, strides and
 * dilations 1, no padding) and returns it; NULL with st filled when full
 * or the kind is unknown. */
dnn_g_op *dnn_graph_add_op(dnn_graph_desc *d, int kind, ks_status *st);

/* Checks d and fills r with it resolved (inferred dimensions and strides
 * filled in). KS_EINVAL naming the operation ("op 2 (pointwise ADD)") or
 * the tensor otherwise. r may be d. */
int dnn_graph_resolve(const dnn_graph_desc *d, dnn_graph_desc *r, ks_status *st);

/* The bytes a real tensor of a resolved description spans (from its
 * dimensions, strides and dtype); 0 for virtual and by-value tensors. */
size_t dnn_graph_tensor_bytes(const dnn_graph_desc *r, int i);

/* ---- describe (no GPU) ---- */

typedef struct dnn_graph_outline {
    int nops;
    int ntensors;                   /* tensor descriptors finalized */
    char ops[DNN_G_MAX_OPS][64];    /* "pointwise RELU_FWD", "conv_fwd", ... */
    int graph;                      /* 1: the operation graph finalized without a handle */
    char graph_msg[KS_MSG_MAX];     /* why not, when graph is 0 */
    int64_t engines;                /* configurations the FALLBACK heuristic lists without a device;
                                     * -1 not asked */
    char engines_msg[KS_MSG_MAX];   /* why the heuristic did not answer */
    size_t version;                 /* cudnnGetVersion() */
} dnn_graph_outline;

/* Resolves d, then builds and finalizes every tensor and operation
 * descriptor (no handle). A descriptor cuDNN refuses is KS_EUNSUPPORTED
 * naming the operation, with cuDNN's message; then the operation graph and
 * the FALLBACK heuristic are tried without a handle (mode A deviceless
 * leaks inside cuDNN 9.19 for matmul graphs), and their outcome is recorded
 * in out (graph, engines) rather than failing, since older libraries need
 * a device for them. Needs cuDNN (KS_ENOLIB), not a driver. */
int dnn_graph_describe(const dnn_graph_desc *d, dnn_graph_outline *out, ks_status *st);

/* ---- plans ---- */

typedef struct dnn_graph_refusal {
    int64_t engine;                 /* global index, -1 unknown */
    int rank;                       /* in the heuristic's list (0-based) */
    char why[256];
} dnn_graph_refusal;

typedef struct dnn_graph_info {
    int nops;
    int plans;                              /* kept (>= 1) */
    int64_t engine[DNN_MAX_PLANS];          /* CUDNN_ATTR_ENGINE_GLOBAL_INDEX */
    int rank[DNN_MAX_PLANS];                /* position in the heuristic's list (0-based) */
    int heur_mode[DNN_MAX_PLANS];           /* cudnnBackendHeurMode_t that listed it */
    size_t workspace[DNN_MAX_PLANS];
    char notes[DNN_MAX_PLANS][96];          /* numerical notes: "tensor_core,..." */
    int tried;                              /* configurations looked at */
    int heur_count;                         /* configurations mode A returned */
    int filtered;                           /* skipped by the engine/math knobs */
    int nrefused;
    dnn_graph_refusal refused[16];          /* the first ones not kept, and why */
    size_t version;
    size_t workspace_bytes;                 /* allocated: the largest over the kept plans */
} dnn_graph_info;

typedef struct dnn_graph_plan dnn_graph_plan;

/* Resolves d, builds the graph on c (handle, operation graph), asks the
 * heuristic (mode A, then FALLBACK) and keeps the first d->plans engine
 * configurations that pass d->engine and d->math and finalize; allocates
 * the workspace. Driver first: without one this is KS_ENODRIVER whatever c
 * is. Errors: KS_EINVAL (bad description), KS_ENOLIB, KS_EUNSUPPORTED
 * (cuDNN refused an operation, the graph, or every engine; the message
 * says which and why), KS_ECUDA/KS_ENOMEM. */
int dnn_graph_plan_create(const dnn_graph_desc *d, cuda_ctx *c, dnn_graph_plan **out, ks_status *st);

/* The resolved description and what was built. */
const dnn_graph_desc *dnn_graph_plan_desc(const dnn_graph_plan *p);
const dnn_graph_info *dnn_graph_plan_info(const dnn_graph_plan *p);

/* Enqueues kept plan index (0 = the first kept) on stream s (NULL: the
 * legacy default stream). ptrs[i] is the device address of tensor i of the
 * description: every real tensor needs one (16-byte aligned); virtual and
 * by-value entries are ignored. */
int dnn_graph_plan_run(dnn_graph_plan *p, int index, const CUdeviceptr *ptrs, CUstream s, ks_status *st);

/* Frees everything; NULL is a no-op. */
int dnn_graph_plan_free(dnn_graph_plan *p, ks_status *st);

#endif
