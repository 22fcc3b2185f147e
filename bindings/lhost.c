/* lhost.c: helpers shared by the binding files. */
#include <string.h>

#include "lhost.h"

extern char **environ;

int lh_pushfail(lua_State *L, const ks_status *st)
{
    luaL_pushfail(L);
    lua_pushstring(L, st->msg[0] ? st->msg : ks_code_name(st->code));
    lua_pushstring(L, ks_code_name(st->code));
    return 3;
}

int lh_raise(lua_State *L, const ks_status *st)
{
    return luaL_error(L, "%s", st->msg[0] ? st->msg : ks_code_name(st->code));
}

void lh_newclass(lua_State *L, const char *tname, const luaL_Reg *methods,
                 const luaL_Reg *metamethods)
{
    luaL_newmetatable(L, tname);
    if (metamethods)
        luaL_setfuncs(L, metamethods, 0);
    if (methods) {
        lua_newtable(L);
        luaL_setfuncs(L, methods, 0);
        lua_setfield(L, -2, "__index");
    }
}

static int field_type(lua_State *L, int t, const char *k, int want, const char *wname)
{
    int ty = lua_getfield(L, t, k);
    if (ty == LUA_TNIL)
        return 0;
    if (ty != want && !(want == LUA_TNUMBER && ty == LUA_TSTRING && lua_isnumber(L, -1)))
        luaL_error(L, "field '%s' must be %s, got %s", k, wname, luaL_typename(L, -1));
    return 1;
}

lua_Integer lh_optintfield(lua_State *L, int t, const char *k, lua_Integer dflt)
{
    if (!field_type(L, t, k, LUA_TNUMBER, "an integer")) {
        lua_pop(L, 1);
        return dflt;
    }
    int isint = 0;
    lua_Integer v = lua_tointegerx(L, -1, &isint);
    if (!isint)
        luaL_error(L, "field '%s' must be an integer", k);
    lua_pop(L, 1);
    return v;
}

lua_Number lh_optnumfield(lua_State *L, int t, const char *k, lua_Number dflt)
{
    if (!field_type(L, t, k, LUA_TNUMBER, "a number")) {
        lua_pop(L, 1);
        return dflt;
    }
    lua_Number v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return v;
}

