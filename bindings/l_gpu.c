/*
 * l_gpu.c: require "klab.gpu", the CUDA driver layer (host/driver/cuda.h) for Lua.
 *
 *   gpu.available()            -> true | false, reason
 *   gpu.driver_version()       -> 13000 | nil, msg, code
 *   gpu.count()                -> n | nil, msg, code
 *   gpu.device([i=0])          -> props table | nil, msg, code
 *   gpu.context([i=0])         -> Context | nil, msg, code
 *   gpu.arch_name(major, minor)-> "sm_90a" (no driver needed)
 *   gpu.is_sticky(cuda_error)  -> bool; cuda_error is a CUresult number or name
 *
 *   ctx:load(image)            -> Module | nil, msg, code, log, detail
 *   ctx:alloc(bytes)           -> Buffer | nil, msg, code, detail
 *   ctx:launch(fn, spec)       -> true | nil, msg, code, detail
 *       spec = {grid={x,y,z}, block={x,y,z}, cluster={x,y,z}?, shared=bytes?,
 *               args={buffer, {"u32", n}, {"i32", n}, {"u64", n}, {"i64", n},
 *                     {"f32", x}, {"f64", x}, {"bytes", s}, {"ptr", buffer, offset}}}
 *       Arguments are packed by the kernel's real parameter layout when the
 *       driver reports it; a count or size mismatch is refused with
 *       nil, msg, "EINVAL" before anything reaches the GPU.
 *   ctx:sync()                 -> true | nil, msg, code, detail
 *   ctx:mem_info()             -> free, total | nil, msg, code, detail
 *   ctx:device()               -> ordinal;  ctx:sticky() -> "CUDA_ERROR_..." | nil
 *   mod:func(name)             -> Function | nil, msg, "ENOTFOUND"
 *   mod:global(name)           -> address, bytes | nil, msg, "ENOTFOUND"   (a __device__ variable)
 *   fn:attributes()            -> {registers=, local_bytes=, static_smem=, const_bytes=,
 *                                  max_threads=, binary_version=, ptx_version=,
 *                                  max_dynamic_smem=, cluster={w,h,d}}
 *   fn:params()                -> {{offset=, size=}, ...} | nil, msg, "EUNSUPPORTED"
 *   fn:name(); fn:set_max_shared(bytes) -> true | nil, msg, code, detail
 *   buf:upload(s [, offset]), buf:download([bytes [, offset]]) -> string,
 *   buf:fill(byte), buf:size(), buf:ptr()
 *   every handle: :free() -> true (freed now) | false (already freed),
 *   __close, __gc, __tostring.
 *
 * detail (for driver failures) is {cuda_error="CUDA_ERROR_...", code=n, sticky=bool};
 * sticky means the process must be restarted to use the GPU again.
 *
 * Lifetimes: a Module or Buffer holds its Context, and a Function its Module,
 * in a user value, so a parent is never collected before its children. Freeing
 * a parent that still has live children only marks it freed for Lua; the
 * driver resource goes when the last child is released.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lhost.h"
#include "lgpu.h"
#include "driver/cuda.h"

#define check_ctx(L, i) lgpu_check_ctx(L, i)
#define check_mod(L, i) ((l_mod *)lgpu_check(L, i, MOD_T))
#define check_func(L, i) lgpu_check_func(L, i)
#define check_buf(L, i) lgpu_check_buf(L, i)
#define node_ctx lgpu_ctx_of
#define new_handle lgpu_new_handle
#define handle_open lgpu_open
#define node_close lgpu_close
/* ---- failures ---- */

/* [-0, +1, m] {cuda_error=, code=, sticky=} for a driver result. */
static void push_detail(lua_State *L, int r)
{
    lua_createtable(L, 0, 3);
    lua_pushstring(L, cuda_result_name(r));
    lua_setfield(L, -2, "cuda_error");
    lua_pushinteger(L, r);
    lua_setfield(L, -2, "code");
    lua_pushboolean(L, cuda_result_is_sticky(r));
    lua_setfield(L, -2, "sticky");
}

/* [-0, +3|4, m] nil, msg, code, and a detail table when a driver call failed. */
static int push_fail(lua_State *L, const ks_status *st)
{
    lh_pushfail(L, st);
    if ((st->code == KS_ECUDA || st->code == KS_ENOMEM) && st->sub) {
        push_detail(L, st->sub);
        return 4;
    }
    return 3;
}

/* ---- module functions ---- */

