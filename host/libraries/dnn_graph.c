/*
 * dnn_graph.c: any cuDNN graph described as data (see dnn_graph.h): the
 * cuDNN graph built from a resolved description (dnn_graph_desc.c), its
 * engines described, and plans that run it.
 *
 * The descriptors each operation kind sets are the ones cudnn-frontend's
 * nodes set for the same operation (PointwiseNode, ReductionNode,
 * MatmulNode, ConvolutionNode/DgradNode, ResampleNode, the norm nodes,
 * ReshapeNode), so a graph that the frontend can build, klab can build
 * from its description. Every tensor gets uid = its index + 1.
 */
#include "libraries/dnn_graph_impl.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "libraries/dnn_backend.h"
/* ---- building the cuDNN graph ------------------------------------------- */

/* The convolution descriptor of op over nsp spatial dimensions. */
static cudnnBackendDescriptor_t conv_desc(dnn_gb *g, const dnn_g_op *op, int nsp, cudnnDataType_t comp,
                                          const char *name)
{
    cudnnBackendDescriptor_t cd = dnn_gb_new(g, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, name);
    int64_t n = nsp;
    cudnnConvolutionMode_t mode = (cudnnConvolutionMode_t)op->mode;
    dnn_gb_set(g, cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, name);
    dnn_gb_set(g, cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, name);
    dnn_gb_set(g, cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &n, name);
    dnn_gb_set(g, cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, n, op->dilation, name);
    dnn_gb_set(g, cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, n, op->stride, name);
    dnn_gb_set(g, cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, n, op->pre_pad, name);
    dnn_gb_set(g, cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, n, op->post_pad, name);
    dnn_gb_fin(g, cd, name);
    return cd;
}

