/*
 * l_sandbox.c: require "klab.sandbox", a jail for small untrusted Lua chunks
 * (a candidate's launch plan).
 *
 *   value, printed = sandbox.run(source, chunkname, env, opts)
 *   nil, message, code, printed = sandbox.run(...)    -- on failure
 *
 *   source     Lua source text (binary chunks are refused)
 *   chunkname  name used in error messages ("plan" gives "plan:3: ...")
 *   env        nil or a table of plain data (numbers, strings, booleans,
 *              nested tables) whose fields become globals of the chunk
 *   opts       nil or {memory = bytes (32 MiB), instructions = count (1e7),
 *              seconds = wall-clock limit (5; 0 = none),
 *              prelude = source run first in the same state (helpers),
 *              load = true: a global load(text, name, "t", env) for
 *              trusted code run as the chunk (task files are loaded by
 *              such a chunk), text only, inside the same limits}
 *
 * Each call runs the chunk in a NEW lua_State, separate from the caller's,
 * and closes it before returning. That state has only: the base functions
 * without load, loadfile, dofile, collectgarbage and warn (print captures
 * its output, up to 4 KiB, returned as `printed`; setmetatable refuses
 * __gc, because finalizers run with hooks off; xpcall skips the chunk's
 * message handler once a limit has tripped, for the same reason); string without dump and
 * without the pattern functions find, match, gmatch and gsub (their
 * backtracking runs in C, beyond the reach of the instruction hook), and
 * with a rep that refuses empty-string loops; table without move, and
 * with insert, remove, sort, concat and unpack refusing tables with
 * metatables and charging their C loops to the instruction budget (a sparse
 * table's length can be 2^61); math without random and randomseed (plans must be
 * deterministic); utf8. No io, os, package, require, debug or coroutine.
 *
 * Limits: a counting allocator with a hard cap on the state's total bytes,
 * and a count hook that charges instructions and checks the deadline. Once
 * a limit is passed the hook re-arms itself to fire on every instruction,
 * so a pcall inside the chunk cannot swallow the error, and the outcome is
 * decided by the tripped limit, not by what the chunk did afterwards.
 *
 * The env is copied in and the chunk's first return value copied out as
 * plain data (raw access, so no metamethod of the chunk runs outside the
 * jail); functions, userdata, cycles, nesting deeper than 64 or more than
 * 1,000,000 values are refused. What the copy out makes counts against the
 * memory cap: every string each time it is copied (one string referenced
 * 200,000 times is 200,000 copies) and every table and entry; past the cap
 * the copy stops with "EMEMORY". Failure codes: "EPLAN" (syntax error, the
 * chunk raised, or the result is not plain data), "EMEMORY" (memory cap),
 * "ELIMIT" (instruction cap or deadline). Misuse (a function in env, a bad
 * option) raises.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "lhost.h"

#define SB_MAX_DEPTH 64
#define SB_MAX_VALUES 1000000
#define SB_PRINT_MAX 4096
#define SB_STEP 1000
#define SB_BOX "sandbox.State"

typedef struct sb_ctx {
    size_t used;            /* bytes currently allocated by the jailed state */
    size_t cap;             /* hard cap once capped is set */
    int capped;
    int mem_tripped;
    lua_Integer ins;        /* instructions charged so far */
    lua_Integer ins_cap;
    int ins_tripped;
    double deadline;        /* CLOCK_MONOTONIC seconds; 0 = none */
    double seconds;
    int time_tripped;
    int armed;              /* the hook charges instructions */
    char out[SB_PRINT_MAX]; /* captured print output */
    size_t outlen;
    int out_truncated;
} sb_ctx;

/* The jailed state and its context, owned by a to-be-closed userdata in the
 * caller's stack so that they are released on every path, errors included. */
typedef struct sb_box {
    lua_State *S;
    sb_ctx *c;
} sb_box;

/* Context handed to the protected copy functions. */
typedef struct sb_copy {
    lua_State *from;
    lua_State *to;
    int from_idx;           /* absolute index of the value to copy in `from` */
    const void *path[SB_MAX_DEPTH];
    int depth;
    long count;
    size_t bytes;           /* what the copy made so far in `to` (copy-out) */
    size_t cap;             /* its limit: the jail's memory cap; 0: none */
    int over;               /* the copy passed cap */
} sb_copy;

