/*
 * lhost.h: what every binding file shares. The only header besides the
 * binding files themselves that includes lua.h.
 *
 * Conventions (see README "Conventions"):
 *   - bindings/l_<mod>.c defines luaopen_klab_<mod>; the build registers it
 *     as package.preload["klab.<mod>"] automatically.
 *   - misuse (wrong type, freed handle) raises; ordinary failures return
 *     nil, message, code (lh_pushfail).
 *   - handles are full userdata with one idempotent release used by
 *     __gc, __close and :free().
 */
#ifndef KLAB_BINDINGS_LHOST_H
#define KLAB_BINDINGS_LHOST_H

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "base/status.h"

/* [-0, +3, -] Pushes nil, st->msg, code name; returns 3. */
int lh_pushfail(lua_State *L, const ks_status *st);

/* [-0, +0, v] Raises st->msg as a Lua error (for misuse). */
int lh_raise(lua_State *L, const ks_status *st);

/* [-0, +1, m] Creates a metatable named tname with methods (also its
 * __index) and metamethods; leaves it on the stack. */
void lh_newclass(lua_State *L, const char *tname, const luaL_Reg *methods,
                 const luaL_Reg *metamethods);

/* [-0, +0, -] Optional integer/number/boolean/string fields of a table at
 * absolute index t; return dflt when the field is nil, raise on wrong type. */
lua_Integer lh_optintfield(lua_State *L, int t, const char *k, lua_Integer dflt);
lua_Number lh_optnumfield(lua_State *L, int t, const char *k, lua_Number dflt);
int lh_optboolfield(lua_State *L, int t, const char *k, int dflt);
const char *lh_optstrfield(lua_State *L, int t, const char *k, const char *dflt);

/* [-0, +0, m] t[k] = v for the table on top of the stack. */
void lh_setint(lua_State *L, const char *k, lua_Integer v);
void lh_setnum(lua_State *L, const char *k, lua_Number v);
void lh_setstr(lua_State *L, const char *k, const char *v);
void lh_setbool(lua_State *L, const char *k, int v);

/* [-0, +1, m] Pushes a userdata block of n + 1 pointers, NULL-filled (the
 * last ends the list); it lives while it stays on the stack. */
const char **lh_ptrs(lua_State *L, size_t n);

/* [-0, +1, e] The list of strings at index t as a NULL-terminated array
 * (pushed; the strings stay alive through the table at t). Raises, naming
 * `what`, on an empty list or a non-string element. */
const char **lh_strlist(lua_State *L, int t, const char *what);

/* [-0, +(0|3), e] envp from field "env" (name -> string | false) of the
 * options table at o (0: none) merged over this process's environment, or
 * NULL (inherit) without that field. What the pointers point into is left
 * on the stack. */
const char **lh_envp(lua_State *L, int o);

/* ---- Lua callbacks called from C ----
 * A host function (a profiler's replay, a timing loop) calls Lua back
 * through lh_call: protected, with a traceback, the first raise kept aside
 * so that C can unwind through its status codes before the binding raises
 * it again (lh_reraise). */
typedef struct lh_calls {
    lua_State *L;
    int msgh;   /* stack index of the traceback handler */
    int err;    /* stack index of the slot that keeps the first raise */
    int raised; /* 1 once a callback raised */
} lh_calls;

/* [-0, +2, m] Pushes the handler and the slot; fills c. */
void lh_calls_begin(lh_calls *c, lua_State *L);

/* [-(nargs+1), +(nres|0), -] Calls the function below nargs arguments with
 * nres results. KS_OK, or, on a raise, KS_EINVAL in st with the raise kept
 * (nothing is left on the stack then). */
int lh_call(lh_calls *c, int nargs, int nres, ks_status *st);

/* [-0, +0, v] Raises the kept error again when a callback raised; returns 0
 * otherwise. */
int lh_reraise(lh_calls *c);

/* [-0, +0, -] A callback's (ok, message, code) results at index first: a
 * failure (nil or false first) fills st with the message (dflt when none)
 * and code with its code name (ECALLBACK when none) and returns KS_EINVAL;
 * anything else is KS_OK. */
int lh_call_result(lua_State *L, int first, const char *dflt, char *code, size_t ncode, ks_status *st);

#endif