static void build_conv(dnn_gb *g, const dnn_g_op *op, const dnn_tens *T, cudnnDataType_t comp, const char *name)
{
    const dnn_tens *in = &T[op->io[CV_IN]], *w = &T[op->io[CV_W]], *out = &T[op->io[CV_OUT]];
    cudnnBackendDescriptor_t cd = conv_desc(g, op, in->nd - 2, comp, name);
    /* The forward and the data-gradient operations differ only in their
     * attribute names: the input side (x or dy), the filter, the output
     * side (y or dx), the convolution, alpha and beta. */
    static const struct {
        cudnnBackendDescriptorType_t type;
        cudnnBackendAttributeName_t in, w, out, conv, alpha, beta;
    } a[2] = {
        {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
        {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
    };
    const int k = op->kind == DNN_K_CONV_FWD ? 0 : 1;
    float alpha = 1.0f, beta = 0.0f;
    cudnnBackendDescriptor_t o = dnn_gb_new(g, a[k].type, name);
    dnn_gb_set_desc(g, o, a[k].in, in->d, name);
    dnn_gb_set_desc(g, o, a[k].w, w->d, name);
    dnn_gb_set_desc(g, o, a[k].out, out->d, name);
    dnn_gb_set_desc(g, o, a[k].conv, cd, name);
    dnn_gb_set(g, o, a[k].alpha, CUDNN_TYPE_FLOAT, 1, &alpha, name);
    dnn_gb_set(g, o, a[k].beta, CUDNN_TYPE_FLOAT, 1, &beta, name);
    dnn_gb_fin(g, o, name);
    dnn_gb_op(g, o, name);
}

static void build_resample(dnn_gb *g, const dnn_g_op *op, const dnn_tens *T, cudnnDataType_t comp,
                           const char *name)
{
    const dnn_tens *x = &T[op->io[RS_X]], *y = &T[op->io[RS_Y]];
    int64_t n = x->nd - 2;
    cudnnFraction_t win[DNN_G_MAX_SPATIAL], pre[DNN_G_MAX_SPATIAL], post[DNN_G_MAX_SPATIAL], str[DNN_G_MAX_SPATIAL];
    for (int i = 0; i < n; i++) {
        win[i] = (cudnnFraction_t){op->window[i], 1};
        pre[i] = (cudnnFraction_t){op->pre_pad[i], 1};
        post[i] = (cudnnFraction_t){op->post_pad[i], 1};
        str[i] = (cudnnFraction_t){op->stride[i], 1};
    }
    cudnnResampleMode_t mode = (cudnnResampleMode_t)op->mode;
    cudnnPaddingMode_t pad = op->padding_mode >= 0 ? (cudnnPaddingMode_t)op->padding_mode
                           : op->mode == CUDNN_RESAMPLE_MAXPOOL ? CUDNN_NEG_INF_PAD : CUDNN_ZERO_PAD;
    cudnnNanPropagation_t nan = CUDNN_PROPAGATE_NAN;
    cudnnBackendDescriptor_t rd = dnn_gb_new(g, CUDNN_BACKEND_RESAMPLE_DESCRIPTOR, name);
    dnn_gb_set(g, rd, CUDNN_ATTR_RESAMPLE_MODE, CUDNN_TYPE_RESAMPLE_MODE, 1, &mode, name);
    dnn_gb_set(g, rd, CUDNN_ATTR_RESAMPLE_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, name);
    dnn_gb_set(g, rd, CUDNN_ATTR_RESAMPLE_NAN_PROPAGATION, CUDNN_TYPE_NAN_PROPOGATION, 1, &nan, name);
    dnn_gb_set(g, rd, CUDNN_ATTR_RESAMPLE_PADDING_MODE, CUDNN_TYPE_PADDING_MODE, 1, &pad, name);
    dnn_gb_set(g, rd, CUDNN_ATTR_RESAMPLE_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &n, name);
    dnn_gb_set(g, rd, CUDNN_ATTR_RESAMPLE_WINDOW_DIMS, CUDNN_TYPE_FRACTION, n, win, name);
    dnn_gb_set(g, rd, CUDNN_ATTR_RESAMPLE_PRE_PADDINGS, CUDNN_TYPE_FRACTION, n, pre, name);
    dnn_gb_set(g, rd, CUDNN_ATTR_RESAMPLE_POST_PADDINGS, CUDNN_TYPE_FRACTION, n, post, name);
    dnn_gb_set(g, rd, CUDNN_ATTR_RESAMPLE_STRIDES, CUDNN_TYPE_FRACTION, n, str, name);
    dnn_gb_fin(g, rd, name);
    cudnnBackendDescriptor_t o = dnn_gb_new(g, CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR, name);
    dnn_gb_set_desc(g, o, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_XDESC, x->d, name);
    dnn_gb_set_desc(g, o, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_YDESC, y->d, name);
    dnn_gb_set_desc(g, o, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_DESC, rd, name);
    if (op->io[RS_IDX] >= 0)
        dnn_gb_set_desc(g, o, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_IDXDESC, T[op->io[RS_IDX]].d, name);
    dnn_gb_fin(g, o, name);
    dnn_gb_op(g, o, name);
}

static void build_norm(dnn_gb *g, const dnn_g_op *op, const dnn_tens *T, const char *name)
{
    static const cudnnBackendAttributeName_t attr[NM_Y + 1] = {
        [NM_X] = CUDNN_ATTR_OPERATION_NORM_FWD_XDESC,
        [NM_SCALE] = CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC,
        [NM_BIAS] = CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC,
        [NM_EPS] = CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC,
        [NM_MEAN] = CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC,
        [NM_INVVAR] = CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC,
        [NM_Y] = CUDNN_ATTR_OPERATION_NORM_FWD_YDESC,
    };
    cudnnBackendNormMode_t mode = (cudnnBackendNormMode_t)op->mode;
    cudnnBackendNormFwdPhase_t phase = op->phase == DNN_PHASE_TRAINING ? CUDNN_NORM_FWD_TRAINING
                                                                       : CUDNN_NORM_FWD_INFERENCE;
    cudnnBackendDescriptor_t o = dnn_gb_new(g, CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, name);
    dnn_gb_set(g, o, CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode, name);
    dnn_gb_set(g, o, CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase, name);
    for (int k = 0; k <= NM_Y; k++)
        if (op->io[k] >= 0)
            dnn_gb_set_desc(g, o, attr[k], T[op->io[k]].d, name);
    dnn_gb_fin(g, o, name);
    dnn_gb_op(g, o, name);
}

/* Builds every tensor and operation of resolved r into g; names[i] is
 * op i's name for messages and summaries. */
static int build_graph(dnn_gb *g, const dnn_graph_desc *r, char (*names)[64])
{
    dnn_tens T[DNN_G_MAX_TENSORS];
    memset(T, 0, sizeof T);
    /* cuDNN's pointwise engines take a tensor of fewer than three dimensions
     * but read it from the wrong rows (seen with 9.14 on an H200: y[i] came
     * from x[i + (R-1)C]), and refuse one-dimensional ones; the same tensor
     * with leading dimensions of 1 is read right. Reductions are the other
     * way round (rank 2 is read right, and rank 3 gets no engine), and a
     * normalization's first dimension is its batch: graphs with either keep
     * their ranks. */
    int promote = 1;
    for (int i = 0; i < r->nops; i++)
        if (r->op[i].kind == DNN_K_NORM_FWD || r->op[i].kind == DNN_K_REDUCTION)
            promote = 0;
    for (int i = 0; i < r->ntensors && !g->rc; i++) {
        const dnn_g_tensor *t = &r->t[i];
        int nd = t->nd;
        int64_t dim[DNN_G_MAX_DIMS], stride[DNN_G_MAX_DIMS];
        memcpy(dim, t->dim, sizeof dim);
        memcpy(stride, t->stride, sizeof stride);
        if (promote && nd >= 1 && nd < 3) {
            int add = 3 - nd;
            int64_t outer = t->dim[0] * t->stride[0];
            for (int k = nd - 1; k >= 0; k--) {
                dim[k + add] = t->dim[k];
                stride[k + add] = t->stride[k];
            }
            for (int k = 0; k < add; k++) {
                dim[k] = 1;
                stride[k] = outer > 0 ? outer : 1;
            }
            nd = 3;
        }
        T[i] = dnn_gb_tensor(g, i + 1, nd, dim, stride, dnn_graph_cu_dtype(t->dtype), t->is_virtual, t->by_value);
        if (g->rc) {
            char w[96];
            snprintf(w, sizeof w, "tensor '%s'", t->name);
            ks_status keep = *g->st;
            ks_fail(g->st, keep.code, keep.sub, "%s: %s", w, keep.msg);
        }
    }
    for (int i = 0; i < r->nops && !g->rc; i++) {
        const dnn_g_op *op = &r->op[i];
        char lab[64];
        dnn_graph_op_label(op, i, lab, sizeof lab);
        snprintf(names[i], 64, "%s", lab);
        cudnnDataType_t comp = dnn_graph_cu_dtype(op->compute >= 0 ? op->compute : r->compute);
        switch (op->kind) {
        case DNN_K_POINTWISE:
            dnn_gb_pw(g, (cudnnPointwiseMode_t)op->mode, comp, &T[op->io[PW_X]],
                      op->io[PW_B] >= 0 ? &T[op->io[PW_B]] : NULL, op->io[PW_T] >= 0 ? &T[op->io[PW_T]] : NULL,
                      &T[op->io[PW_Y]], op->mode == CUDNN_POINTWISE_GEN_INDEX ? (op->axis >= 0 ? op->axis : 0) : -1,
                      op->param, names[i]);
            break;
        case DNN_K_REDUCTION:
            dnn_gb_reduce(g, (cudnnReduceTensorOp_t)op->mode, comp, &T[op->io[RD_X]], &T[op->io[RD_Y]], names[i]);
            break;
        case DNN_K_MATMUL:
            dnn_gb_matmul(g, &T[op->io[MM_A]], &T[op->io[MM_B]], &T[op->io[MM_C]], comp, names[i]);
            break;
        case DNN_K_CONV_FWD:
        case DNN_K_CONV_BWD_DATA:
            build_conv(g, op, T, comp, names[i]);
            break;
        case DNN_K_RESAMPLE_FWD:
            build_resample(g, op, T, comp, names[i]);
            break;
        case DNN_K_NORM_FWD:
            build_norm(g, op, T, names[i]);
            break;
        case DNN_K_RESHAPE:
            dnn_gb_reshape(g, &T[op->io[0]], &T[op->io[1]], names[i]);
            break;
        default:
            break;
        }
    }
    return g->rc;
}

/* "graph of 3 operations (op 0 (matmul), op 1 (pointwise ADD), ...)" */
static void graph_label(const dnn_graph_desc *r, char (*names)[64], char *buf, size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "graph of %d operation%s (", r->nops, r->nops == 1 ? "" : "s");
    for (int i = 0; i < r->nops && used + 8 < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= n - used) {
            snprintf(buf + n - 5, 5, "...");
            used = n - 1;
            break;
        }
        used += (size_t)w;
    }
    if (used + 2 < n)
        snprintf(buf + used, n - used, ")");
}