/* What a copied table entry costs beyond its key and value's own bytes
 * (Lua's Node), and a table beyond its entries. */
#define SB_ENTRY_BYTES 32
#define SB_TABLE_BYTES 64

static int sb_tripped(const sb_ctx *c)
{
    return c->mem_tripped || c->ins_tripped || c->time_tripped;
}

/* lua_Alloc with a hard cap. A refused growth marks the memory limit as
 * passed; the hook then makes the failure stick. With ptr == NULL, osize is
 * an object kind, not a size. */
static void *sb_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    sb_ctx *c = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        c->used -= old;
        return NULL;
    }
    if (c->capped && nsize > old && (nsize - old > c->cap || c->used + (nsize - old) > c->cap)) {
        c->mem_tripped = 1;
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (!p)
        return NULL;
    c->used = c->used - old + nsize;
    return p;
}

static sb_ctx *sb_getctx(lua_State *S)
{
    void *ud = NULL;
    lua_getallocf(S, &ud);
    return ud;
}

static int sb_delegate(lua_State *S);

/* Count hook: charges SB_STEP instructions per call and checks the deadline.
 * After any limit trips it fires on every instruction and always raises. */
static void sb_hook(lua_State *S, lua_Debug *ar)
{
    (void)ar;
    sb_ctx *c = sb_getctx(S);
    if (!sb_tripped(c)) {
        if (!c->armed)
            return;
        c->ins += SB_STEP;
        if (c->ins >= c->ins_cap)
            c->ins_tripped = 1;
        else if (c->deadline > 0 && clock_now() > c->deadline)
            c->time_tripped = 1;
        if (!sb_tripped(c))
            return;
        lua_sethook(S, sb_hook, LUA_MASKCOUNT, 1);
    }
    luaL_error(S, "limit exceeded");
}

/* print: appends its arguments, tab-separated, to the capture buffer. */
static int sb_print(lua_State *S)
{
    sb_ctx *c = sb_getctx(S);
    int n = lua_gettop(S);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s = luaL_tolstring(S, i, &len);
        for (size_t k = 0; k < len + 1; k++) {
            char ch = k < len ? s[k] : (i < n ? '\t' : '\n');
            if (c->outlen < SB_PRINT_MAX - 1)
                c->out[c->outlen++] = ch;
            else
                c->out_truncated = 1;
        }
        lua_pop(S, 1);
    }
    if (n == 0 && c->outlen < SB_PRINT_MAX - 1)
        c->out[c->outlen++] = '\n';
    return 0;
}

/* setmetatable that refuses __gc: finalizers run with debug hooks off, so
 * an endless finalizer could not be stopped. Upvalue 1 is the original. */
static int sb_setmetatable(lua_State *S)
{
    if (lua_type(S, 2) == LUA_TTABLE) {
        lua_pushliteral(S, "__gc");
        int ty = lua_rawget(S, 2);
        lua_pop(S, 1);
        if (ty != LUA_TNIL)
            return luaL_error(S, "__gc metamethods are not allowed here");
    }
    return sb_delegate(S);
}

/* Message handler of the sandbox's xpcall. An error raised by the limit
 * hook is thrown while hooks are disabled (the hook is still on the C
 * stack), so a Lua message handler run then could loop forever unchecked.
 * Once a limit has tripped, the user's handler (upvalue 1) is skipped. */
static int sb_msgh(lua_State *S)
{
    if (sb_tripped(sb_getctx(S)))
        return 1;
    lua_pushvalue(S, lua_upvalueindex(1));
    lua_insert(S, 1);
    lua_call(S, lua_gettop(S) - 1, 1);
    return 1;
}

/* xpcall(f, msgh, ...) through sb_msgh (no coroutines here, so no
 * continuation is needed). */
static int sb_xpcall(lua_State *S)
{
    int n = lua_gettop(S);
    luaL_checkany(S, 1);
    luaL_checktype(S, 2, LUA_TFUNCTION);
    luaL_checkstack(S, n + 2, "xpcall");
    lua_pushvalue(S, 2);
    lua_pushcclosure(S, sb_msgh, 1);
    lua_pushvalue(S, 1);
    for (int i = 3; i <= n; i++)
        lua_pushvalue(S, i);
    int st = lua_pcall(S, n - 2, LUA_MULTRET, n + 1);
    lua_pushboolean(S, st == LUA_OK);
    lua_replace(S, n + 1);
    return lua_gettop(S) - n;
}

