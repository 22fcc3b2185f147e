/*
 * runtime.h: the lua_State of a klab process. With main.c, the one part of
 * host/ that knows Lua: it creates the state, opens the libraries, preloads
 * klab's modules and runs chunks protected, with a traceback.
 */
#ifndef KLAB_HOST_RUNTIME_H
#define KLAB_HOST_RUNTIME_H

#include <lua.h>

/* A new state with the standard libraries and klab's modules preloaded, or
 * NULL when memory is exhausted. */
lua_State *rt_new(void);

/* [-(nargs+1), +nres, -] lua_pcall with a message handler that appends a
 * traceback (and respects __tostring on error objects). */
int rt_pcall(lua_State *L, int nargs, int nres);

/* [-1, +0, -] Prints the error on top of the stack as "klab: msg" to stderr
 * when status is not LUA_OK, pops it, and returns status. */
int rt_report(lua_State *L, int status);

#endif
