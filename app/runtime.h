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

/* Tracebacks: errors are one line unless verbose (klab --verbose, or the
 * environment variable KLAB_DEBUG set to anything but "" or "0"). */
void rt_set_verbose(int on);
int rt_verbose(void);

/* [-(nargs+1), +nres, -] lua_pcall with a message handler that appends a
 * traceback when verbose. A table raised as the error (klab.command's
 * error objects, {message =, exit =}) is kept as it is, so that its exit
 * status reaches rt_exit_status. */
int rt_pcall(lua_State *L, int nargs, int nres);

/* [-(0|1), +0, -] The exit status for a call that ended with status: 0 for
 * LUA_OK; otherwise it prints the error on top of the stack and pops it.
 * An error object prints its message as it is (stdout when its exit is 0,
 * else stderr) and gives its exit field; any other error prints "klab: msg"
 * (and, for an error raised at a source position, how to see the
 * traceback) and gives 1. */
int rt_exit_status(lua_State *L, int status);

/* [-(0|1), +0, -] rt_exit_status, returning status instead. */
int rt_report(lua_State *L, int status);

#endif
