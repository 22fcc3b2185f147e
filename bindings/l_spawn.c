/*
 * l_spawn.c: require "klab.spawn", running programs from an argument
 * vector, never through a shell (host/proc/spawn.h).
 *
 *   spawn.run{argv = {prog, arg...}, cwd=, stdin = path, stdout=, stderr=,
 *             max_output = bytes (16 MiB), timeout = seconds,
 *             limits = {memory = bytes, cpu = seconds, file_size = bytes},
 *             env = {NAME = value | false}}
 *     -> result | nil, msg, code         (nil when it could not start)
 *   spawn.start{...same...} -> Process | nil, msg, code
 *   p:wait([timeout]) -> result          p:pid() -> integer
 *   p:free() (also __gc, __close): kills its process group if it still runs
 *   spawn.which(name) -> path | nil      (PATH lookup, as the run would do)
 *
 * prog is a path, or a name looked up in PATH. stdout and stderr:
 * "capture" (default: kept in the result, at most max_output bytes each),
 * "null", "inherit", {file = path}, and for stderr also "stdout".
 * A result: {status = "exited" | "signaled" | "timeout", ok = (exited with 0),
 * code = exit status, signal = "SEGV", stdout =, stderr =, stdout_dropped =,
 * stderr_dropped = (bytes past max_output), seconds =}. A memory limit is
 * an address-space limit of the child: an allocation past it fails there.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lhost.h"
#include "proc/signals.h"
#include "proc/spawn.h"
#include "proc/worker.h"

#define PROC_T "klab.spawn.Process"

typedef struct lproc {
    spawn_proc *p;
    double timeout; /* from the options, for wait() without an argument */
} lproc;

/* Reads one stream option: a string mode or {file = path}. */
static spawn_io stream_opt(lua_State *L, int o, const char *k, const char **path, int is_err)
{
    *path = NULL;
    int ty = lua_getfield(L, o, k);
    spawn_io how = SPAWN_CAPTURE;
    if (ty == LUA_TSTRING) {
        const char *s = lua_tostring(L, -1);
        if (!strcmp(s, "capture"))
            how = SPAWN_CAPTURE;
        else if (!strcmp(s, "null"))
            how = SPAWN_NULL;
        else if (!strcmp(s, "inherit"))
            how = SPAWN_INHERIT;
        else if (is_err && !strcmp(s, "stdout"))
            how = SPAWN_TO_STDOUT;
        else
            luaL_error(L, "field '%s': unknown destination '%s'", k, s);
    } else if (ty == LUA_TTABLE) {
        lua_getfield(L, -1, "file");
        if (!lua_isstring(L, -1))
            luaL_error(L, "field '%s' needs {file = path}", k);
        *path = lua_tostring(L, -1); /* alive through the options table */
        lua_pop(L, 1);
        how = SPAWN_FILE;
    } else if (ty != LUA_TNIL) {
        luaL_error(L, "field '%s' must be a string or {file = path}", k);
    }
    lua_pop(L, 1);
    return how;
}

/* Fills o from the options table at index 1; pushes what the pointers need. */
static void read_opts(lua_State *L, spawn_opts *o)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    memset(o, 0, sizeof *o);
    if (lua_getfield(L, 1, "argv") != LUA_TTABLE)
        luaL_error(L, "field 'argv' must be a list of strings");
    o->argv = lh_strlist(L, -1, "argv");
    o->cwd = lh_optstrfield(L, 1, "cwd", NULL);
    o->stdin_path = lh_optstrfield(L, 1, "stdin", NULL);
    o->out = stream_opt(L, 1, "stdout", &o->out_path, 0);
    o->err = stream_opt(L, 1, "stderr", &o->err_path, 1);
    lua_Integer max = lh_optintfield(L, 1, "max_output", 0);
    if (max < 0)
        luaL_error(L, "field 'max_output' must be >= 0");
    o->capture_max = (size_t)max;
    o->timeout_s = lh_optnumfield(L, 1, "timeout", 0);
    if (lua_getfield(L, 1, "limits") != LUA_TNIL) {
        if (!lua_istable(L, -1))
            luaL_error(L, "field 'limits' must be a table");
        int t = lua_gettop(L);
        /* A program's address space is limited by the kernel: no watch. */
        o->limit_as = lh_optintfield(L, t, "memory", 0);
        o->limit_cpu = lh_optintfield(L, t, "cpu", 0);
        o->limit_fsize = lh_optintfield(L, t, "file_size", 0);
    }
    lua_pop(L, 1);
    o->envp = lh_envp(L, 1);
}

