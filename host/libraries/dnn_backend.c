/*
 * dnn_backend.c: cuDNN's backend API for klab's baselines (see dnn_backend.h).
 *
 * cuDNN is opened through dynlib and every entry point used here is
 * resolved by name into a pointer of the exact type the header declares
 * (__typeof__ of the declaration, which does not reference the symbol), so
 * the binary never links the library.
 */
#include "libraries/dnn_backend.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "driver/dynlib.h"

/* ---- the library ------------------------------------------------------- */

static dnn_api g_api;
static int g_api_ready;
static pthread_mutex_t g_api_lock = PTHREAD_MUTEX_INITIALIZER;

const dnn_api *dnn_api_get(ks_status *st)
{
    pthread_mutex_lock(&g_api_lock);
    if (g_api_ready) {
        pthread_mutex_unlock(&g_api_lock);
        return &g_api;
    }
    const dynlib *lib = dynlib_get(&dynlib_cudnn, st);
    dnn_api a;
    memset(&a, 0, sizeof a);
    const dynlib_symbol syms[] = {
        {"cudnnGetVersion", (void **)&a.get_version, 0},
        {"cudnnGetErrorString", (void **)&a.error_string, 0},
        {"cudnnCreate", (void **)&a.create, 0},
        {"cudnnDestroy", (void **)&a.destroy, 0},
        {"cudnnSetStream", (void **)&a.set_stream, 0},
        {"cudnnBackendCreateDescriptor", (void **)&a.bcreate, 0},
        {"cudnnBackendDestroyDescriptor", (void **)&a.bdestroy, 0},
        {"cudnnBackendSetAttribute", (void **)&a.bset, 0},
        {"cudnnBackendGetAttribute", (void **)&a.bget, 0},
        {"cudnnBackendFinalize", (void **)&a.bfinalize, 0},
        {"cudnnBackendExecute", (void **)&a.bexecute, 0},
        /* cuDNN 9.0 and later; its absence only costs detail in messages. */
        {"cudnnGetLastErrorString", (void **)&a.last_error, 1},
    };
    int ok = dynlib_bind(lib, syms, DYNLIB_COUNT(syms), st) == KS_OK;
    if (ok) {
        a.version = a.get_version();
        g_api = a;
        g_api_ready = 1;
    }
    pthread_mutex_unlock(&g_api_lock);
    return ok ? &g_api : NULL;
}

int dnn_load(ks_status *st)
{
    return dnn_api_get(st) ? KS_OK : st->code;
}