/* ---- describe ---------------------------------------------------------- */

int dnn_graph_describe(const dnn_graph_desc *d, dnn_graph_outline *out, ks_status *st)
{
    if (!out)
        return ks_fail(st, KS_EINVAL, 0, "dnn_graph_describe: NULL out");
    memset(out, 0, sizeof *out);
    out->engines = -1;
    dnn_graph_desc *r = malloc(sizeof *r);
    dnn_gb *g = malloc(sizeof *g);
    char (*names)[64] = calloc(DNN_G_MAX_OPS, 64);
    int rc = KS_OK;
    const dnn_api *a = NULL;
    if (!r || !g || !names) {
        rc = ks_fail(st, KS_ENOMEM, 0, "out of host memory");
        goto done;
    }
    if ((rc = dnn_graph_resolve(d, r, st)))
        goto done;
    if (!(a = dnn_api_get(st))) {
        rc = st->code;
        goto done;
    }
    out->version = a->version;
    dnn_gb_init(g, a, st);
    rc = build_graph(g, r, names);
    if (rc == KS_OK) {
        out->nops = g->nops;
        out->ntensors = g->ntensors;
        for (int i = 0; i < r->nops; i++) {
            const dnn_g_op *op = &r->op[i];
            const mode_def *m = dnn_graph_mode_find(op->kind, op->mode);
            int show = m && op->kind != DNN_K_CONV_FWD && op->kind != DNN_K_CONV_BWD_DATA;
            snprintf(out->ops[i], sizeof out->ops[i], "%s%s%s", dnn_graph_kind_name(op->kind), show ? " " : "",
                     show ? m->name : "");
        }
        char what[240];
        graph_label(r, names, what, sizeof what);
        ks_status gst;
        ks_clear(&gst);
        int64_t count = 0;
        if (dnn_engines_count(a, g, what, &out->graph, &count, &gst)) {
            snprintf(out->graph ? out->engines_msg : out->graph_msg, KS_MSG_MAX, "%s", gst.msg);
        } else {
            out->engines = count;
        }
    }
    dnn_gb_destroy(g);
done:
    free(r);
    free(g);
    free(names);
    return rc;
}

