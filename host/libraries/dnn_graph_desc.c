/*
 * dnn_graph_desc.c: a cuDNN graph as data, before cuDNN (see dnn_graph.h):
 * the names of kinds, modes and roles, building a description, and the
 * checks and shape resolution that need no library and no GPU.
 */
#include "libraries/dnn_graph_impl.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- names ------------------------------------------------------------- */

static const struct { const char *name; cudnnDataType_t dt; size_t bytes; } dtypes[DNN_DT_COUNT] = {
    [DNN_DT_F32] = {"f32", CUDNN_DATA_FLOAT, 4},
    [DNN_DT_BF16] = {"bf16", CUDNN_DATA_BFLOAT16, 2},
    [DNN_DT_F16] = {"f16", CUDNN_DATA_HALF, 2},
    [DNN_DT_I32] = {"i32", CUDNN_DATA_INT32, 4},
    [DNN_DT_I64] = {"i64", CUDNN_DATA_INT64, 8},
    [DNN_DT_BOOL] = {"bool", CUDNN_DATA_BOOLEAN, 0},
};

int dnn_graph_dtype_parse(const char *s)
{
    for (int i = 0; s && i < DNN_DT_COUNT; i++)
        if (strcasecmp(s, dtypes[i].name) == 0)
            return i;
    return -1;
}

const char *dnn_graph_dtype_name(int dtype)
{
    return dtype >= 0 && dtype < DNN_DT_COUNT ? dtypes[dtype].name : "?";
}

cudnnDataType_t dnn_graph_cu_dtype(int dtype)
{
    return dtypes[dtype].dt;
}

size_t dnn_graph_dtype_bytes(int dtype)
{
    return dtype >= 0 && dtype < DNN_DT_COUNT ? dtypes[dtype].bytes : 0;
}

static const char *const kind_names[DNN_K_COUNT] = {
    "pointwise", "reduction", "matmul", "conv_fwd", "conv_bwd_data", "resample_fwd", "norm_fwd", "reshape",
};

int dnn_graph_kind_parse(const char *s)
{
    for (int i = 0; s && i < DNN_K_COUNT; i++)
        if (strcasecmp(s, kind_names[i]) == 0)
            return i;
    return -1;
}

const char *dnn_graph_kind_name(int kind)
{
    return kind >= 0 && kind < DNN_K_COUNT ? kind_names[kind] : "?";
}


static const mode_def pw_modes[] = {
    {"ADD", CUDNN_POINTWISE_ADD, 2}, {"ADD_SQUARE", CUDNN_POINTWISE_ADD_SQUARE, 2},
    {"DIV", CUDNN_POINTWISE_DIV, 2}, {"MAX", CUDNN_POINTWISE_MAX, 2}, {"MIN", CUDNN_POINTWISE_MIN, 2},
    {"MOD", CUDNN_POINTWISE_MOD, 2}, {"MUL", CUDNN_POINTWISE_MUL, 2}, {"POW", CUDNN_POINTWISE_POW, 2},
    {"SUB", CUDNN_POINTWISE_SUB, 2}, {"ATAN2", CUDNN_POINTWISE_ATAN2, 2},
    {"ABS", CUDNN_POINTWISE_ABS, 1}, {"CEIL", CUDNN_POINTWISE_CEIL, 1}, {"COS", CUDNN_POINTWISE_COS, 1},
    {"EXP", CUDNN_POINTWISE_EXP, 1}, {"FLOOR", CUDNN_POINTWISE_FLOOR, 1}, {"LOG", CUDNN_POINTWISE_LOG, 1},
    {"NEG", CUDNN_POINTWISE_NEG, 1}, {"RSQRT", CUDNN_POINTWISE_RSQRT, 1}, {"SIN", CUDNN_POINTWISE_SIN, 1},
    {"SQRT", CUDNN_POINTWISE_SQRT, 1}, {"TAN", CUDNN_POINTWISE_TAN, 1}, {"ERF", CUDNN_POINTWISE_ERF, 1},
    {"IDENTITY", CUDNN_POINTWISE_IDENTITY, 1}, {"RECIPROCAL", CUDNN_POINTWISE_RECIPROCAL, 1},
    {"RELU_FWD", CUDNN_POINTWISE_RELU_FWD, 1}, {"TANH_FWD", CUDNN_POINTWISE_TANH_FWD, 1},
    {"SIGMOID_FWD", CUDNN_POINTWISE_SIGMOID_FWD, 1}, {"ELU_FWD", CUDNN_POINTWISE_ELU_FWD, 1},
    {"GELU_FWD", CUDNN_POINTWISE_GELU_FWD, 1}, {"SOFTPLUS_FWD", CUDNN_POINTWISE_SOFTPLUS_FWD, 1},
    {"SWISH_FWD", CUDNN_POINTWISE_SWISH_FWD, 1},
    {"GELU_APPROX_TANH_FWD", CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, 1},
    {"CMP_EQ", CUDNN_POINTWISE_CMP_EQ, 2}, {"CMP_NEQ", CUDNN_POINTWISE_CMP_NEQ, 2},
    {"CMP_GT", CUDNN_POINTWISE_CMP_GT, 2}, {"CMP_GE", CUDNN_POINTWISE_CMP_GE, 2},
    {"CMP_LT", CUDNN_POINTWISE_CMP_LT, 2}, {"CMP_LE", CUDNN_POINTWISE_CMP_LE, 2},
    {"LOGICAL_AND", CUDNN_POINTWISE_LOGICAL_AND, 2}, {"LOGICAL_OR", CUDNN_POINTWISE_LOGICAL_OR, 2},
    {"LOGICAL_NOT", CUDNN_POINTWISE_LOGICAL_NOT, 1},
    {"GEN_INDEX", CUDNN_POINTWISE_GEN_INDEX, 0}, {"BINARY_SELECT", CUDNN_POINTWISE_BINARY_SELECT, 3},
    {NULL, 0, 0},
};