static void push_capture(lua_State *L, const char *k, const char *buf, size_t len, unsigned long long dropped)
{
    if (!buf)
        return;
    lua_pushlstring(L, buf, len);
    lua_setfield(L, -2, k);
    char dk[32];
    snprintf(dk, sizeof dk, "%s_dropped", k);
    lh_setint(L, dk, (lua_Integer)dropped);
}

static void push_result(lua_State *L, const spawn_result *r)
{
    lua_createtable(L, 0, 10);
    const char *status = r->end == SPAWN_TIMED_OUT     ? "timeout"
                         : r->end == SPAWN_OVER_MEMORY ? "memory"
                         : r->exited                   ? "exited"
                                                       : "signaled";
    lh_setstr(L, "status", status);
    lh_setbool(L, "ok", r->end == SPAWN_ENDED && r->exited && r->exit_code == 0);
    if (r->exited)
        lh_setint(L, "code", r->exit_code);
    if (r->signal) {
        const char *name = signals_name(r->signal);
        if (name)
            lh_setstr(L, "signal", name);
        else
            lh_setint(L, "signal", r->signal);
    }
    lh_setnum(L, "seconds", r->seconds);
    push_capture(L, "stdout", r->out, r->out_len, r->out_dropped);
    push_capture(L, "stderr", r->err, r->err_len, r->err_dropped);
}

static int l_run(lua_State *L)
{
    spawn_opts o;
    read_opts(L, &o);
    spawn_result r;
    ks_status st;
    if (spawn_run(&o, &r, &st) != KS_OK)
        return lh_pushfail(L, &st);
    push_result(L, &r);
    spawn_result_free(&r);
    return 1;
}

static lproc *check_proc(lua_State *L)
{
    lproc *lp = luaL_checkudata(L, 1, PROC_T);
    if (!lp->p)
        luaL_error(L, "attempt to use a freed klab.spawn.Process");
    return lp;
}

static int l_start(lua_State *L)
{
    spawn_opts o;
    read_opts(L, &o);
    lproc *lp = lua_newuserdatauv(L, sizeof *lp, 0);
    lp->p = NULL;
    lp->timeout = o.timeout_s;
    luaL_setmetatable(L, PROC_T);
    ks_status st;
    if (spawn_start(&o, &lp->p, &st) != KS_OK)
        return lh_pushfail(L, &st);
    return 1;
}

static int m_wait(lua_State *L)
{
    lproc *lp = check_proc(L);
    double timeout = luaL_optnumber(L, 2, lp->timeout);
    spawn_result r;
    ks_status st;
    int rc = spawn_wait(lp->p, timeout, &r, &st);
    spawn_free(lp->p);
    lp->p = NULL;
    if (rc != KS_OK)
        return lh_pushfail(L, &st);
    push_result(L, &r);
    spawn_result_free(&r);
    return 1;
}

static int m_pid(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)spawn_pid(check_proc(L)->p));
    return 1;
}

static int proc_release(lua_State *L)
{
    lproc *lp = luaL_checkudata(L, 1, PROC_T);
    spawn_free(lp->p);
    lp->p = NULL;
    return 0;
}

static int proc_tostring(lua_State *L)
{
    lproc *lp = luaL_checkudata(L, 1, PROC_T);
    if (lp->p)
        lua_pushfstring(L, "klab.spawn.Process (pid %d)", (int)spawn_pid(lp->p));
    else
        lua_pushliteral(L, "klab.spawn.Process (freed)");
    return 1;
}

static int l_which(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    char path[PATH_MAX];
    if (spawn_resolve(name, path, sizeof path) != 0 || access(path, X_OK) != 0) {
        luaL_pushfail(L);
        return 1;
    }
    lua_pushstring(L, path);
    return 1;
}

static const luaL_Reg proc_methods[] = {
    {"wait", m_wait},
    {"pid", m_pid},
    {"free", proc_release},
    {NULL, NULL},
};

static const luaL_Reg proc_meta[] = {
    {"__gc", proc_release},
    {"__close", proc_release},
    {"__tostring", proc_tostring},
    {NULL, NULL},
};

static const luaL_Reg spawn_funcs[] = {
    {"run", l_run},
    {"start", l_start},
    {"which", l_which},
    {NULL, NULL},
};

int luaopen_klab_spawn(lua_State *L)
{
    lh_newclass(L, PROC_T, proc_methods, proc_meta);
    lua_pop(L, 1);
    luaL_newlib(L, spawn_funcs);
    return 1;
}
