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

/* Prints prefix, msg and a newline (unless msg ends in one) to out, with
 * the values of secrets replaced (base/redact.h): an error may quote what
 * a server or a compiler said. */
static void print_redacted(FILE *out, const char *prefix, const char *msg)
{
    size_t rl = 0;
    char *r = redact_apply(msg, strlen(msg), &rl);
    const char *m = r ? r : msg;
    size_t n = strlen(m);
    fprintf(out, "%s%s%s", prefix, m, n && m[n - 1] == '\n' ? "" : "\n");
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
            print_redacted(out, "", msg);
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
    print_redacted(stderr, "klab: ", msg);
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

static int open_all(lua_State *L)
{
    luaL_openlibs(L);
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