/* ---- plans ------------------------------------------------------------- */

struct dnn_graph_plan {
    cuda_ctx *ctx;                  /* borrowed */
    const dnn_api *api;
    dnn_graph_desc r;               /* resolved */
    dnn_graph_info info;
    cudnnHandle_t handle;
    dnn_gb g;
    dnn_engines e;
    dnn_exec x;
    CUdeviceptr ws;
    char names[DNN_G_MAX_OPS][64];
    char what[240];
    /* Host values of the by-value scalars, in their dtype (variant-pack
     * pointers point here). */
    union { float f; double d; int32_t i; int64_t l; uint16_t h; } scalar[DNN_G_MAX_TENSORS];
};

/* fp32 to bf16 and fp16, round to nearest even (by-value scalars only). */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static uint16_t to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u)
        return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));
    if (a >= 0x477ff000u)   /* rounds past 65504 */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {  /* subnormal in f16 */
        float x;
        memcpy(&x, &a, 4);
        return (uint16_t)(sign | (uint16_t)lrintf(x * 16777216.0f));
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
    return (uint16_t)(sign | (uint16_t)((r - 0x38000000u) >> 13));
}

static void set_scalar(dnn_graph_plan *p, int i)
{
    const dnn_g_tensor *t = &p->r.t[i];
    switch (t->dtype) {
    case DNN_DT_F32: p->scalar[i].f = (float)t->value; break;
    case DNN_DT_BF16: p->scalar[i].h = to_bf16((float)t->value); break;
    case DNN_DT_F16: p->scalar[i].h = to_f16((float)t->value); break;
    case DNN_DT_I32: p->scalar[i].i = (int32_t)t->value; break;
    case DNN_DT_I64: p->scalar[i].l = (int64_t)t->value; break;
    default: p->scalar[i].d = t->value; break;
    }
}

