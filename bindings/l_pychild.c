/*
 * l_pychild.c: require "klab.pychild", a candidate in a Python language
 * (Triton, CuTe DSL) to PTX in a confined child (host/lang/pychild.h).
 *
 *   pychild.ptx{lang="triton"|"cute_dsl", venv=, source=, name=, request=JSON,
 *               timeout=seconds, limits={memory=bytes, cpu=seconds}}
 *     -> {answer=, log=, exit_code=, seconds=, confinement=, limits={memory=, cpu=}}
 *        | nil, message, code
 *
 * answer is the driver's JSON text (klab.lang.pychild reads it); a limit
 * exceeded, a deadline passed or a machine where the child cannot be
 * confined is nil, one line, and "ECOMPILE", "ETIMEOUT" or "EUNSUPPORTED".
 */
#include <string.h>

#include "lhost.h"
#include "lang/pychild.h"

static int l_pychild_ptx(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    pychild_request req;
    memset(&req, 0, sizeof req);
    const char *lang = lh_optstrfield(L, 1, "lang", NULL);
    if (!(req.lang = pychild_find(lang)))
        return luaL_argerror(L, 1, "field 'lang' must name a Python language (\"triton\", \"cute_dsl\")");
    req.venv = lh_optstrfield(L, 1, "venv", NULL);
    req.name = lh_optstrfield(L, 1, "name", "kernel.py");
    req.request_json = lh_optstrfield(L, 1, "request", NULL);
    if (lua_getfield(L, 1, "source") != LUA_TSTRING)
        return luaL_argerror(L, 1, "field 'source' must be a string");
    req.source = lua_tolstring(L, -1, &req.source_len);
    if (!req.venv || !req.request_json)
        return luaL_argerror(L, 1, "fields 'venv' and 'request' are required");
    lua_Number timeout = lh_optnumfield(L, 1, "timeout", 0);
    if (timeout < 0 || timeout > 86400)
        return luaL_error(L, "pychild.ptx: timeout must be between 0 and 86400 seconds");
    req.timeout_ms = (int)(timeout * 1000);
    req.limit_memory = PYCHILD_LIMIT_MEMORY;
    req.limit_cpu_s = PYCHILD_LIMIT_CPU_S;
    int lt = lua_getfield(L, 1, "limits");
    if (lt == LUA_TTABLE) {
        int li = lua_gettop(L);
        req.limit_memory = lh_optintfield(L, li, "memory", req.limit_memory);
        lua_Integer cpu = lh_optintfield(L, li, "cpu", req.limit_cpu_s);
        if (req.limit_memory <= 0 || cpu <= 0 || cpu > 86400)
            return luaL_error(L, "pychild.ptx: limits must be positive (memory bytes, cpu seconds)");
        req.limit_cpu_s = (int)cpu;
    } else if (lt != LUA_TNIL) {
        return luaL_error(L, "pychild.ptx: limits must be a table {memory = bytes, cpu = seconds}");
    }
    lua_pop(L, 1);
    pychild_outcome o;
    ks_status st;
    ks_clear(&st);
    if (pychild_run(&req, &o, &st) != KS_OK)
        return lh_pushfail(L, &st);
    lua_createtable(L, 0, 6);
    lua_pushlstring(L, o.answer ? o.answer : "", o.answer_len);
    lua_setfield(L, -2, "answer");
    lua_pushlstring(L, o.log ? o.log : "", o.log_len);
    lua_setfield(L, -2, "log");
    lh_setint(L, "exit_code", o.exit_code);
    lua_pushnumber(L, o.seconds);
    lua_setfield(L, -2, "seconds");
    lh_setstr(L, "confinement", o.confinement);
    lua_createtable(L, 0, 2);
    lh_setint(L, "memory", req.limit_memory);
    lh_setint(L, "cpu", req.limit_cpu_s);
    lua_setfield(L, -2, "limits");
    pychild_outcome_free(&o);
    return 1;
}

static const luaL_Reg pychild_funcs[] = {
    {"ptx", l_pychild_ptx},
    {NULL, NULL},
};

int luaopen_klab_pychild(lua_State *L)
{
    luaL_newlib(L, pychild_funcs);
    return 1;
}
