/*
 * l_dnn.c: require "klab.dnn", the cuDNN attention baseline (host/libraries/dnn.h) and
 * any cuDNN graph described as data (host/libraries/dnn_graph.h).
 *
 *   dnn.version()              -> "9.19.0", 91900 | nil, msg, code   (no driver needed)
 *   dnn.library()              -> path, how ("env" | "CUDA_HOME" | "soname") | nil, msg, code
 *   dnn.describe(spec [, route]) -> {route=, nops=, tensors=, ops={"matmul Q.Kt", ...}}
 *                                 | nil, msg, code
 *       Builds and finalizes every tensor and operation descriptor of the
 *       graph without a handle (no GPU needed); route "fused" or
 *       "composite" (default: the spec's route, "composite" for auto).
 *   dnn.sdpa_plan(ctx, spec)   -> Plan | nil, msg, code
 *       spec = {direction="fwd"|"bwd", B=, H=, S=, D=, causal=false,
 *               scale=1/sqrt(D), route="auto"|"fused"|"composite", plans=1}
 *       A bad spec raises. No driver: ENODRIVER (ctx may then be nil, so
 *       that a machine without a GPU can see the clean failure); no cuDNN:
 *       ENOLIB; a graph cuDNN refuses: EUNSUPPORTED with cuDNN's message.
 *   plan:run(args [, index=1]) -> true | nil, msg, code
 *       args = {Q=, K=, V=, O=, LSE=} (forward) plus {dO=, dQ=, dK=, dV=}
 *       (backward); each an integer device address, a gpu.Buffer, or a
 *       region {buffer, offset}. Enqueued asynchronously on the legacy
 *       default stream (the one ctx:launch uses); ctx:sync() waits.
 *   plan:info()                -> {route=, direction=, causal=, B=, H=, S=, D=, scale=,
 *                                 nops=, plans=, tried=, heuristic_count=,
 *                                 engines={global index...}, ranks={...},
 *                                 workspace_bytes={...}, scratch_bytes=,
 *                                 version=, version_code=, path=, refused=}
 *   plan:free() -> true | false; __close, __gc, __tostring.
 *
 * Any cuDNN graph described as data (host/libraries/dnn_graph.h):
 *
 *   dnn.graph_describe(desc)   -> {nops=, ntensors=, ops={"pointwise RELU_FWD", ...},
 *                                 graph=bool, graph_error=, engines=n | nil,
 *                                 engines_error=, version=, version_code=,
 *                                 tensors={name={dtype=, dims=, strides=, bytes=,
 *                                 virtual=, value=}}} | nil, msg, code
 *       Builds and finalizes every tensor and operation descriptor without
 *       a handle (no GPU), then tries the operation graph and the FALLBACK
 *       heuristic without one (graph, engines: what the loaded library
 *       says; older ones need a device for these). A descriptor cuDNN
 *       refuses is nil, msg, "EUNSUPPORTED" naming the operation.
 *   dnn.graph_plan(ctx, desc)  -> GraphPlan | nil, msg, code   (ctx nil: as sdpa_plan)
 *       desc = {
 *         tensors = {name = {dtype="f32"|"bf16"|"f16"|"i32"|"i64"|"bool",
 *                            dims={...}, strides={...} (default packed
 *                            row-major), layout="row"|"nhwc", virtual=false,
 *                            value=x (a by-value scalar)}, ...},
 *         ops = {{op="pointwise"|"reduction"|"matmul"|"conv_fwd"|
 *                     "conv_bwd_data"|"resample_fwd"|"norm_fwd"|"reshape",
 *                 mode="RELU_FWD"..., inputs={role=name, ...} or {name, ...},
 *                 outputs={role=name} or {name, ...}, compute="f32",
 *                 axis=, param=, padding=, pre_padding=, post_padding=,
 *                 stride=, dilation=, window=, padding_mode="zero"|
 *                 "neg_inf"|"edge", phase="inference"|"training"}, ...},
 *         compute="f32", plans=1, engine=<global index>, math="any"|"fp32"|"tf32" }
 *       Roles per kind are dnn_graph.h's (x, b, t, y; a, b, c; x, w, y;
 *       dy, w, dx; x, y, index; x, scale, bias, epsilon, mean,
 *       inv_variance, y); a list fills the kind's read (inputs) or written
 *       (outputs) roles in that order. Spatial lists take one number per
 *       spatial dimension, or one number for all. A bad description raises.
 *   gplan:run({name = address | Buffer | {buffer, offset}, ...} [, index=1])
 *                              -> true | nil, msg, code
 *       Every real tensor needs an address (by-value and virtual ones take
 *       none); unknown names raise. Enqueued on the legacy default stream.
 *   gplan:info()               -> {engine=, engines={...}, ranks={...},
 *                                 heuristic_modes={"A"|"FALLBACK"...},
 *                                 workspace_bytes={...}, notes={"tensor_core,..."},
 *                                 plans=, tried=, heuristic_count=, filtered=,
 *                                 refused={{engine=, rank=, why=}...}, nops=,
 *                                 math=, version=, version_code=, path=,
 *                                 workspace=, tensors={...as in describe}}
 *   gplan:free() -> true | false; __close, __gc, __tostring.
 *
 * A Plan or GraphPlan holds its Context in user value 1 and counts as one
 * of the context's children (lgpu_hold), so the driver context outlives it.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lhost.h"
#include "lgpu.h"
#include "driver/cuda.h"
#include "libraries/dnn.h"
#include "libraries/dnn_backend.h"
#include "libraries/dnn_graph.h"

#define PLAN_T "klab.dnn.Plan"
#define GPLAN_T "klab.dnn.GraphPlan"

typedef struct l_plan {
    dnn_sdpa_plan *plan;   /* NULL once released */
    l_ctx *ctx;            /* the context userdata (also user value 1) */
} l_plan;