/* string.rep bounded by the memory cap before any C loop starts: the stock
 * rep loops n times even when the result is empty. Upvalue 1: the original. */
static int sb_rep(lua_State *S)
{
    sb_ctx *c = sb_getctx(S);
    size_t l, lsep = 0;
    luaL_checklstring(S, 1, &l);
    lua_Integer n = luaL_checkinteger(S, 2);
    if (!lua_isnoneornil(S, 3))
        luaL_checklstring(S, 3, &lsep);
    if (n <= 0 || l + lsep == 0) {
        lua_pushliteral(S, "");
        return 1;
    }
    if ((size_t)n > c->cap / (l + lsep)) {
        c->mem_tripped = 1;
        return luaL_error(S, "string.rep: result larger than the memory limit");
    }
    int top = lua_gettop(S);
    lua_pushvalue(S, lua_upvalueindex(1));
    lua_insert(S, 1);
    lua_call(S, top, 1);
    return 1;
}

/* Charges n units of C-loop work to the instruction budget; once over the
 * cap the limit trips and this raises. */
static void sb_charge(lua_State *S, lua_Integer n)
{
    sb_ctx *c = sb_getctx(S);
    if (!c->armed || n <= 0)
        return;
    if (n >= c->ins_cap - c->ins) {
        c->ins_tripped = 1;
        lua_sethook(S, sb_hook, LUA_MASKCOUNT, 1);
        luaL_error(S, "limit exceeded");
    }
    c->ins += n;
}

/* Calls upvalue 1 with this call's arguments; returns its results. */
static int sb_delegate(lua_State *S)
{
    int n = lua_gettop(S);
    lua_pushvalue(S, lua_upvalueindex(1));
    lua_insert(S, 1);
    lua_call(S, n, LUA_MULTRET);
    return lua_gettop(S);
}

/* The table functions loop in C over #t, which a sparse table can make as
 * large as 2^61 with a few dozen entries, and which a __len, __index or
 * __newindex could make cost anything. In a plan they take only tables
 * without metatables, and their loop length is charged to the budget
 * before they run. Upvalue 1: the original. */
static lua_Integer sb_rawtable(lua_State *S, const char *fname)
{
    luaL_checktype(S, 1, LUA_TTABLE);
    if (lua_getmetatable(S, 1))
        luaL_error(S, "table.%s: tables with metatables are not allowed here", fname);
    return (lua_Integer)lua_rawlen(S, 1);
}

static int sb_tinsert(lua_State *S)
{
    sb_charge(S, sb_rawtable(S, "insert") + 1);
    return sb_delegate(S);
}

static int sb_tremove(lua_State *S)
{
    sb_charge(S, sb_rawtable(S, "remove") + 1);
    return sb_delegate(S);
}

static int sb_tsort(lua_State *S)
{
    lua_Integer n = sb_rawtable(S, "sort"), lg = 1;
    for (lua_Integer k = n; k > 1; k >>= 1)
        lg++;
    sb_charge(S, n > LUA_MAXINTEGER / 64 ? LUA_MAXINTEGER : n * lg);
    return sb_delegate(S);
}

static int sb_tconcat(lua_State *S)
{
    lua_Integer n = sb_rawtable(S, "concat");
    lua_Integer i = luaL_optinteger(S, 3, 1), j = luaL_optinteger(S, 4, n);
    if (j >= i)
        sb_charge(S, (i < 0 && j > LUA_MAXINTEGER + i) ? LUA_MAXINTEGER : j - i + 1);
    return sb_delegate(S);
}

static int sb_tunpack(lua_State *S)
{
    sb_rawtable(S, "unpack");
    return sb_delegate(S);
}

static void sb_remove(lua_State *S, const char *lib, const char *const *names)
{
    if (lib)
        lua_getglobal(S, lib);
    else
        lua_pushglobaltable(S);
    for (; *names; names++) {
        lua_pushnil(S);
        lua_setfield(S, -2, *names);
    }
    lua_pop(S, 1);
}

static void sb_wrap(lua_State *S, const char *lib, const char *name, lua_CFunction f)
{
    if (lib)
        lua_getglobal(S, lib);
    else
        lua_pushglobaltable(S);
    lua_getfield(S, -1, name);
    lua_pushcclosure(S, f, 1);
    lua_setfield(S, -2, name);
    lua_pop(S, 1);
}

