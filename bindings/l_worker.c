/*
 * l_worker.c: require "klab.worker", worker processes (host/proc/worker.h).
 *
 * Supervisor side:
 *   worker.spawn{argv=?, env=?, rlimits=?, output_cap=?} -> Worker | nil, msg, code
 *       argv        list of strings; default {<this klab binary>, "--worker"},
 *                   run through /proc/self/exe, so the worker is this very
 *                   binary even when its file is rebuilt while we run
 *       env         name -> string (set or override) or false (remove), applied
 *                   to this process's environment
 *       rlimits     {as=bytes, cpu=seconds, nofile=n}
 *       output_cap  bytes of stdout/stderr kept (default 65536)
 *   w:call(payload, deadline_seconds?) -> reply, info
 *                                       | nil, msg, code, detail
 *       info   = {elapsed=, output_tail=, stage=, stage_seconds=}
 *       detail = {outcome="timeout"|"crashed"|"exited"|"protocol",
 *                 signal=, signal_name=, exit_code=, elapsed=, output_tail=,
 *                 stage=, stage_seconds=, stage_expired=}
 *       stage: the last stage the worker announced (absent if none);
 *       stage_expired (timeouts): its own limit ran out, not the call's.
 *       code is "ETIMEOUT", "ECHILD" or "EPROTO". After a failure the worker
 *       is dead; calling it again raises. No deadline (nil or <= 0) waits forever.
 *   w:start(payload, deadline_seconds?) -> true | nil, msg, code
 *   w:step() -> false while the job runs; then exactly what w:call returns
 *   w:busy() -> boolean      worker.wait({w, ...}, timeout_seconds?) -> true
 *       The same call in two halves, for a supervisor running many workers:
 *       start sends the job along, step makes progress without blocking,
 *       wait blocks until one of the busy workers needs a step (or a
 *       deadline of theirs or the timeout passes).
 *   w:alive() -> boolean     w:pid() -> integer     w:output() -> string
 *   w:finish([timeout=10]) -> exit status (-1 signal, -2 killed at the timeout)
 *       ends an idle worker politely (end of its input) and waits for it,
 *       keeping what it printed on the way out (w:output())
 *   w:free() -> true if it freed the worker (also __gc and __close)
 *
 * Worker side (in the child):
 *   worker.read_job(timeout?) -> payload | nil at end of input | nil, msg, code
 *   worker.write_result(payload) -> true | nil, msg, code
 *   worker.stage(name [, seconds]) -> true | nil, msg, code
 *       announces a stage before the result; from then on the call's
 *       deadline is also now + seconds (none when omitted or <= 0). Only in
 *       a worker (it writes to fd 3): use klab.proc.serve.stage, which is a no-op
 *       elsewhere.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "lhost.h"
#include "proc/signals.h"
#include "proc/frame.h"
#include "proc/worker.h"

#define WORKER_T "klab.Worker"

typedef struct {
    worker *w; /* NULL once released */
} lworker;

/* [-0, +0, v] The live worker at absolute index i, or raise. */
static worker *check_worker(lua_State *L, int i)
{
    lworker *lw = luaL_checkudata(L, i, WORKER_T);
    if (lw->w == NULL)
        luaL_error(L, "attempt to use a freed worker");
    return lw->w;
}

/* [-0, +1, m] A new, released Worker userdata. */
static lworker *new_worker(lua_State *L)
{
    lworker *lw = lua_newuserdatauv(L, sizeof *lw, 0);
    lw->w = NULL;
    luaL_setmetatable(L, WORKER_T);
    return lw;
}

/* [-0, +(1|2), e] argv from field "argv" of the options table at o (0: none),
 * or the default {this program, "--worker"}. What the pointers point into is
 * left on the stack (or is the caller's argv table). */
