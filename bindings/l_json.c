/*
 * l_json.c: require "klab.json", klab's one JSON codec. Every module that
 * writes or reads JSON (the worker protocol, the store's columns, model
 * servers' bodies, reports, exports) goes through it.
 *
 *   json.encode(v [, {nonfinite = true}]) -> text
 *       canonical text (bindings/ljson.h), so that equal values hash alike
 *       wherever they are encoded; raises on what JSON cannot hold (a
 *       function, mixed keys, a cycle) and on NaN and infinities, unless
 *       nonfinite: then they are written as the explicit literals NaN,
 *       Infinity and -Infinity
 *   json.decode(s [, {integers = true, max_depth = n}]) -> value
 *       lua-cjson's decoder: null is json.null, and the literals NaN,
 *       Infinity and -Infinity read back as numbers. integers: every
 *       integral number below 2^53 comes back as a Lua integer (sizes and
 *       byte offsets). Text that is not JSON raises "JSON: ..."
 *   json.null -> the value that encodes as null inside a table
 *
 * cjson itself is required here only.
 */
#include <math.h>

#include "ljson.h"

static int l_encode(lua_State *L)
{
    luaL_checkany(L, 1);
    int nonfinite = 0;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        nonfinite = lh_optboolfield(L, 2, "nonfinite", 0);
    }
    if (nonfinite)
        lj_push_nonfinite(L, 1);
    else
        lj_push(L, 1);
    return 1;
}

/* [-0, +0, m] Integral numbers of the value at idx, in place, as integers. */
static void integers(lua_State *L, int idx, int depth)
{
    if (depth > LJ_DEPTH * 16)
        luaL_error(L, "JSON: nested too deeply");
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -1) == LUA_TNUMBER && !lua_isinteger(L, -1)) {
            double v = lua_tonumber(L, -1);
            if (isfinite(v) && v == floor(v) && fabs(v) < 9007199254740992.0) {
                lua_pushvalue(L, -2);
                lua_pushinteger(L, (lua_Integer)v);
                lua_rawset(L, idx);
            }
        } else if (lua_type(L, -1) == LUA_TTABLE) {
            integers(L, -1, depth + 1);
        }
        lua_pop(L, 1);
    }
}

static int l_decode(lua_State *L)
{
    size_t n;
    luaL_checklstring(L, 1, &n);
    int ints = 0;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        ints = lh_optboolfield(L, 2, "integers", 0);
    }
    lua_pushvalue(L, lua_upvalueindex(1)); /* cjson.decode */
    lua_pushvalue(L, 1);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        lua_pushfstring(L, "JSON: %s", msg ? msg : "cannot decode");
        return lua_error(L);
    }
    if (ints && lua_type(L, -1) == LUA_TTABLE)
        integers(L, -1, 0);
    return 1;
}

int luaopen_klab_json(lua_State *L)
{
    lua_getglobal(L, "require");
    lua_pushliteral(L, "cjson");
    lua_call(L, 1, 1);
    int cj = lua_gettop(L);
    lua_newtable(L);
    lua_pushcfunction(L, l_encode);
    lua_setfield(L, -2, "encode");
    lua_getfield(L, cj, "decode");
    lua_pushcclosure(L, l_decode, 1);
    lua_setfield(L, -2, "decode");
    lua_getfield(L, cj, "null");
    lua_setfield(L, -2, "null");
    lua_remove(L, cj);
    return 1;
}