static const mode_def red_modes[] = {
    {"ADD", CUDNN_REDUCE_TENSOR_ADD, 0}, {"MUL", CUDNN_REDUCE_TENSOR_MUL, 0},
    {"MIN", CUDNN_REDUCE_TENSOR_MIN, 0}, {"MAX", CUDNN_REDUCE_TENSOR_MAX, 0},
    {"AMAX", CUDNN_REDUCE_TENSOR_AMAX, 0}, {"AVG", CUDNN_REDUCE_TENSOR_AVG, 0},
    {"NORM1", CUDNN_REDUCE_TENSOR_NORM1, 0}, {"NORM2", CUDNN_REDUCE_TENSOR_NORM2, 0},
    {"MUL_NO_ZEROS", CUDNN_REDUCE_TENSOR_MUL_NO_ZEROS, 0}, {NULL, 0, 0},
};

static const mode_def conv_modes[] = {
    {"CROSS_CORRELATION", CUDNN_CROSS_CORRELATION, 0}, {"CONVOLUTION", CUDNN_CONVOLUTION, 0}, {NULL, 0, 0},
};

static const mode_def resample_modes[] = {
    {"MAXPOOL", CUDNN_RESAMPLE_MAXPOOL, 0},
    {"AVGPOOL_INCLUDE_PADDING", CUDNN_RESAMPLE_AVGPOOL_INCLUDE_PADDING, 0},
    {"AVGPOOL_EXCLUDE_PADDING", CUDNN_RESAMPLE_AVGPOOL_EXCLUDE_PADDING, 0},
    {"NEAREST", CUDNN_RESAMPLE_NEAREST, 0}, {"BILINEAR", CUDNN_RESAMPLE_BILINEAR, 0}, {NULL, 0, 0},
};

static const mode_def norm_modes[] = {
    {"LAYER_NORM", CUDNN_LAYER_NORM, 0}, {"RMS_NORM", CUDNN_RMS_NORM, 0}, {"BATCH_NORM", CUDNN_BATCH_NORM, 0},
    {"GROUP_NORM", CUDNN_GROUP_NORM, 0}, {"INSTANCE_NORM", CUDNN_INSTANCE_NORM, 0}, {NULL, 0, 0},
};

static const mode_def no_modes[] = {{NULL, 0, 0}};

static const mode_def *modes_of(int kind)
{
    switch (kind) {
    case DNN_K_POINTWISE: return pw_modes;
    case DNN_K_REDUCTION: return red_modes;
    case DNN_K_CONV_FWD: case DNN_K_CONV_BWD_DATA: return conv_modes;
    case DNN_K_RESAMPLE_FWD: return resample_modes;
    case DNN_K_NORM_FWD: return norm_modes;
    default: return no_modes;
    }
}

const mode_def *dnn_graph_mode_find(int kind, int mode)
{
    for (const mode_def *m = modes_of(kind); m->name; m++)
        if (m->value == mode)
            return m;
    return NULL;
}

int dnn_graph_mode_parse(int kind, const char *s)
{
    for (const mode_def *m = modes_of(kind); s && m->name; m++)
        if (strcasecmp(s, m->name) == 0)
            return m->value;
    return -1;
}

const char *dnn_graph_mode_name(int kind, int mode)
{
    const mode_def *m = dnn_graph_mode_find(kind, mode);
    return m ? m->name : "?";
}

const char *const *dnn_graph_mode_names(int kind)
{
    /* One list per kind, filled once from the tables above. */
    static const char *lists[DNN_K_COUNT][64];
    static int filled;
    if (kind < 0 || kind >= DNN_K_COUNT)
        return lists[DNN_K_MATMUL];
    if (!__atomic_load_n(&filled, __ATOMIC_ACQUIRE)) {
        for (int k = 0; k < DNN_K_COUNT; k++) {
            int n = 0;
            for (const mode_def *m = modes_of(k); m->name && n < 63; m++)
                lists[k][n++] = m->name;
            lists[k][n] = NULL;
        }
        __atomic_store_n(&filled, 1, __ATOMIC_RELEASE);
    }
    return lists[kind];
}

static int parse_in(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (strcasecmp(s, names[i]) == 0)
            return i;
    return -1;
}

int dnn_graph_padding_parse(const char *s)
{
    /* The cudnnPaddingMode_t values, in order. */
    static const char *const names[] = {"zero", "neg_inf", "edge"};
    return parse_in(s, names, 3);
}

