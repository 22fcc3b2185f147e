/*
 * l_prof.c: require "klab.prof", the low-level side of klab.eval.profile
 * (host/measure/profile.h: CUPTI Range Profiler; host/measure/sass.h: SASS listings and the
 * SASS Metrics API). klab.eval.profile (scripts/klab/eval/profile.lua) re-exports
 * what a caller needs; use that.
 *
 * The module is "klab.prof", a name of its own: a C module must not share its
 * name with a Lua module, and scripts/klab/eval/profile.lua is klab.eval.profile.
 *
 *   prof.available([device=0])    -> true | false, reason, code
 *       libcupti loads, the driver sees the device, and CUPTI says the range
 *       profiler is supported there (no vGPU/confidential computing/...).
 *   prof.new(ctx [, {metrics = {names...}}]) -> Profiler | nil, msg, code
 *       ctx a klab.gpu Context. Default metrics: the chip's table. Create
 *       one per worker process and reuse it.
 *   p:measure(run [, prepare])    -> values, info | nil, msg, code
 *       prepare(pass) (outside the profiled range) and run(pass) (inside
 *       it) are called once per replay pass (pass = 1, 2, ...): prepare
 *       restores inputs and poisons outputs, run makes the launches. Either
 *       may return nil/false, msg [, code] to stop: measure then returns
 *       nil, msg, code (default "ECALLBACK"). An error raised inside them is
 *       raised again once the profiler is cleaned up.
 *       values = {["metric.name"] = number, ...} (NaN when CUPTI gave none)
 *       info = {chip=, passes=, metrics={names}, skipped={name = reason},
 *               phase_seconds={enable=, config=, prepare=, start=, run=,
 *               stop=, evaluate=, disable=} (where the measurement's time
 *               went, summed over the passes)}
 *       Codes: "EUNSUPPORTED" (the message names the CUPTI error: not
 *       permitted, another profiler attached, ...), "ENODRIVER", "ENOLIB",
 *       "ECUDA" (the region failed), "EINVAL" (nested, or inside timing).
 *       info.reused: the range profiler was still enabled from an earlier
 *       measurement (its start cost was not paid again)
 *   p:info()                      -> info (passes = the planned count)
 *   p:free(); __gc, __close, __tostring
 *
 *   prof.persistent([on])         -> whether the range profiler stays enabled between
 *       measurements of a session (default false: enabled and disabled each
 *       time); with on, sets it first
 *   prof.release()                disables a range profiler kept enabled (no-op otherwise)
 *   prof.metric_table()           -> {{chip=, name=, role=, verified=bool, src=}, ...}
 *   prof.chips()                  -> {"GH100", ...} | nil, msg, code   (no GPU needed)
 *   prof.check_metrics(chip, names) -> {name = bool, ...} | nil, msg, code (no GPU needed)
 *   prof.passes(chip, names)      -> passes CUPTI needs for them | nil, msg, code (no GPU needed)
 *   prof.patched(name)            -> true when CUPTI counts the metric by patching the code (the
 *       "sass" metrics): slower runs, and a session with one is never kept enabled
 *   prof.chip_name([device=0])    -> "GH100" | nil, msg, code
 *   prof.occupancy(fn, threads [, dyn_smem=0]) -> blocks per SM | nil, msg, code
 *
 *   prof.sass_tool()              -> path, "nvdisasm"|"cuobjdump" | nil, msg, "ENOTFOUND"
 *   prof.disassemble(cubin [, timeout_s=60]) -> text, tool | nil, msg, code
 *   prof.disassemble_start(cubin)  -> Disassembly | nil, msg, code
 *       the tool runs in the background (output to temporary files);
 *   d:finish([timeout_s=60])      -> text, tool | nil, msg, code   (once)
 *   d:free(); __gc, __close       kill a tool still running, remove the files
 *   prof.sass_parse(text)         -> census
 *   prof.sass_census(cubin)       -> census (+ tool=) | nil, "nvdisasm not found ...", "ENOTFOUND"
 *       census = {rows=n, functions={names}, opcodes={OP=n}, order={OP, ...}}
 *       (order: opcodes by first appearance)
 *   prof.sass_join(text, records) -> {opcodes={OP=n}, order=, total=, unmatched=, unmatched_count=}
 *       records = {{func=, offset=, count=}, ...}
 *   prof.sass_collect(ctx, run)   -> records | nil, msg, code
 *       SASS Metrics API: executed warp instructions per (func, offset).
 *       Configured once per process (a second configuration fails on
 *       driver 580); run(1) makes the launches; never timed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lhost.h"
#include "lgpu.h"
#include "driver/cuda.h"
#include "measure/profile.h"
#include "measure/sass.h"

#define PROF_T "klab.prof.Profiler"

typedef struct l_prof {
    profile_session *s;
    l_ctx *ctx;       /* held while s lives; user value 1 */
} l_prof;