/* load(text [, name [, mode [, env]]]): text chunks only (a binary chunk
 * could crash the state), from a string (no reader function). What it
 * loads runs inside the same limits as everything else here. */
static int sb_load(lua_State *S)
{
    size_t len;
    const char *src = luaL_checklstring(S, 1, &len);
    const char *name = luaL_optstring(S, 2, "=(load)");
    const char *mode = luaL_optstring(S, 3, "t");
    if (strcmp(mode, "t") != 0)
        return luaL_argerror(S, 3, "only text chunks (mode \"t\") can be loaded here");
    int has_env = !lua_isnone(S, 4);
    if (luaL_loadbufferx(S, src, len, name, "t") != LUA_OK) {
        luaL_pushfail(S);
        lua_insert(S, -2);
        return 2;
    }
    if (has_env) {
        lua_pushvalue(S, 4);
        if (!lua_setupvalue(S, -2, 1))
            lua_pop(S, 1);
    }
    return 1;
}

/* [-0, +0, m] Opens the allowed libraries and strips what a plan may not
 * touch; argument 1: whether to offer the text-only load. Runs protected,
 * before the memory cap is armed. */
static int sb_setup(lua_State *S)
{
    static const char *const base_off[] = {"dofile", "loadfile", "load", "collectgarbage",
                                           "warn", "require", NULL};
    static const char *const string_off[] = {"dump", "find", "match", "gmatch", "gsub", NULL};
    static const char *const table_off[] = {"move", NULL};
    static const char *const math_off[] = {"random", "randomseed", NULL};
    int with_load = lua_toboolean(S, 1);
    luaL_requiref(S, LUA_GNAME, luaopen_base, 1);
    luaL_requiref(S, LUA_STRLIBNAME, luaopen_string, 1);
    luaL_requiref(S, LUA_TABLIBNAME, luaopen_table, 1);
    luaL_requiref(S, LUA_MATHLIBNAME, luaopen_math, 1);
    luaL_requiref(S, LUA_UTF8LIBNAME, luaopen_utf8, 1);
    lua_settop(S, 0);
    sb_remove(S, NULL, base_off);
    sb_remove(S, LUA_STRLIBNAME, string_off);
    sb_remove(S, LUA_TABLIBNAME, table_off);
    sb_remove(S, LUA_MATHLIBNAME, math_off);
    sb_wrap(S, NULL, "setmetatable", sb_setmetatable);
    sb_wrap(S, LUA_STRLIBNAME, "rep", sb_rep);
    sb_wrap(S, LUA_TABLIBNAME, "insert", sb_tinsert);
    sb_wrap(S, LUA_TABLIBNAME, "remove", sb_tremove);
    sb_wrap(S, LUA_TABLIBNAME, "sort", sb_tsort);
    sb_wrap(S, LUA_TABLIBNAME, "concat", sb_tconcat);
    sb_wrap(S, LUA_TABLIBNAME, "unpack", sb_tunpack);
    lua_pushcfunction(S, sb_print);
    lua_setglobal(S, "print");
    lua_pushcfunction(S, sb_xpcall);
    lua_setglobal(S, "xpcall");
    if (with_load) {
        lua_pushcfunction(S, sb_load);
        lua_setglobal(S, "load");
    }
    /* The loaded-libraries table would hand out the original functions. */
    lua_pushnil(S);
    lua_setfield(S, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    return 0;
}

/* ---- plain-data copies ------------------------------------------------ */

/* [-0, +0, v] Checks, in the caller's state, that the value at idx is plain
 * data (raises on misuse). Leaves the stack as it was. */
static void check_plain(lua_State *L, int idx, sb_copy *cp, const char *what)
{
    int ty = lua_type(L, idx);
    if (ty == LUA_TNIL || ty == LUA_TBOOLEAN || ty == LUA_TNUMBER || ty == LUA_TSTRING)
        return;
    if (ty != LUA_TTABLE)
        luaL_error(L, "sandbox: %s holds a %s; only plain data can enter", what, lua_typename(L, ty));
    const void *p = lua_topointer(L, idx);
    for (int i = 0; i < cp->depth; i++)
        if (cp->path[i] == p)
            luaL_error(L, "sandbox: %s holds a cycle", what);
    if (cp->depth >= SB_MAX_DEPTH)
        luaL_error(L, "sandbox: %s is nested deeper than %d", what, SB_MAX_DEPTH);
    if (++cp->count > SB_MAX_VALUES)
        luaL_error(L, "sandbox: %s holds more than %d values", what, SB_MAX_VALUES);
    luaL_checkstack(L, 4, "sandbox: env");
    cp->path[cp->depth++] = p;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        int kt = lua_type(L, -2);
        if (kt != LUA_TSTRING && kt != LUA_TNUMBER && kt != LUA_TBOOLEAN)
            luaL_error(L, "sandbox: %s has a key of type %s", what, lua_typename(L, kt));
        check_plain(L, lua_gettop(L), cp, what);
        lua_pop(L, 1);
    }
    cp->depth--;
}

