/*
 * l_redact.c: require "klab.redact", the values of secrets kept out of what
 * klab writes (host/base/redact.h).
 *
 *   redact.text(s) -> s with every secret's value replaced by "[redacted NAME]"
 *   redact.add_env(name) -> true when the variable's value is now redacted
 *       (set, and at least 8 bytes long)
 *   redact.count() -> how many values are redacted
 *
 * The set is filled when klab starts from every environment variable whose
 * name looks secret or whose value is a URL with a password (see
 * host/base/redact.h, which also lists the spellings matched); model.new
 * adds each api_key_env, klab.http each variable a header is read from.
 */
#include <stdlib.h>

#include "lhost.h"
#include "base/redact.h"

static int l_text(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    size_t rl;
    char *r = redact_apply(s, n, &rl);
    if (!r && rl == (size_t)-1)
        return luaL_error(L, "redact: out of memory");
    if (!r) {
        lua_settop(L, 1);
        return 1;
    }
    lua_pushlstring(L, r, rl);
    free(r);
    return 1;
}

static int l_add_env(lua_State *L)
{
    lua_pushboolean(L, redact_add_env(luaL_checkstring(L, 1)));
    return 1;
}

static int l_count(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)redact_count());
    return 1;
}

static const luaL_Reg redact_funcs[] = {
    {"text", l_text},
    {"add_env", l_add_env},
    {"count", l_count},
    {NULL, NULL},
};

int luaopen_klab_redact(lua_State *L)
{
    luaL_newlib(L, redact_funcs);
    return 1;
}
