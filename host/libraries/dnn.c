/*
 * dnn.c: the cuDNN attention baseline (see dnn.h), built on the backend
 * plumbing of dnn_backend.h.
 *
 * The composite graphs follow the node order, dimensions, strides and data
 * types of cudnn-frontend's CompositeSDPANode / CompositeSoftmaxNode /
 * CompositeDiagonalBandMaskNode (forward) and CompositeSDPABackwardNode
 * (backward), because cuDNN's fused-attention engines accept only graphs
 * that match their patterns. Comments name the frontend's node for each
 * step. Pass-by-value scalars are {1,1,1,1} tensors (the backend wants the
 * rank of the other operand); their variant-pack pointers are host
 * addresses inside the plan.
 */
#include "libraries/dnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libraries/dnn_backend.h"

/* Descriptor types and attributes that older headers may lack. */
#define DNN_OP_SDPA_FWD ((cudnnBackendDescriptorType_t)41)
#define DNN_OP_SDPA_BWD ((cudnnBackendDescriptorType_t)43)

/* The first library versions with each fused operation (frontend's gates). */
#define DNN_FUSED_FWD_MIN 91301
#define DNN_FUSED_BWD_MIN 91700

const char *dnn_route_name(int route)
{
    switch (route) {
    case DNN_ROUTE_AUTO: return "auto";
    case DNN_ROUTE_FUSED: return "fused";
    case DNN_ROUTE_COMPOSITE: return "composite";
    default: return "?";
    }
}

/* ---- graph building ---------------------------------------------------- */

/* The attention graphs are built with dnn_backend's builder; these are the
 * shapes they use most. */
typedef dnn_tens tens;
typedef dnn_gb gb;

static tens gb_t4(gb *g, int64_t uid, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t s0,
                  int64_t s1, int64_t s2, int64_t s3, cudnnDataType_t dt, int is_virtual)
{
    const int64_t dim[4] = {d0, d1, d2, d3}, str[4] = {s0, s1, s2, s3};
    return dnn_gb_tensor(g, uid, 4, dim, str, dt, is_virtual, 0);
}

/* A virtual tensor shaped like x (pointwise outputs inherit the strides of
 * the input with the same dimensions, as the frontend infers them). */
static tens gb_like(gb *g, const tens *x, cudnnDataType_t dt)
{
    return dnn_gb_tensor(g, 0, x->nd, x->dim, x->str, dt, 1, 0);
}

/* A pass-by-value scalar: {1,1,1,1} (pointwise operands need the rank of
 * the other operand; the backend refuses a 1-D scalar against 4-D data). */
static tens gb_scalar(gb *g, int64_t uid, cudnnDataType_t dt)
{
    const int64_t one[4] = {1, 1, 1, 1};
    return dnn_gb_tensor(g, uid, 4, one, one, dt, 0, 1);
}

/* Pointwise y = mode(x [, b [, t]]). axis >= 0 only for GEN_INDEX. */
static void gb_pw(gb *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, const tens *x, const tens *b,
                  const tens *t, const tens *y, int64_t axis, const char *name)
{
    dnn_gb_pw(g, mode, prec, x, b, t, y, axis, NAN, name);
}

/* c = a . b, batched over the two leading dimensions, fp32 compute. */
static void gb_matmul(gb *g, const tens *a, const tens *b, const tens *c, const char *name)
{
    dnn_gb_matmul(g, a, b, c, CUDNN_DATA_FLOAT, name);
}

static void gb_reduce(gb *g, cudnnReduceTensorOp_t how, const tens *x, const tens *y, const char *name)
{
    dnn_gb_reduce(g, how, CUDNN_DATA_FLOAT, x, y, name);
}

#define gb_reshape dnn_gb_reshape

/* Unique ids of the real tensors. */
enum {
    UID_Q = 1, UID_K = 2, UID_V = 3, UID_O = 4, UID_STATS = 5, UID_DO = 6, UID_DQ = 7, UID_DK = 8,
    UID_DV = 9, UID_SCALE = 10, UID_ONE = 11, UID_NEGINF = 12, UID_SOFTMAX_SUM = 13,
    UID_DQ_ACCUM = 14
};