static int l_available(lua_State *L)
{
    char why[KS_MSG_MAX];
    if (cuda_available(why, sizeof why)) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_pushboolean(L, 0);
    lua_pushstring(L, why);
    return 2;
}

static int l_driver_version(lua_State *L)
{
    ks_status st;
    ks_clear(&st);
    int v = 0;
    if (cuda_driver_version(&v, &st))
        return push_fail(L, &st);
    lua_pushinteger(L, v);
    return 1;
}

static int l_count(lua_State *L)
{
    ks_status st;
    ks_clear(&st);
    int n = 0;
    if (cuda_device_count(&n, &st))
        return push_fail(L, &st);
    lua_pushinteger(L, n);
    return 1;
}

static int check_ordinal(lua_State *L, int idx)
{
    lua_Integer i = luaL_optinteger(L, idx, 0);
    luaL_argcheck(L, i >= 0 && i <= INT32_MAX, idx, "device ordinal must be >= 0");
    return (int)i;
}

static const char *compute_mode_name(int m)
{
    switch (m) {
    case CU_COMPUTEMODE_DEFAULT: return "default";
    case CU_COMPUTEMODE_PROHIBITED: return "prohibited";
    case CU_COMPUTEMODE_EXCLUSIVE_PROCESS: return "exclusive_process";
    default: return "unknown";
    }
}

static int l_device(lua_State *L)
{
    int ordinal = check_ordinal(L, 1);
    ks_status st;
    ks_clear(&st);
    cuda_props p;
    if (cuda_device_props(ordinal, &p, &st))
        return push_fail(L, &st);
    lua_createtable(L, 0, 24);
    lh_setint(L, "ordinal", p.ordinal);
    lh_setstr(L, "name", p.name);
    lh_setint(L, "major", p.major);
    lh_setint(L, "minor", p.minor);
    lh_setstr(L, "arch", p.arch);
    lh_setint(L, "sm_count", p.sm_count);
    lh_setint(L, "l2_bytes", p.l2_bytes);
    lh_setint(L, "smem_per_block_optin", p.smem_per_block_optin);
    lh_setint(L, "smem_per_sm", p.smem_per_sm);
    lh_setint(L, "max_threads_per_block", p.max_threads_per_block);
    lh_setint(L, "warp_size", p.warp_size);
    lh_setint(L, "regs_per_sm", p.regs_per_sm);
    lh_setint(L, "clock_khz", p.clock_khz);
    lh_setint(L, "mem_clock_khz", p.mem_clock_khz);
    lh_setint(L, "bus_width_bits", p.bus_width_bits);
    lh_setint(L, "total_mem", (lua_Integer)p.total_mem);
    lh_setstr(L, "uuid", p.uuid_str);
    lh_setstr(L, "pci_bus_id", p.pci_bus_id);
    lh_setbool(L, "ecc", p.ecc);
    lh_setstr(L, "compute_mode", compute_mode_name(p.compute_mode));
    lh_setbool(L, "cluster_launch", p.cluster_launch);
    return 1;
}

static int l_context(lua_State *L)
{
    int ordinal = check_ordinal(L, 1);
    l_ctx *c = new_handle(L, sizeof *c, CTX_T, K_CTX, 0);
    ks_status st;
    ks_clear(&st);
    if (cuda_ctx_open(ordinal, &c->ctx, &st))
        return push_fail(L, &st);
    handle_open(&c->n, NULL);
    return 1;
}

static int l_arch_name(lua_State *L)
{
    lua_Integer major = luaL_checkinteger(L, 1), minor = luaL_checkinteger(L, 2);
    luaL_argcheck(L, major >= 0 && major < 1000, 1, "bad major version");
    luaL_argcheck(L, minor >= 0 && minor < 1000, 2, "bad minor version");
    char buf[16];
    cuda_arch_name((int)major, (int)minor, buf, sizeof buf);
    lua_pushstring(L, buf);
    return 1;
}

static int l_is_sticky(lua_State *L)
{
    int r;
    if (lua_type(L, 1) == LUA_TSTRING) {
        const char *name = lua_tostring(L, 1);
        /* Names known to the table of sticky results; anything else is not. */
        static const int candidates[] = {214, 226, 700, 702, 709, 710, 714, 715, 716,
                                         717, 718, 719, 721, 810, 911, 999};
        r = 0;
        for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
            if (strcmp(cuda_result_name(candidates[i]), name) == 0)
                r = candidates[i];
    } else {
        lua_Integer v = luaL_checkinteger(L, 1);
        r = v < INT32_MIN || v > INT32_MAX ? 0 : (int)v;
    }
    lua_pushboolean(L, cuda_result_is_sticky(r));
    return 1;
}