void dnn_version_string(size_t v, char *buf, size_t n)
{
    if (buf && n)
        snprintf(buf, n, "%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
}

int dnn_version(char *buf, size_t n, size_t *code, ks_status *st)
{
    if (buf && n)
        buf[0] = '\0';
    if (code)
        *code = 0;
    const dnn_api *a = dnn_api_get(st);
    if (!a)
        return st->code;
    if (code)
        *code = a->version;
    dnn_version_string(a->version, buf, n);
    return KS_OK;
}

const char *dnn_library_path(const char **how, ks_status *st)
{
    const dynlib *lib = dynlib_get(&dynlib_cudnn, st);
    if (how)
        *how = lib ? lib->how : NULL;
    return lib ? lib->path : NULL;
}

const char *dnn_status_name(int status)
{
    if (g_api_ready && g_api.error_string)
        return g_api.error_string((cudnnStatus_t)status);
    static _Thread_local char buf[40];
    snprintf(buf, sizeof buf, "CUDNN_STATUS_%d", status);
    return buf;
}

int dnn_fail(ks_status *st, const dnn_api *a, int status, const char *what)
{
    char detail[KS_MSG_MAX];
    detail[0] = '\0';
    if (a && a->last_error)
        a->last_error(detail, sizeof detail);
    int code = KS_ECUDA;
    if ((status >= 2000 && status < 4000))
        code = KS_EUNSUPPORTED;
    else if (status == 4003 || status == 4004)
        code = KS_ENOMEM;
    return ks_fail(st, code, status, "%s: %s (%d)%s%s", what, dnn_status_name(status), status,
                   detail[0] ? ": " : "", detail);
}

/* ---- the graph builder ------------------------------------------------- */

void dnn_gb_init(dnn_gb *g, const dnn_api *a, ks_status *st)
{
    memset(g, 0, sizeof *g);
    g->a = a;
    g->st = st;
    g->next_uid = 1000;
}

void dnn_gb_destroy(dnn_gb *g)
{
    for (int i = g->nall - 1; i >= 0; i--)
        if (g->all[i])
            g->a->bdestroy(g->all[i]);
    g->nall = 0;
    g->nops = 0;
    g->ntensors = 0;
}

cudnnBackendDescriptor_t dnn_gb_new(dnn_gb *g, cudnnBackendDescriptorType_t type, const char *what)
{
    if (g->rc)
        return NULL;
    if (g->nall >= DNN_GB_MAX_DESC) {
        g->rc = ks_fail(g->st, KS_EINVAL, 0, "graph too large (%d descriptors)", g->nall);
        return NULL;
    }
    cudnnBackendDescriptor_t d = NULL;
    int s = g->a->bcreate(type, &d);
    if (s != CUDNN_STATUS_SUCCESS) {
        char w[200];
        snprintf(w, sizeof w, "cudnnBackendCreateDescriptor(%s)", what);
        g->rc = dnn_fail(g->st, g->a, s, w);
        return NULL;
    }
    g->all[g->nall++] = d;
    return d;
}

void dnn_gb_set(dnn_gb *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t attr,
                cudnnBackendAttributeType_t type, int64_t count, const void *v, const char *what)
{
    if (g->rc)
        return;
    int s = g->a->bset(d, attr, type, count, v);
    if (s != CUDNN_STATUS_SUCCESS) {
        char w[200];
        snprintf(w, sizeof w, "cudnnBackendSetAttribute(%s, attribute %d)", what, (int)attr);
        g->rc = dnn_fail(g->st, g->a, s, w);
    }
}

void dnn_gb_fin(dnn_gb *g, cudnnBackendDescriptor_t d, const char *what)
{
    if (g->rc)
        return;
    int s = g->a->bfinalize(d);
    if (s != CUDNN_STATUS_SUCCESS) {
        char w[200];
        snprintf(w, sizeof w, "cudnnBackendFinalize(%s)", what);
        g->rc = dnn_fail(g->st, g->a, s, w);
    }
}

void dnn_gb_set_desc(dnn_gb *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t attr,
                     cudnnBackendDescriptor_t v, const char *what)
{
    dnn_gb_set(g, d, attr, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v, what);
}

void dnn_gb_op(dnn_gb *g, cudnnBackendDescriptor_t op, const char *name)
{
    if (g->rc)
        return;
    if (g->nops >= DNN_GB_MAX_OPS) {
        g->rc = ks_fail(g->st, KS_EINVAL, 0, "graph has more than %d operations", DNN_GB_MAX_OPS);
        return;
    }
    g->ops[g->nops] = op;
    g->opname[g->nops] = name;
    g->nops++;
}

dnn_tens dnn_gb_tensor(dnn_gb *g, int64_t uid, int nd, const int64_t *dim, const int64_t *str,
                       cudnnDataType_t dt, int is_virtual, int by_value)
{
    dnn_tens t;
    memset(&t, 0, sizeof t);
    if (nd < 1 || nd > DNN_GB_MAX_DIMS) {
        if (!g->rc)
            g->rc = ks_fail(g->st, KS_EINVAL, 0, "a tensor needs 1 to %d dimensions, not %d", DNN_GB_MAX_DIMS, nd);
        return t;
    }
    t.uid = uid ? uid : g->next_uid++;
    t.nd = nd;
    t.dt = dt;
    for (int i = 0; i < nd; i++) {
        t.dim[i] = dim[i];
        t.str[i] = str[i];
    }
    cudnnBackendDescriptor_t d = dnn_gb_new(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
    int64_t align = 16;
    bool yes = true;
    dnn_gb_set(g, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor data type");
    dnn_gb_set(g, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, t.dim, "tensor dimensions");
    dnn_gb_set(g, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, t.str, "tensor strides");
    dnn_gb_set(g, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &t.uid, "tensor uid");
    dnn_gb_set(g, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
    if (is_virtual)
        dnn_gb_set(g, d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes, "tensor virtual");
    if (by_value)
        dnn_gb_set(g, d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes, "tensor by value");
    dnn_gb_fin(g, d, "tensor");
    if (!g->rc)
        g->ntensors++;
    t.d = d;
    return t;
}

void dnn_gb_pw(dnn_gb *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, const dnn_tens *x,
               const dnn_tens *b, const dnn_tens *t, const dnn_tens *y, int64_t axis, double param,
               const char *name)
{
    cudnnBackendDescriptor_t pw = dnn_gb_new(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, name);
    dnn_gb_set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, name);
    dnn_gb_set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, name);
    if (axis >= 0)
        dnn_gb_set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, name);
    if (!isnan(param)) {
        /* The backend takes these scalars as doubles. */
        cudnnBackendAttributeName_t attr = mode == CUDNN_POINTWISE_ELU_FWD ? CUDNN_ATTR_POINTWISE_ELU_ALPHA
                                         : mode == CUDNN_POINTWISE_SOFTPLUS_FWD ? CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA
                                         : CUDNN_ATTR_POINTWISE_SWISH_BETA;
        dnn_gb_set(g, pw, attr, CUDNN_TYPE_DOUBLE, 1, &param, name);
    }
    dnn_gb_fin(g, pw, name);
    cudnnBackendDescriptor_t op = dnn_gb_new(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x->d, name);
    if (b)
        dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b->d, name);
    if (t)
        dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t->d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y->d, name);
    dnn_gb_fin(g, op, name);
    dnn_gb_op(g, op, name);
}