/* The library's version on the table at the top: "9.14.0" and its code. */
static void push_version(lua_State *L, size_t code)
{
    char v[32];
    dnn_version_string(code, v, sizeof v);
    lh_setstr(L, "version", v);
    lh_setint(L, "version_code", (lua_Integer)code);
}
static int plan_release(l_plan *p)
{
    if (!p->plan)
        return 0;
    dnn_sdpa_plan *dp = p->plan;
    p->plan = NULL;
    ks_status st;
    ks_clear(&st);
    dnn_sdpa_plan_free(dp, &st);
    lgpu_child_release(&p->ctx);
    return 1;
}

static l_plan *check_plan(lua_State *L, int idx)
{
    l_plan *p = luaL_checkudata(L, idx, PLAN_T);
    if (!p->plan)
        luaL_error(L, "attempt to use a freed " PLAN_T);
    return p;
}

static int parse_route(lua_State *L, const char *s)
{
    if (strcmp(s, "auto") == 0)
        return DNN_ROUTE_AUTO;
    if (strcmp(s, "fused") == 0)
        return DNN_ROUTE_FUSED;
    if (strcmp(s, "composite") == 0)
        return DNN_ROUTE_COMPOSITE;
    return luaL_error(L, "route must be auto, fused or composite, not '%s'", s);
}

/* Reads an attention spec at absolute index t. Raises on misuse. */
static void read_spec(lua_State *L, int t, dnn_sdpa_desc *d)
{
    luaL_checktype(L, t, LUA_TTABLE);
    memset(d, 0, sizeof *d);
    const char *dir = lh_optstrfield(L, t, "direction", NULL);
    if (!dir)
        luaL_error(L, "attention spec needs direction (fwd or bwd)");
    if (strcmp(dir, "fwd") == 0 || strcmp(dir, "forward") == 0)
        d->dir = DNN_FWD;
    else if (strcmp(dir, "bwd") == 0 || strcmp(dir, "backward") == 0)
        d->dir = DNN_BWD;
    else
        luaL_error(L, "direction must be fwd or bwd, not '%s'", dir);
    const char *names[] = {"B", "H", "S", "D"};
    int64_t *vals[] = {&d->b, &d->h, &d->s, &d->d};
    for (int i = 0; i < 4; i++) {
        lua_Integer v = lh_optintfield(L, t, names[i], 0);
        if (v < 1)
            luaL_error(L, "attention spec needs %s >= 1", names[i]);
        *vals[i] = (int64_t)v;
    }
    d->causal = lh_optboolfield(L, t, "causal", 0);
    d->scale = (float)lh_optnumfield(L, t, "scale", 0.0);
    d->route = parse_route(L, lh_optstrfield(L, t, "route", "auto"));
    lua_Integer plans = lh_optintfield(L, t, "plans", 1);
    if (plans < 1 || plans > DNN_MAX_PLANS)
        luaL_error(L, "plans must be between 1 and %d", DNN_MAX_PLANS);
    d->plans = (int)plans;
    ks_status st;
    ks_clear(&st);
    if (dnn_sdpa_check(d, &st))
        lh_raise(L, &st);
}

/* ---- module functions ---- */

static int l_version(lua_State *L)
{
    char v[64];
    size_t code = 0;
    ks_status st;
    ks_clear(&st);
    if (dnn_version(v, sizeof v, &code, &st))
        return lh_pushfail(L, &st);
    lua_pushstring(L, v);
    lua_pushinteger(L, (lua_Integer)code);
    return 2;
}

static int l_library(lua_State *L)
{
    ks_status st;
    ks_clear(&st);
    const char *how = NULL;
    const char *path = dnn_library_path(&how, &st);
    if (!path)
        return lh_pushfail(L, &st);
    lua_pushstring(L, path);
    lua_pushstring(L, how ? how : "");
    return 2;
}