static const char **build_argv(lua_State *L, int o)
{
    if (o && lua_getfield(L, o, "argv") != LUA_TNIL) {
        if (!lua_istable(L, -1))
            luaL_error(L, "field 'argv' must be a list of strings");
        return lh_strlist(L, lua_gettop(L), "argv");
    }
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k < 0)
        luaL_error(L, "cannot find this program (/proc/self/exe): %s", strerror(errno));
    const char *del = " (deleted)"; /* rebuilt since we started: name only */
    size_t dl = strlen(del);
    if ((size_t)k > dl && memcmp(exe + k - dl, del, dl) == 0)
        k -= (ssize_t)dl;
    lua_pushlstring(L, exe, (size_t)k);
    const char *path = lua_tostring(L, -1);
    const char **argv = lh_ptrs(L, 2);
    argv[0] = path;
    argv[1] = "--worker";
    return argv;
}

static int l_spawn(lua_State *L)
{
    int o = 0;
    if (!lua_isnoneornil(L, 1)) {
        luaL_checktype(L, 1, LUA_TTABLE);
        o = 1;
    }
    worker_opts opts;
    memset(&opts, 0, sizeof opts);
    if (o) {
        if (lua_getfield(L, o, "rlimits") != LUA_TNIL) {
            if (!lua_istable(L, -1))
                luaL_error(L, "field 'rlimits' must be a table");
            int r = lua_gettop(L);
            opts.rlimit_as = lh_optintfield(L, r, "as", 0);
            opts.rlimit_cpu = lh_optintfield(L, r, "cpu", 0);
            opts.rlimit_nofile = lh_optintfield(L, r, "nofile", 0);
        }
        lua_pop(L, 1);
        lua_Integer cap = lh_optintfield(L, o, "output_cap", 0);
        if (cap < 0 || cap > ((lua_Integer)1 << 30))
            luaL_error(L, "field 'output_cap' out of range");
        opts.output_cap = (size_t)cap;
    }
    const char **argv = build_argv(L, o);
    if (!o || lua_getfield(L, o, "argv") == LUA_TNIL)
        opts.path = "/proc/self/exe"; /* in the child: the same image as ours */
    if (o)
        lua_pop(L, 1);
    opts.envp = lh_envp(L, o);

    lworker *lw = new_worker(L);
    ks_status st;
    ks_clear(&st);
    worker *w = NULL;
    if (worker_spawn(argv, &opts, &w, &st) != KS_OK) {
        if (st.code == KS_EINVAL)
            return lh_raise(L, &st);
        return lh_pushfail(L, &st);
    }
    lw->w = w;
    return 1;
}

static const char *outcome_name(worker_outcome o)
{
    switch (o) {
    case WORKER_FINISHED: return "finished";
    case WORKER_TIMEOUT: return "timeout";
    case WORKER_CRASHED: return "crashed";
    case WORKER_EXITED: return "exited";
    case WORKER_PROTOCOL: return "protocol";
    }
    return "unknown";
}

/* [-0, +1, m] The detail table of a reply. */
/* [-0, +0, m] stage= and stage_seconds= into the table on top, when the
 * worker announced a stage. */
static void push_stage(lua_State *L, const worker_reply *r)
{
    if (!r->stage[0])
        return;
    lua_pushstring(L, r->stage);
    lua_setfield(L, -2, "stage");
    lua_pushnumber(L, r->stage_seconds);
    lua_setfield(L, -2, "stage_seconds");
}

static void push_detail(lua_State *L, const worker_reply *r)
{
    lua_createtable(L, 0, 6);
    lua_pushstring(L, outcome_name(r->outcome));
    lua_setfield(L, -2, "outcome");
    if (r->outcome == WORKER_CRASHED) {
        lua_pushinteger(L, r->signal);
        lua_setfield(L, -2, "signal");
        const char *name = signals_name(r->signal);
        if (name) {
            lua_pushstring(L, name);
            lua_setfield(L, -2, "signal_name");
        }
    }
    if (r->outcome == WORKER_EXITED) {
        lua_pushinteger(L, r->exit_code);
        lua_setfield(L, -2, "exit_code");
    }
    lua_pushnumber(L, r->elapsed);
    lua_setfield(L, -2, "elapsed");
    lua_pushlstring(L, r->output ? r->output : "", r->output ? r->output_len : 0);
    lua_setfield(L, -2, "output_tail");
    push_stage(L, r);
    if (r->outcome == WORKER_TIMEOUT) {
        lua_pushboolean(L, r->stage_expired);
        lua_setfield(L, -2, "stage_expired");
    }
}