int dnn_graph_plan_free(dnn_graph_plan *p, ks_status *st)
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
    if (p->api) {
        dnn_exec_release(p->api, &p->x);
        dnn_engines_release(p->api, &p->e);
        dnn_gb_destroy(&p->g);
        if (p->handle) {
            int s = p->api->destroy(p->handle);
            if (s != CUDNN_STATUS_SUCCESS)
                rc = dnn_fail(st, p->api, s, "cudnnDestroy");
        }
    }
    if (p->ws && cuda_mem_free(p->ctx, p->ws, &tmp) && rc == KS_OK) {
        rc = tmp.code;
        *st = tmp;
    }
    free(p);
    return rc;
}

int dnn_graph_plan_create(const dnn_graph_desc *d, cuda_ctx *c, dnn_graph_plan **out, ks_status *st)
{
    if (!out)
        return ks_fail(st, KS_EINVAL, 0, "dnn_graph_plan_create: NULL out");
    *out = NULL;
    dnn_graph_plan *p = calloc(1, sizeof *p);
    if (!p)
        return ks_fail(st, KS_ENOMEM, 0, "out of host memory");
    if (dnn_graph_resolve(d, &p->r, st))
        goto fail;
    /* Driver first: without one there is no context to plan on. */
    if (cuda_load(st))
        goto fail;
    if (!c) {
        ks_fail(st, KS_EINVAL, 0, "dnn_graph_plan_create: no CUDA context");
        goto fail;
    }
    const dnn_api *a = dnn_api_get(st);
    if (!a)
        goto fail;
    if (cuda_ctx_use(c, st))
        goto fail;
    p->ctx = c;
    p->api = a;
    p->info.version = a->version;
    p->info.nops = p->r.nops;
    for (int i = 0; i < p->r.ntensors; i++)
        if (p->r.t[i].by_value)
            set_scalar(p, i);

    int s = a->create(&p->handle);
    if (s != CUDNN_STATUS_SUCCESS) {
        dnn_fail(st, a, s, "cudnnCreate");
        p->handle = NULL;
        goto fail;
    }
    dnn_gb_init(&p->g, a, st);
    if (build_graph(&p->g, &p->r, p->names))
        goto fail;
    graph_label(&p->r, p->names, p->what, sizeof p->what);
    const unsigned tc = DNN_NOTE_BIT(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
    const unsigned down = DNN_NOTE_BIT(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS);
    /* Strict FP32 refuses engines noted tensor_core or down_convert only
     * where TF32 products can enter: matmuls and convolutions. cuDNN notes
     * its pointwise and reduction engines tensor_core too, though they
     * multiply nothing; the reference check still judges their results. */
    int mma = 0;
    for (int i = 0; i < p->r.nops; i++) {
        int k = p->r.op[i].kind;
        mma |= k == DNN_K_MATMUL || k == DNN_K_CONV_FWD || k == DNN_K_CONV_BWD_DATA;
    }
    dnn_engine_filter f = {p->r.plans, p->r.engine, p->r.math == DNN_MATH_TF32 && mma ? tc : 0,
                           p->r.math == DNN_MATH_FP32 && mma ? tc | down : 0};
    int rc = dnn_engines_plan(a, p->handle, &p->g, &f, p->what, &p->e, st);
    dnn_graph_info *in = &p->info;
    in->tried = p->e.tried;
    in->heur_count = p->e.heur_count;
    in->filtered = p->e.filtered;
    in->nrefused = p->e.nlog;
    for (int i = 0; i < p->e.nlog; i++) {
        in->refused[i].engine = p->e.log[i].engine;
        in->refused[i].rank = p->e.log[i].rank;
        snprintf(in->refused[i].why, sizeof in->refused[i].why, "%s", p->e.log[i].why);
    }
    if (rc) {
        if (p->r.engine >= 0 && p->e.filtered > 0 && p->e.nlog == 0) {
            ks_status keep = *st;
            ks_fail(st, keep.code, keep.sub, "%.300s (engine %lld was asked for; the heuristic did not list it)",
                    keep.msg, (long long)p->r.engine);
        }
        goto fail;
    }
    in->plans = p->e.nplan;
    size_t wsmax = 256;
    for (int k = 0; k < p->e.nplan; k++) {
        in->engine[k] = p->e.engine[k];
        in->rank[k] = p->e.rank[k];
        in->heur_mode[k] = p->e.mode[k];
        in->workspace[k] = p->e.workspace[k];
        dnn_notes_string(p->e.notes[k], in->notes[k], sizeof in->notes[k]);
        if (p->e.workspace[k] > wsmax)
            wsmax = p->e.workspace[k];
    }
    in->workspace_bytes = wsmax;
    if (cuda_mem_alloc(c, wsmax, &p->ws, st))
        goto fail;
    *out = p;
    return KS_OK;

fail:;
    ks_status keep = *st;
    dnn_graph_plan_free(p, NULL);
    *st = keep;
    return st->code;
}

const dnn_graph_desc *dnn_graph_plan_desc(const dnn_graph_plan *p)
{
    return p ? &p->r : NULL;
}

const dnn_graph_info *dnn_graph_plan_info(const dnn_graph_plan *p)
{
    return p ? &p->info : NULL;
}

int dnn_graph_plan_run(dnn_graph_plan *p, int index, const CUdeviceptr *ptrs, CUstream stream, ks_status *st)
{
    if (!p || !ptrs)
        return ks_fail(st, KS_EINVAL, 0, "dnn_graph_plan_run: NULL argument");
    if (index < 0 || index >= p->e.nplan)
        return ks_fail(st, KS_EINVAL, 0, "dnn: plan index %d out of range (%d kept)", index, p->e.nplan);
    int64_t uids[DNN_G_MAX_TENSORS];
    void *vptrs[DNN_G_MAX_TENSORS];
    int n = 0;
    for (int i = 0; i < p->r.ntensors; i++) {
        const dnn_g_tensor *t = &p->r.t[i];
        if (t->is_virtual)
            continue;
        if (t->by_value) {
            uids[n] = i + 1;
            vptrs[n++] = &p->scalar[i];
            continue;
        }
        if (!ptrs[i])
            return ks_fail(st, KS_EINVAL, 0, "tensor '%s' has no device address", t->name);
        if (ptrs[i] % 16)
            return ks_fail(st, KS_EINVAL, 0, "tensor '%s' (0x%llx) is not 16-byte aligned", t->name,
                           (unsigned long long)ptrs[i]);
        uids[n] = i + 1;
        vptrs[n++] = (void *)(uintptr_t)ptrs[i];
    }
    if (cuda_ctx_use(p->ctx, st))
        return st->code;
    char what[300];
    snprintf(what, sizeof what, "cudnnBackendExecute (%.240s, plan %d)", p->what, index);
    return dnn_exec_run(p->api, p->handle, &p->x, p->e.plan[index], n, uids, vptrs, p->ws, stream, what, st);
}
