/*
 * preload.c: the "linit.c" of klab. Every C module and every embedded Lua
 * module is reachable through require without touching package.path, so a
 * binary copied to a machine with no klab checkout works the same.
 */
#include "preload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua-cjson.h>

/* Generated at build time from bindings/l_*.c and scripts/. */
extern const struct { const char *name; lua_CFunction open; } klab_c_modules[];
extern const struct { const char *name, *chunk, *src; size_t len; } klab_lua_modules[];

static int find_embedded(const char *name)
{
    for (int i = 0; klab_lua_modules[i].name; i++)
        if (strcmp(klab_lua_modules[i].name, name) == 0)
            return i;
    return -1;
}

/* Loads module from KLAB_SCRIPTS when set and the file exists there. */
static int load_override(lua_State *L, const char *name)
{
    const char *dir = getenv("KLAB_SCRIPTS");
    if (!dir || !*dir)
        return 0;
    char path[4096];
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (const char *p = name; *p; p++)
        luaL_addchar(&b, *p == '.' ? '/' : *p);
    luaL_pushresult(&b);
    const char *rel = lua_tostring(L, -1);
    snprintf(path, sizeof path, "%s/%s.lua", dir, rel);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(path, sizeof path, "%s/%s/init.lua", dir, rel);
        f = fopen(path, "r");
    }
    lua_pop(L, 1);
    if (!f)
        return 0;
    fclose(f);
    if (luaL_loadfile(L, path) != LUA_OK)
        lua_error(L);
    return 1;
}

/* package.preload loader for an embedded Lua module (upvalue: index). */
static int lua_module_loader(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    int i = (int)lua_tointeger(L, lua_upvalueindex(1));
    if (!load_override(L, name)) {
        if (luaL_loadbuffer(L, klab_lua_modules[i].src, klab_lua_modules[i].len,
                            klab_lua_modules[i].chunk) != LUA_OK)
            lua_error(L);
    }
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

void klab_preload(lua_State *L)
{
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_cjson);
    lua_setfield(L, -2, "cjson");
    for (int i = 0; klab_c_modules[i].name; i++) {
        lua_pushcfunction(L, klab_c_modules[i].open);
        lua_setfield(L, -2, klab_c_modules[i].name);
    }
    for (int i = 0; klab_lua_modules[i].name; i++) {
        lua_pushinteger(L, i);
        lua_pushcclosure(L, lua_module_loader, 1);
        lua_setfield(L, -2, klab_lua_modules[i].name);
    }
    lua_pop(L, 1);
}

int klab_embedded_source(lua_State *L, const char *name)
{
    int i = find_embedded(name);
    if (i < 0)
        return 0;
    lua_pushlstring(L, klab_lua_modules[i].src, klab_lua_modules[i].len);
    return 1;
}
