/*
 * l_jit.c: require "klab.jit", kernel compilation without a GPU.
 *
 *   jit.compile{source=, arch="sm_90a", lang="ptx"|"cuda" (default: from
 *               name or content), name="file name for messages",
 *               lineinfo=true, cache=true, options={...}, cache_dir=,
 *               timeout=seconds, limits={memory=bytes, cpu=seconds},
 *               include=folder (one more folder of headers the compiler may
 *               read: CUTLASS's, klab.lang.cutlass)}
 *     -> result | nil, message, code [, result]
 *   jit.compile_file(path [, opts])     same, reading the file; name = path
 *   jit.census(ptx_text)                -> {family = count, ..., instructions = n}
 *   jit.globals(cubin)                  -> {{name=, section=, offset=, bytes=, section_bytes=,
 *                                          static=}, ...}: writable module globals
 *   jit.versions()                      -> {nvrtc=, ptxas=, cupti=, cublasLt=, cudnn=}
 *                                          each {ok=true, version=, path=} or
 *                                          {ok=false, error=reason}
 *   jit.cache_dir()                     -> path | nil, message, code
 *   jit.check_arch(arch [, lang])       -> true | nil, message, code: whether
 *                                          arch names a target the compilers
 *                                          know ("ptx", "cuda" or either)
 *
 * A result: {ok=true, cubin=, ptx=, log=, kernels={{name=, registers=,
 * spill_stores=, spill_loads=, shared_static=, shared_cubin=, local_bytes=,
 * sass_instructions=, param_bytes=, params={{offset=, size=}...} (each
 * parameter in order, where the cubin says them all), tcgen05=, setmaxnreg=,
 * mbarriers=}...},
 * entries={names...}, census={...}, hash=, cubin_hash=, compile_ms=,
 * cached=, arch=, lang=, compiler=, confinement=, cache_note=}. A figure
 * that is unknown is nil.
 *
 * Sources other than klab's own device code (host/driver/kernels/, which
 * compiles in this process as it is) are candidates: their compiler runs in
 * a child process that reads only the CUDA toolkit's headers (compile/jit.h
 * says how; confinement records it), under limits (default 4 GiB of memory
 * and 60 s of CPU); exceeding one is a compile error naming it. A machine
 * where the compiler cannot be confined gives nil, reason, "EUNSUPPORTED".
 *
 * A compile error returns nil, message, "ECOMPILE", result (ok=false,
 * with the log); a rejection nil, reason, "EREJECT" (and a result when the
 * compiler ran). Wrong argument types and forbidden compiler options raise.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lhost.h"
#include "base/fs.h"
#include "driver/dynlib.h"
#include "compile/cubin.h"
#include "compile/jit.h"
#include "compile/ptx_census.h"

/* Pushes n as an integer, or nil when negative (unknown). */
static void push_known(lua_State *L, long n)
{
    if (n < 0)
        lua_pushnil(L);
    else
        lua_pushinteger(L, (lua_Integer)n);
}

/* [-0, +1, m] */
static void push_census(lua_State *L, const ptx_census *c)
{
    lua_createtable(L, 0, PTX_NFAMILIES + 1);
    for (int f = 0; f < PTX_NFAMILIES; f++) {
        lua_pushinteger(L, c->count[f]);
        lua_setfield(L, -2, ptx_family_name(f));
    }
    lua_pushinteger(L, c->instructions);
    lua_setfield(L, -2, "instructions");
}

/* [-0, +1, m] */
static void push_kernel(lua_State *L, const jit_kernel *k)
{
    lua_createtable(L, 0, 12);
    lua_pushstring(L, k->name);
    lua_setfield(L, -2, "name");
    push_known(L, k->registers);
    lua_setfield(L, -2, "registers");
    push_known(L, k->spill_stores);
    lua_setfield(L, -2, "spill_stores");
    push_known(L, k->spill_loads);
    lua_setfield(L, -2, "spill_loads");
    push_known(L, k->shared_static);
    lua_setfield(L, -2, "shared_static");
    push_known(L, k->shared_cubin);
    lua_setfield(L, -2, "shared_cubin");
    push_known(L, k->local_bytes);
    lua_setfield(L, -2, "local_bytes");
    push_known(L, k->sass_instructions);
    lua_setfield(L, -2, "sass_instructions");
    push_known(L, k->param_bytes);
    lua_setfield(L, -2, "param_bytes");
    if (k->params) {
        lua_createtable(L, k->nparams, 0);
        for (int i = 0; i < k->nparams; i++) {
            lua_createtable(L, 0, 2);
            lua_pushinteger(L, (lua_Integer)k->params[i].offset);
            lua_setfield(L, -2, "offset");
            lua_pushinteger(L, (lua_Integer)k->params[i].size);
            lua_setfield(L, -2, "size");
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "params");
    }
    lua_pushinteger(L, k->tcgen05);
    lua_setfield(L, -2, "tcgen05");
    lua_pushboolean(L, k->setmaxnreg);
    lua_setfield(L, -2, "setmaxnreg");
    lua_pushinteger(L, k->mbarriers);
    lua_setfield(L, -2, "mbarriers");
}