/* The causal mask on x [b,h,sq,skv] (frontend: CompositeDiagonalBandMaskNode
 * with a right bound of 0): keep x where row >= col, else -inf. */
static tens gb_causal(gb *g, const tens *x, const tens *neginf)
{
    tens row = gb_like(g, x, CUDNN_DATA_INT32);
    gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, x, NULL, NULL, &row, 2, "pointwise GEN_INDEX(row)");
    tens col = gb_like(g, x, CUDNN_DATA_INT32);
    gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, x, NULL, NULL, &col, 3, "pointwise GEN_INDEX(col)");
    tens keep = gb_like(g, x, CUDNN_DATA_BOOLEAN);
    gb_pw(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, &row, &col, NULL, &keep, -1, "pointwise CMP_GE");
    tens y = gb_like(g, x, CUDNN_DATA_FLOAT);
    gb_pw(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, x, neginf, &keep, &y, -1,
          "pointwise BINARY_SELECT");
    return y;
}

/* Forward, composite: CompositeSDPANode with CompositeSoftmaxNode (stats). */
static void build_fwd_composite(gb *g, const dnn_sdpa_desc *d)
{
    const int64_t b = d->b, h = d->h, s = d->s, e = d->d;
    const cudnnDataType_t BF = CUDNN_DATA_BFLOAT16, F = CUDNN_DATA_FLOAT;
    tens q = gb_t4(g, UID_Q, b, h, s, e, h * s * e, s * e, e, 1, BF, 0);
    /* K enters as Kᵀ: dims {b,h,d,s}, strides swapped. */
    tens kt = gb_t4(g, UID_K, b, h, e, s, h * s * e, s * e, 1, e, BF, 0);
    tens v = gb_t4(g, UID_V, b, h, s, e, h * s * e, s * e, e, 1, BF, 0);
    tens o = gb_t4(g, UID_O, b, h, s, e, h * s * e, s * e, e, 1, BF, 0);
    tens stats = gb_t4(g, UID_STATS, b, h, s, 1, h * s, s, 1, 1, F, 0);
    tens scale = gb_scalar(g, UID_SCALE, F);

    tens s1 = gb_t4(g, 0, b, h, s, s, h * s * s, s * s, s, 1, F, 1);
    gb_matmul(g, &q, &kt, &s1, "matmul Q.Kt");
    tens s2 = gb_like(g, &s1, F);
    gb_pw(g, CUDNN_POINTWISE_MUL, F, &s1, &scale, NULL, &s2, -1, "pointwise MUL(scale)");
    tens last = s2;
    if (d->causal) {
        tens neginf = gb_scalar(g, UID_NEGINF, F);
        last = gb_causal(g, &s2, &neginf);
    }
    /* softmax with stats */
    tens mx = gb_t4(g, 0, b, h, s, 1, h * s, s, 1, 1, F, 1);
    gb_reduce(g, CUDNN_REDUCE_TENSOR_MAX, &last, &mx, "reduction MAX");
    tens sub = gb_like(g, &last, F);
    gb_pw(g, CUDNN_POINTWISE_SUB, F, &last, &mx, NULL, &sub, -1, "pointwise SUB(max)");
    tens ex = gb_like(g, &sub, F);
    gb_pw(g, CUDNN_POINTWISE_EXP, F, &sub, NULL, NULL, &ex, -1, "pointwise EXP");
    tens sum = gb_t4(g, 0, b, h, s, 1, h * s, s, 1, 1, F, 1);
    gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, &ex, &sum, "reduction ADD");
    tens lg = gb_t4(g, 0, b, h, s, 1, h * s, s, 1, 1, F, 1);
    gb_pw(g, CUDNN_POINTWISE_LOG, F, &sum, NULL, NULL, &lg, -1, "pointwise LOG");
    gb_pw(g, CUDNN_POINTWISE_ADD, F, &mx, &lg, NULL, &stats, -1, "pointwise ADD(stats)");
    /* P enters the second matmul in the I/O type (bf16), as the frontend sets it. */
    tens p = gb_like(g, &ex, BF);
    gb_pw(g, CUDNN_POINTWISE_DIV, F, &ex, &sum, NULL, &p, -1, "pointwise DIV(sum)");
    gb_matmul(g, &p, &v, &o, "matmul P.V");
}