/* Charges n bytes of the copy against its cap; raises in `to` past it. */
static void copy_charge(sb_copy *cp, size_t n)
{
    if (!cp->cap)
        return;
    if (n > cp->cap || cp->bytes > cp->cap - n) {
        cp->over = 1;
        luaL_error(cp->to, "the returned value is larger than the memory limit (%I bytes)", (lua_Integer)cp->cap);
    }
    cp->bytes += n;
}

/* Pushes onto `to` a copy of the plain value at index idx of `from`. Uses
 * only calls that cannot raise in `from` (raw iteration of values already
 * checked or about to be checked); may raise in `to`. On a refusal it raises
 * in `to` when `to` is the running state. */
static void copy_value(sb_copy *cp, int idx, int strict_in_to)
{
    lua_State *F = cp->from, *T = cp->to;
    switch (lua_type(F, idx)) {
    case LUA_TNIL:
        lua_pushnil(T);
        return;
    case LUA_TBOOLEAN:
        lua_pushboolean(T, lua_toboolean(F, idx));
        return;
    case LUA_TNUMBER:
        if (lua_isinteger(F, idx))
            lua_pushinteger(T, lua_tointeger(F, idx));
        else
            lua_pushnumber(T, lua_tonumber(F, idx));
        return;
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(F, idx, &len);
        copy_charge(cp, len + 1);
        lua_pushlstring(T, s, len);
        return;
    }
    case LUA_TTABLE:
        break;
    default:
        luaL_error(T, "the %s returned a %s; only plain data (numbers, strings, booleans, tables) may leave",
                   strict_in_to ? "chunk" : "env", lua_typename(F, lua_type(F, idx)));
        return;
    }
    const void *p = lua_topointer(F, idx);
    for (int i = 0; i < cp->depth; i++)
        if (cp->path[i] == p)
            luaL_error(T, "the returned value holds a cycle");
    if (cp->depth >= SB_MAX_DEPTH)
        luaL_error(T, "the returned value is nested deeper than %d", SB_MAX_DEPTH);
    if (++cp->count > SB_MAX_VALUES)
        luaL_error(T, "the returned value holds more than %d values", SB_MAX_VALUES);
    if (!lua_checkstack(F, 4))
        luaL_error(T, "out of stack space while copying");
    luaL_checkstack(T, 4, "copying a value");
    cp->path[cp->depth++] = p;
    copy_charge(cp, SB_TABLE_BYTES);
    lua_newtable(T);
    lua_pushnil(F);
    while (lua_next(F, idx)) {
        int kt = lua_type(F, -2);
        if (kt != LUA_TSTRING && kt != LUA_TNUMBER && kt != LUA_TBOOLEAN)
            luaL_error(T, "the returned value has a key of type %s", lua_typename(F, kt));
        copy_charge(cp, SB_ENTRY_BYTES);
        copy_value(cp, lua_gettop(F) - 1, strict_in_to);
        copy_value(cp, lua_gettop(F), strict_in_to);
        lua_rawset(T, -3);
        lua_pop(F, 1);
    }
    cp->depth--;
}

/* Runs in the jailed state S, protected: copies the caller's env table
 * (already checked plain) into S's globals. */
static int sb_copy_in(lua_State *S)
{
    sb_copy *cp = lua_touserdata(S, 1);
    lua_State *L = cp->from;
    luaL_checkstack(S, 8, "sandbox env");
    if (!lua_checkstack(L, 4))
        return luaL_error(S, "out of stack space while copying the env");
    lua_pushglobaltable(S);
    int g = lua_gettop(S);
    lua_pushnil(L);
    while (lua_next(L, cp->from_idx)) {
        copy_value(cp, lua_gettop(L) - 1, 0);
        copy_value(cp, lua_gettop(L), 0);
        lua_rawset(S, g);
        lua_pop(L, 1);
    }
    return 0;
}

