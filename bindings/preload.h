/* preload.h: registers klab's C modules and embedded Lua library. */
#ifndef KLAB_BINDINGS_PRELOAD_H
#define KLAB_BINDINGS_PRELOAD_H

#include <lua.h>

/* [-0, +0, e] Fills package.preload with every C module (klab.<mod>), the
 * embedded Lua modules of scripts/ and cjson. When KLAB_SCRIPTS names a
 * directory, Lua modules are read from there first (a developer's edits take
 * effect without a rebuild). */
void klab_preload(lua_State *L);

/* [-0, +1, -] Pushes the source of embedded Lua module name; returns 0 and
 * pushes nothing when there is none. */
int klab_embedded_source(lua_State *L, const char *name);

#endif
