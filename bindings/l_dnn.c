/*
 * l_dnn.c: require "klab.dnn", the cuDNN attention baseline (host/libraries/dnn.h).
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
 * A Plan holds its Context in user value 1 and counts as one of the
 * context's children (lgpu_hold), so the driver context outlives it.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lhost.h"
#include "lgpu.h"
#include "driver/cuda.h"
#include "libraries/dnn.h"

#define PLAN_T "klab.dnn.Plan"

typedef struct l_plan {
    dnn_sdpa_plan *plan;   /* NULL once released */
    l_ctx *ctx;            /* the context userdata (also user value 1) */
} l_plan;

static int plan_release(l_plan *p)
{
    if (!p->plan)
        return 0;
    dnn_sdpa_plan *dp = p->plan;
    p->plan = NULL;
    ks_status st;
    ks_clear(&st);
    dnn_sdpa_plan_free(dp, &st);
    if (p->ctx)
        lgpu_unhold(&p->ctx->n);
    p->ctx = NULL;
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
    l_plan *p = lua_newuserdatauv(L, sizeof *p, 1);
    p->plan = NULL;
    p->ctx = NULL;
    luaL_setmetatable(L, PLAN_T);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);

    dnn_sdpa_plan *dp = NULL;
    if (dnn_sdpa_plan_create(&d, c->ctx, &dp, &st))
        return lh_pushfail(L, &st);
    p->plan = dp;
    p->ctx = c;
    lgpu_hold(&c->n);
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
    char v[32];
    snprintf(v, sizeof v, "%zu.%zu.%zu", info->version / 10000, info->version / 100 % 100, info->version % 100);
    lh_setstr(L, "version", v);
    lh_setint(L, "version_code", (lua_Integer)info->version);
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

static const luaL_Reg dnn_funcs[] = {
    {"version", l_version}, {"library", l_library},
    {"describe", l_describe}, {"sdpa_plan", l_sdpa_plan}, {NULL, NULL},
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
    luaL_newlib(L, dnn_funcs);
    return 1;
}
