/*
 * l_build.c: require "klab.build", facts fixed when the binary was built:
 *   version, gitrev, cuda_toolkit ("13.0"), cuda_home, lua.
 */
#include <cuda.h>

#include "lhost.h"

int luaopen_klab_build(lua_State *L)
{
    lua_newtable(L);
    lua_pushstring(L, KLAB_VERSION);
    lua_setfield(L, -2, "version");
    lua_pushstring(L, KLAB_GITREV);
    lua_setfield(L, -2, "gitrev");
    lua_pushfstring(L, "%d.%d", CUDA_VERSION / 1000, (CUDA_VERSION % 1000) / 10);
    lua_setfield(L, -2, "cuda_toolkit");
    lua_pushinteger(L, CUDA_VERSION);
    lua_setfield(L, -2, "cuda_version");
    lua_pushstring(L, KLAB_CUDA_HOME);
    lua_setfield(L, -2, "cuda_home");
    lua_pushstring(L, LUA_RELEASE);
    lua_setfield(L, -2, "lua");
#ifdef __SANITIZE_ADDRESS__
    lua_pushboolean(L, 1);
#else
    lua_pushboolean(L, 0);
#endif
    lua_setfield(L, -2, "sanitized");
    return 1;
}
