/* runtime.c: creating the lua_State and calling into it safely. */
#include "runtime.h"
#include "base/redact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "preload.h"

static int verbose = -1; /* -1: not decided yet (read KLAB_DEBUG once) */

void rt_set_verbose(int on)
{
    verbose = on ? 1 : 0;
}

int rt_verbose(void)
{
    if (verbose < 0) {
        const char *d = getenv("KLAB_DEBUG");
        verbose = d && *d && strcmp(d, "0") != 0;
    }
    return verbose;
}

/* The message handler of rt_pcall. A string error stays one line unless
 * verbose, where the traceback is appended. An error table (klab.command's
 * error objects: {message =, exit =}) is passed through untouched, so that
 * its exit status reaches main; when verbose it gets a field traceback.
 * Other values become a string (their __tostring when they have one). */
static int msghandler(lua_State *L)
{
    if (lua_type(L, 1) == LUA_TTABLE) {
        if (rt_verbose()) {
            lua_pushliteral(L, "traceback");
            luaL_traceback(L, L, NULL, 1);
            lua_rawset(L, 1);
        }
        lua_settop(L, 1);
        return 1;
    }
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            msg = lua_tostring(L, -1);
        else
            msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    if (rt_verbose())
        luaL_traceback(L, L, msg, 1);
    else
        lua_pushstring(L, msg);
    return 1;
}

int rt_pcall(lua_State *L, int nargs, int nres)
{
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, msghandler);
    lua_insert(L, base);
    int status = lua_pcall(L, nargs, nres, base);
    lua_remove(L, base);
    return status;
}

/* Whether msg starts with a Lua source position ("file.lua:12: ..."), the
 * mark of an error raised by code rather than a message written for a
 * person. */
static int has_position(const char *msg)
{
    const char *colon = strchr(msg, ':');
    if (!colon || colon == msg || !memchr(msg, '.', (size_t)(colon - msg)))
        return 0;
    const char *p = colon + 1;
    if (*p < '0' || *p > '9')
        return 0;
    while (*p >= '0' && *p <= '9')
        p++;
    return *p == ':';
}

/* Pushes msg as a terminal shows it, its control characters but line
 * breaks escaped (klab.report.escape.terminal, the one place that decides
 * how): a message may quote a name from a store or a task folder. Pushes
 * msg itself when that cannot run. */
static const char *push_shown(lua_State *L, const char *msg)
{
    int top = lua_gettop(L);
    lua_getglobal(L, "require");
    lua_pushstring(L, "klab.report.escape");
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TTABLE &&
        lua_getfield(L, -1, "terminal") == LUA_TFUNCTION) {
        lua_pushstring(L, msg);
        lua_pushboolean(L, 1);
        if (lua_pcall(L, 2, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) {
            lua_remove(L, -2);
            return lua_tostring(L, -1);
        }
    }
    lua_settop(L, top);
    lua_pushstring(L, msg);
    return lua_tostring(L, -1);
}

/* Prints prefix, msg and a newline (unless msg ends in one) to out, with
 * the values of secrets replaced (base/redact.h): an error may quote what
 * a server or a compiler said; then shown escaped (push_shown). */
static void print_redacted(lua_State *L, FILE *out, const char *prefix, const char *msg)
{
    size_t rl = 0;
    char *r = redact_apply(msg, strlen(msg), &rl);
    const char *m = push_shown(L, r ? r : msg);
    size_t n = strlen(m);
    fprintf(out, "%s%s%s", prefix, m, n && m[n - 1] == '\n' ? "" : "\n");
    lua_pop(L, 1);
    free(r);
}