/* Runs in the caller's state L, protected: copies S's value at from_idx. */
static int sb_copy_out(lua_State *L)
{
    sb_copy *cp = lua_touserdata(L, 1);
    copy_value(cp, cp->from_idx, 1);
    return 1;
}

static int sb_readopt_int(lua_State *L, int t, const char *k, lua_Integer dflt, lua_Integer *out)
{
    lua_Integer v = lh_optintfield(L, t, k, dflt);
    if (v <= 0)
        return luaL_error(L, "sandbox.run: option '%s' must be positive", k);
    *out = v;
    return 0;
}

/* Pushes nil, message, code, printed; returns 4. */
static int sb_fail(lua_State *L, const sb_ctx *c, const char *msg, size_t len, const char *code)
{
    lua_pushnil(L);
    lua_pushlstring(L, msg, len);
    lua_pushstring(L, code);
    lua_pushlstring(L, c->out, c->outlen);
    return 4;
}

/* Message for the failure of a limit, or NULL when none tripped. */
static const char *sb_limit_msg(lua_State *L, const sb_ctx *c, const char *chunkname, const char **code)
{
    if (c->mem_tripped) {
        *code = "EMEMORY";
        return lua_pushfstring(L, "%s exceeded the memory limit (%I bytes)", chunkname,
                               (lua_Integer)c->cap);
    }
    if (c->ins_tripped) {
        *code = "ELIMIT";
        return lua_pushfstring(L, "%s exceeded the instruction limit (%I instructions)", chunkname,
                               c->ins_cap);
    }
    if (c->time_tripped) {
        *code = "ELIMIT";
        return lua_pushfstring(L, "%s exceeded the time limit (%f s)", chunkname, (lua_Number)c->seconds);
    }
    return NULL;
}

/* Copies the error object at the top of S (a string or a number; anything
 * else is described, never converted, since converting could run code). */
static const char *sb_errmsg(lua_State *S, size_t *len)
{
    int ty = lua_type(S, -1);
    if (ty == LUA_TSTRING || ty == LUA_TNUMBER)
        return lua_tolstring(S, -1, len);
    *len = strlen("the chunk raised a non-string error value");
    return "the chunk raised a non-string error value";
}

/* Loads and runs one chunk (text only) in S; returns a Lua status. */
static int sb_exec(lua_State *S, const char *src, size_t len, const char *name, int nres)
{
    int st = luaL_loadbufferx(S, src, len, name, "t");
    if (st != LUA_OK)
        return st;
    return lua_pcall(S, 0, nres, 0);
}