/* ---- Context ---- */

static int ctx_free(lua_State *L)
{
    gnode *n = luaL_checkudata(L, 1, CTX_T);
    lua_pushboolean(L, node_close(n));
    return 1;
}

static int ctx_gc(lua_State *L)
{
    node_close(luaL_checkudata(L, 1, CTX_T));
    return 0;
}

static int ctx_tostring(lua_State *L)
{
    l_ctx *c = luaL_checkudata(L, 1, CTX_T);
    if (c->n.closed)
        lua_pushstring(L, CTX_T " (freed)");
    else
        lua_pushfstring(L, CTX_T " (device %d)", cuda_ctx_ordinal(c->ctx));
    return 1;
}

static int ctx_device(lua_State *L)
{
    l_ctx *c = check_ctx(L, 1);
    lua_pushinteger(L, cuda_ctx_ordinal(c->ctx));
    return 1;
}

static int ctx_sticky(lua_State *L)
{
    l_ctx *c = check_ctx(L, 1);
    int r = cuda_ctx_sticky(c->ctx);
    if (!r)
        return 0;
    lua_pushstring(L, cuda_result_name(r));
    return 1;
}

static int ctx_sync(lua_State *L)
{
    l_ctx *c = check_ctx(L, 1);
    ks_status st;
    ks_clear(&st);
    if (cuda_ctx_sync(c->ctx, &st))
        return push_fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int ctx_mem_info(lua_State *L)
{
    l_ctx *c = check_ctx(L, 1);
    ks_status st;
    ks_clear(&st);
    size_t fr = 0, total = 0;
    if (cuda_mem_info(c->ctx, &fr, &total, &st))
        return push_fail(L, &st);
    lua_pushinteger(L, (lua_Integer)fr);
    lua_pushinteger(L, (lua_Integer)total);
    return 2;
}

#define LOAD_LOG_BYTES 32768

static int ctx_load(lua_State *L)
{
    l_ctx *c = check_ctx(L, 1);
    size_t n;
    const char *image = luaL_checklstring(L, 2, &n);
    luaL_argcheck(L, n > 0, 2, "empty module image");
    /* The log lives in a userdata box so that a Lua error cannot leak it. */
    char *log = lua_newuserdatauv(L, LOAD_LOG_BYTES, 0);
    log[0] = '\0';
    l_mod *m = new_handle(L, sizeof *m, MOD_T, K_MOD, 1);
    ks_status st;
    ks_clear(&st);
    if (cuda_module_load(c->ctx, image, n, &m->mod, log, LOAD_LOG_BYTES, &st)) {
        lh_pushfail(L, &st);
        lua_pushstring(L, log);
        if (st.code == KS_ECUDA && st.sub) {
            push_detail(L, st.sub);
            return 5;
        }
        return 4;
    }
    handle_open(&m->n, &c->n);
    return 1;
}

static int ctx_alloc(lua_State *L)
{
    l_ctx *c = check_ctx(L, 1);
    lua_Integer bytes = luaL_checkinteger(L, 2);
    luaL_argcheck(L, bytes > 0, 2, "size must be a positive number of bytes");
    l_buf *b = new_handle(L, sizeof *b, BUF_T, K_BUF, 1);
    ks_status st;
    ks_clear(&st);
    int rc = cuda_mem_alloc(c->ctx, (size_t)bytes, &b->ptr, &st);
    if (rc == KS_ENOMEM) {
        /* Unreachable buffers may hold the memory: collect them, retry once. */
        lua_gc(L, LUA_GCCOLLECT);
        ks_clear(&st);
        rc = cuda_mem_alloc(c->ctx, (size_t)bytes, &b->ptr, &st);
    }
    if (rc)
        return push_fail(L, &st);
    b->size = (size_t)bytes;
    handle_open(&b->n, &c->n);
    return 1;
}

/* Reads a dimension field (nil -> dflt): an integer or a list of 1 to 3
 * integers, each >= 1 and < 2^32. Raises on misuse. */
static void get_dims(lua_State *L, int spec, const char *k, unsigned out[3], unsigned dflt)
{
    out[0] = out[1] = out[2] = dflt;
    int ty = lua_getfield(L, spec, k);
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    lua_Integer v[3] = {1, 1, 1};
    if (ty == LUA_TNUMBER) {
        int isint;
        v[0] = lua_tointegerx(L, -1, &isint);
        if (!isint)
            luaL_error(L, "launch: %s must be an integer or a list of 1 to 3 integers", k);
    } else if (ty == LUA_TTABLE) {
        lua_Integer len = (lua_Integer)lua_rawlen(L, -1);
        if (len < 1 || len > 3)
            luaL_error(L, "launch: %s must list 1 to 3 integers", k);
        for (lua_Integer i = 0; i < len; i++) {
            int isint;
            lua_rawgeti(L, -1, i + 1);
            v[i] = lua_tointegerx(L, -1, &isint);
            if (!isint)
                luaL_error(L, "launch: %s[%d] must be an integer", k, (int)(i + 1));
            lua_pop(L, 1);
        }
    } else {
        luaL_error(L, "launch: %s must be an integer or a list of 1 to 3 integers, got %s",
                   k, luaL_typename(L, -1));
    }
    for (int i = 0; i < 3; i++) {
        if (v[i] < 1 || v[i] > (lua_Integer)UINT32_MAX)
            luaL_error(L, "launch: %s[%d] = %I is out of range", k, i + 1, v[i]);
        out[i] = (unsigned)v[i];
    }
    lua_pop(L, 1);
}

/* One launch argument, converted to bytes. */
typedef struct larg {
    const char *tag;          /* for messages */
    size_t size;
    unsigned char small[8];
    const char *data;         /* bytes args: points into the Lua string */
} larg;

static CUdeviceptr buffer_arg(lua_State *L, int idx, l_ctx *c, int argn, lua_Integer offset)
{
    l_buf *b = luaL_testudata(L, idx, BUF_T);
    if (!b)
        luaL_error(L, "launch: args[%d]: expected a " BUF_T, argn);
    if (b->n.closed)
        luaL_error(L, "launch: args[%d]: attempt to use a freed " BUF_T, argn);
    if (cuda_ctx_handle(node_ctx(&b->n)->ctx) != cuda_ctx_handle(c->ctx))
        luaL_error(L, "launch: args[%d]: the buffer belongs to another device", argn);
    if (offset < 0 || (size_t)offset > b->size)
        luaL_error(L, "launch: args[%d]: offset %I is outside the %I-byte buffer", argn,
                   offset, (lua_Integer)b->size);
    return b->ptr + (CUdeviceptr)offset;
}

/* Converts args[argn] (at stack index idx) into a. Raises on misuse. */
static void read_arg(lua_State *L, int idx, int argn, l_ctx *c, larg *a)
{
    memset(a, 0, sizeof *a);
    if (lua_type(L, idx) == LUA_TUSERDATA) {
        CUdeviceptr p = buffer_arg(L, idx, c, argn, 0);
        a->tag = "buffer";
        a->size = sizeof p;
        memcpy(a->small, &p, sizeof p);
        return;
    }
    if (!lua_istable(L, idx))
        luaL_error(L, "launch: args[%d]: expected a " BUF_T " or {type, value}, got %s", argn,
                   luaL_typename(L, idx));
    if (lua_rawgeti(L, idx, 1) != LUA_TSTRING)
        luaL_error(L, "launch: args[%d]: the first element must be a type name", argn);
    const char *tag = lua_tostring(L, -1);
    lua_pop(L, 1);  /* the table keeps the string alive */
    a->tag = tag;
    lua_rawgeti(L, idx, 2);
    int v = lua_gettop(L);
    int isint = 0;
    lua_Integer iv = lua_tointegerx(L, v, &isint);
    if (strcmp(tag, "u32") == 0 || strcmp(tag, "i32") == 0) {
        int u = tag[0] == 'u';
        if (!isint)
            luaL_error(L, "launch: args[%d]: %s needs an integer", argn, tag);
        if (u ? (iv < 0 || iv > (lua_Integer)UINT32_MAX) : (iv < INT32_MIN || iv > INT32_MAX))
            luaL_error(L, "launch: args[%d]: %I does not fit in %s", argn, iv, tag);
        uint32_t x = (uint32_t)iv;
        a->size = 4;
        memcpy(a->small, &x, 4);
    } else if (strcmp(tag, "u64") == 0 || strcmp(tag, "i64") == 0) {
        if (!isint)
            luaL_error(L, "launch: args[%d]: %s needs an integer", argn, tag);
        if (tag[0] == 'u' && iv < 0)
            luaL_error(L, "launch: args[%d]: %I does not fit in u64", argn, iv);
        uint64_t x = (uint64_t)iv;
        a->size = 8;
        memcpy(a->small, &x, 8);
    } else if (strcmp(tag, "f32") == 0) {
        if (lua_type(L, v) != LUA_TNUMBER)
            luaL_error(L, "launch: args[%d]: f32 needs a number", argn);
        float x = (float)lua_tonumber(L, v);
        a->size = 4;
        memcpy(a->small, &x, 4);
    } else if (strcmp(tag, "f64") == 0) {
        if (lua_type(L, v) != LUA_TNUMBER)
            luaL_error(L, "launch: args[%d]: f64 needs a number", argn);
        double x = (double)lua_tonumber(L, v);
        a->size = 8;
        memcpy(a->small, &x, 8);
    } else if (strcmp(tag, "bytes") == 0) {
        if (lua_type(L, v) != LUA_TSTRING)
            luaL_error(L, "launch: args[%d]: bytes needs a string", argn);
        size_t len;
        a->data = lua_tolstring(L, v, &len);  /* kept alive by the args table */
        if (len == 0)
            luaL_error(L, "launch: args[%d]: bytes needs a non-empty string", argn);
        a->size = len;
    } else if (strcmp(tag, "ptr") == 0) {
        lua_rawgeti(L, idx, 3);
        int isoff = 1;
        lua_Integer off = lua_isnil(L, -1) ? 0 : lua_tointegerx(L, -1, &isoff);
        if (!isoff)
            luaL_error(L, "launch: args[%d]: the ptr offset must be an integer", argn);
        lua_pop(L, 1);
        CUdeviceptr p = buffer_arg(L, v, c, argn, off);
        a->size = sizeof p;
        memcpy(a->small, &p, sizeof p);
    } else {
        luaL_error(L, "launch: args[%d]: unknown type '%s' (u32, i32, u64, i64, f32, f64, "
                   "bytes, ptr)", argn, tag);
    }
    lua_pop(L, 1);
}

/* Makes the kernel's parameter layout known, or known to be unknowable
 * (KS_EUNSUPPORTED: no cuFuncGetParamInfo; launches then pack arguments in
 * order, unchecked). Other failures are returned and not remembered. */
static int func_query_params(l_ctx *c, l_func *f, ks_status *st)
{
    if (f->pstate != P_UNKNOWN)
        return KS_OK;
    int rc = cuda_func_params(c->ctx, f->fn, &f->params, &f->nparams, st);
    if (rc == KS_OK) {
        f->pstate = P_KNOWN;
    } else if (rc == KS_EUNSUPPORTED) {
        f->pstate = P_UNSUPPORTED;
        snprintf(f->pmsg, sizeof f->pmsg, "%s", st->msg);
        ks_clear(st);
        rc = KS_OK;
    }
    return rc;
}

/* [-0, +3, m] nil, msg, "EINVAL". */
static int refuse(lua_State *L, const char *fmt, ...)
{
    char msg[KS_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    luaL_pushfail(L);
    lua_pushstring(L, msg);
    lua_pushstring(L, ks_code_name(KS_EINVAL));
    return 3;
}

#define DEFAULT_SMEM_LIMIT (48 * 1024)
/* The parameter space of a kernel is at most 32764 bytes. */
#define MAX_PARAM_BYTES 32764

static int ctx_launch(lua_State *L)
{
    l_ctx *c = check_ctx(L, 1);
    l_func *f = check_func(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    if (cuda_ctx_handle(node_ctx(&f->n)->ctx) != cuda_ctx_handle(c->ctx))
        return luaL_argerror(L, 2, "the function belongs to another device");

    cuda_launch l;
    memset(&l, 0, sizeof l);
    lua_getfield(L, 3, "grid");
    int has_grid = !lua_isnil(L, -1);
    lua_getfield(L, 3, "block");
    int has_block = !lua_isnil(L, -1);
    lua_pop(L, 2);
    if (!has_grid || !has_block)
        return luaL_error(L, "launch: grid and block are required");
    get_dims(L, 3, "grid", l.grid, 1);
    get_dims(L, 3, "block", l.block, 1);
    get_dims(L, 3, "cluster", l.cluster, 0);
    lua_Integer shared = lh_optintfield(L, 3, "shared", 0);
    if (shared < 0 || shared > (lua_Integer)UINT32_MAX)
        return luaL_error(L, "launch: shared must be a byte count >= 0");
    l.shared_bytes = (unsigned)shared;

    /* Arguments. */
    int ty = lua_getfield(L, 3, "args");
    int args = lua_gettop(L);
    size_t nargs = 0;
    if (ty == LUA_TTABLE)
        nargs = lua_rawlen(L, args);
    else if (ty != LUA_TNIL)
        return luaL_error(L, "launch: args must be a list");
    if (nargs > MAX_PARAM_BYTES)
        return luaL_error(L, "launch: too many arguments (%d)", (int)nargs);
    larg *av = nargs ? lua_newuserdatauv(L, nargs * sizeof *av, 0) : NULL;
    for (size_t i = 0; i < nargs; i++) {
        lua_rawgeti(L, args, (lua_Integer)i + 1);
        read_arg(L, lua_gettop(L), (int)i + 1, c, &av[i]);
        lua_pop(L, 1);
    }

    /* Check against the kernel's real layout, then pack. */
    ks_status st;
    ks_clear(&st);
    if (func_query_params(c, f, &st))
        return push_fail(L, &st);
    size_t total = 0;
    size_t *offs = nargs ? lua_newuserdatauv(L, nargs * sizeof *offs, 0) : NULL;
    if (f->pstate == P_KNOWN) {
        if (nargs != f->nparams)
            return refuse(L, "kernel '%s' takes %d parameter%s, %d given", f->name,
                          (int)f->nparams, f->nparams == 1 ? "" : "s", (int)nargs);
        for (size_t i = 0; i < nargs; i++) {
            if (av[i].size != f->params[i].size)
                return refuse(L, "kernel '%s': argument %d is %d bytes (%s) but parameter %d "
                              "is %d bytes", f->name, (int)i + 1, (int)av[i].size, av[i].tag,
                              (int)i + 1, (int)f->params[i].size);
            offs[i] = f->params[i].offset;
            if (offs[i] + av[i].size > total)
                total = offs[i] + av[i].size;
        }
    } else {
        for (size_t i = 0; i < nargs; i++) {
            size_t align = av[i].size >= 8 ? 8 : av[i].size >= 4 ? 4 : 1;
            total = (total + align - 1) / align * align;
            offs[i] = total;
            total += av[i].size;
        }
    }
    if (total > MAX_PARAM_BYTES)
        return refuse(L, "kernel '%s': %d bytes of arguments, more than the %d a kernel "
                      "can take", f->name, (int)total, MAX_PARAM_BYTES);
    unsigned char *space = lua_newuserdatauv(L, total ? total : 1, 0);
    void **kp = nargs ? lua_newuserdatauv(L, nargs * sizeof *kp, 0) : NULL;
    for (size_t i = 0; i < nargs; i++) {
        memcpy(space + offs[i], av[i].data ? (const void *)av[i].data : av[i].small, av[i].size);
        kp[i] = space + offs[i];
    }

    if (l.shared_bytes > DEFAULT_SMEM_LIMIT &&
        cuda_func_set_max_dynamic_smem(c->ctx, f->fn, (int)l.shared_bytes, &st))
        return push_fail(L, &st);
    if (cuda_launch_kernel(c->ctx, f->fn, &l, kp, &st))
        return push_fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

/* ---- Module ---- */

static int mod_free(lua_State *L)
{
    lua_pushboolean(L, node_close(luaL_checkudata(L, 1, MOD_T)));
    return 1;
}

static int mod_gc(lua_State *L)
{
    node_close(luaL_checkudata(L, 1, MOD_T));
    return 0;
}

static int mod_tostring(lua_State *L)
{
    l_mod *m = luaL_checkudata(L, 1, MOD_T);
    if (m->n.closed)
        lua_pushstring(L, MOD_T " (freed)");
    else
        lua_pushfstring(L, MOD_T " (%p)", (void *)m->mod);
    return 1;
}

static int mod_func(lua_State *L)
{
    l_mod *m = check_mod(L, 1);
    size_t len;
    const char *name = luaL_checklstring(L, 2, &len);
    luaL_argcheck(L, len > 0 && len < sizeof(((l_func *)0)->name) && strlen(name) == len, 2,
                  "bad kernel name");
    l_func *f = new_handle(L, sizeof *f, FUNC_T, K_FUNC, 1);
    ks_status st;
    ks_clear(&st);
    if (cuda_func_get(node_ctx(&m->n)->ctx, m->mod, name, &f->fn, &st))
        return push_fail(L, &st);
    memcpy(f->name, name, len + 1);
    handle_open(&f->n, &m->n);
    return 1;
}

/* m:global(name) -> address, bytes | nil, msg, code: a __device__
 * variable of the module (klab restores them between runs). */
static int mod_global(lua_State *L)
{
    l_mod *m = check_mod(L, 1);
    const char *name = luaL_checkstring(L, 2);
    CUdeviceptr p;
    size_t bytes;
    ks_status st;
    ks_clear(&st);
    if (cuda_module_global(node_ctx(&m->n)->ctx, m->mod, name, &p, &bytes, &st))
        return push_fail(L, &st);
    lua_pushinteger(L, (lua_Integer)p);
    lua_pushinteger(L, (lua_Integer)bytes);
    return 2;
}

/* ---- Function ---- */

static int func_free(lua_State *L)
{
    lua_pushboolean(L, node_close(luaL_checkudata(L, 1, FUNC_T)));
    return 1;
}

static int func_gc(lua_State *L)
{
    node_close(luaL_checkudata(L, 1, FUNC_T));
    return 0;
}

static int func_tostring(lua_State *L)
{
    l_func *f = luaL_checkudata(L, 1, FUNC_T);
    if (f->n.closed)
        lua_pushstring(L, FUNC_T " (freed)");
    else
        lua_pushfstring(L, FUNC_T " (%s)", f->name);
    return 1;
}

static int func_name(lua_State *L)
{
    lua_pushstring(L, check_func(L, 1)->name);
    return 1;
}

static int func_attributes(lua_State *L)
{
    l_func *f = check_func(L, 1);
    ks_status st;
    ks_clear(&st);
    cuda_func_attrs a;
    if (cuda_func_attributes(node_ctx(&f->n)->ctx, f->fn, &a, &st))
        return push_fail(L, &st);
    lua_createtable(L, 0, 9);
    lh_setint(L, "registers", a.num_regs);
    lh_setint(L, "local_bytes", a.local_bytes);
    lh_setint(L, "static_smem", a.static_smem);
    lh_setint(L, "const_bytes", a.const_bytes);
    lh_setint(L, "max_threads", a.max_threads);
    lh_setint(L, "binary_version", a.binary_version);
    lh_setint(L, "ptx_version", a.ptx_version);
    lh_setint(L, "max_dynamic_smem", a.max_dynamic_smem);
    lua_createtable(L, 3, 0);
    for (int i = 0; i < 3; i++) {
        lua_pushinteger(L, a.cluster_dims[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "cluster");
    return 1;
}

static int func_params(lua_State *L)
{
    l_func *f = check_func(L, 1);
    ks_status st;
    ks_clear(&st);
    if (func_query_params(node_ctx(&f->n), f, &st))
        return push_fail(L, &st);
    if (f->pstate != P_KNOWN) {
        ks_fail(&st, KS_EUNSUPPORTED, 0, "%s", f->pmsg);
        return lh_pushfail(L, &st);
    }
    lua_createtable(L, (int)f->nparams, 0);
    for (size_t i = 0; i < f->nparams; i++) {
        lua_createtable(L, 0, 2);
        lh_setint(L, "offset", (lua_Integer)f->params[i].offset);
        lh_setint(L, "size", (lua_Integer)f->params[i].size);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int func_set_max_shared(lua_State *L)
{
    l_func *f = check_func(L, 1);
    lua_Integer bytes = luaL_checkinteger(L, 2);
    luaL_argcheck(L, bytes >= 0 && bytes <= INT32_MAX, 2, "bad byte count");
    ks_status st;
    ks_clear(&st);
    if (cuda_func_set_max_dynamic_smem(node_ctx(&f->n)->ctx, f->fn, (int)bytes, &st))
        return push_fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

/* ---- Buffer ---- */

static int buf_free(lua_State *L)
{
    lua_pushboolean(L, node_close(luaL_checkudata(L, 1, BUF_T)));
    return 1;
}

static int buf_gc(lua_State *L)
{
    node_close(luaL_checkudata(L, 1, BUF_T));
    return 0;
}

static int buf_tostring(lua_State *L)
{
    l_buf *b = luaL_checkudata(L, 1, BUF_T);
    if (b->n.closed)
        lua_pushstring(L, BUF_T " (freed)");
    else {
        /* lua_pushfstring has no %llx */
        char s[96];
        snprintf(s, sizeof s, BUF_T " (0x%llx, %zu bytes)", (unsigned long long)b->ptr, b->size);
        lua_pushstring(L, s);
    }
    return 1;
}

static int buf_size(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)check_buf(L, 1)->size);
    return 1;
}

static int buf_ptr(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)check_buf(L, 1)->ptr);
    return 1;
}

/* Checks offset and length against the buffer; raises when out of range. */
static void check_range(lua_State *L, l_buf *b, lua_Integer off, lua_Integer len, int arg)
{
    if (off < 0 || (size_t)off > b->size || len < 0 || (size_t)len > b->size - (size_t)off)
        luaL_error(L, "bad argument #%d: %I bytes at offset %I do not fit in a %I-byte buffer",
                   arg, len, off, (lua_Integer)b->size);
}

static int buf_upload(lua_State *L)
{
    l_buf *b = check_buf(L, 1);
    size_t len;
    const char *s = luaL_checklstring(L, 2, &len);
    lua_Integer off = luaL_optinteger(L, 3, 0);
    check_range(L, b, off, (lua_Integer)len, 3);
    ks_status st;
    ks_clear(&st);
    if (cuda_memcpy_htod(node_ctx(&b->n)->ctx, b->ptr + (CUdeviceptr)off, s, len, &st))
        return push_fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int buf_download(lua_State *L)
{
    l_buf *b = check_buf(L, 1);
    lua_Integer off = luaL_optinteger(L, 3, 0);
    lua_Integer len = luaL_optinteger(L, 2, (off >= 0 && (size_t)off <= b->size)
                                                ? (lua_Integer)(b->size - (size_t)off) : 0);
    check_range(L, b, off, len, 2);
    luaL_Buffer lb;
    char *dst = luaL_buffinitsize(L, &lb, (size_t)len);
    ks_status st;
    ks_clear(&st);
    if (cuda_memcpy_dtoh(node_ctx(&b->n)->ctx, dst, b->ptr + (CUdeviceptr)off, (size_t)len, &st))
        return push_fail(L, &st);
    luaL_pushresultsize(&lb, (size_t)len);
    return 1;
}

static int buf_fill(lua_State *L)
{
    l_buf *b = check_buf(L, 1);
    lua_Integer v = luaL_checkinteger(L, 2);
    luaL_argcheck(L, v >= 0 && v <= 255, 2, "byte value must be 0..255");
    ks_status st;
    ks_clear(&st);
    if (cuda_memset_d8(node_ctx(&b->n)->ctx, b->ptr, (unsigned char)v, b->size, &st))
        return push_fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

/* ---- registration ---- */

static const luaL_Reg gpu_funcs[] = {
    {"available", l_available},
    {"driver_version", l_driver_version},
    {"count", l_count},
    {"device", l_device},
    {"context", l_context},
    {"arch_name", l_arch_name},
    {"is_sticky", l_is_sticky},
    {NULL, NULL},
};

static const luaL_Reg ctx_methods[] = {
    {"load", ctx_load},
    {"alloc", ctx_alloc},
    {"launch", ctx_launch},
    {"sync", ctx_sync},
    {"mem_info", ctx_mem_info},
    {"device", ctx_device},
    {"sticky", ctx_sticky},
    {"free", ctx_free},
    {NULL, NULL},
};
static const luaL_Reg ctx_meta[] = {
    {"__gc", ctx_gc}, {"__close", ctx_gc}, {"__tostring", ctx_tostring}, {NULL, NULL},
};

static const luaL_Reg mod_methods[] = {
    {"func", mod_func}, {"global", mod_global}, {"free", mod_free}, {NULL, NULL},
};
static const luaL_Reg mod_meta[] = {
    {"__gc", mod_gc}, {"__close", mod_gc}, {"__tostring", mod_tostring}, {NULL, NULL},
};

static const luaL_Reg func_methods[] = {
    {"name", func_name},
    {"attributes", func_attributes},
    {"params", func_params},
    {"set_max_shared", func_set_max_shared},
    {"free", func_free},
    {NULL, NULL},
};
static const luaL_Reg func_meta[] = {
    {"__gc", func_gc}, {"__close", func_gc}, {"__tostring", func_tostring}, {NULL, NULL},
};

static const luaL_Reg buf_methods[] = {
    {"upload", buf_upload},
    {"download", buf_download},
    {"fill", buf_fill},
    {"size", buf_size},
    {"ptr", buf_ptr},
    {"free", buf_free},
    {NULL, NULL},
};
static const luaL_Reg buf_meta[] = {
    {"__gc", buf_gc}, {"__close", buf_gc}, {"__tostring", buf_tostring}, {NULL, NULL},
};

int luaopen_klab_gpu(lua_State *L)
{
    lh_newclass(L, CTX_T, ctx_methods, ctx_meta);
    lh_newclass(L, MOD_T, mod_methods, mod_meta);
    lh_newclass(L, FUNC_T, func_methods, func_meta);
    lh_newclass(L, BUF_T, buf_methods, buf_meta);
    lua_pop(L, 4);
    luaL_newlib(L, gpu_funcs);
    return 1;
}