/* Pushes what a call ended with: reply, info | nil, msg, code, detail. */
static int push_outcome(lua_State *L, int rc, worker_reply *r, const ks_status *st)
{
    /* Only a memory error can raise from here on (and would leak r). */
    if (rc == KS_OK && r->outcome == WORKER_FINISHED) {
        lua_pushlstring(L, r->payload, r->payload_len);
        lua_createtable(L, 0, 2);
        lua_pushnumber(L, r->elapsed);
        lua_setfield(L, -2, "elapsed");
        lua_pushlstring(L, r->output ? r->output : "", r->output ? r->output_len : 0);
        lua_setfield(L, -2, "output_tail");
        push_stage(L, r);
        worker_reply_clear(r);
        return 2;
    }
    lh_pushfail(L, st);
    push_detail(L, r);
    worker_reply_clear(r);
    return 4;
}

static int l_call(lua_State *L)
{
    worker *w = check_worker(L, 1);
    size_t n;
    const char *job = luaL_checklstring(L, 2, &n);
    lua_Number deadline = luaL_optnumber(L, 3, 0);
    if (n > FRAME_MAX)
        return luaL_argerror(L, 2, "job larger than the frame limit (256 MiB)");
    /* Everything that can raise is done before the call: a raise after it
     * would leak the reply. */
    luaL_checkstack(L, 8, "worker call");
    worker_reply r;
    ks_status st;
    ks_clear(&st);
    int rc = worker_call(w, job, n, deadline, &r, &st);
    if (rc == KS_EINVAL) {
        worker_reply_clear(&r);
        return lh_raise(L, &st);
    }
    return push_outcome(L, rc, &r, &st);
}