static int l_sandbox_run(lua_State *L)
{
    size_t srclen, prelen = 0;
    const char *src = luaL_checklstring(L, 1, &srclen);
    const char *cname = luaL_optstring(L, 2, "chunk");
    int has_env = !lua_isnoneornil(L, 3);
    if (has_env)
        luaL_checktype(L, 3, LUA_TTABLE);
    if (!lua_isnoneornil(L, 4))
        luaL_checktype(L, 4, LUA_TTABLE);
    lua_settop(L, 4);

    lua_Integer mem = 32 * 1024 * 1024, ins = 10 * 1000 * 1000;
    lua_Number seconds = 5;
    const char *prelude = NULL;
    int with_load = 0;
    if (!lua_isnil(L, 4)) {
        sb_readopt_int(L, 4, "memory", mem, &mem);
        sb_readopt_int(L, 4, "instructions", ins, &ins);
        seconds = lh_optnumfield(L, 4, "seconds", seconds);
        if (!(seconds >= 0))
            return luaL_error(L, "sandbox.run: option 'seconds' must be >= 0");
        with_load = lh_optboolfield(L, 4, "load", 0);
        if (lua_getfield(L, 4, "prelude") != LUA_TNIL) {
            if (lua_type(L, -1) != LUA_TSTRING)
                return luaL_error(L, "sandbox.run: option 'prelude' must be a string");
            prelude = lua_tolstring(L, -1, &prelen); /* anchored in opts */
        }
        lua_pop(L, 1);
    }

    sb_copy cp;
    memset(&cp, 0, sizeof cp);
    if (has_env)
        check_plain(L, 3, &cp, "env");

    sb_box *box = lua_newuserdatauv(L, sizeof *box, 0);
    box->S = NULL;
    box->c = NULL;
    luaL_setmetatable(L, SB_BOX);
    lua_toclose(L, -1); /* index 5: released when this function returns or raises */
    sb_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return luaL_error(L, "sandbox: out of memory");
    box->c = c;
    c->cap = (size_t)mem;
    c->ins_cap = ins;
    c->seconds = seconds;
    lua_State *S = lua_newstate(sb_alloc, c);
    if (!S)
        return luaL_error(L, "sandbox: cannot create a Lua state");
    box->S = S;
    lua_sethook(S, sb_hook, LUA_MASKCOUNT, SB_STEP);
    const char *code = NULL;

    lua_pushcfunction(S, sb_setup);
    lua_pushboolean(S, with_load);
    if (lua_pcall(S, 1, 0, 0) != LUA_OK)
        return luaL_error(L, "sandbox: cannot set up the Lua state");
    c->capped = 1;

    if (has_env) {
        int ltop = lua_gettop(L);
        memset(&cp, 0, sizeof cp);
        cp.from = L;
        cp.to = S;
        cp.from_idx = 3;
        lua_pushcfunction(S, sb_copy_in);
        lua_pushlightuserdata(S, &cp);
        int st = lua_pcall(S, 1, 0, 0);
        lua_settop(L, ltop);
        if (st != LUA_OK) {
            const char *m = sb_limit_msg(L, c, "env", &code);
            if (!m) {
                size_t len;
                const char *e = sb_errmsg(S, &len);
                lua_pushlstring(L, e, len);
                code = "EPLAN";
            }
            goto fail_top;
        }
    }

    c->armed = 1;
    if (seconds > 0)
        c->deadline = clock_now() + seconds;
    int st = LUA_OK;
    if (prelude)
        st = sb_exec(S, prelude, prelen, "=prelude", 0);
    if (st == LUA_OK) {
        lua_settop(S, 0);
        st = sb_exec(S, src, srclen, lua_pushfstring(L, "=%s", cname), 1);
        lua_pop(L, 1);
    }
    c->armed = 0;
    {
        const char *m = sb_limit_msg(L, c, cname, &code);
        if (m)
            goto fail_top;
    }
    if (st != LUA_OK) {
        size_t len;
        const char *e = sb_errmsg(S, &len);
        lua_pushlstring(L, e, len);
        code = "EPLAN";
        goto fail_top;
    }

    /* Copy the result out, protected in L; S only answers raw reads now. */
    memset(&cp, 0, sizeof cp);
    cp.from = S;
    cp.to = L;
    cp.from_idx = lua_gettop(S);
    cp.cap = c->cap;
    lua_pushcfunction(L, sb_copy_out);
    lua_pushlightuserdata(L, &cp);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        if (cp.over) {
            lua_pop(L, 1);
            lua_pushfstring(L, "%s exceeded the memory limit (%I bytes) with its result", cname, (lua_Integer)c->cap);
            code = "EMEMORY";
        } else {
            code = "EPLAN";
        }
        goto fail_top;
    }
    lua_pushlstring(L, c->out, c->outlen);
    return 2;

fail_top:
    /* The message is on top of L. */
    {
        size_t len;
        const char *m = lua_tolstring(L, -1, &len);
        return sb_fail(L, c, m, len, code);
    }
}

/* __gc and __close of the box: closes the jailed state once. */
static int sb_box_release(lua_State *L)
{
    sb_box *b = luaL_checkudata(L, 1, SB_BOX);
    if (b->S) {
        lua_close(b->S);
        b->S = NULL;
    }
    free(b->c);
    b->c = NULL;
    return 0;
}

static const luaL_Reg box_meta[] = {
    {"__gc", sb_box_release},
    {"__close", sb_box_release},
    {NULL, NULL},
};

static const luaL_Reg sandbox_funcs[] = {
    {"run", l_sandbox_run},
    {NULL, NULL},
};

int luaopen_klab_sandbox(lua_State *L)
{
    lh_newclass(L, SB_BOX, NULL, box_meta);
    lua_pop(L, 1);
    luaL_newlib(L, sandbox_funcs);
    return 1;
}