void dnn_gb_matmul(dnn_gb *g, const dnn_tens *a, const dnn_tens *b, const dnn_tens *c, cudnnDataType_t comp,
                   const char *name)
{
    cudnnBackendDescriptor_t mm = dnn_gb_new(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, name);
    dnn_gb_set(g, mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, name);
    dnn_gb_fin(g, mm, name);
    cudnnBackendDescriptor_t op = dnn_gb_new(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a->d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b->d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c->d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm, name);
    dnn_gb_fin(g, op, name);
    dnn_gb_op(g, op, name);
}

void dnn_gb_reduce(dnn_gb *g, cudnnReduceTensorOp_t how, cudnnDataType_t comp, const dnn_tens *x,
                   const dnn_tens *y, const char *name)
{
    cudnnBackendDescriptor_t r = dnn_gb_new(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, name);
    dnn_gb_set(g, r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, name);
    dnn_gb_set(g, r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how, name);
    if (!g->rc && g->a->version >= 91100) {
        /* The frontend states the (default) non-deterministic mode from 9.11 on. */
        bool det = false;
        dnn_gb_set(g, r, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &det, name);
    }
    dnn_gb_fin(g, r, name);
    cudnnBackendDescriptor_t op = dnn_gb_new(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, r, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x->d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y->d, name);
    dnn_gb_fin(g, op, name);
    dnn_gb_op(g, op, name);
}

void dnn_gb_reshape(dnn_gb *g, const dnn_tens *x, const dnn_tens *y, const char *name)
{
    cudnnBackendDescriptor_t op = dnn_gb_new(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x->d, name);
    dnn_gb_set_desc(g, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y->d, name);
    dnn_gb_fin(g, op, name);
    dnn_gb_op(g, op, name);
}

/* ---- engines ----------------------------------------------------------- */

void dnn_notes_string(unsigned notes, char *buf, size_t n)
{
    static const char *const names[] = {
        "tensor_core", "down_convert_inputs", "reduced_precision_reduction", "fft", "nondeterministic",
        "winograd", "winograd_4x4", "winograd_6x6", "winograd_13x13", "strict_nan_prop",
    };
    if (!buf || !n)
        return;
    buf[0] = '\0';
    size_t used = 0;
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (notes & DNN_NOTE_BIT(i)) {
            int w = snprintf(buf + used, n - used, "%s%s", used ? "," : "", names[i]);
            if (w < 0 || (size_t)w >= n - used)
                return;
            used += (size_t)w;
        }
}