/* [-0, +1, m] The result table; ok is false after a failure. */
static void push_result(lua_State *L, const jit_result *r, int ok)
{
    lua_createtable(L, 0, 20);
    lua_pushboolean(L, ok);
    lua_setfield(L, -2, "ok");
    if (r->cubin) {
        lua_pushlstring(L, (const char *)r->cubin, r->cubin_size);
        lua_setfield(L, -2, "cubin");
    }
    if (r->ptx) {
        lua_pushlstring(L, r->ptx, r->ptx_size);
        lua_setfield(L, -2, "ptx");
    }
    lua_pushlstring(L, r->log, r->log_size);
    lua_setfield(L, -2, "log");
    lua_createtable(L, r->nkernels, 0);
    for (int i = 0; i < r->nkernels; i++) {
        push_kernel(L, &r->kernels[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "kernels");
    lua_createtable(L, r->nkernels, 0);
    for (int i = 0; i < r->nkernels; i++) {
        lua_pushstring(L, r->kernels[i].name);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "entries");
    if (r->ptx) {
        push_census(L, &r->census);
        lua_setfield(L, -2, "census");
    }
    lua_pushstring(L, r->hash);
    lua_setfield(L, -2, "hash");
    if (r->cubin_hash[0]) {
        lua_pushstring(L, r->cubin_hash);
        lua_setfield(L, -2, "cubin_hash");
    }
    lua_pushnumber(L, r->compile_ms);
    lua_setfield(L, -2, "compile_ms");
    lua_pushboolean(L, r->cached);
    lua_setfield(L, -2, "cached");
    lua_pushstring(L, r->arch);
    lua_setfield(L, -2, "arch");
    lua_pushstring(L, jit_lang_name(r->lang));
    lua_setfield(L, -2, "lang");
    lua_pushstring(L, r->compiler);
    lua_setfield(L, -2, "compiler");
    if (r->confinement[0]) {
        lua_pushstring(L, r->confinement);
        lua_setfield(L, -2, "confinement");
    }
    if (r->cache_note[0]) {
        lua_pushstring(L, r->cache_note);
        lua_setfield(L, -2, "cache_note");
    }
}

/* Compiles src with the options table at index opts (0: none). Returns the
 * number of Lua results. */
static int do_compile(lua_State *L, int opts, const char *src, size_t len, const char *dflt_name)
{
    jit_request req;
    jit_request_init(&req);
    req.source = src;
    req.source_len = len;
    req.name = dflt_name;
    /* Whose code it is and its limits are host/compile's decision
     * (jit_request_trust); the binding only reads the limits asked for. */
    jit_limits asked = {0};
    if (opts) {
        int lt = lua_getfield(L, opts, "limits");
        if (lt == LUA_TTABLE) {
            int li = lua_gettop(L);
            asked.has_memory = lua_getfield(L, li, "memory") != LUA_TNIL;
            asked.has_cpu = lua_getfield(L, li, "cpu") != LUA_TNIL;
            lua_pop(L, 2);
            asked.memory = lh_optintfield(L, li, "memory", 0);
            asked.cpu_s = lh_optintfield(L, li, "cpu", 0);
        } else if (lt != LUA_TNIL) {
            return luaL_error(L, "jit.compile: limits must be a table {memory = bytes, cpu = seconds}");
        }
        lua_pop(L, 1);
    }
    ks_status tst;
    if (jit_request_trust(&req, &asked, &tst))
        return luaL_error(L, "jit.compile: %s", tst.msg);
    if (opts) {
        req.arch = lh_optstrfield(L, opts, "arch", NULL);
        req.name = lh_optstrfield(L, opts, "name", dflt_name);
        req.lineinfo = lh_optboolfield(L, opts, "lineinfo", 1);
        req.use_cache = lh_optboolfield(L, opts, "cache", 1);
        req.cache_dir = lh_optstrfield(L, opts, "cache_dir", NULL);
        req.include_dir = lh_optstrfield(L, opts, "include", NULL);
        lua_Number timeout = lh_optnumfield(L, opts, "timeout", 0);
        if (timeout < 0 || timeout > 86400)
            return luaL_error(L, "jit.compile: timeout must be between 0 and 86400 seconds");
        req.timeout_ms = (int)(timeout * 1000);
        const char *lang = lh_optstrfield(L, opts, "lang", NULL);
        if (!lang || !strcmp(lang, "auto"))
            req.lang = JIT_LANG_AUTO;
        else if (!strcmp(lang, "ptx"))
            req.lang = JIT_LANG_PTX;
        else if (!strcmp(lang, "cuda") || !strcmp(lang, "cu"))
            req.lang = JIT_LANG_CUDA;
        else
            return luaL_error(L, "jit.compile: lang must be \"ptx\" or \"cuda\", got \"%s\"", lang);
        int t = lua_getfield(L, opts, "options");
        if (t == LUA_TTABLE) {
            int idx = lua_gettop(L);
            lua_Integer n = luaL_len(L, idx);
            if (n > 256)
                return luaL_error(L, "jit.compile: too many options (%d)", (int)n);
            /* Userdata, so that a raise below frees it; the strings stay
             * alive in the options table, which stays on the stack. */
            const char **list = lua_newuserdatauv(L, sizeof *list * (size_t)(n ? n : 1), 0);
            for (lua_Integer i = 1; i <= n; i++) {
                if (lua_geti(L, idx, i) != LUA_TSTRING)
                    return luaL_error(L, "jit.compile: options[%d] must be a string", (int)i);
                list[i - 1] = lua_tostring(L, -1);
                lua_pop(L, 1);
            }
            req.options = list;
            req.noptions = (int)n;
        } else if (t != LUA_TNIL) {
            return luaL_error(L, "jit.compile: options must be a table of strings");
        }
    }
    if (!req.arch)
        return luaL_error(L, "jit.compile: arch is required (for example arch=\"sm_90a\")");

    jit_result *r = NULL;
    ks_status st;
    int rc = jit_compile(&req, &r, &st);
    if (rc == KS_EINVAL) {
        jit_result_free(r);
        return lh_raise(L, &st);
    }
    if (rc != KS_OK) {
        lh_pushfail(L, &st);
        if (!r)
            return 3;
        push_result(L, r, 0);
        lua_pushstring(L, ks_code_name(rc));
        lua_setfield(L, -2, "code");
        lua_pushstring(L, st.msg);
        lua_setfield(L, -2, "error");
        jit_result_free(r);
        return 4;
    }
    push_result(L, r, 1);
    jit_result_free(r);
    return 1;
}

/* jit.compile{source=..., arch=..., ...} */
static int l_jit_compile(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    if (lua_getfield(L, 1, "source") != LUA_TSTRING)
        return luaL_argerror(L, 1, "field 'source' must be a string");
    size_t len;
    const char *src = lua_tolstring(L, -1, &len);
    /* The source string stays on the stack for the whole call. */
    return do_compile(L, 1, src, len, NULL);
}

/* jit.compile_file(path [, opts]) */
static int l_jit_compile_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int opts = 0;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        opts = 2;
    }
    /* The file the user named (through links), read as a regular file only. */
    ks_status st;
    char real[PATH_MAX];
    char *buf;
    size_t n;
    if (fs_realpath(path, real, sizeof real, &st) != KS_OK || fs_read(real, (size_t)64 << 20, 0, &buf, &n, &st) != KS_OK) {
        ks_status why = st; /* "PATH: reason" */
        ks_fail(&st, KS_EIO, why.sub, "cannot read %s", why.msg);
        return lh_pushfail(L, &st);
    }
    lua_pushlstring(L, buf, n);
    free(buf);
    size_t len;
    const char *src = lua_tolstring(L, -1, &len);
    return do_compile(L, opts, src, len, path);
}