/* ---- availability and tables ---- */

static int l_available(lua_State *L)
{
    lua_Integer dev = luaL_optinteger(L, 1, 0);
    luaL_argcheck(L, dev >= 0 && dev < 1 << 20, 1, "device ordinal must be >= 0");
    ks_status st;
    ks_clear(&st);
    int rc = profile_ready(&st);
    if (rc == KS_OK) {
        int n = 0;
        rc = cuda_device_count(&n, &st);
        if (rc == KS_OK && dev >= n)
            rc = ks_fail(&st, KS_ENODRIVER, 0, "no device %d (%d present)", (int)dev, n);
    }
    if (rc == KS_OK)
        rc = profile_device_supported((int)dev, &st);
    if (rc) {
        lua_pushboolean(L, 0);
        lua_pushstring(L, st.msg);
        lua_pushstring(L, ks_code_name(st.code));
        return 3;
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int l_metric_table(lua_State *L)
{
    size_t n = 0;
    const profile_metric *t = profile_metric_table(&n);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_createtable(L, 0, 4);
        lh_setstr(L, "chip", t[i].chip);
        lh_setstr(L, "name", t[i].name);
        lh_setstr(L, "role", t[i].role);
        lua_pushboolean(L, t[i].verified);
        lua_setfield(L, -2, "verified");
        if (t[i].src)
            lh_setstr(L, "src", t[i].src);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int l_chips(lua_State *L)
{
    ks_status st;
    ks_clear(&st);
    const char *const *names;
    size_t n;
    if (profile_chips(&names, &n, &st))
        return lh_pushfail(L, &st);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushstring(L, names[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* The list of metric names at stack index 2 as a C array (a userdata
 * left on the stack; the table keeps the strings alive). */
static const char **metric_names(lua_State *L, lua_Unsigned *n)
{
    luaL_checktype(L, 2, LUA_TTABLE);
    *n = lua_rawlen(L, 2);
    const char **names = lua_newuserdatauv(L, (*n ? *n : 1) * sizeof *names, 0);
    for (lua_Unsigned i = 0; i < *n; i++) {
        lua_rawgeti(L, 2, (lua_Integer)i + 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            luaL_error(L, "metric names[%d] must be a string", (int)(i + 1));
        names[i] = lua_tostring(L, -1);
        lua_pop(L, 1);
    }
    return names;
}

static int l_passes(lua_State *L)
{
    const char *chip = luaL_checkstring(L, 1);
    lua_Unsigned n;
    const char **names = metric_names(L, &n);
    luaL_argcheck(L, n > 0, 2, "at least one metric name");
    ks_status st;
    ks_clear(&st);
    int passes = 0;
    if (profile_count_passes(chip, names, (size_t)n, &passes, &st))
        return lh_pushfail(L, &st);
    lua_pushinteger(L, passes);
    return 1;
}

static int l_patched(lua_State *L)
{
    lua_pushboolean(L, profile_metric_patched(luaL_checkstring(L, 1)));
    return 1;
}

static int l_check_metrics(lua_State *L)
{
    const char *chip = luaL_checkstring(L, 1);
    lua_Unsigned n;
    const char **names = metric_names(L, &n);
    int *known = lua_newuserdatauv(L, (n ? n : 1) * sizeof *known, 0);
    ks_status st;
    ks_clear(&st);
    if (profile_check_metrics(chip, names, (size_t)n, known, &st))
        return lh_pushfail(L, &st);
    lua_createtable(L, 0, (int)n);
    for (lua_Unsigned i = 0; i < n; i++) {
        lua_pushboolean(L, known[i]);
        lua_setfield(L, -2, names[i]);
    }
    return 1;
}

static int l_chip_name(lua_State *L)
{
    lua_Integer dev = luaL_optinteger(L, 1, 0);
    luaL_argcheck(L, dev >= 0 && dev < 1 << 20, 1, "device ordinal must be >= 0");
    ks_status st;
    ks_clear(&st);
    char chip[64];
    if (profile_chip_name((int)dev, chip, sizeof chip, &st))
        return lh_pushfail(L, &st);
    lua_pushstring(L, chip);
    return 1;
}

static int l_occupancy(lua_State *L)
{
    l_func *f = lgpu_check_func(L, 1);
    lua_Integer threads = luaL_checkinteger(L, 2);
    lua_Integer smem = luaL_optinteger(L, 3, 0);
    luaL_argcheck(L, threads > 0 && threads <= 1 << 20, 2, "threads must be positive");
    luaL_argcheck(L, smem >= 0, 3, "dynamic shared memory must be >= 0");
    l_ctx *c = lgpu_ctx_of(&f->n);
    ks_status st;
    ks_clear(&st);
    int blocks = 0;
    if (profile_occupancy(c->ctx, f->fn, (int)threads, (size_t)smem, &blocks, &st))
        return lh_pushfail(L, &st);
    lua_pushinteger(L, blocks);
    return 1;
}

/* ---- profiler handle ---- */

static int prof_release(l_prof *p)
{
    if (!p->s)
        return 0;
    profile_session *s = p->s;
    p->s = NULL;
    profile_session_destroy(s);
    lgpu_child_release(&p->ctx);
    return 1;
}

static l_prof *check_prof(lua_State *L, int idx)
{
    l_prof *p = luaL_checkudata(L, idx, PROF_T);
    if (!p->s)
        luaL_error(L, "attempt to use a freed " PROF_T);
    return p;
}

static int l_new(lua_State *L)
{
    l_ctx *c = lgpu_check_ctx(L, 1);
    int has_opts = !lua_isnoneornil(L, 2);
    if (has_opts)
        luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);

    /* The names, if given, live in a userdata array on the stack; the
     * strings stay alive in the options table. */
    const char **names = NULL;
    size_t n = 0;
    if (has_opts && lua_getfield(L, 2, "metrics") != LUA_TNIL) {
        luaL_argcheck(L, lua_istable(L, -1), 2, "metrics must be a list of names");
        int t = lua_gettop(L);
        n = (size_t)lua_rawlen(L, t);
        luaL_argcheck(L, n > 0, 2, "metrics must not be empty");
        names = lua_newuserdatauv(L, n * sizeof *names, 0);
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, t, (lua_Integer)i + 1);
            if (lua_type(L, -1) != LUA_TSTRING)
                luaL_error(L, "metrics[%d] must be a string", (int)(i + 1));
            names[i] = lua_tostring(L, -1);
            lua_pop(L, 1);
        }
    }

    /* Released first: a failure below leaves nothing to free. */
    l_prof *p = lgpu_new_child(L, sizeof *p, PROF_T, 1);

    ks_status st;
    ks_clear(&st);
    profile_session *s = NULL;
    if (profile_session_create(c->ctx, names, n, &s, &st))
        return lh_pushfail(L, &st);
    p->s = s;
    lgpu_child_hold(&p->ctx, c);
    return 1;
}

/* [-0, +1, m] The info table of a session. */
static void push_info(lua_State *L, const profile_session *s, int passes)
{
    lua_createtable(L, 0, 4);
    lh_setstr(L, "chip", profile_session_chip(s));
    lh_setint(L, "passes", passes);
    lh_setbool(L, "reused", profile_session_reused(s));
    size_t n = profile_session_count(s);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushstring(L, profile_session_name(s, i));
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "metrics");
    size_t k = profile_session_skipped(s);
    lua_createtable(L, 0, (int)k);
    for (size_t i = 0; i < k; i++) {
        lua_pushstring(L, profile_session_skipped_reason(s, i));
        lua_setfield(L, -2, profile_session_skipped_name(s, i));
    }
    lua_setfield(L, -2, "skipped");
    lua_createtable(L, 0, PROFILE_PHASES);
    for (int i = 0; i < PROFILE_PHASES; i++)
        lh_setnum(L, profile_phase_name(i), profile_session_phase(s, i));
    lua_setfield(L, -2, "phase_seconds");
}

static int prof_info(lua_State *L)
{
    l_prof *p = check_prof(L, 1);
    push_info(L, p->s, profile_session_passes(p->s));
    return 1;
}

/* ---- calling back into Lua ---- */

typedef struct lcall {
    lua_State *L;
    int run;          /* stack index of run */
    int prepare;      /* stack index of prepare, or 0 */
    lh_calls calls;   /* the callbacks' handler and the first raise */
    char code[24];    /* code a callback returned with its failure */
} lcall;

/* Calls the function at stack index fn with the pass number (1-based).
 * KS_OK when it returned anything but nil/false first; otherwise a failure
 * with its message (and code in lc->code). A raise is kept in lc->err. */
static int call_pass(lcall *lc, int fn, int pass, ks_status *st)
{
    lua_State *L = lc->L;
    int top = lua_gettop(L);
    lua_pushvalue(L, fn);
    lua_pushinteger(L, (lua_Integer)pass + 1);
    if (lh_call(&lc->calls, 1, 3, st)) {
        lua_settop(L, top);
        return st->code;
    }
    int rc = lh_call_result(L, top + 1, "a profiling callback failed", lc->code, sizeof lc->code, st);
    lua_settop(L, top);
    return rc;
}

static int cb_run(void *ud, int pass, ks_status *st)
{
    lcall *lc = ud;
    return call_pass(lc, lc->run, pass, st);
}

static int cb_prepare(void *ud, int pass, ks_status *st)
{
    lcall *lc = ud;
    return call_pass(lc, lc->prepare, pass, st);
}

static int prof_measure(lua_State *L)
{
    l_prof *p = check_prof(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    if (!lua_isnoneornil(L, 3))
        luaL_checktype(L, 3, LUA_TFUNCTION);
    lua_settop(L, 3);
    lcall lc = {.L = L, .run = 2, .prepare = lua_isnil(L, 3) ? 0 : 3};
    lh_calls_begin(&lc.calls, L); /* 4, 5 */
    ks_status st;
    ks_clear(&st);
    int passes = 0;
    int rc = profile_session_measure(p->s, lc.prepare ? cb_prepare : NULL, cb_run, &lc, &passes, &st);
    if (lc.calls.raised)
        return lh_reraise(&lc.calls);
    if (rc) {
        if (lc.code[0]) {
            lh_pushfail(L, &st);
            lua_pop(L, 1);
            lua_pushstring(L, lc.code);
            return 3;
        }
        return lh_pushfail(L, &st);
    }
    size_t n = profile_session_count(p->s);
    lua_createtable(L, 0, (int)n);
    for (size_t i = 0; i < n; i++) {
        lua_pushnumber(L, profile_session_value(p->s, i));
        lua_setfield(L, -2, profile_session_name(p->s, i));
    }
    push_info(L, p->s, passes);
    return 2;
}

static int prof_free(lua_State *L)
{
    lua_pushboolean(L, prof_release(luaL_checkudata(L, 1, PROF_T)));
    return 1;
}

static int prof_gc(lua_State *L)
{
    prof_release(luaL_checkudata(L, 1, PROF_T));
    return 0;
}

static int prof_tostring(lua_State *L)
{
    l_prof *p = luaL_checkudata(L, 1, PROF_T);
    if (!p->s) {
        lua_pushstring(L, PROF_T " (freed)");
        return 1;
    }
    lua_pushfstring(L, PROF_T " (%s, %d metrics, %d passes)", profile_session_chip(p->s),
                    (int)profile_session_count(p->s), profile_session_passes(p->s));
    return 1;
}

/* ---- SASS ---- */

static int l_sass_tool(lua_State *L)
{
    char path[1024];
    int kind = 0;
    ks_status st;
    ks_clear(&st);
    if (sass_find_tool(path, sizeof path, &kind, &st))
        return lh_pushfail(L, &st);
    lua_pushstring(L, path);
    lua_pushstring(L, kind == SASS_TOOL_NVDISASM ? "nvdisasm" : "cuobjdump");
    return 2;
}

static int l_disassemble(lua_State *L)
{
    size_t n;
    const char *img = luaL_checklstring(L, 1, &n);
    double timeout = luaL_optnumber(L, 2, 60);
    luaL_argcheck(L, n > 0, 1, "empty cubin");
    char *text = NULL;
    size_t len = 0;
    char tool[1024];
    ks_status st;
    ks_clear(&st);
    if (sass_disassemble(img, n, timeout, &text, &len, tool, sizeof tool, &st))
        return lh_pushfail(L, &st);
    lua_pushlstring(L, text, len);
    free(text);
    lua_pushstring(L, tool);
    return 2;
}

/* [-0, +1, m] {opcodes={OP=n}, order={OP...}} from a histogram, plus total. */
static void push_hist(lua_State *L, const sass_hist *h)
{
    lua_createtable(L, 0, 4);
    lua_createtable(L, 0, (int)h->n);
    lua_Integer total = 0;
    for (size_t i = 0; i < h->n; i++) {
        lua_pushinteger(L, (lua_Integer)h->v[i].count);
        lua_setfield(L, -2, h->v[i].op);
        total += (lua_Integer)h->v[i].count;
    }
    lua_setfield(L, -2, "opcodes");
    lua_createtable(L, (int)h->n, 0);
    for (size_t i = 0; i < h->n; i++) {
        lua_pushstring(L, h->v[i].op);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "order");
    lh_setint(L, "total", total);
}

/* Parses text into a census table; on failure pushes the failure triple and
 * returns 3, else pushes the table and returns 1. */
static int push_census(lua_State *L, const char *text, size_t len)
{
    sass_listing l;
    memset(&l, 0, sizeof l);
    sass_hist h;
    memset(&h, 0, sizeof h);
    ks_status st;
    ks_clear(&st);
    if (sass_parse(text, len, &l, &st) || sass_census(&l, NULL, &h, &st)) {
        sass_listing_free(&l);
        sass_hist_free(&h);
        return lh_pushfail(L, &st);
    }
    push_hist(L, &h);
    lh_setint(L, "rows", (lua_Integer)l.n);
    lua_createtable(L, (int)l.nfuncs, 0);
    for (size_t i = 0; i < l.nfuncs; i++) {
        lua_pushstring(L, l.funcs[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "functions");
    sass_listing_free(&l);
    sass_hist_free(&h);
    return 1;
}

static int l_sass_parse(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    return push_census(L, text, len);
}

static int l_sass_census(lua_State *L)
{
    size_t n;
    const char *img = luaL_checklstring(L, 1, &n);
    luaL_argcheck(L, n > 0, 1, "empty cubin");
    char *text = NULL;
    size_t len = 0;
    char tool[1024];
    ks_status st;
    ks_clear(&st);
    if (sass_disassemble(img, n, 60, &text, &len, tool, sizeof tool, &st))
        return lh_pushfail(L, &st);
    int r = push_census(L, text, len);
    free(text);
    if (r == 1)
        lh_setstr(L, "tool", tool);
    return r;
}

static int l_sass_join(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Unsigned n = lua_rawlen(L, 2);
    sass_record *recs = lua_newuserdatauv(L, (n ? n : 1) * sizeof *recs, 0);
    for (lua_Unsigned i = 0; i < n; i++) {
        if (lua_rawgeti(L, 2, (lua_Integer)i + 1) != LUA_TTABLE)
            luaL_error(L, "records[%d] must be a table", (int)(i + 1));
        int t = lua_gettop(L);
        lua_getfield(L, t, "func");
        recs[i].func = lua_type(L, -1) == LUA_TSTRING ? (char *)lua_tostring(L, -1) : NULL;
        lua_pop(L, 1); /* the record table keeps the string */
        lua_Integer off = lh_optintfield(L, t, "offset", -1);
        lua_Integer cnt = lh_optintfield(L, t, "count", -1);
        if (off < 0 || off > 0xffffffffLL || cnt < 0)
            luaL_error(L, "records[%d] needs offset and count (non-negative integers)", (int)(i + 1));
        recs[i].offset = (uint32_t)off;
        recs[i].count = (uint64_t)cnt;
        lua_pop(L, 1);
    }
    sass_listing l;
    memset(&l, 0, sizeof l);
    sass_hist h;
    memset(&h, 0, sizeof h);
    ks_status st;
    ks_clear(&st);
    size_t un = 0;
    uint64_t unc = 0;
    if (sass_parse(text, len, &l, &st) || sass_join(&l, recs, (size_t)n, &h, &un, &unc, &st)) {
        sass_listing_free(&l);
        sass_hist_free(&h);
        return lh_pushfail(L, &st);
    }
    push_hist(L, &h);
    lh_setint(L, "unmatched", (lua_Integer)un);
    lh_setint(L, "unmatched_count", (lua_Integer)unc);
    sass_listing_free(&l);
    sass_hist_free(&h);
    return 1;
}

/* Records from C, owned by a userdata so that a raise while building the
 * Lua table cannot leak them. */
#define RECS_T "klab.prof.records"

typedef struct recs_box {
    sass_record *r;
    size_t n;
} recs_box;

static int recs_gc(lua_State *L)
{
    recs_box *b = luaL_checkudata(L, 1, RECS_T);
    sass_records_free(b->r, b->n);
    b->r = NULL;
    b->n = 0;
    return 0;
}

static int l_sass_collect(lua_State *L)
{
    l_ctx *c = lgpu_check_ctx(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    lcall lc = {.L = L, .run = 2};
    lh_calls_begin(&lc.calls, L); /* 3, 4 */
    recs_box *box = lua_newuserdatauv(L, sizeof *box, 0); /* 5 */
    box->r = NULL;
    box->n = 0;
    luaL_setmetatable(L, RECS_T);
    ks_status st;
    ks_clear(&st);
    int rc = sass_metrics_collect(c->ctx, cb_run, &lc, &box->r, &box->n, &st);
    if (lc.calls.raised)
        return lh_reraise(&lc.calls);
    if (rc) {
        if (lc.code[0]) {
            lh_pushfail(L, &st);
            lua_pop(L, 1);
            lua_pushstring(L, lc.code);
            return 3;
        }
        return lh_pushfail(L, &st);
    }
    lua_createtable(L, (int)box->n, 0);
    for (size_t i = 0; i < box->n; i++) {
        lua_createtable(L, 0, 3);
        if (box->r[i].func)
            lh_setstr(L, "func", box->r[i].func);
        lh_setint(L, "offset", (lua_Integer)box->r[i].offset);
        lh_setint(L, "count", (lua_Integer)box->r[i].count);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* ---- a disassembly running in the background ---- */

#define DISASM_T "klab.prof.Disassembly"

typedef struct l_disasm {
    sass_disasm *d;
} l_disasm;

static int l_disassemble_start(lua_State *L)
{
    size_t n;
    const char *img = luaL_checklstring(L, 1, &n);
    luaL_argcheck(L, n > 0, 1, "empty cubin");
    l_disasm *box = lua_newuserdatauv(L, sizeof *box, 0);
    box->d = NULL;
    luaL_setmetatable(L, DISASM_T);
    ks_status st;
    ks_clear(&st);
    if (sass_disasm_start(img, n, &box->d, &st))
        return lh_pushfail(L, &st);
    return 1;
}

static int disasm_finish(lua_State *L)
{
    l_disasm *box = luaL_checkudata(L, 1, DISASM_T);
    double timeout = luaL_optnumber(L, 2, 60);
    if (!box->d)
        return luaL_error(L, "the disassembly was freed");
    char *text = NULL;
    size_t len = 0;
    ks_status st;
    ks_clear(&st);
    if (sass_disasm_finish(box->d, timeout, &text, &len, &st))
        return st.code == KS_EINVAL ? lh_raise(L, &st) : lh_pushfail(L, &st);
    lua_pushlstring(L, text, len);
    free(text);
    lua_pushstring(L, sass_disasm_tool(box->d));
    return 2;
}

static int disasm_free(lua_State *L)
{
    l_disasm *box = luaL_checkudata(L, 1, DISASM_T);
    sass_disasm_free(box->d);
    box->d = NULL;
    return 0;
}

static const luaL_Reg disasm_methods[] = {{"finish", disasm_finish}, {"free", disasm_free}, {NULL, NULL}};
static const luaL_Reg disasm_meta[] = {{"__gc", disasm_free}, {"__close", disasm_free}, {NULL, NULL}};

static int l_persistent(lua_State *L)
{
    if (!lua_isnoneornil(L, 1)) {
        luaL_checktype(L, 1, LUA_TBOOLEAN);
        profile_set_persistent(lua_toboolean(L, 1));
    }
    lua_pushboolean(L, profile_persistent());
    return 1;
}

static int l_release(lua_State *L)
{
    (void)L;
    profile_release();
    return 0;
}

static const luaL_Reg prof_funcs[] = {
    {"persistent", l_persistent}, {"release", l_release},
    {"available", l_available}, {"new", l_new}, {"metric_table", l_metric_table},
    {"chips", l_chips}, {"check_metrics", l_check_metrics}, {"patched", l_patched},
    {"passes", l_passes}, {"chip_name", l_chip_name},
    {"occupancy", l_occupancy}, {"sass_tool", l_sass_tool}, {"disassemble", l_disassemble},
    {"disassemble_start", l_disassemble_start},
    {"sass_parse", l_sass_parse}, {"sass_census", l_sass_census}, {"sass_join", l_sass_join},
    {"sass_collect", l_sass_collect}, {NULL, NULL},
};

static const luaL_Reg prof_methods[] = {
    {"measure", prof_measure}, {"info", prof_info}, {"free", prof_free}, {NULL, NULL},
};

static const luaL_Reg prof_meta[] = {
    {"__gc", prof_gc}, {"__close", prof_gc}, {"__tostring", prof_tostring}, {NULL, NULL},
};

int luaopen_klab_prof(lua_State *L)
{
    lh_newclass(L, PROF_T, prof_methods, prof_meta);
    lua_pop(L, 1);
    static const luaL_Reg recs_meta[] = {{"__gc", recs_gc}, {NULL, NULL}};
    lh_newclass(L, RECS_T, NULL, recs_meta);
    lua_pop(L, 1);
    lh_newclass(L, DISASM_T, disasm_methods, disasm_meta);
    lua_pop(L, 1);
    luaL_newlib(L, prof_funcs);
    return 1;
}