/* The global index and numerical notes of the engine behind an engine
 * configuration; index -1 when cuDNN cannot say. */
static int64_t engine_of(const dnn_api *a, cudnnBackendDescriptor_t cfg, unsigned *notes)
{
    *notes = 0;
    cudnnBackendDescriptor_t eng = NULL;
    if (a->bcreate(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS)
        return -1;
    int64_t n = 0, idx = -1;
    if (a->bget(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) !=
            CUDNN_STATUS_SUCCESS ||
        a->bget(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &idx) != CUDNN_STATUS_SUCCESS) {
        a->bdestroy(eng);
        return -1;
    }
    cudnnBackendNumericalNote_t list[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t got = 0;
    if (a->bget(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                &got, list) == CUDNN_STATUS_SUCCESS)
        for (int64_t i = 0; i < got && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++)
            if ((int)list[i] >= 0 && (int)list[i] < 32)
                *notes |= DNN_NOTE_BIT(list[i]);
    a->bdestroy(eng);
    return idx;
}

void dnn_engines_release(const dnn_api *a, dnn_engines *e)
{
    if (!a)
        return;
    for (int i = 0; i < e->nplan; i++)
        if (e->plan[i])
            a->bdestroy(e->plan[i]);
    e->nplan = 0;
    for (int i = 0; i < e->ncfg; i++)
        if (e->cfgs[i])
            a->bdestroy(e->cfgs[i]);
    e->ncfg = 0;
    if (e->heur)
        a->bdestroy(e->heur);
    e->heur = NULL;
    if (e->graph)
        a->bdestroy(e->graph);
    e->graph = NULL;
}

static void log_try(dnn_engines *e, int64_t engine, int rank, int mode, const char *why)
{
    if (e->nlog >= DNN_MAX_TRIED)
        return;
    dnn_engine_try *t = &e->log[e->nlog++];
    t->engine = engine;
    t->rank = rank;
    t->mode = mode;
    snprintf(t->why, sizeof t->why, "%.*s", (int)sizeof t->why - 1, why);
}

/* The operation graph of g's operations (on h when not NULL). */
static int make_graph(const dnn_api *a, cudnnHandle_t h, const dnn_gb *g, const char *what,
                      cudnnBackendDescriptor_t *out, ks_status *st)
{
    *out = NULL;
    if (g->nops < 1)
        return ks_fail(st, KS_EINVAL, 0, "the %s has no operation", what);
    int s = a->bcreate(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, out);
    if (s == CUDNN_STATUS_SUCCESS && h)
        s = a->bset(*out, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    if (s == CUDNN_STATUS_SUCCESS)
        s = a->bset(*out, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops);
    if (s == CUDNN_STATUS_SUCCESS)
        s = a->bfinalize(*out);
    if (s != CUDNN_STATUS_SUCCESS) {
        char w[240];
        snprintf(w, sizeof w, "cuDNN refused the %s (operation graph)", what);
        if (*out)
            a->bdestroy(*out);
        *out = NULL;
        return dnn_fail(st, a, s, w);
    }
    return KS_OK;
}

/* A heuristic of mode m over graph into *heur, and its result count. */
static int heuristic(const dnn_api *a, cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t m,
                     cudnnBackendDescriptor_t *heur, int64_t *count)
{
    *count = 0;
    int s = a->bcreate(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, heur);
    if (s == CUDNN_STATUS_SUCCESS)
        s = a->bset(*heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    if (s == CUDNN_STATUS_SUCCESS)
        s = a->bset(*heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &m);
    if (s == CUDNN_STATUS_SUCCESS)
        s = a->bfinalize(*heur);
    if (s == CUDNN_STATUS_SUCCESS)
        s = a->bget(*heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, count, NULL);
    return s;
}

int dnn_engines_count(const dnn_api *a, const dnn_gb *g, const char *what, int *graph_ok, int64_t *count,
                      ks_status *st)
{
    *count = 0;
    *graph_ok = 0;
    cudnnBackendDescriptor_t graph = NULL;
    if (make_graph(a, NULL, g, what, &graph, st))
        return st->code;
    *graph_ok = 1;
    /* FALLBACK only: it lists the engines that can run the graph at all,
     * which is the question here. Mode A without a device leaks memory
     * inside cuDNN 9.19 on every call for graphs with a matmul. */
    cudnnBackendDescriptor_t heur = NULL;
    int s = heuristic(a, graph, CUDNN_HEUR_MODE_FALLBACK, &heur, count);
    if (heur)
        a->bdestroy(heur);
    a->bdestroy(graph);
    if (s != CUDNN_STATUS_SUCCESS) {
        char w[240];
        snprintf(w, sizeof w, "engine heuristic (fallback) for the %s", what);
        return dnn_fail(st, a, s, w);
    }
    return KS_OK;
}

int dnn_engines_plan(const dnn_api *a, cudnnHandle_t h, const dnn_gb *g, const dnn_engine_filter *f,
                     const char *what, dnn_engines *e, ks_status *st)
{
    const int want = f->want > 0 ? (f->want < DNN_MAX_PLANS ? f->want : DNN_MAX_PLANS) : 1;
    if (make_graph(a, h, g, what, &e->graph, st))
        return st->code;

    /* Heuristic mode A first, then FALLBACK, as the frontend's default list. */
    const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    char last[KS_MSG_MAX];
    snprintf(last, sizeof last, "the heuristic returned no engine configuration");
    int last_status = CUDNN_STATUS_NOT_SUPPORTED;
    for (int m = 0; m < 2 && e->nplan < want; m++) {
        if (e->heur) {
            a->bdestroy(e->heur);
            e->heur = NULL;
        }
        for (int i = 0; i < e->ncfg; i++)
            if (e->cfgs[i])
                a->bdestroy(e->cfgs[i]);
        e->ncfg = 0;
        int64_t count = 0;
        int s = heuristic(a, e->graph, modes[m], &e->heur, &count);
        if (s != CUDNN_STATUS_SUCCESS) {
            ks_status tmp;
            dnn_fail(&tmp, a, s, m == 0 ? "engine heuristic (mode A)" : "engine heuristic (fallback)");
            snprintf(last, sizeof last, "%s", tmp.msg);
            last_status = s;
            continue;
        }
        if (count > DNN_MAX_CFGS)
            count = DNN_MAX_CFGS;
        for (int64_t i = 0; i < count; i++) {
            if (a->bcreate(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &e->cfgs[e->ncfg]) != CUDNN_STATUS_SUCCESS)
                break;
            e->ncfg++;
        }
        int64_t got = 0;
        if (e->ncfg > 0)
            s = a->bget(e->heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, e->ncfg, &got,
                        e->cfgs);
        if (m == 0)
            e->heur_count = (int)got;
        if (s != CUDNN_STATUS_SUCCESS)
            got = 0;
        for (int64_t i = 0; i < got && e->nplan < want; i++) {
            e->tried++;
            unsigned notes = 0;
            int64_t idx = engine_of(a, e->cfgs[i], &notes);
            char why[160];
            if (f->engine >= 0 && idx != f->engine) {
                e->filtered++;
                continue;
            }
            if ((notes & f->need_notes) != f->need_notes || (notes & f->refuse_notes)) {
                char ns[96];
                dnn_notes_string(notes, ns, sizeof ns);
                snprintf(why, sizeof why, "numerical notes {%s} %s", ns,
                         (notes & f->refuse_notes) ? "include an excluded one" : "lack a required one");
                log_try(e, idx, (int)i, modes[m], why);
                snprintf(last, sizeof last, "engine %lld: %s", (long long)idx, why);
                e->filtered++;
                continue;
            }
            cudnnBackendDescriptor_t ep = NULL;
            s = a->bcreate(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &ep);
            if (s == CUDNN_STATUS_SUCCESS && h)
                s = a->bset(ep, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
            if (s == CUDNN_STATUS_SUCCESS)
                s = a->bset(ep, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                            &e->cfgs[i]);
            if (s == CUDNN_STATUS_SUCCESS)
                s = a->bfinalize(ep);
            int64_t wsb = 0, n = 0;
            if (s == CUDNN_STATUS_SUCCESS)
                s = a->bget(ep, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &wsb);
            if (s != CUDNN_STATUS_SUCCESS) {
                ks_status tmp;
                char w[96];
                snprintf(w, sizeof w, "execution plan for engine configuration %lld", (long long)i);
                dnn_fail(&tmp, a, s, w);
                snprintf(last, sizeof last, "%s", tmp.msg);
                last_status = s;
                log_try(e, idx, (int)i, modes[m], tmp.msg);
                if (ep)
                    a->bdestroy(ep);
                continue;
            }
            int k = e->nplan++;
            e->plan[k] = ep;
            e->engine[k] = idx;
            e->rank[k] = (int)i;
            e->mode[k] = modes[m];
            e->workspace[k] = (size_t)(wsb > 0 ? wsb : 0);
            e->notes[k] = notes;
        }
    }
    if (e->nplan == 0) {
        char v[32];
        dnn_version_string(a->version, v, sizeof v);
        int code = (last_status >= 2000 && last_status < 4000) ? KS_EUNSUPPORTED : KS_ECUDA;
        int rc = ks_fail(st, code == KS_ECUDA ? KS_EUNSUPPORTED : code, last_status,
                         "cuDNN %s has no engine for the %s: %s", v, what, last);
        dnn_engines_release(a, e);
        return rc;
    }
    return KS_OK;
}

/* ---- execution --------------------------------------------------------- */

void dnn_exec_release(const dnn_api *a, dnn_exec *x)
{
    if (a && x->vp)
        a->bdestroy(x->vp);
    x->vp = NULL;
    x->n = 0;
}

int dnn_exec_run(const dnn_api *a, cudnnHandle_t h, dnn_exec *x, cudnnBackendDescriptor_t plan, int n,
                 const int64_t *uids, void *const *ptrs, CUdeviceptr ws, CUstream stream, const char *what,
                 ks_status *st)
{
    if (n < 0 || n > DNN_VP_MAX)
        return ks_fail(st, KS_EINVAL, 0, "%s: %d operands (at most %d)", what, n, DNN_VP_MAX);
    if (!x->stream_known || x->stream != stream) {
        int s = a->set_stream(h, (cudaStream_t)stream);
        if (s != CUDNN_STATUS_SUCCESS)
            return dnn_fail(st, a, s, "cudnnSetStream");
        x->stream = stream;
        x->stream_known = 1;
    }
    int same = x->vp && x->n == n && x->ws == ws;
    for (int i = 0; same && i < n; i++)
        same = x->uids[i] == uids[i] && x->ptrs[i] == ptrs[i];
    int s = CUDNN_STATUS_SUCCESS;
    if (!same) {
        dnn_exec_release(a, x);
        cudnnBackendDescriptor_t vp = NULL;
        void *wsp = (void *)(uintptr_t)ws;
        s = a->bcreate(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
        if (s == CUDNN_STATUS_SUCCESS)
            s = a->bset(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
        if (s == CUDNN_STATUS_SUCCESS)
            s = a->bset(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
        if (s == CUDNN_STATUS_SUCCESS)
            s = a->bset(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &wsp);
        if (s == CUDNN_STATUS_SUCCESS)
            s = a->bfinalize(vp);
        if (s != CUDNN_STATUS_SUCCESS) {
            if (vp)
                a->bdestroy(vp);
            return dnn_fail(st, a, s, "variant pack");
        }
        x->vp = vp;
        x->n = n;
        x->ws = ws;
        memcpy(x->uids, uids, sizeof uids[0] * (size_t)n);
        memcpy(x->ptrs, ptrs, sizeof ptrs[0] * (size_t)n);
    }
    s = a->bexecute(h, plan, x->vp);
    if (s != CUDNN_STATUS_SUCCESS) {
        int rc = dnn_fail(st, a, s, what);
        /* A refusal at execution is still a failure to run, not a graph
         * that cuDNN declined. */
        if (rc == KS_EUNSUPPORTED)
            st->code = rc = KS_ECUDA;
        return rc;
    }
    return KS_OK;
}