static int l_describe(lua_State *L)
{
    dnn_sdpa_desc d;
    read_spec(L, 1, &d);
    int route = d.route == DNN_ROUTE_FUSED ? DNN_ROUTE_FUSED : DNN_ROUTE_COMPOSITE;
    if (!lua_isnoneornil(L, 2)) {
        route = parse_route(L, luaL_checkstring(L, 2));
        if (route == DNN_ROUTE_AUTO)
            luaL_argerror(L, 2, "describe needs fused or composite");
    }
    dnn_graph_summary g;
    ks_status st;
    ks_clear(&st);
    if (dnn_sdpa_describe(&d, route, &g, &st))
        return lh_pushfail(L, &st);
    lua_createtable(L, 0, 4);
    lh_setstr(L, "route", dnn_route_name(g.route));
    lh_setint(L, "nops", g.nops);
    lh_setint(L, "tensors", g.ntensors);
    lua_createtable(L, g.nops, 0);
    for (int i = 0; i < g.nops; i++) {
        lua_pushstring(L, g.ops[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "ops");
    return 1;
}

static int l_sdpa_plan(lua_State *L)
{
    l_ctx *c = NULL;
    if (!lua_isnil(L, 1))
        c = lgpu_check_ctx(L, 1);
    dnn_sdpa_desc d;
    read_spec(L, 2, &d);
    ks_status st;
    ks_clear(&st);
    if (!c) {
        /* Only the no-driver failure is an answer without a context. */
        dnn_sdpa_plan *none = NULL;
        int rc = dnn_sdpa_plan_create(&d, NULL, &none, &st);
        if (rc == KS_ENODRIVER || rc == KS_ENOLIB)
            return lh_pushfail(L, &st);
        return luaL_argerror(L, 1, "expected a " CTX_T);
    }

    /* Released first: a failure below leaves nothing to free. */
    l_plan *p = lgpu_new_child(L, sizeof *p, PLAN_T, 1);

    dnn_sdpa_plan *dp = NULL;
    if (dnn_sdpa_plan_create(&d, c->ctx, &dp, &st))
        return lh_pushfail(L, &st);
    p->plan = dp;
    lgpu_child_hold(&p->ctx, c);
    return 1;
}

/* ---- methods ---- */

/* An operand field of args (absolute index a): an integer address, a
 * Buffer or a {buffer, offset} region; 0 when absent and not needed. */
static CUdeviceptr operand(lua_State *L, int a, const char *k, const l_ctx *c, size_t need, int required)
{
    int t = lua_getfield(L, a, k);
    CUdeviceptr v = 0;
    if (t == LUA_TNIL) {
        if (required)
            luaL_error(L, "attention operand %s is missing", k);
    } else if (lua_isinteger(L, -1)) {
        lua_Integer x = lua_tointeger(L, -1);
        if (x <= 0)
            luaL_error(L, "attention operand %s must be a device address > 0", k);
        v = (CUdeviceptr)x;
    } else {
        v = lgpu_check_region(L, lua_gettop(L), c, k, need);
    }
    lua_pop(L, 1);
    return v;
}

static int plan_run(lua_State *L)
{
    l_plan *p = check_plan(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer index = luaL_optinteger(L, 3, 1);
    if (p->ctx->n.closed)
        luaL_error(L, "the plan's " CTX_T " was freed");
    const dnn_sdpa_desc *d = dnn_sdpa_plan_desc(p->plan);
    const dnn_plan_info *info = dnn_sdpa_plan_info(p->plan);
    if (index < 1 || index > info->plans)
        luaL_error(L, "plan index must be between 1 and %d", info->plans);
    size_t big = (size_t)(d->b * d->h * d->s * d->d) * 2, rows = (size_t)(d->b * d->h * d->s) * 4;
    int bwd = d->dir == DNN_BWD;
    dnn_sdpa_args a;
    memset(&a, 0, sizeof a);
    a.q = operand(L, 2, "Q", p->ctx, big, 1);
    a.k = operand(L, 2, "K", p->ctx, big, 1);
    a.v = operand(L, 2, "V", p->ctx, big, 1);
    a.o = operand(L, 2, "O", p->ctx, big, 1);
    a.lse = operand(L, 2, "LSE", p->ctx, rows, 1);
    a.dout = operand(L, 2, "dO", p->ctx, big, bwd);
    a.dq = operand(L, 2, "dQ", p->ctx, big, bwd);
    a.dk = operand(L, 2, "dK", p->ctx, big, bwd);
    a.dv = operand(L, 2, "dV", p->ctx, big, bwd);
    ks_status st;
    ks_clear(&st);
    if (dnn_sdpa_plan_run(p->plan, (int)index - 1, &a, NULL, &st))
        return lh_pushfail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int plan_info(lua_State *L)
{
    l_plan *p = check_plan(L, 1);
    const dnn_sdpa_desc *d = dnn_sdpa_plan_desc(p->plan);
    const dnn_plan_info *info = dnn_sdpa_plan_info(p->plan);
    lua_createtable(L, 0, 24);
    lh_setstr(L, "route", dnn_route_name(info->route));
    lh_setstr(L, "direction", d->dir == DNN_FWD ? "fwd" : "bwd");
    lua_pushboolean(L, d->causal);
    lua_setfield(L, -2, "causal");
    lh_setint(L, "B", d->b);
    lh_setint(L, "H", d->h);
    lh_setint(L, "S", d->s);
    lh_setint(L, "D", d->d);
    lua_pushnumber(L, d->scale);
    lua_setfield(L, -2, "scale");
    lh_setint(L, "nops", info->nops);
    lh_setint(L, "plans", info->plans);
    lh_setint(L, "tried", info->tried);
    lh_setint(L, "heuristic_count", info->heur_count);
    const char *lists[] = {"engines", "ranks", "workspace_bytes"};
    for (int l = 0; l < 3; l++) {
        lua_createtable(L, info->plans, 0);
        for (int i = 0; i < info->plans; i++) {
            lua_Integer v = l == 0 ? (lua_Integer)info->engine[i]
                          : l == 1 ? (lua_Integer)info->engine_rank[i] + 1 : (lua_Integer)info->workspace[i];
            lua_pushinteger(L, v);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, lists[l]);
    }
    lh_setint(L, "scratch_bytes", (lua_Integer)info->scratch_bytes);
    push_version(L, info->version);
    ks_status st;
    ks_clear(&st);
    const char *how = NULL;
    const char *path = dnn_library_path(&how, &st);
    if (path)
        lh_setstr(L, "path", path);
    if (info->refused[0])
        lh_setstr(L, "refused", info->refused);
    return 1;
}

/* ---- metamethods ---- */

static int plan_free(lua_State *L)
{
    lua_pushboolean(L, plan_release(luaL_checkudata(L, 1, PLAN_T)));
    return 1;
}

static int plan_gc(lua_State *L)
{
    plan_release(luaL_checkudata(L, 1, PLAN_T));
    return 0;
}

static int plan_tostring(lua_State *L)
{
    l_plan *p = luaL_checkudata(L, 1, PLAN_T);
    if (!p->plan) {
        lua_pushstring(L, PLAN_T " (freed)");
        return 1;
    }
    const dnn_sdpa_desc *d = dnn_sdpa_plan_desc(p->plan);
    const dnn_plan_info *info = dnn_sdpa_plan_info(p->plan);
    char s[200];
    snprintf(s, sizeof s, PLAN_T " (%s %s%s B=%lld H=%lld S=%lld D=%lld, engine %lld)",
             dnn_route_name(info->route), d->dir == DNN_FWD ? "fwd" : "bwd", d->causal ? " causal" : "",
             (long long)d->b, (long long)d->h, (long long)d->s, (long long)d->d, (long long)info->engine[0]);
    lua_pushstring(L, s);
    return 1;
}

/* ---- graphs ---- */

typedef struct l_gplan {
    dnn_graph_plan *plan;  /* NULL once released */
    l_ctx *ctx;            /* the context userdata (also user value 1) */
} l_gplan;

static int gplan_release(l_gplan *p)
{
    if (!p->plan)
        return 0;
    dnn_graph_plan *gp = p->plan;
    p->plan = NULL;
    ks_status st;
    ks_clear(&st);
    dnn_graph_plan_free(gp, &st);
    lgpu_child_release(&p->ctx);
    return 1;
}

static l_gplan *check_gplan(lua_State *L, int idx)
{
    l_gplan *p = luaL_checkudata(L, idx, GPLAN_T);
    if (!p->plan)
        luaL_error(L, "attempt to use a freed " GPLAN_T);
    return p;
}

/* [-0, +0, v] The list (or single number) at field k of the table at t
 * into out[0..max), all >= lo; returns how many were given (0: absent). A
 * single number fills every slot. */
static int read_ints(lua_State *L, int t, const char *what, const char *k, int64_t *out, int max, int64_t lo)
{
    int ty = lua_getfield(L, t, k);
    int n = 0;
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    if (ty == LUA_TNUMBER) {
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < lo)
            luaL_error(L, "%s: %s must be an integer >= %d", what, k, (int)lo);
        for (int i = 0; i < max; i++)
            out[i] = (int64_t)lua_tointeger(L, -1);
        lua_pop(L, 1);
        return -1;
    }
    if (ty != LUA_TTABLE)
        luaL_error(L, "%s: %s must be a list of integers", what, k);
    n = (int)luaL_len(L, -1);
    if (n < 1 || n > max)
        luaL_error(L, "%s: %s needs 1 to %d entries, has %d", what, k, max, n);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, -1, i + 1);
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < lo)
            luaL_error(L, "%s: %s[%d] must be an integer >= %d", what, k, i + 1, (int)lo);
        out[i] = (int64_t)lua_tointeger(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return n;
}

/* A name from an enum field (lower or upper case), via parse; dflt when
 * absent. Raises naming the accepted values. */
static int read_enum(lua_State *L, int t, const char *what, const char *k, int (*parse)(const char *), int dflt,
                     const char *accepted)
{
    const char *s = lh_optstrfield(L, t, k, NULL);
    if (!s)
        return dflt;
    int v = parse(s);
    if (v < 0)
        luaL_error(L, "%s: %s must be %s, not '%s'", what, k, accepted, s);
    return v;
}

/* Reads one tensor spec (table on top of the stack) into t. */
static void read_gtensor(lua_State *L, dnn_g_tensor *t)
{
    int idx = lua_gettop(L);
    char what[64];
    snprintf(what, sizeof what, "tensor '%s'", t->name);
    luaL_checktype(L, idx, LUA_TTABLE);
    t->dtype = read_enum(L, idx, what, "dtype", dnn_graph_dtype_parse, DNN_DT_F32, "f32, bf16, f16, i32, i64 or bool");
    t->nd = read_ints(L, idx, what, "dims", t->dim, DNN_G_MAX_DIMS, 1);
    if (t->nd < 0)
        luaL_error(L, "%s: dims must be a list", what);
    int ns = read_ints(L, idx, what, "strides", t->stride, DNN_G_MAX_DIMS, 1);
    if (ns != 0 && ns != t->nd)
        luaL_error(L, "%s: strides must be a list as long as dims", what);
    t->layout = read_enum(L, idx, what, "layout", dnn_graph_layout_parse, DNN_LAYOUT_ROW, "row or nhwc");
    t->is_virtual = lh_optboolfield(L, idx, "virtual", 0);
    lua_getfield(L, idx, "value");
    if (!lua_isnil(L, -1)) {
        if (!lua_isnumber(L, -1))
            luaL_error(L, "%s: value must be a number", what);
        t->by_value = 1;
        t->value = (double)lua_tonumber(L, -1);
    }
    lua_pop(L, 1);
}

/* Fills op's roles from the inputs or outputs field (written = 0 or 1). */
static void read_roles(lua_State *L, int t, const dnn_graph_desc *d, dnn_g_op *op, const char *what, int written)
{
    const char *field = written ? "outputs" : "inputs";
    if (lua_getfield(L, t, field) == LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    if (!lua_istable(L, -1))
        luaL_error(L, "%s: %s must be a table", what, field);
    int tab = lua_gettop(L);
    int n = (int)luaL_len(L, tab);
    if (n > 0) {
        /* A list: the kind's roles of this direction, in order. */
        int role = 0;
        for (int i = 1; i <= n; i++) {
            while (dnn_graph_role_name(op->kind, role) && dnn_graph_role_written(op, role) != written)
                role++;
            if (!dnn_graph_role_name(op->kind, role))
                luaL_error(L, "%s: too many %s (%d)", what, field, n);
            lua_rawgeti(L, tab, i);
            const char *name = lua_tostring(L, -1);
            int ti = name ? dnn_graph_find(d, name) : -1;
            if (ti < 0)
                luaL_error(L, "%s: %s[%d] names no described tensor ('%s')", what, field, i, name ? name : "?");
            op->io[role++] = ti;
            lua_pop(L, 1);
        }
    }
    lua_pushnil(L);
    while (lua_next(L, tab)) {
        if (lua_type(L, -2) == LUA_TSTRING) {
            const char *rn = lua_tostring(L, -2);
            int role = dnn_graph_role(op->kind, rn);
            if (role < 0)
                luaL_error(L, "%s: %s has no role '%s'", what, dnn_graph_kind_name(op->kind), rn);
            if (dnn_graph_role_written(op, role) != written)
                luaL_error(L, "%s: '%s' belongs in %s", what, rn, written ? "inputs" : "outputs");
            const char *name = lua_tostring(L, -1);
            int ti = name ? dnn_graph_find(d, name) : -1;
            if (ti < 0)
                luaL_error(L, "%s: %s.%s names no described tensor ('%s')", what, field, rn, name ? name : "?");
            op->io[role] = ti;
        } else if (!lua_isinteger(L, -2) || lua_tointeger(L, -2) < 1 || lua_tointeger(L, -2) > n) {
            luaL_error(L, "%s: %s keys must be role names or list positions", what, field);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

static int parse_compute(const char *s)
{
    return dnn_graph_dtype_parse(s);
}

/* Reads op i (table on top of the stack) of d. */
static void read_gop(lua_State *L, dnn_graph_desc *d, int i)
{
    int t = lua_gettop(L);
    char what[48];
    snprintf(what, sizeof what, "ops[%d]", i + 1);
    if (!lua_istable(L, t))
        luaL_error(L, "%s must be a table", what);
    const char *ks = lh_optstrfield(L, t, "op", NULL);
    if (!ks)
        luaL_error(L, "%s needs op (pointwise, reduction, matmul, conv_fwd, conv_bwd_data, resample_fwd, norm_fwd "
                   "or reshape)", what);
    int kind = dnn_graph_kind_parse(ks);
    if (kind < 0)
        luaL_error(L, "%s: unknown op '%s'", what, ks);
    ks_status st;
    ks_clear(&st);
    dnn_g_op *op = dnn_graph_add_op(d, kind, &st);
    if (!op)
        lh_raise(L, &st);
    const char *ms = lh_optstrfield(L, t, "mode", NULL);
    if (ms) {
        op->mode = dnn_graph_mode_parse(kind, ms);
        if (op->mode < 0)
            luaL_error(L, "%s: %s has no mode '%s'", what, ks, ms);
    }
    op->compute = read_enum(L, t, what, "compute", parse_compute, -1, "f32, bf16, f16, i32, i64 or bool");
    op->phase = read_enum(L, t, what, "phase", dnn_graph_phase_parse, DNN_PHASE_INFERENCE, "inference or training");
    op->padding_mode = read_enum(L, t, what, "padding_mode", dnn_graph_padding_parse, -1, "zero, neg_inf or edge");
    op->axis = lh_optintfield(L, t, "axis", -1);
    op->param = lh_optnumfield(L, t, "param", NAN);
    int64_t pad[DNN_G_MAX_SPATIAL];
    if (read_ints(L, t, what, "padding", pad, DNN_G_MAX_SPATIAL, 0))
        for (int k = 0; k < DNN_G_MAX_SPATIAL; k++)
            op->pre_pad[k] = op->post_pad[k] = pad[k];
    read_ints(L, t, what, "pre_padding", op->pre_pad, DNN_G_MAX_SPATIAL, 0);
    read_ints(L, t, what, "post_padding", op->post_pad, DNN_G_MAX_SPATIAL, 0);
    read_ints(L, t, what, "stride", op->stride, DNN_G_MAX_SPATIAL, 1);
    read_ints(L, t, what, "dilation", op->dilation, DNN_G_MAX_SPATIAL, 1);
    read_ints(L, t, what, "window", op->window, DNN_G_MAX_SPATIAL, 1);
    read_roles(L, t, d, op, what, 0);
    read_roles(L, t, d, op, what, 1);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* [-0, +1, v] Reads the graph description at index t into a new block
 * owned by Lua (left on the stack) and resolves it; raises on misuse. */
static dnn_graph_desc *read_graph(lua_State *L, int t)
{
    luaL_checktype(L, t, LUA_TTABLE);
    dnn_graph_desc *d = lua_newuserdatauv(L, sizeof *d, 0);
    dnn_graph_desc_init(d);
    if (lua_getfield(L, t, "tensors") != LUA_TTABLE)
        luaL_error(L, "a graph needs tensors = {name = {dtype=, dims=, ...}, ...}");
    int tt = lua_gettop(L);
    /* Tensors in name order, so a description always gives the same uids. */
    const char *names[DNN_G_MAX_TENSORS];
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, tt)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            luaL_error(L, "tensors must be keyed by name");
        if (n >= DNN_G_MAX_TENSORS)
            luaL_error(L, "a graph has at most %d tensors", DNN_G_MAX_TENSORS);
        names[n++] = lua_tostring(L, -2);   /* anchored by the table */
        lua_pop(L, 1);
    }
    qsort(names, (size_t)n, sizeof names[0], cmp_str);
    ks_status st;
    ks_clear(&st);
    for (int i = 0; i < n; i++) {
        int ti = dnn_graph_add_tensor(d, names[i], &st);
        if (ti < 0)
            lh_raise(L, &st);
        lua_getfield(L, tt, names[i]);
        read_gtensor(L, &d->t[ti]);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (lua_getfield(L, t, "ops") != LUA_TTABLE)
        luaL_error(L, "a graph needs ops = {{op=, ...}, ...}");
    int ot = lua_gettop(L);
    int nops = (int)luaL_len(L, ot);
    for (int i = 0; i < nops; i++) {
        lua_rawgeti(L, ot, i + 1);
        read_gop(L, d, i);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    d->compute = read_enum(L, t, "graph", "compute", parse_compute, DNN_DT_F32, "f32, f16, bf16 or i32");
    d->math = read_enum(L, t, "graph", "math", dnn_graph_math_parse, DNN_MATH_ANY, "any, fp32 or tf32");
    d->plans = (int)lh_optintfield(L, t, "plans", 1);
    d->engine = (int64_t)lh_optintfield(L, t, "engine", -1);
    if (dnn_graph_resolve(d, d, &st))
        lh_raise(L, &st);
    return d;
}

/* [-0, +1, m] {name = {dtype=, dims=, strides=, bytes=, virtual=, value=}} of resolved r. */
static void push_gtensors(lua_State *L, const dnn_graph_desc *r)
{
    lua_createtable(L, 0, r->ntensors);
    for (int i = 0; i < r->ntensors; i++) {
        const dnn_g_tensor *t = &r->t[i];
        lua_createtable(L, 0, 6);
        lh_setstr(L, "dtype", dnn_graph_dtype_name(t->dtype));
        for (int l = 0; l < 2; l++) {
            lua_createtable(L, t->nd, 0);
            for (int k = 0; k < t->nd; k++) {
                lua_pushinteger(L, (lua_Integer)(l ? t->stride[k] : t->dim[k]));
                lua_rawseti(L, -2, k + 1);
            }
            lua_setfield(L, -2, l ? "strides" : "dims");
        }
        lh_setint(L, "bytes", (lua_Integer)dnn_graph_tensor_bytes(r, i));
        lh_setbool(L, "virtual", t->is_virtual);
        if (t->by_value)
            lh_setnum(L, "value", t->value);
        lua_setfield(L, -2, t->name);
    }
}

static int l_graph_describe(lua_State *L)
{
    dnn_graph_desc *d = read_graph(L, 1);
    dnn_graph_outline *o = lua_newuserdatauv(L, sizeof *o, 0);
    ks_status st;
    ks_clear(&st);
    if (dnn_graph_describe(d, o, &st))
        return lh_pushfail(L, &st);
    lua_createtable(L, 0, 12);
    lh_setint(L, "nops", o->nops);
    lh_setint(L, "ntensors", o->ntensors);
    lua_createtable(L, o->nops, 0);
    for (int i = 0; i < o->nops; i++) {
        lua_pushstring(L, o->ops[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "ops");
    lh_setbool(L, "graph", o->graph);
    if (o->graph_msg[0])
        lh_setstr(L, "graph_error", o->graph_msg);
    if (o->engines >= 0)
        lh_setint(L, "engines", (lua_Integer)o->engines);
    if (o->engines_msg[0])
        lh_setstr(L, "engines_error", o->engines_msg);
    push_version(L, o->version);
    push_gtensors(L, d);
    lua_setfield(L, -2, "tensors");
    return 1;
}

static int l_graph_plan(lua_State *L)
{
    l_ctx *c = NULL;
    if (!lua_isnil(L, 1))
        c = lgpu_check_ctx(L, 1);
    dnn_graph_desc *d = read_graph(L, 2);
    ks_status st;
    ks_clear(&st);
    if (!c) {
        /* Only the no-driver failure is an answer without a context. */
        dnn_graph_plan *none = NULL;
        int rc = dnn_graph_plan_create(d, NULL, &none, &st);
        if (rc == KS_ENODRIVER || rc == KS_ENOLIB)
            return lh_pushfail(L, &st);
        return luaL_argerror(L, 1, "expected a " CTX_T);
    }
    /* Released first: a failure below leaves nothing to free. */
    l_gplan *p = lgpu_new_child(L, sizeof *p, GPLAN_T, 1);
    dnn_graph_plan *gp = NULL;
    if (dnn_graph_plan_create(d, c->ctx, &gp, &st))
        return lh_pushfail(L, &st);
    p->plan = gp;
    lgpu_child_hold(&p->ctx, c);
    return 1;
}

static int gplan_run(lua_State *L)
{
    l_gplan *p = check_gplan(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer index = luaL_optinteger(L, 3, 1);
    if (p->ctx->n.closed)
        luaL_error(L, "the plan's " CTX_T " was freed");
    const dnn_graph_desc *r = dnn_graph_plan_desc(p->plan);
    const dnn_graph_info *info = dnn_graph_plan_info(p->plan);
    if (index < 1 || index > info->plans)
        luaL_error(L, "plan index must be between 1 and %d", info->plans);
    CUdeviceptr ptrs[DNN_G_MAX_TENSORS];
    memset(ptrs, 0, sizeof ptrs);
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        const char *name = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
        int ti = name ? dnn_graph_find(r, name) : -1;
        if (ti < 0)
            luaL_error(L, "run: '%s' is not a tensor of this graph", name ? name : "?");
        const dnn_g_tensor *t = &r->t[ti];
        if (t->is_virtual || t->by_value)
            luaL_error(L, "run: tensor '%s' is %s and takes no address", name,
                       t->is_virtual ? "virtual" : "a by-value scalar");
        if (lua_isinteger(L, -1)) {
            lua_Integer x = lua_tointeger(L, -1);
            if (x <= 0)
                luaL_error(L, "run: tensor '%s' needs a device address > 0", name);
            ptrs[ti] = (CUdeviceptr)x;
        } else {
            ptrs[ti] = lgpu_check_region(L, lua_gettop(L), p->ctx, name, dnn_graph_tensor_bytes(r, ti));
        }
        lua_pop(L, 1);
    }
    for (int i = 0; i < r->ntensors; i++)
        if (!r->t[i].is_virtual && !r->t[i].by_value && !ptrs[i])
            luaL_error(L, "run: tensor '%s' needs an address", r->t[i].name);
    ks_status st;
    ks_clear(&st);
    if (dnn_graph_plan_run(p->plan, (int)index - 1, ptrs, NULL, &st))
        return lh_pushfail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int gplan_info(lua_State *L)
{
    l_gplan *p = check_gplan(L, 1);
    const dnn_graph_desc *r = dnn_graph_plan_desc(p->plan);
    const dnn_graph_info *in = dnn_graph_plan_info(p->plan);
    lua_createtable(L, 0, 20);
    lh_setint(L, "engine", (lua_Integer)in->engine[0]);
    const char *lists[] = {"engines", "ranks", "workspace_bytes", "heuristic_modes", "notes"};
    for (int l = 0; l < 5; l++) {
        lua_createtable(L, in->plans, 0);
        for (int i = 0; i < in->plans; i++) {
            if (l == 0)
                lua_pushinteger(L, (lua_Integer)in->engine[i]);
            else if (l == 1)
                lua_pushinteger(L, (lua_Integer)in->rank[i] + 1);
            else if (l == 2)
                lua_pushinteger(L, (lua_Integer)in->workspace[i]);
            else if (l == 3)
                lua_pushstring(L, in->heur_mode[i] == 2 ? "FALLBACK" : in->heur_mode[i] == 3 ? "A" : "?");
            else
                lua_pushstring(L, in->notes[i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, lists[l]);
    }
    lh_setint(L, "plans", in->plans);
    lh_setint(L, "tried", in->tried);
    lh_setint(L, "heuristic_count", in->heur_count);
    lh_setint(L, "filtered", in->filtered);
    lua_createtable(L, in->nrefused, 0);
    for (int i = 0; i < in->nrefused; i++) {
        lua_createtable(L, 0, 3);
        lh_setint(L, "engine", (lua_Integer)in->refused[i].engine);
        lh_setint(L, "rank", in->refused[i].rank + 1);
        lh_setstr(L, "why", in->refused[i].why);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "refused");
    lh_setint(L, "nops", in->nops);
    lh_setstr(L, "math", dnn_graph_math_name(r->math));
    push_version(L, in->version);
    lh_setint(L, "workspace", (lua_Integer)in->workspace_bytes);
    ks_status st;
    ks_clear(&st);
    const char *path = dnn_library_path(NULL, &st);
    if (path)
        lh_setstr(L, "path", path);
    push_gtensors(L, r);
    lua_setfield(L, -2, "tensors");
    return 1;
}

static int gplan_free(lua_State *L)
{
    lua_pushboolean(L, gplan_release(luaL_checkudata(L, 1, GPLAN_T)));
    return 1;
}

static int gplan_gc(lua_State *L)
{
    gplan_release(luaL_checkudata(L, 1, GPLAN_T));
    return 0;
}

static int gplan_tostring(lua_State *L)
{
    l_gplan *p = luaL_checkudata(L, 1, GPLAN_T);
    if (!p->plan) {
        lua_pushstring(L, GPLAN_T " (freed)");
        return 1;
    }
    const dnn_graph_info *in = dnn_graph_plan_info(p->plan);
    char s[160];
    snprintf(s, sizeof s, GPLAN_T " (%d ops, engine %lld)", in->nops, (long long)in->engine[0]);
    lua_pushstring(L, s);
    return 1;
}

static const luaL_Reg gplan_methods[] = {
    {"run", gplan_run}, {"info", gplan_info}, {"free", gplan_free}, {NULL, NULL},
};

static const luaL_Reg gplan_meta[] = {
    {"__gc", gplan_gc}, {"__close", gplan_gc}, {"__tostring", gplan_tostring}, {NULL, NULL},
};

static const luaL_Reg dnn_funcs[] = {
    {"version", l_version}, {"library", l_library},
    {"describe", l_describe}, {"sdpa_plan", l_sdpa_plan},
    {"graph_describe", l_graph_describe}, {"graph_plan", l_graph_plan}, {NULL, NULL},
};

static const luaL_Reg plan_methods[] = {
    {"run", plan_run}, {"info", plan_info}, {"free", plan_free}, {NULL, NULL},
};

static const luaL_Reg plan_meta[] = {
    {"__gc", plan_gc}, {"__close", plan_gc}, {"__tostring", plan_tostring}, {NULL, NULL},
};

int luaopen_klab_dnn(lua_State *L)
{
    lh_newclass(L, PLAN_T, plan_methods, plan_meta);
    lua_pop(L, 1);
    lh_newclass(L, GPLAN_T, gplan_methods, gplan_meta);
    lua_pop(L, 1);
    luaL_newlib(L, dnn_funcs);
    return 1;
}