/* jit.census(ptx_text) */
static int l_jit_census(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    ptx_census c;
    ptx_census_count(s, len, &c);
    push_census(L, &c);
    return 1;
}

/* [-0, +1, m] {ok=true, version=, path=} or {ok=false, error=}. */
static void push_version(lua_State *L, int rc, const char *version, const char *path,
                         const ks_status *st)
{
    lua_createtable(L, 0, 3);
    lua_pushboolean(L, rc == KS_OK);
    lua_setfield(L, -2, "ok");
    if (rc == KS_OK) {
        lua_pushstring(L, version);
        lua_setfield(L, -2, "version");
        if (path && *path) {
            lua_pushstring(L, path);
            lua_setfield(L, -2, "path");
        }
    } else {
        lua_pushstring(L, st->msg);
        lua_setfield(L, -2, "error");
    }
}

/* jit.versions() */
static int l_jit_versions(lua_State *L)
{
    static const struct {
        const char *key;
        const dynlib_desc *desc;
    } libs[] = {
        {"nvrtc", &dynlib_nvrtc},
        {"cupti", &dynlib_cupti},
        {"cublasLt", &dynlib_cublaslt},
        {"cudnn", &dynlib_cudnn},
    };
    char buf[128], path[1024];
    ks_status st;
    lua_createtable(L, 0, 5);
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        ks_clear(&st);
        int rc = dynlib_version(libs[i].desc, buf, sizeof buf, &st);
        const dynlib *lib = rc == KS_OK ? dynlib_get(libs[i].desc, &st) : NULL;
        push_version(L, rc, buf, lib ? lib->path : NULL, &st);
        lua_setfield(L, -2, libs[i].key);
    }
    ks_clear(&st);
    int rc = jit_ptxas_version(buf, sizeof buf, &st);
    jit_ptxas_path(path, sizeof path);
    push_version(L, rc, buf, path, &st);
    lua_setfield(L, -2, "ptxas");
    return 1;
}