/* Forward, fused: the SDPA_FWD operation (frontend: UnifiedSDPANode before
 * 9.21, stats set directly). K is passed as K. */
static void build_fwd_fused(gb *g, const dnn_sdpa_desc *d)
{
    const int64_t b = d->b, h = d->h, s = d->s, e = d->d;
    const cudnnDataType_t BF = CUDNN_DATA_BFLOAT16, F = CUDNN_DATA_FLOAT;
    tens q = gb_t4(g, UID_Q, b, h, s, e, h * s * e, s * e, e, 1, BF, 0);
    tens k = gb_t4(g, UID_K, b, h, s, e, h * s * e, s * e, e, 1, BF, 0);
    tens v = gb_t4(g, UID_V, b, h, s, e, h * s * e, s * e, e, 1, BF, 0);
    tens o = gb_t4(g, UID_O, b, h, s, e, h * s * e, s * e, e, 1, BF, 0);
    tens stats = gb_t4(g, UID_STATS, b, h, s, 1, h * s, s, 1, 1, F, 0);
    tens scale = gb_scalar(g, UID_SCALE, F);
    const char *name = "sdpa_fwd";
    cudnnBackendDescriptor_t op = dnn_gb_new(g, DNN_OP_SDPA_FWD, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, q.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, k.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, v.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, o.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, stats.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scale.d, name);
    dnn_gb_fin(g, op, name);
    dnn_gb_op(g, op, name);
}

