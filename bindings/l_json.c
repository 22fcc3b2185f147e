/*
 * l_json.c: require "klab.json", klab's one JSON encoder (bindings/ljson.h):
 * canonical text, so that equal values hash alike wherever they are encoded
 * (request hashes, evaluation keys, the store's JSON columns, exports).
 *
 *   json.encode(v)  -> text; raises on what JSON cannot hold (NaN, a
 *                      function, mixed keys, a cycle)
 *   json.decode(s)  -> value (lua-cjson's decoder; null is json.null)
 *   json.null       -> the value that encodes as null inside a table
 */
#include "ljson.h"

static int l_encode(lua_State *L)
{
    luaL_checkany(L, 1);
    lj_push(L, 1);
    return 1;
}

int luaopen_klab_json(lua_State *L)
{
    static const luaL_Reg funcs[] = {{"encode", l_encode}, {NULL, NULL}};
    luaL_newlib(L, funcs);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "cjson");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "decode");
    lua_setfield(L, -3, "decode");
    lua_getfield(L, -1, "null");
    lua_setfield(L, -3, "null");
    lua_pop(L, 1);
    return 1;
}
