/* runtime.c: creating the lua_State and calling into it safely. */
#include "runtime.h"
#include "base/redact.h"

#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lualib.h>

#include "preload.h"

static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
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

int rt_report(lua_State *L, int status)
{
    if (status != LUA_OK) {
        size_t n = 0, rl = 0;
        const char *msg = lua_tolstring(L, -1, &n);
        char *r = msg ? redact_apply(msg, n, &rl) : NULL;
        fprintf(stderr, "klab: %s\n", r ? r : msg ? msg : "(error object is not a string)");
        free(r);
        fflush(stderr);
        lua_pop(L, 1);
    }
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