static const char *const math_names[] = {"any", "fp32", "tf32"};

int dnn_graph_math_parse(const char *s)
{
    return parse_in(s, math_names, 3);
}

const char *dnn_graph_math_name(int math)
{
    return math >= 0 && math < 3 ? math_names[math] : "?";
}

int dnn_graph_layout_parse(const char *s)
{
    static const char *const names[] = {"row", "nhwc"};
    return parse_in(s, names, 2);
}

int dnn_graph_phase_parse(const char *s)
{
    static const char *const names[] = {"inference", "training"};
    return parse_in(s, names, 2);
}

/* Role names per kind, in slot order, and which slots are written. */
static const char *const roles[DNN_K_COUNT][DNN_G_ROLES + 1] = {
    [DNN_K_POINTWISE] = {"x", "b", "t", "y", NULL},
    [DNN_K_REDUCTION] = {"x", "y", NULL},
    [DNN_K_MATMUL] = {"a", "b", "c", NULL},
    [DNN_K_CONV_FWD] = {"x", "w", "y", NULL},
    [DNN_K_CONV_BWD_DATA] = {"dy", "w", "dx", NULL},
    [DNN_K_RESAMPLE_FWD] = {"x", "y", "index", NULL},
    [DNN_K_NORM_FWD] = {"x", "scale", "bias", "epsilon", "mean", "inv_variance", "y", NULL},
    [DNN_K_RESHAPE] = {"x", "y", NULL},
};


int dnn_graph_role(int kind, const char *r)
{
    if (kind < 0 || kind >= DNN_K_COUNT || !r)
        return -1;
    for (int i = 0; roles[kind][i]; i++)
        if (strcmp(r, roles[kind][i]) == 0)
            return i;
    return -1;
}

const char *dnn_graph_role_name(int kind, int role)
{
    if (kind < 0 || kind >= DNN_K_COUNT || role < 0 || role >= DNN_G_ROLES)
        return NULL;
    return roles[kind][role];
}

int dnn_graph_role_written(const dnn_g_op *op, int role)
{
    switch (op->kind) {
    case DNN_K_POINTWISE: return role == PW_Y;
    case DNN_K_REDUCTION: return role == RD_Y;
    case DNN_K_MATMUL: return role == MM_C;
    case DNN_K_CONV_FWD: case DNN_K_CONV_BWD_DATA: return role == CV_OUT;
    case DNN_K_RESAMPLE_FWD: return role == RS_Y || role == RS_IDX;
    case DNN_K_NORM_FWD:
        return role == NM_Y || (op->phase == DNN_PHASE_TRAINING && (role == NM_MEAN || role == NM_INVVAR));
    case DNN_K_RESHAPE: return role == 1;
    default: return 0;
    }
}

/* ---- building a description -------------------------------------------- */

void dnn_graph_desc_init(dnn_graph_desc *d)
{
    memset(d, 0, sizeof *d);
    d->compute = DNN_DT_F32;
    d->plans = 1;
    d->engine = -1;
    d->math = DNN_MATH_ANY;
}

int dnn_graph_find(const dnn_graph_desc *d, const char *name)
{
    for (int i = 0; name && i < d->ntensors; i++)
        if (strcmp(d->t[i].name, name) == 0)
            return i;
    return -1;
}