/* Backward, fused: the SDPA_BWD operation (cuDNN >= 9.17). */
static void build_bwd_fused(gb *g, const dnn_sdpa_desc *d)
{
    const int64_t b = d->b, h = d->h, s = d->s, e = d->d;
    const cudnnDataType_t BF = CUDNN_DATA_BFLOAT16, F = CUDNN_DATA_FLOAT;
    const int64_t n0 = h * s * e, n1 = s * e;
    tens q = gb_t4(g, UID_Q, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens k = gb_t4(g, UID_K, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens v = gb_t4(g, UID_V, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens o = gb_t4(g, UID_O, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens dout = gb_t4(g, UID_DO, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens stats = gb_t4(g, UID_STATS, b, h, s, 1, h * s, s, 1, 1, F, 0);
    tens dq = gb_t4(g, UID_DQ, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens dk = gb_t4(g, UID_DK, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens dv = gb_t4(g, UID_DV, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens scale = gb_scalar(g, UID_SCALE, F);
    const char *name = "sdpa_bwd";
    cudnnBackendDescriptor_t op = dnn_gb_new(g, DNN_OP_SDPA_BWD, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC, q.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC, k.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_BWD_VDESC, v.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_BWD_ODESC, o.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_BWD_STATSDESC, stats.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_BWD_SCALEDESC, scale.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_BWD_DQDESC, dq.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_BWD_DKDESC, dk.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_BWD_DVDESC, dv.d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_SDPA_BWD_DODDESC, dout.d, name);
    dnn_gb_fin(g, op, name);
    dnn_gb_op(g, op, name);
}

/* Backward, composite: CompositeSDPABackwardNode for MHA without dropout,
 * bias or padding, with the dQ accumulator in fp32 (the non-"dP workspace"
 * path the frontend takes from cuDNN 9.0 on). softmax_sum and dQ_accum are
 * real tensors in klab-owned scratch. */
static void build_bwd_composite(gb *g, const dnn_sdpa_desc *d)
{
    const int64_t b = d->b, h = d->h, s = d->s, e = d->d;
    const cudnnDataType_t BF = CUDNN_DATA_BFLOAT16, F = CUDNN_DATA_FLOAT;
    const int64_t n0 = h * s * e, n1 = s * e;
    tens q = gb_t4(g, UID_Q, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens kt = gb_t4(g, UID_K, b, h, e, s, n0, n1, 1, e, BF, 0);
    tens vt = gb_t4(g, UID_V, b, h, e, s, n0, n1, 1, e, BF, 0);
    tens o = gb_t4(g, UID_O, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens dout = gb_t4(g, UID_DO, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens stats = gb_t4(g, UID_STATS, b, h, s, 1, h * s, s, 1, 1, F, 0);
    tens dq = gb_t4(g, UID_DQ, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens dk = gb_t4(g, UID_DK, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens dv = gb_t4(g, UID_DV, b, h, s, e, n0, n1, e, 1, BF, 0);
    tens scale = gb_scalar(g, UID_SCALE, F);
    tens one = gb_scalar(g, UID_ONE, F);

    /* "dO * O => softmax_sum" chain. The product's (virtual) strides are the
     * frontend's. */
    tens dOO = gb_t4(g, 0, b, h, s, e, h * s * e, s * e, h * e, 1, F, 1);
    gb_pw(g, CUDNN_POINTWISE_MUL, F, &dout, &o, NULL, &dOO, -1, "pointwise MUL(dO,O)");
    tens red = gb_t4(g, 0, b, h, s, 1, h * s, s, 1, 1, F, 1);
    gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, &dOO, &red, "reduction ADD(dO*O)");
    tens ssum = gb_t4(g, UID_SOFTMAX_SUM, b, h, s, 1, h * s, s, 1, 1, F, 0);
    gb_pw(g, CUDNN_POINTWISE_MUL, F, &red, &one, NULL, &ssum, -1, "pointwise MUL(one)");

    /* "Q @ KT => exp_softmax => dV" chain */
    tens s1 = gb_t4(g, 0, b, h, s, s, h * s * s, s * s, s, 1, F, 1);
    gb_matmul(g, &q, &kt, &s1, "matmul Q.Kt");
    tens s2 = gb_like(g, &s1, F);
    gb_pw(g, CUDNN_POINTWISE_MUL, F, &s1, &scale, NULL, &s2, -1, "pointwise MUL(scale)");
    tens s3 = gb_like(g, &s2, F);
    gb_pw(g, CUDNN_POINTWISE_SUB, F, &s2, &stats, NULL, &s3, -1, "pointwise SUB(stats)");
    tens last = s3;
    if (d->causal) {
        tens neginf = gb_scalar(g, UID_NEGINF, F);
        last = gb_causal(g, &s3, &neginf);
    }
    tens p = gb_like(g, &last, F);
    gb_pw(g, CUDNN_POINTWISE_EXP, F, &last, NULL, NULL, &p, -1, "pointwise EXP");
    tens pt = gb_t4(g, 0, b, h, s, s, h * s * s, s * s, 1, s, BF, 1);
    gb_reshape(g, &p, &pt, "reshape P");
    gb_matmul(g, &pt, &dout, &dv, "matmul Pt.dO");

    /* "dO @ VT => dS => dK" chain */
    tens dp = gb_t4(g, 0, b, h, s, s, h * s * s, s * s, s, 1, F, 1);
    gb_matmul(g, &dout, &vt, &dp, "matmul dO.Vt");
    tens t3 = gb_like(g, &dp, F);
    gb_pw(g, CUDNN_POINTWISE_SUB, F, &dp, &ssum, NULL, &t3, -1, "pointwise SUB(softmax_sum)");
    tens t4 = gb_like(g, &t3, F);
    gb_pw(g, CUDNN_POINTWISE_MUL, F, &t3, &p, NULL, &t4, -1, "pointwise MUL(P)");
    tens ds = gb_like(g, &t4, F);
    gb_pw(g, CUDNN_POINTWISE_MUL, F, &t4, &scale, NULL, &ds, -1, "pointwise MUL(scale)");
    tens dst = gb_t4(g, 0, b, h, s, s, h * s * s, s * s, 1, s, BF, 1);
    gb_reshape(g, &ds, &dst, "reshape dS");
    gb_matmul(g, &dst, &q, &dk, "matmul dSt.Q");

    /* "dS @ K => dQ" chain, through the fp32 accumulator */
    tens kr = gb_t4(g, 0, b, h, s, e, n0, n1, e, 1, BF, 1);
    gb_reshape(g, &kt, &kr, "reshape K");
    tens acc = gb_t4(g, UID_DQ_ACCUM, b, h, s, e, n0, n1, e, 1, F, 0);
    gb_matmul(g, &ds, &kr, &acc, "matmul dS.K");
    gb_pw(g, CUDNN_POINTWISE_IDENTITY, F, &acc, NULL, NULL, &dq, -1, "pointwise IDENTITY(dQ)");
}

static int build(gb *g, const dnn_sdpa_desc *d, int route)
{
    if (d->dir == DNN_FWD)
        (route == DNN_ROUTE_FUSED ? build_fwd_fused : build_fwd_composite)(g, d);
    else
        (route == DNN_ROUTE_FUSED ? build_bwd_fused : build_bwd_composite)(g, d);
    return g->rc;
}

/* ---- checks ------------------------------------------------------------ */

int dnn_sdpa_check(const dnn_sdpa_desc *d, ks_status *st)
{
    if (!d)
        return ks_fail(st, KS_EINVAL, 0, "dnn: NULL descriptor");
    if (d->dir != DNN_FWD && d->dir != DNN_BWD)
        return ks_fail(st, KS_EINVAL, 0, "dnn: direction must be forward or backward, got %d", d->dir);
    if (d->b < 1 || d->h < 1 || d->s < 1 || d->d < 1)
        return ks_fail(st, KS_EINVAL, 0, "dnn: B, H, S, D must be >= 1 (B=%lld H=%lld S=%lld D=%lld)",
                       (long long)d->b, (long long)d->h, (long long)d->s, (long long)d->d);
    if (d->d % 8 != 0 || d->d > 256)
        return ks_fail(st, KS_EINVAL, 0, "dnn: D must be a multiple of 8 and at most 256, got %lld",
                       (long long)d->d);
    const double lim = (double)((int64_t)1 << 40);
    if ((double)d->b * d->h * d->s * d->s > lim * 64 || (double)d->b * d->h * d->s * d->d > lim)
        return ks_fail(st, KS_EINVAL, 0, "dnn: problem too large");
    if (d->route < DNN_ROUTE_AUTO || d->route > DNN_ROUTE_COMPOSITE)
        return ks_fail(st, KS_EINVAL, 0, "dnn: unknown route %d", d->route);
    if (d->plans < 0 || d->plans > DNN_MAX_PLANS)
        return ks_fail(st, KS_EINVAL, 0, "dnn: plans must be between 1 and %d", DNN_MAX_PLANS);
    if (!(d->scale >= 0) || isinf(d->scale))
        return ks_fail(st, KS_EINVAL, 0, "dnn: scale must be finite and >= 0 (0: 1/sqrt(D))");
    return KS_OK;
}

/* Whether route is possible for d with the loaded library; KS_EUNSUPPORTED
 * with the reason otherwise. */
static int route_possible(const dnn_api *a, const dnn_sdpa_desc *d, int route, ks_status *st)
{
    if (route != DNN_ROUTE_FUSED)
        return KS_OK;
    if (d->causal)
        return ks_fail(st, KS_EUNSUPPORTED, 0,
                       "the fused SDPA %s operation has no causal mask before cuDNN 9.21 (its mask subgraph); "
                       "klab builds the composite graph for causal attention",
                       d->dir == DNN_FWD ? "forward" : "backward");
    size_t need = d->dir == DNN_FWD ? DNN_FUSED_FWD_MIN : DNN_FUSED_BWD_MIN;
    if (a->version < need)
        return ks_fail(st, KS_EUNSUPPORTED, 0, "the fused SDPA %s operation needs cuDNN >= %zu.%zu.%zu, "
                       "the loaded library is %zu.%zu.%zu", d->dir == DNN_FWD ? "forward" : "backward",
                       need / 10000, need / 100 % 100, need % 100, a->version / 10000,
                       a->version / 100 % 100, a->version % 100);
    return KS_OK;
}

int dnn_sdpa_describe(const dnn_sdpa_desc *d, int route, dnn_graph_summary *out, ks_status *st)
{
    if (!out)
        return ks_fail(st, KS_EINVAL, 0, "dnn_sdpa_describe: NULL out");
    memset(out, 0, sizeof *out);
    if (dnn_sdpa_check(d, st))
        return st->code;
    if (route != DNN_ROUTE_FUSED && route != DNN_ROUTE_COMPOSITE)
        return ks_fail(st, KS_EINVAL, 0, "dnn_sdpa_describe: route must be fused or composite");
    const dnn_api *a = dnn_api_get(st);
    if (!a)
        return st->code;
    if (route_possible(a, d, route, st))
        return st->code;
    gb g;
    dnn_gb_init(&g, a, st);
    int rc = build(&g, d, route);
    if (rc == KS_OK) {
        out->route = route;
        out->nops = g.nops < DNN_MAX_OPS ? g.nops : DNN_MAX_OPS;
        out->ntensors = g.ntensors;
        for (int i = 0; i < out->nops; i++)
            out->ops[i] = g.opname[i];
    }
    dnn_gb_destroy(&g);
    return rc;
}

/* ---- plans ------------------------------------------------------------- */

struct dnn_sdpa_plan {
    cuda_ctx *ctx;                  /* borrowed */
    const dnn_api *api;
    dnn_sdpa_desc d;                /* defaults filled in */
    dnn_plan_info info;
    cudnnHandle_t handle;
    gb g;                           /* every descriptor of the graph */
    dnn_engines e;                  /* the operation graph and the kept execution plans */
    dnn_exec x;                     /* the last variant pack */
    CUdeviceptr ws;                 /* max workspace over the kept plans */
    size_t ws_bytes;
    CUdeviceptr ssum, dq_accum;     /* composite backward scratch */
    /* Host values of the pass-by-value scalars (variant-pack pointers). */
    float scale_value, one_value, neginf_value;
};

static void release_descs(dnn_sdpa_plan *p)
{
    const dnn_api *a = p->api;
    if (!a)
        return;
    dnn_exec_release(a, &p->x);
    dnn_engines_release(a, &p->e);
    dnn_gb_destroy(&p->g);
}

int dnn_sdpa_plan_free(dnn_sdpa_plan *p, ks_status *st)
{
    ks_status local;
    if (!st)
        st = &local;
    if (!p)
        return KS_OK;
    ks_status tmp;
    ks_clear(&tmp);
    int rc = KS_OK;
    if (p->ctx)
        (void)cuda_ctx_use(p->ctx, &tmp);
    release_descs(p);
    if (p->handle && p->api) {
        int s = p->api->destroy(p->handle);
        if (s != CUDNN_STATUS_SUCCESS && rc == KS_OK)
            rc = dnn_fail(st, p->api, s, "cudnnDestroy");
    }
    CUdeviceptr bufs[3] = {p->ws, p->ssum, p->dq_accum};
    for (int i = 0; i < 3; i++)
        if (bufs[i] && cuda_mem_free(p->ctx, bufs[i], &tmp) && rc == KS_OK) {
            rc = tmp.code;
            *st = tmp;
        }
    free(p);
    return rc;
}

/* Builds route into p and keeps up to p->d.plans execution plans. On
 * failure everything built is released and st says why. */
static int plan_route(dnn_sdpa_plan *p, int route, ks_status *st)
{
    const dnn_api *a = p->api;
    if (route_possible(a, &p->d, route, st))
        return st->code;
    dnn_gb_init(&p->g, a, st);
    if (build(&p->g, &p->d, route)) {
        int rc = p->g.rc;
        release_descs(p);
        return rc;
    }
    char what[200];
    snprintf(what, sizeof what, "%s %s graph (B=%lld H=%lld S=%lld D=%lld%s)", dnn_route_name(route),
             p->d.dir == DNN_FWD ? "forward" : "backward", (long long)p->d.b, (long long)p->d.h,
             (long long)p->d.s, (long long)p->d.d, p->d.causal ? ", causal" : "");
    memset(&p->e, 0, sizeof p->e);
    dnn_engine_filter f = {p->d.plans, -1, 0, 0};
    if (dnn_engines_plan(a, p->handle, &p->g, &f, what, &p->e, st)) {
        p->info.tried = p->e.tried;
        p->info.heur_count = p->e.heur_count;
        release_descs(p);
        return st->code;
    }
    for (int k = 0; k < p->e.nplan; k++) {
        p->info.engine[k] = p->e.engine[k];
        p->info.engine_rank[k] = p->e.rank[k];
        p->info.workspace[k] = p->e.workspace[k];
    }
    p->info.tried = p->e.tried;
    p->info.heur_count = p->e.heur_count;
    p->info.route = route;
    p->info.nops = p->g.nops;
    p->info.plans = p->e.nplan;
    return KS_OK;
}

int dnn_sdpa_plan_create(const dnn_sdpa_desc *din, cuda_ctx *c, dnn_sdpa_plan **out, ks_status *st)
{
    if (!out)
        return ks_fail(st, KS_EINVAL, 0, "dnn_sdpa_plan_create: NULL out");
    *out = NULL;
    if (dnn_sdpa_check(din, st))
        return st->code;
    /* Driver first: without one there is no context to plan on. */
    if (cuda_load(st))
        return st->code;
    if (!c)
        return ks_fail(st, KS_EINVAL, 0, "dnn_sdpa_plan_create: no CUDA context");
    const dnn_api *a = dnn_api_get(st);
    if (!a)
        return st->code;
    if (cuda_ctx_use(c, st))
        return st->code;

    dnn_sdpa_plan *p = calloc(1, sizeof *p);
    if (!p)
        return ks_fail(st, KS_ENOMEM, 0, "out of host memory");
    p->ctx = c;
    p->api = a;
    p->d = *din;
    if (p->d.plans <= 0)
        p->d.plans = 1;
    if (p->d.scale == 0)
        p->d.scale = (float)(1.0 / sqrt((double)p->d.d));
    p->scale_value = p->d.scale;
    p->one_value = 1.0f;
    p->neginf_value = -INFINITY;
    p->info.version = a->version;

    int s = a->create(&p->handle);
    if (s != CUDNN_STATUS_SUCCESS) {
        dnn_fail(st, a, s, "cudnnCreate");
        p->handle = NULL;
        goto fail;
    }

    int first, second;
    if (p->d.route == DNN_ROUTE_FUSED || p->d.route == DNN_ROUTE_COMPOSITE) {
        first = p->d.route;
        second = -1;
    } else if (p->d.dir == DNN_FWD && !p->d.causal) {
        first = DNN_ROUTE_FUSED;
        second = DNN_ROUTE_COMPOSITE;
    } else if (p->d.dir == DNN_BWD && !p->d.causal) {
        first = DNN_ROUTE_COMPOSITE;
        second = DNN_ROUTE_FUSED;
    } else {
        first = DNN_ROUTE_COMPOSITE;
        second = -1;
    }
    if (plan_route(p, first, st)) {
        if (second < 0)
            goto fail;
        ks_status keep = *st;
        snprintf(p->info.refused, sizeof p->info.refused, "%s route: %.440s", dnn_route_name(first), keep.msg);
        memset(&p->info.engine, 0, sizeof p->info.engine);
        p->info.tried = 0;
        p->info.heur_count = 0;
        ks_clear(st);
        if (plan_route(p, second, st)) {
            /* Both refused: say so for both. */
            char both[KS_MSG_MAX];
            snprintf(both, sizeof both, "%.240s; %s route: %.240s", p->info.refused, dnn_route_name(second), st->msg);
            int code = st->code;
            ks_fail(st, code, st->sub, "%s", both);
            goto fail;
        }
    }

    size_t wsmax = 256;
    for (int i = 0; i < p->e.nplan; i++)
        if (p->info.workspace[i] > wsmax)
            wsmax = p->info.workspace[i];
    p->ws_bytes = wsmax;
    if (cuda_mem_alloc(c, wsmax, &p->ws, st))
        goto fail;
    if (p->d.dir == DNN_BWD && p->info.route == DNN_ROUTE_COMPOSITE) {
        size_t rows = (size_t)(p->d.b * p->d.h * p->d.s);
        if (cuda_mem_alloc(c, rows * sizeof(float), &p->ssum, st) ||
            cuda_mem_alloc(c, rows * (size_t)p->d.d * sizeof(float), &p->dq_accum, st))
            goto fail;
        p->info.scratch_bytes = rows * sizeof(float) * (1 + (size_t)p->d.d);
    }
    *out = p;
    return KS_OK;

fail:;
    ks_status keep = *st;
    dnn_sdpa_plan_free(p, NULL);
    *st = keep;
    return st->code;
}

const dnn_sdpa_desc *dnn_sdpa_plan_desc(const dnn_sdpa_plan *p)
{
    return p ? &p->d : NULL;
}

const dnn_plan_info *dnn_sdpa_plan_info(const dnn_sdpa_plan *p)
{
    return p ? &p->info : NULL;
}

int dnn_sdpa_plan_run(dnn_sdpa_plan *p, int index, const dnn_sdpa_args *x, CUstream stream, ks_status *st)
{
    if (!p || !x)
        return ks_fail(st, KS_EINVAL, 0, "dnn_sdpa_plan_run: NULL argument");
    if (index < 0 || index >= p->e.nplan)
        return ks_fail(st, KS_EINVAL, 0, "dnn: plan index %d out of range (%d kept)", index, p->e.nplan);
    const int bwd = p->d.dir == DNN_BWD;
    const struct { const char *name; CUdeviceptr v; int need; } ops[] = {
        {"Q", x->q, 1}, {"K", x->k, 1}, {"V", x->v, 1}, {"O", x->o, 1}, {"LSE", x->lse, 1},
        {"dO", x->dout, bwd}, {"dQ", x->dq, bwd}, {"dK", x->dk, bwd}, {"dV", x->dv, bwd},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (!ops[i].need)
            continue;
        if (!ops[i].v)
            return ks_fail(st, KS_EINVAL, 0, "attention operand %s is a NULL device pointer", ops[i].name);
        if (ops[i].v % 16)
            return ks_fail(st, KS_EINVAL, 0, "attention operand %s (0x%llx) is not 16-byte aligned", ops[i].name,
                           (unsigned long long)ops[i].v);
    }
    const dnn_api *a = p->api;
    if (cuda_ctx_use(p->ctx, st))
        return st->code;
    int64_t uids[16];
    void *ptrs[16];
    int n = 0;
#define ADD(u, ptr) do { uids[n] = (u); ptrs[n] = (void *)(ptr); n++; } while (0)
    ADD(UID_Q, (uintptr_t)x->q);
    ADD(UID_K, (uintptr_t)x->k);
    ADD(UID_V, (uintptr_t)x->v);
    ADD(UID_O, (uintptr_t)x->o);
    ADD(UID_STATS, (uintptr_t)x->lse);
    ADD(UID_SCALE, &p->scale_value);
    if (bwd) {
        ADD(UID_DO, (uintptr_t)x->dout);
        ADD(UID_DQ, (uintptr_t)x->dq);
        ADD(UID_DK, (uintptr_t)x->dk);
        ADD(UID_DV, (uintptr_t)x->dv);
        if (p->info.route == DNN_ROUTE_COMPOSITE) {
            ADD(UID_ONE, &p->one_value);
            ADD(UID_SOFTMAX_SUM, (uintptr_t)p->ssum);
            ADD(UID_DQ_ACCUM, (uintptr_t)p->dq_accum);
        }
    }
    if (p->d.causal && p->info.route == DNN_ROUTE_COMPOSITE)
        ADD(UID_NEGINF, &p->neginf_value);
#undef ADD
    /* Before 9.6 the fp32 dQ accumulator had to start at zero (the
     * frontend cleared it); later engines initialise it themselves. */
    if (bwd && p->info.route == DNN_ROUTE_COMPOSITE && a->version < 90600 &&
        cuda_memset_d8(p->ctx, p->dq_accum, 0, (size_t)(p->d.b * p->d.h * p->d.s * p->d.d) * sizeof(float), st))
        return st->code;

    char what[128];
    snprintf(what, sizeof what, "cudnnBackendExecute (%s %s, plan %d)", dnn_route_name(p->info.route),
             bwd ? "backward" : "forward", index);
    return dnn_exec_run(a, p->handle, &p->x, p->e.plan[index], n, uids, ptrs, p->ws, stream, what, st);
}