/* jit.cache_dir() */
static int l_jit_cache_dir(lua_State *L)
{
    char buf[1024];
    ks_status st;
    if (jit_cache_dir(buf, sizeof buf, &st) != KS_OK)
        return lh_pushfail(L, &st);
    lua_pushstring(L, buf);
    return 1;
}

/* jit.globals(cubin) -> {{name=, section=, offset=, bytes=, section_bytes=,
 * static=bool}, ...} | nil, msg, code: the module globals a kernel can
 * write and that keep their contents from launch to launch. */
static int l_jit_globals(lua_State *L)
{
    size_t n;
    const char *img = luaL_checklstring(L, 1, &n);
    cubin_info ci;
    memset(&ci, 0, sizeof ci);
    ks_status st;
    ks_clear(&st);
    if (cubin_parse(img, n, &ci, &st))
        return lh_pushfail(L, &st);
    lua_createtable(L, ci.nglobals, 0);
    for (int i = 0; i < ci.nglobals; i++) {
        const cubin_global *g = &ci.globals[i];
        lua_createtable(L, 0, 6);
        lh_setstr(L, "name", g->name);
        lh_setstr(L, "section", g->section);
        lh_setint(L, "offset", (lua_Integer)g->offset);
        lh_setint(L, "bytes", (lua_Integer)g->bytes);
        lh_setint(L, "section_bytes", (lua_Integer)g->section_bytes);
        lh_setbool(L, "static", g->bind == 0 /* STB_LOCAL */);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    cubin_free(&ci);
    return 1;
}

/* jit.check_arch(arch [, lang]) */
static int l_jit_check_arch(lua_State *L)
{
    const char *arch = luaL_checkstring(L, 1);
    static const char *const langs[] = {"auto", "ptx", "cuda", NULL};
    static const jit_lang codes[] = {JIT_LANG_AUTO, JIT_LANG_PTX, JIT_LANG_CUDA};
    jit_lang lang = codes[luaL_checkoption(L, 2, "auto", langs)];
    ks_status st;
    ks_clear(&st);
    if (jit_check_arch(arch, lang, &st) != KS_OK)
        return lh_pushfail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static const luaL_Reg jit_funcs[] = {
    {"globals", l_jit_globals},
    {"compile", l_jit_compile},
    {"compile_file", l_jit_compile_file},
    {"census", l_jit_census},
    {"versions", l_jit_versions},
    {"cache_dir", l_jit_cache_dir},
    {"check_arch", l_jit_check_arch},
    {NULL, NULL},
};

int luaopen_klab_jit(lua_State *L)
{
    luaL_newlib(L, jit_funcs);
    lua_createtable(L, PTX_NFAMILIES, 0);
    for (int f = 0; f < PTX_NFAMILIES; f++) {
        lua_pushstring(L, ptx_family_name(f));
        lua_rawseti(L, -2, f + 1);
    }
    lua_setfield(L, -2, "families");
    return 1;
}