/* w:start(payload, deadline_seconds?): the job is under way (w:step, worker.wait). */
static int l_start(lua_State *L)
{
    worker *w = check_worker(L, 1);
    size_t n;
    const char *job = luaL_checklstring(L, 2, &n);
    lua_Number deadline = luaL_optnumber(L, 3, 0);
    if (n > FRAME_MAX)
        return luaL_argerror(L, 2, "job larger than the frame limit (256 MiB)");
    ks_status st;
    ks_clear(&st);
    int rc = worker_start(w, job, n, deadline, &st);
    if (rc == KS_EINVAL)
        return lh_raise(L, &st);
    if (rc)
        return lh_pushfail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

/* w:step() -> false while the job runs; else what w:call returns. */
static int l_step(lua_State *L)
{
    worker *w = check_worker(L, 1);
    if (!worker_busy(w))
        return luaL_error(L, "worker %d has no job in progress", (int)worker_pid(w));
    luaL_checkstack(L, 8, "worker step");
    worker_reply r;
    ks_status st;
    ks_clear(&st);
    int rc = worker_step(w, &r, &st);
    if (rc == KS_EAGAIN) {
        lua_pushboolean(L, 0);
        return 1;
    }
    return push_outcome(L, rc, &r, &st);
}

static int l_busy(lua_State *L)
{
    lua_pushboolean(L, worker_busy(check_worker(L, 1)));
    return 1;
}

/* worker.wait({w, ...}, timeout_seconds?) -> true: blocks until a busy
 * worker has something to read or write, a deadline of theirs passes, or
 * the timeout (nil: none) runs out. */
static int l_wait(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Number timeout = luaL_optnumber(L, 2, -1);
    worker *ws[64];
    size_t n = 0;
    lua_Integer len = (lua_Integer)lua_rawlen(L, 1);
    for (lua_Integer i = 1; i <= len; i++) {
        lua_rawgeti(L, 1, i);
        lworker *lw = luaL_testudata(L, -1, WORKER_T);
        lua_pop(L, 1);
        if (!lw)
            return luaL_error(L, "worker.wait: element %d is not a worker", (int)i);
        if (lw->w && worker_busy(lw->w)) {
            if (n == 64)
                return luaL_error(L, "worker.wait: at most 64 busy workers");
            ws[n++] = lw->w;
        }
    }
    ks_status st;
    ks_clear(&st);
    if (n == 0 && timeout < 0) {
        lua_pushboolean(L, 1);
        return 1;
    }
    if (worker_wait(ws, n, timeout, &st))
        return lh_pushfail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_alive(lua_State *L)
{
    lworker *lw = luaL_checkudata(L, 1, WORKER_T);
    lua_pushboolean(L, lw->w != NULL && worker_alive(lw->w));
    return 1;
}

static int l_pid(lua_State *L)
{
    worker *w = check_worker(L, 1);
    lua_pushinteger(L, (lua_Integer)worker_pid(w));
    return 1;
}

static int l_finish(lua_State *L)
{
    worker *w = check_worker(L, 1);
    double timeout = luaL_optnumber(L, 2, 10.0);
    int code = 0;
    ks_status st;
    if (worker_finish(w, timeout, &code, &st) != KS_OK)
        return lh_raise(L, &st);
    lua_pushinteger(L, code);
    return 1;
}

static int l_output(lua_State *L)
{
    worker *w = check_worker(L, 1);
    size_t n;
    const char *s = worker_output(w, &n);
    lua_pushlstring(L, s, n);
    return 1;
}

/* The one release shared by __gc, __close and :free(). */
static int l_free(lua_State *L)
{
    lworker *lw = luaL_checkudata(L, 1, WORKER_T);
    worker *w = lw->w;
    lw->w = NULL;
    worker_free(w);
    lua_pushboolean(L, w != NULL);
    return 1;
}

static int l_tostring(lua_State *L)
{
    lworker *lw = luaL_checkudata(L, 1, WORKER_T);
    if (lw->w == NULL)
        lua_pushstring(L, WORKER_T " (freed)");
    else
        lua_pushfstring(L, WORKER_T " (pid %d%s)", (int)worker_pid(lw->w),
                        worker_alive(lw->w) ? "" : ", dead");
    return 1;
}

/* ---- worker side ---- */

static int l_read_job(lua_State *L)
{
    lua_Number timeout = luaL_optnumber(L, 1, -1);
    double deadline = timeout >= 0 ? clock_now() + timeout : -1;
    void *p;
    size_t n;
    int eof;
    ks_status st;
    ks_clear(&st);
    if (frame_read(0, deadline, &p, &n, &eof, &st) != KS_OK)
        return lh_pushfail(L, &st);
    if (eof) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushlstring(L, p, n); /* a memory error here would leak p: rare, accepted */
    free(p);
    return 1;
}

/* The result of a write to the result channel: true, a raise for misuse,
 * or nil, msg, code. */
static int sent(lua_State *L, int rc, const ks_status *st)
{
    if (rc != KS_OK)
        return st->code == KS_EINVAL ? lh_raise(L, st) : lh_pushfail(L, st);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_write_result(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    ks_status st;
    ks_clear(&st);
    return sent(L, frame_write(3, s, n, &st), &st);
}

static int l_stage(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    lua_Number seconds = luaL_optnumber(L, 2, 0);
    ks_status st;
    ks_clear(&st);
    return sent(L, worker_send_stage(3, name, seconds, &st), &st);
}

static const luaL_Reg worker_funcs[] = {
    {"spawn", l_spawn},
    {"wait", l_wait},
    {"read_job", l_read_job},
    {"write_result", l_write_result},
    {"stage", l_stage},
    {NULL, NULL},
};

static const luaL_Reg worker_methods[] = {
    {"call", l_call},
    {"start", l_start},
    {"step", l_step},
    {"busy", l_busy},
    {"alive", l_alive},
    {"pid", l_pid},
    {"output", l_output},
    {"finish", l_finish},
    {"free", l_free},
    {NULL, NULL},
};

static const luaL_Reg worker_meta[] = {
    {"__gc", l_free},
    {"__close", l_free},
    {"__tostring", l_tostring},
    {NULL, NULL},
};

int luaopen_klab_worker(lua_State *L)
{
    lh_newclass(L, WORKER_T, worker_methods, worker_meta);
    lua_pop(L, 1);
    luaL_newlib(L, worker_funcs);
    return 1;
}