int lh_optboolfield(lua_State *L, int t, const char *k, int dflt)
{
    if (!field_type(L, t, k, LUA_TBOOLEAN, "a boolean")) {
        lua_pop(L, 1);
        return dflt;
    }
    int v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

const char *lh_optstrfield(lua_State *L, int t, const char *k, const char *dflt)
{
    if (!field_type(L, t, k, LUA_TSTRING, "a string")) {
        lua_pop(L, 1);
        return dflt;
    }
    /* The string stays alive: it is referenced by the table at t. */
    const char *v = lua_tostring(L, -1);
    lua_pop(L, 1);
    return v;
}

void lh_setint(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

void lh_setnum(lua_State *L, const char *k, lua_Number v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

void lh_setstr(lua_State *L, const char *k, const char *v)
{
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

void lh_setbool(lua_State *L, const char *k, int v)
{
    lua_pushboolean(L, v);
    lua_setfield(L, -2, k);
}

const char **lh_ptrs(lua_State *L, size_t n)
{
    const char **p = lua_newuserdatauv(L, (n + 1) * sizeof *p, 0);
    memset(p, 0, (n + 1) * sizeof *p);
    return p;
}

const char **lh_strlist(lua_State *L, int t, const char *what)
{
    t = lua_absindex(L, t);
    lua_Integer n = luaL_len(L, t);
    if (n < 1)
        luaL_error(L, "field '%s' must not be empty", what);
    const char **v = lh_ptrs(L, (size_t)n);
    for (lua_Integer i = 1; i <= n; i++) {
        if (lua_rawgeti(L, t, i) != LUA_TSTRING)
            luaL_error(L, "%s[%d] must be a string", what, (int)i);
        v[i - 1] = lua_tostring(L, -1); /* kept alive by the table at t */
        lua_pop(L, 1);
    }
    return v;
}

const char **lh_envp(lua_State *L, int o)
{
    if (!o)
        return NULL;
    if (lua_getfield(L, o, "env") == LUA_TNIL) {
        lua_pop(L, 1);
        return NULL;
    }
    if (!lua_istable(L, -1))
        luaL_error(L, "field 'env' must be a table of name = string|false");
    int e = lua_gettop(L);
    size_t n = 0, extra = 0;
    for (char **p = environ; *p; p++)
        n++;
    lua_pushnil(L);
    while (lua_next(L, e)) {
        if (lua_type(L, -2) != LUA_TSTRING || strchr(lua_tostring(L, -2), '=') ||
            !(lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER ||
              (lua_isboolean(L, -1) && !lua_toboolean(L, -1))))
            luaL_error(L, "field 'env' must map names to strings or false");
        extra++;
        lua_pop(L, 1);
    }
    const char **envp = lh_ptrs(L, n + extra);
    lua_newtable(L); /* anchor for the "K=V" strings made here */
    int anchor = lua_gettop(L);
    size_t j = 0;
    for (char **p = environ; *p; p++) {
        const char *eq = strchr(*p, '=');
        lua_pushlstring(L, *p, eq ? (size_t)(eq - *p) : strlen(*p));
        int overridden = lua_rawget(L, e) != LUA_TNIL;
        lua_pop(L, 1);
        if (!overridden)
            envp[j++] = *p;
    }
    lua_pushnil(L);
    while (lua_next(L, e)) {
        if (lua_type(L, -1) != LUA_TBOOLEAN) {
            const char *k = lua_tostring(L, -2); /* a string key: no conversion */
            const char *v = luaL_tolstring(L, -1, NULL);
            lua_pushfstring(L, "%s=%s", k, v);
            envp[j++] = lua_tostring(L, -1);
            lua_rawseti(L, anchor, (lua_Integer)j);
            lua_pop(L, 1); /* the tolstring copy */
        }
        lua_pop(L, 1);
    }
    envp[j] = NULL;
    return envp;
}

/* ---- Lua callbacks called from C ---- */

static int lh_msgh(lua_State *L)
{
    const char *m = lua_tostring(L, 1);
    if (!m) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            return 1;
        m = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, m, 1);
    return 1;
}

void lh_calls_begin(lh_calls *c, lua_State *L)
{
    c->L = L;
    lua_pushcfunction(L, lh_msgh);
    c->msgh = lua_gettop(L);
    lua_pushnil(L);
    c->err = lua_gettop(L);
    c->raised = 0;
}

int lh_call(lh_calls *c, int nargs, int nres, ks_status *st)
{
    lua_State *L = c->L;
    if (lua_pcall(L, nargs, nres, c->msgh) == LUA_OK)
        return KS_OK;
    if (!c->raised) {
        c->raised = 1;
        lua_replace(L, c->err);
    } else {
        lua_pop(L, 1);
    }
    return ks_fail(st, KS_EINVAL, 0, "a Lua callback raised an error");
}

int lh_reraise(lh_calls *c)
{
    if (!c->raised)
        return 0;
    lua_pushvalue(c->L, c->err);
    return lua_error(c->L);
}

int lh_call_result(lua_State *L, int first, const char *dflt, char *code, size_t ncode, ks_status *st)
{
    if (!(lua_isnil(L, first) || (lua_isboolean(L, first) && !lua_toboolean(L, first))))
        return KS_OK;
    const char *m = lua_tostring(L, first + 1);
    const char *k = lua_tostring(L, first + 2);
    if (code && ncode)
        snprintf(code, ncode, "%s", k && *k ? k : "ECALLBACK");
    return ks_fail(st, KS_EINVAL, 0, "%s", m ? m : dflt);
}