int rt_exit_status(lua_State *L, int status)
{
    if (status == LUA_OK)
        return 0;
    int code = 1;
    if (lua_type(L, -1) == LUA_TTABLE) {
        if (lua_getfield(L, -1, "exit") == LUA_TNUMBER && lua_isinteger(L, -1))
            code = (int)lua_tointeger(L, -1);
        lua_pop(L, 1);
        if (!luaL_callmeta(L, -1, "__tostring"))
            lua_getfield(L, -1, "message");
        const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        FILE *out = code == 0 ? stdout : stderr;
        if (msg && *msg)
            print_redacted(L, out, "", msg);
        else if (!msg && code != 0)
            fprintf(stderr, "klab: (error object is a table without a message)\n");
        lua_pop(L, 1);
        if (lua_getfield(L, -1, "traceback") == LUA_TSTRING)
            fprintf(stderr, "%s\n", lua_tostring(L, -1));
        lua_pop(L, 1);
        fflush(out);
        lua_pop(L, 1);
        return code;
    }
    const char *msg = lua_tostring(L, -1);
    if (!msg)
        msg = "(error object is not a string)";
    print_redacted(L, stderr, "klab: ", msg);
    if (!rt_verbose() && has_position(msg))
        fprintf(stderr, "klab: (run with --verbose or KLAB_DEBUG=1 for the traceback)\n");
    fflush(stderr);
    lua_pop(L, 1);
    return code;
}

int rt_report(lua_State *L, int status)
{
    if (status != LUA_OK)
        rt_exit_status(L, status);
    return status;
}

/* ---- output, redacted ------------------------------------------------- */

/* [-0, +1, m] s with the values of secrets replaced (base/redact.h). */
static void push_redacted(lua_State *L, const char *s, size_t n)
{
    size_t rl = 0;
    char *r = redact_apply(s, n, &rl);
    if (!r && rl == (size_t)-1)
        luaL_error(L, "out of memory redacting output");
    if (r) {
        lua_pushlstring(L, r, rl);
        free(r);
    } else {
        lua_pushlstring(L, s, n);
    }
}

/* print, as Lua's, with every line redacted before it is written. */
static int redacted_print(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        if (i > 1)
            luaL_addchar(&b, '\t');
        luaL_tolstring(L, i, NULL);
        luaL_addvalue(&b);
    }
    luaL_addchar(&b, '\n');
    luaL_pushresult(&b);
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    push_redacted(L, s, len);
    s = lua_tolstring(L, -1, &len);
    fwrite(s, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* A write function (io.write, or the files' write method: upvalue 1) whose
 * string arguments are redacted first; numbers pass as they are, so that
 * they are formatted as Lua formats them. */
static int redacted_write(lua_State *L)
{
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    for (int i = 1; i <= n; i++) {
        if (lua_type(L, i) == LUA_TSTRING) {
            size_t len;
            const char *s = lua_tolstring(L, i, &len);
            push_redacted(L, s, len);
        } else {
            lua_pushvalue(L, i);
        }
    }
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L) - n;
}

/* [-0, +0, e] Whatever a script prints or writes (a compile log, a
 * reason, a JSON result) goes out with secrets replaced, as the store and
 * the requests are: print, io.write and every file's write. */
static void redact_outputs(lua_State *L)
{
    lua_pushcfunction(L, redacted_print);
    lua_setglobal(L, "print");
    lua_getglobal(L, "io");
    lua_getfield(L, -1, "write");
    lua_pushcclosure(L, redacted_write, 1);
    lua_setfield(L, -2, "write");
    lua_pop(L, 1);
    luaL_getmetatable(L, LUA_FILEHANDLE);
    if (lua_getfield(L, -1, "__index") == LUA_TTABLE) {
        lua_getfield(L, -1, "write");
        lua_pushcclosure(L, redacted_write, 1);
        lua_setfield(L, -2, "write");
    }
    lua_pop(L, 2);
}

static int open_all(lua_State *L)
{
    luaL_openlibs(L);
    redact_outputs(L);
    klab_preload(L);
    return 0;
}

lua_State *rt_new(void)
{
    lua_State *L = luaL_newstate();
    if (L == NULL)
        return NULL;
    lua_pushcfunction(L, open_all);
    if (rt_report(L, rt_pcall(L, 0, 0)) != LUA_OK) {
        lua_close(L);
        return NULL;
    }
    return L;
}