int dnn_graph_add_tensor(dnn_graph_desc *d, const char *name, ks_status *st)
{
    if (!name || !name[0])
        return ks_fail(st, KS_EINVAL, 0, "a tensor needs a name");
    if (strlen(name) >= DNN_G_NAME_MAX)
        return ks_fail(st, KS_EINVAL, 0, "tensor name '%.40s...' is longer than %d bytes", name, DNN_G_NAME_MAX - 1);
    if (dnn_graph_find(d, name) >= 0)
        return ks_fail(st, KS_EINVAL, 0, "tensor '%s' is described twice", name);
    if (d->ntensors >= DNN_G_MAX_TENSORS)
        return ks_fail(st, KS_EINVAL, 0, "a graph has at most %d tensors", DNN_G_MAX_TENSORS);
    dnn_g_tensor *t = &d->t[d->ntensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = DNN_DT_F32;
    return d->ntensors++;
}

dnn_g_op *dnn_graph_add_op(dnn_graph_desc *d, int kind, ks_status *st)
{
    if (kind < 0 || kind >= DNN_K_COUNT) {
        ks_fail(st, KS_EINVAL, 0, "unknown operation kind %d", kind);
        return NULL;
    }
    if (d->nops >= DNN_G_MAX_OPS) {
        ks_fail(st, KS_EINVAL, 0, "a graph has at most %d operations", DNN_G_MAX_OPS);
        return NULL;
    }
    dnn_g_op *op = &d->op[d->nops++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    for (int i = 0; i < DNN_G_ROLES; i++)
        op->io[i] = -1;
    op->compute = -1;
    op->axis = -1;
    op->param = NAN;
    op->padding_mode = -1;
    op->phase = DNN_PHASE_INFERENCE;
    for (int i = 0; i < DNN_G_MAX_SPATIAL; i++) {
        op->stride[i] = 1;
        op->dilation[i] = 1;
        op->window[i] = 1;
    }
    const mode_def *m = modes_of(kind);
    op->mode = kind == DNN_K_CONV_FWD || kind == DNN_K_CONV_BWD_DATA ? CUDNN_CROSS_CORRELATION
             : m->name ? -1 : 0;
    return op;
}

/* ---- checking and resolving -------------------------------------------- */

/* "op 2 (pointwise ADD)" */
void dnn_graph_op_label(const dnn_g_op *op, int i, char *buf, size_t n)
{
    const mode_def *m = dnn_graph_mode_find(op->kind, op->mode);
    int show = m && op->kind != DNN_K_CONV_FWD && op->kind != DNN_K_CONV_BWD_DATA;
    snprintf(buf, n, "op %d (%s%s%s)", i, dnn_graph_kind_name(op->kind), show ? " " : "", show ? m->name : "");
}

static void packed_strides(dnn_g_tensor *t)
{
    int64_t s = 1;
    if (t->layout == DNN_LAYOUT_NHWC && t->nd >= 3) {
        /* Channels last: C, then the spatial dimensions from the last, then N. */
        t->stride[1] = 1;
        s = t->dim[1];
        for (int i = t->nd - 1; i >= 2; i--) {
            t->stride[i] = s;
            s *= t->dim[i];
        }
        t->stride[0] = s;
        return;
    }
    for (int i = t->nd - 1; i >= 0; i--) {
        t->stride[i] = s;
        s *= t->dim[i];
    }
}

static int64_t numel(const dnn_g_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->nd; i++)
        n *= t->dim[i];
    return n;
}

/* The output extent of a window over in (convolution: the dilated filter
 * r; pooling: the window). */
static int64_t out_extent(int64_t in, int64_t pre, int64_t post, int64_t span, int64_t stride)
{
    int64_t padded = in + pre + post - span;
    return padded < 0 ? 0 : padded / stride + 1;
}

static int check_tensor(const dnn_g_tensor *t, ks_status *st)
{
    if (t->dtype < 0 || t->dtype >= DNN_DT_COUNT)
        return ks_fail(st, KS_EINVAL, 0, "tensor '%s': unknown dtype %d", t->name, t->dtype);
    if (t->nd < 0 || t->nd > DNN_G_MAX_DIMS)
        return ks_fail(st, KS_EINVAL, 0, "tensor '%s' has %d dimensions (1 to %d)", t->name, t->nd, DNN_G_MAX_DIMS);
    int any_stride = 0;
    for (int i = 0; i < t->nd; i++) {
        if (t->dim[i] < 1 || t->dim[i] > ((int64_t)1 << 40))
            return ks_fail(st, KS_EINVAL, 0, "tensor '%s': dimension %d is %lld (must be >= 1)", t->name, i + 1,
                           (long long)t->dim[i]);
        if (t->stride[i] < 0)
            return ks_fail(st, KS_EINVAL, 0, "tensor '%s': stride %d is negative", t->name, i + 1);
        any_stride |= t->stride[i] != 0;
    }
    for (int i = 0; any_stride && i < t->nd; i++)
        if (t->stride[i] < 1)
            return ks_fail(st, KS_EINVAL, 0, "tensor '%s': give every stride (>= 1) or none", t->name);
    if (t->layout != DNN_LAYOUT_ROW && t->layout != DNN_LAYOUT_NHWC)
        return ks_fail(st, KS_EINVAL, 0, "tensor '%s': unknown layout %d", t->name, t->layout);
    if (t->layout == DNN_LAYOUT_NHWC && t->nd && t->nd < 3)
        return ks_fail(st, KS_EINVAL, 0, "tensor '%s': layout nhwc needs at least 3 dimensions (N, C, spatial)",
                       t->name);
    if (t->by_value && t->is_virtual)
        return ks_fail(st, KS_EINVAL, 0, "tensor '%s' cannot be both virtual and a by-value scalar", t->name);
    if (t->by_value && isnan(t->value))
        return ks_fail(st, KS_EINVAL, 0, "tensor '%s': the scalar's value is NaN", t->name);
    if (t->by_value && t->dtype == DNN_DT_BOOL)
        return ks_fail(st, KS_EINVAL, 0, "tensor '%s': a by-value scalar cannot be bool", t->name);
    if (t->dtype == DNN_DT_BOOL && !t->is_virtual)
        return ks_fail(st, KS_EINVAL, 0, "tensor '%s': bool tensors must be virtual (cuDNN packs them)", t->name);
    if (t->by_value && t->nd) {
        for (int i = 0; i < t->nd; i++)
            if (t->dim[i] != 1)
                return ks_fail(st, KS_EINVAL, 0, "tensor '%s': a by-value scalar has every dimension 1", t->name);
    }
    return KS_OK;
}

/* Same rank, and every dimension of b is a's or 1 (broadcast). */
static int broadcasts(const dnn_g_tensor *a, const dnn_g_tensor *b)
{
    if (a->nd != b->nd)
        return 0;
    for (int i = 0; i < a->nd; i++)
        if (b->dim[i] != a->dim[i] && b->dim[i] != 1)
            return 0;
    return 1;
}

static void dims_str(const dnn_g_tensor *t, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->nd && used + 1 < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%lld", i ? "," : "[", (long long)t->dim[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used + 1 < n)
        snprintf(buf + used, n - used, "]");
}

/* The kind-specific checks of op i, whose tensors are resolved. */
static int check_op_shapes(const dnn_graph_desc *r, const dnn_g_op *op, const char *lab, ks_status *st)
{
    const dnn_g_tensor *T[DNN_G_ROLES];
    for (int k = 0; k < DNN_G_ROLES; k++)
        T[k] = op->io[k] >= 0 ? &r->t[op->io[k]] : NULL;
    char d1[96], d2[96], d3[96];
    switch (op->kind) {
    case DNN_K_POINTWISE:
        for (int k = PW_B; k <= PW_T; k++)
            if (T[k] && !broadcasts(T[PW_X], T[k]) && !broadcasts(T[k], T[PW_X])) {
                dims_str(T[PW_X], d1, sizeof d1);
                dims_str(T[k], d2, sizeof d2);
                return ks_fail(st, KS_EINVAL, 0, "%s: '%s' %s and '%s' %s have different ranks or do not broadcast",
                               lab, T[PW_X]->name, d1, T[k]->name, d2);
            }
        if (T[PW_Y]->nd != T[PW_X]->nd)
            return ks_fail(st, KS_EINVAL, 0, "%s: output '%s' has rank %d, input '%s' rank %d", lab, T[PW_Y]->name,
                           T[PW_Y]->nd, T[PW_X]->name, T[PW_X]->nd);
        if (op->axis >= T[PW_X]->nd)
            return ks_fail(st, KS_EINVAL, 0, "%s: axis %lld is past the last dimension of '%s'", lab,
                           (long long)op->axis, T[PW_X]->name);
        break;
    case DNN_K_REDUCTION:
        if (!broadcasts(T[RD_X], T[RD_Y])) {
            dims_str(T[RD_X], d1, sizeof d1);
            dims_str(T[RD_Y], d2, sizeof d2);
            return ks_fail(st, KS_EINVAL, 0, "%s: output '%s' %s must have the rank of '%s' %s, with 1 where it is "
                           "reduced", lab, T[RD_Y]->name, d2, T[RD_X]->name, d1);
        }
        break;
    case DNN_K_MATMUL: {
        const dnn_g_tensor *a = T[MM_A], *b = T[MM_B], *c = T[MM_C];
        int n = a->nd;
        int ok = n >= 2 && b->nd == n && c->nd == n && a->dim[n - 1] == b->dim[n - 2] &&
                 c->dim[n - 2] == a->dim[n - 2] && c->dim[n - 1] == b->dim[n - 1];
        for (int i = 0; ok && i < n - 2; i++)
            ok = (a->dim[i] == c->dim[i] || a->dim[i] == 1) && (b->dim[i] == c->dim[i] || b->dim[i] == 1);
        if (!ok) {
            dims_str(a, d1, sizeof d1);
            dims_str(b, d2, sizeof d2);
            dims_str(c, d3, sizeof d3);
            return ks_fail(st, KS_EINVAL, 0, "%s: needs a [...,M,K], b [...,K,N], c [...,M,N] of one rank (>= 2) "
                           "with batch dimensions equal or 1; got '%s' %s, '%s' %s, '%s' %s", lab, a->name, d1,
                           b->name, d2, c->name, d3);
        }
        break;
    }
    case DNN_K_CONV_FWD:
    case DNN_K_CONV_BWD_DATA: {
        /* x and y in forward terms: bwd_data's dx is the forward input. */
        const dnn_g_tensor *x = T[op->kind == DNN_K_CONV_FWD ? CV_IN : CV_OUT];
        const dnn_g_tensor *y = T[op->kind == DNN_K_CONV_FWD ? CV_OUT : CV_IN];
        const dnn_g_tensor *w = T[CV_W];
        int n = x->nd;
        if (n < 3 || n > 2 + DNN_G_MAX_SPATIAL || w->nd != n || y->nd != n)
            return ks_fail(st, KS_EINVAL, 0, "%s: x, w and y need one rank of 3 to %d ([N,C,spatial...]), got %d, "
                           "%d, %d", lab, 2 + DNN_G_MAX_SPATIAL, n, w->nd, y->nd);
        if (x->dim[1] % w->dim[1] != 0 || w->dim[0] % (x->dim[1] / w->dim[1]) != 0)
            return ks_fail(st, KS_EINVAL, 0, "%s: the filter's channels (%lld) must divide the input's (%lld) into "
                           "groups that divide the output channels (%lld)", lab, (long long)w->dim[1],
                           (long long)x->dim[1], (long long)w->dim[0]);
        if (y->dim[0] != x->dim[0] || y->dim[1] != w->dim[0])
            return ks_fail(st, KS_EINVAL, 0, "%s: the output needs N=%lld and K=%lld (the filter's first "
                           "dimension), got %lld and %lld", lab, (long long)x->dim[0], (long long)w->dim[0],
                           (long long)y->dim[0], (long long)y->dim[1]);
        for (int s = 0; s < n - 2; s++) {
            if (op->stride[s] < 1 || op->dilation[s] < 1 || op->pre_pad[s] < 0 || op->post_pad[s] < 0)
                return ks_fail(st, KS_EINVAL, 0, "%s: strides and dilations must be >= 1, padding >= 0", lab);
            int64_t span = op->dilation[s] * (w->dim[2 + s] - 1) + 1;
            int64_t want = out_extent(x->dim[2 + s], op->pre_pad[s], op->post_pad[s], span, op->stride[s]);
            if (want < 1 || y->dim[2 + s] != want)
                return ks_fail(st, KS_EINVAL, 0, "%s: spatial dimension %d of the output is %lld; the input %lld, "
                               "filter %lld, padding %lld+%lld, stride %lld and dilation %lld give %lld", lab, s + 1,
                               (long long)y->dim[2 + s], (long long)x->dim[2 + s], (long long)w->dim[2 + s],
                               (long long)op->pre_pad[s], (long long)op->post_pad[s], (long long)op->stride[s],
                               (long long)op->dilation[s], (long long)want);
        }
        break;
    }
    case DNN_K_RESAMPLE_FWD: {
        const dnn_g_tensor *x = T[RS_X], *y = T[RS_Y];
        int n = x->nd;
        if (n < 3 || n > 2 + DNN_G_MAX_SPATIAL || y->nd != n)
            return ks_fail(st, KS_EINVAL, 0, "%s: x and y need one rank of 3 to %d ([N,C,spatial...])", lab,
                           2 + DNN_G_MAX_SPATIAL);
        if (y->dim[0] != x->dim[0] || y->dim[1] != x->dim[1])
            return ks_fail(st, KS_EINVAL, 0, "%s: the output keeps N and C of the input", lab);
        if (T[RS_IDX] && op->mode != CUDNN_RESAMPLE_MAXPOOL)
            return ks_fail(st, KS_EINVAL, 0, "%s: an index output needs MAXPOOL", lab);
        for (int s = 0; s < n - 2; s++) {
            if (op->stride[s] < 1 || op->window[s] < 1 || op->pre_pad[s] < 0 || op->post_pad[s] < 0)
                return ks_fail(st, KS_EINVAL, 0, "%s: windows and strides must be >= 1, padding >= 0", lab);
            int64_t want = out_extent(x->dim[2 + s], op->pre_pad[s], op->post_pad[s], op->window[s], op->stride[s]);
            if (op->mode != CUDNN_RESAMPLE_NEAREST && op->mode != CUDNN_RESAMPLE_BILINEAR &&
                (want < 1 || y->dim[2 + s] != want))
                return ks_fail(st, KS_EINVAL, 0, "%s: spatial dimension %d of the output is %lld; the input %lld, "
                               "window %lld, padding %lld+%lld and stride %lld give %lld", lab, s + 1,
                               (long long)y->dim[2 + s], (long long)x->dim[2 + s], (long long)op->window[s],
                               (long long)op->pre_pad[s], (long long)op->post_pad[s], (long long)op->stride[s],
                               (long long)want);
        }
        if (op->padding_mode < -1 || op->padding_mode > 2)
            return ks_fail(st, KS_EINVAL, 0, "%s: unknown padding mode %d", lab, op->padding_mode);
        break;
    }
    case DNN_K_NORM_FWD: {
        const dnn_g_tensor *x = T[NM_X];
        if (x->nd < 2)
            return ks_fail(st, KS_EINVAL, 0, "%s: x needs at least 2 dimensions", lab);
        if (!dnn_graph_dtype_bytes(T[NM_Y]->dtype) && !T[NM_Y]->is_virtual)
            return ks_fail(st, KS_EINVAL, 0, "%s: y cannot be bool", lab);
        for (int k = NM_SCALE; k <= NM_INVVAR; k++)
            if (T[k] && k != NM_EPS && T[k]->nd != x->nd)
                return ks_fail(st, KS_EINVAL, 0, "%s: '%s' (%s) needs the rank of x (%d)", lab, T[k]->name,
                               roles[op->kind][k], x->nd);
        if (T[NM_EPS] && !T[NM_EPS]->by_value)
            return ks_fail(st, KS_EINVAL, 0, "%s: epsilon '%s' must be a by-value scalar (value = ...)", lab,
                           T[NM_EPS]->name);
        if (op->phase != DNN_PHASE_INFERENCE && op->phase != DNN_PHASE_TRAINING)
            return ks_fail(st, KS_EINVAL, 0, "%s: unknown phase %d", lab, op->phase);
        break;
    }
    case DNN_K_RESHAPE:
        if (numel(T[0]) != numel(T[1]))
            return ks_fail(st, KS_EINVAL, 0, "%s: '%s' and '%s' hold different numbers of elements", lab,
                           T[0]->name, T[1]->name);
        break;
    default:
        break;
    }
    return KS_OK;
}

/* The roles op must have (a mask over its slots). */
static unsigned required_roles(const dnn_g_op *op)
{
    switch (op->kind) {
    case DNN_K_POINTWISE: {
        const mode_def *m = dnn_graph_mode_find(op->kind, op->mode);
        int arity = m ? m->arity : 1;
        unsigned need = 1u << PW_X | 1u << PW_Y;
        if (arity >= 2)
            need |= 1u << PW_B;
        if (arity >= 3)
            need |= 1u << PW_T;
        return need;
    }
    case DNN_K_REDUCTION: case DNN_K_RESHAPE: return 3u;
    case DNN_K_MATMUL: case DNN_K_CONV_FWD: case DNN_K_CONV_BWD_DATA: return 7u;
    case DNN_K_RESAMPLE_FWD: return 1u << RS_X | 1u << RS_Y;
    case DNN_K_NORM_FWD: {
        unsigned need = 1u << NM_X | 1u << NM_Y | 1u << NM_SCALE;
        switch (op->mode) {
        case CUDNN_RMS_NORM: need |= 1u << NM_EPS; break;
        case CUDNN_BATCH_NORM:
            need |= 1u << NM_BIAS | 1u << NM_MEAN | 1u << NM_INVVAR;
            if (op->phase == DNN_PHASE_TRAINING)
                need |= 1u << NM_EPS;
            break;
        default: need |= 1u << NM_BIAS | 1u << NM_EPS; break;
        }
        if (op->phase == DNN_PHASE_TRAINING && op->mode != CUDNN_RMS_NORM)
            need |= 1u << NM_MEAN | 1u << NM_INVVAR;
        if (op->phase == DNN_PHASE_TRAINING && op->mode == CUDNN_RMS_NORM)
            need |= 1u << NM_INVVAR;
        return need;
    }
    default: return 0;
    }
}

/* Roles op may not have. */
static unsigned refused_roles(const dnn_g_op *op)
{
    if (op->kind == DNN_K_POINTWISE) {
        const mode_def *m = dnn_graph_mode_find(op->kind, op->mode);
        int arity = m ? m->arity : 1;
        unsigned no = 0;
        if (arity < 2)
            no |= 1u << PW_B;
        if (arity < 3)
            no |= 1u << PW_T;
        return no;
    }
    if (op->kind == DNN_K_NORM_FWD && op->phase == DNN_PHASE_INFERENCE && op->mode != CUDNN_BATCH_NORM)
        return 1u << NM_MEAN | 1u << NM_INVVAR;
    return 0;
}

int dnn_graph_resolve(const dnn_graph_desc *d, dnn_graph_desc *r, ks_status *st)
{
    if (!d || !r)
        return ks_fail(st, KS_EINVAL, 0, "dnn_graph_resolve: NULL argument");
    if (r != d)
        *r = *d;
    if (r->ntensors < 1 || r->ntensors > DNN_G_MAX_TENSORS)
        return ks_fail(st, KS_EINVAL, 0, "a graph needs 1 to %d tensors, has %d", DNN_G_MAX_TENSORS, r->ntensors);
    if (r->nops < 1 || r->nops > DNN_G_MAX_OPS)
        return ks_fail(st, KS_EINVAL, 0, "a graph needs 1 to %d operations, has %d", DNN_G_MAX_OPS, r->nops);
    if (r->compute != DNN_DT_F32 && r->compute != DNN_DT_F16 && r->compute != DNN_DT_BF16 &&
        r->compute != DNN_DT_I32)
        return ks_fail(st, KS_EINVAL, 0, "the graph's compute type must be f32, f16, bf16 or i32");
    if (r->plans < 1 || r->plans > DNN_MAX_PLANS)
        return ks_fail(st, KS_EINVAL, 0, "plans must be between 1 and %d, not %d", DNN_MAX_PLANS, r->plans);
    if (r->engine < -1)
        return ks_fail(st, KS_EINVAL, 0, "engine must be a global engine index >= 0 (or -1 for any)");
    if (r->math < DNN_MATH_ANY || r->math > DNN_MATH_TF32)
        return ks_fail(st, KS_EINVAL, 0, "unknown math filter %d", r->math);
    for (int i = 0; i < r->ntensors; i++) {
        if (check_tensor(&r->t[i], st))
            return st->code;
        for (int j = 0; j < i; j++)
            if (strcmp(r->t[i].name, r->t[j].name) == 0)
                return ks_fail(st, KS_EINVAL, 0, "tensor '%s' is described twice", r->t[i].name);
    }
    /* Explicit dimensions get their strides now; inferred ones below. */
    for (int i = 0; i < r->ntensors; i++) {
        dnn_g_tensor *t = &r->t[i];
        if (t->nd && t->stride[0] == 0)
            packed_strides(t);
    }

    int writer[DNN_G_MAX_TENSORS], used[DNN_G_MAX_TENSORS];
    for (int i = 0; i < r->ntensors; i++)
        writer[i] = used[i] = -1;
    char lab[96];
    for (int i = 0; i < r->nops; i++) {
        dnn_g_op *op = &r->op[i];
        if (op->kind < 0 || op->kind >= DNN_K_COUNT)
            return ks_fail(st, KS_EINVAL, 0, "op %d: unknown kind %d", i, op->kind);
        dnn_graph_op_label(op, i, lab, sizeof lab);
        if (modes_of(op->kind)->name && !dnn_graph_mode_find(op->kind, op->mode))
            return ks_fail(st, KS_EINVAL, 0, op->mode == -1 ? "%s needs a mode" : "%s: unknown mode %d", lab,
                           op->mode);
        if (op->compute != -1 && (op->compute < 0 || op->compute >= DNN_DT_COUNT))
            return ks_fail(st, KS_EINVAL, 0, "%s: unknown compute type %d", lab, op->compute);
        unsigned need = required_roles(op), no = refused_roles(op);
        for (int k = 0; k < DNN_G_ROLES; k++) {
            const char *rn = roles[op->kind][k];
            int ti = op->io[k];
            if (!rn) {
                if (ti != -1)
                    return ks_fail(st, KS_EINVAL, 0, "%s: has no tensor slot %d", lab, k);
                continue;
            }
            if (ti < -1 || ti >= r->ntensors)
                return ks_fail(st, KS_EINVAL, 0, "%s: %s names tensor %d, which does not exist", lab, rn, ti);
            if (ti < 0 && (need & (1u << k)))
                return ks_fail(st, KS_EINVAL, 0, "%s needs a tensor for '%s'", lab, rn);
            if (ti >= 0 && (no & (1u << k)))
                return ks_fail(st, KS_EINVAL, 0, "%s takes no '%s'", lab, rn);
        }
        /* Reads before writes: a virtual input must come from an earlier op. */
        for (int k = 0; k < DNN_G_ROLES && roles[op->kind][k]; k++) {
            int ti = op->io[k];
            if (ti < 0)
                continue;
            dnn_g_tensor *t = &r->t[ti];
            if (used[ti] < 0)
                used[ti] = i;
            if (dnn_graph_role_written(op, k)) {
                if (t->by_value)
                    return ks_fail(st, KS_EINVAL, 0, "%s writes '%s', a by-value scalar", lab, t->name);
                if (writer[ti] >= 0)
                    return ks_fail(st, KS_EINVAL, 0, "tensor '%s' is written by op %d and op %d", t->name,
                                   writer[ti], i);
                writer[ti] = i;
            } else if (t->is_virtual && writer[ti] < 0) {
                return ks_fail(st, KS_EINVAL, 0, "%s reads virtual tensor '%s' before any operation writes it", lab,
                               t->name);
            }
        }
        /* Inferred shapes: scalars take the rank of the op's first shaped
         * operand; a pointwise output takes x's dimensions and strides. */
        int rank = 0;
        for (int k = 0; k < DNN_G_ROLES && roles[op->kind][k] && !rank; k++)
            if (op->io[k] >= 0 && !r->t[op->io[k]].by_value && r->t[op->io[k]].nd)
                rank = r->t[op->io[k]].nd;
        for (int k = 0; k < DNN_G_ROLES && roles[op->kind][k]; k++) {
            int ti = op->io[k];
            if (ti < 0 || r->t[ti].nd || !r->t[ti].by_value)
                continue;
            dnn_g_tensor *t = &r->t[ti];
            t->nd = rank ? rank : 1;
            for (int j = 0; j < t->nd; j++)
                t->dim[j] = t->stride[j] = 1;
        }
        if (op->kind == DNN_K_POINTWISE && op->io[PW_Y] >= 0 && r->t[op->io[PW_Y]].nd == 0 &&
            r->t[op->io[PW_X]].nd) {
            dnn_g_tensor *y = &r->t[op->io[PW_Y]];
            const dnn_g_tensor *x = &r->t[op->io[PW_X]];
            y->nd = x->nd;
            memcpy(y->dim, x->dim, sizeof y->dim);
            memcpy(y->stride, x->stride, sizeof y->stride);
        }
        for (int k = 0; k < DNN_G_ROLES && roles[op->kind][k]; k++)
            if (op->io[k] >= 0 && r->t[op->io[k]].nd == 0)
                return ks_fail(st, KS_EINVAL, 0, "tensor '%s' (%s of %s) needs dims (only by-value scalars and "
                               "pointwise outputs take theirs from the graph)", r->t[op->io[k]].name,
                               roles[op->kind][k], lab);
        if (check_op_shapes(r, op, lab, st))
            return st->code;
    }
    for (int i = 0; i < r->ntensors; i++) {
        if (used[i] < 0)
            return ks_fail(st, KS_EINVAL, 0, "tensor '%s' is not used by any operation", r->t[i].name);
        if (r->t[i].is_virtual && writer[i] < 0)
            return ks_fail(st, KS_EINVAL, 0, "virtual tensor '%s' is never written", r->t[i].name);
    }
    return KS_OK;
}

size_t dnn_graph_tensor_bytes(const dnn_graph_desc *r, int i)
{
    if (!r || i < 0 || i >= r->ntensors)
        return 0;
    const dnn_g_tensor *t = &r->t[i];
    if (t->is_virtual || t->by_value || t->nd == 0)
        return 0;
    size_t last = 0;
    for (int k = 0; k < t->nd; k++)
        last += (size_t)(t->dim[k] - 1) * (size_t)t->stride[k];
    return (last + 1) * dnn_graph_dtype_bytes(t->dtype);
}

