/*
 * l_judge.c: require "klab.judge", klab's trusted device-side checks
 * (host/driver/devkern.h) and tensor maps (host/driver/tmap.h).
 *
 *   judge.source()                 -> CUDA source of the judge kernels, prelude
 *                                     included (compile it with klab.jit for the
 *                                     device's arch)
 *   judge.prelude()                -> the prelude alone (element types), which
 *                                     task references and shipped baselines get
 *   judge.open(ctx, cubin)         -> Judge | nil, msg, code
 *   judge.dtype_size(name)         -> bytes per element | nil for an unknown type
 *   judge.tensormap(ptr, spec)     -> 128-byte string | nil, msg, code
 *   judge.tensormap_check(ptr, spec) -> true | nil, msg, "EINVAL"
 *       spec = {dtype=, dims={inner, ...}, box={...}, strides={...}? (bytes, dims 2..),
 *               swizzle="none"|"32B"|"64B"|"128B", l2="none"|"64B"|"128B"|"256B",
 *               oob="zero"|"nan"}
 *
 * Device addresses are a klab.gpu.Buffer (its start) or an integer address
 * (a place inside a buffer, e.g. past a guard region). Methods (j = Judge):
 *   j:fill(ptr, n, dtype, dist, seed [, a, b, scale])   dist: normal (a mean, b std),
 *         uniform (a low, b high), spiky (a spike probability, b spike std),
 *         int (a..b), const (a)
 *   j:pattern(ptr, bytes, pattern32)
 *   j:pattern_check(ptr, bytes, pattern32) -> bad_bytes, first_offset|nil
 *   j:checksum(ptr, bytes)                 -> integer (64-bit)
 *   j:compare(got, dtype, want_f32, n, atol, rtol) -> {total, failed, nan, inf,
 *         max_abs, max_abs_at, max_rel, max_rel_at, first_fail}   (indices 0-based)
 *   j:bitdiff(a, b, bytes)                 -> count, first_offset|nil
 *   j:gather(src, dtype, positions, n, unit, dst)  dst[i*unit+e] = src[positions[i]*unit+e]
 *   j:positions(out, n, total, seed)   out[i] (u64) uniform in [0, total), from (seed, i)
 *   j:convert(src, dts, dst, dtd, n)
 *   j:free(), __close, __gc
 * Operations run on the legacy stream, in order with ctx:launch; the ones
 * that return figures wait for it. Driver failures return nil, msg, code.
 */
#include <stdint.h>
#include <string.h>

#include "lhost.h"
#include "lgpu.h"
#include "driver/devkern.h"
#include "driver/tmap.h"

#define JUDGE_T "klab.judge.Judge"

typedef struct l_judge {
    devkern *k;       /* NULL once released */
    l_ctx *ctx;       /* held (lgpu_hold) while k lives; user value 1 */
} l_judge;

static l_judge *check_judge(lua_State *L, int idx)
{
    l_judge *j = luaL_checkudata(L, idx, JUDGE_T);
    if (!j->k)
        luaL_error(L, "attempt to use a freed " JUDGE_T);
    if (j->ctx->n.released)
        luaL_error(L, "the judge's context is gone");
    return j;
}

devkern *lgpu_judge_kernels(lua_State *L, int idx)
{
    return check_judge(L, idx)->k;
}

static int judge_release(l_judge *j)
{
    if (!j->k)
        return 0;
    devkern_close(j->k);
    j->k = NULL;
    lgpu_child_release(&j->ctx);
    return 1;
}

/* A device address: a Buffer's start, or an integer. */
static CUdeviceptr check_ptr(lua_State *L, int idx)
{
    if (lua_isinteger(L, idx))
        return (CUdeviceptr)lua_tointeger(L, idx);
    return lgpu_check_buf(L, idx)->ptr;
}

static int check_dtype(lua_State *L, int idx)
{
    const char *name = luaL_checkstring(L, idx);
    int dt = kd_dtype_from_name(name);
    if (dt < 0)
        return luaL_argerror(L, idx, lua_pushfstring(L, "unknown element type '%s'", name));
    return dt;
}

static size_t check_size(lua_State *L, int idx)
{
    lua_Integer v = luaL_checkinteger(L, idx);
    luaL_argcheck(L, v >= 0, idx, "must be >= 0");
    return (size_t)v;
}

static void push_index(lua_State *L, uint64_t v)
{
    if (v == UINT64_MAX)
        lua_pushnil(L);
    else
        lua_pushinteger(L, (lua_Integer)v);
}

static int fail(lua_State *L, const ks_status *st)
{
    return lh_pushfail(L, st);
}

/* ---- module functions ---- */

static int l_source(lua_State *L)
{
    size_t np, nj;
    const char *p = devkern_prelude(&np);
    const char *s = devkern_source(&nj);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, p, np);
    luaL_addstring(&b, "\n#line 1 \"judge.cu\"\n");
    luaL_addlstring(&b, s, nj);
    luaL_pushresult(&b);
    return 1;
}

static int l_prelude(lua_State *L)
{
    size_t n;
    const char *p = devkern_prelude(&n);
    lua_pushlstring(L, p, n);
    return 1;
}

static int l_open(lua_State *L)
{
    l_ctx *c = lgpu_check_ctx(L, 1);
    size_t n;
    const char *cubin = luaL_checklstring(L, 2, &n);
    l_judge *j = lgpu_new_child(L, sizeof *j, JUDGE_T, 1);
    ks_status st;
    ks_clear(&st);
    devkern *k;
    if (devkern_open(c->ctx, cubin, n, &k, &st))
        return fail(L, &st);
    j->k = k;
    lgpu_child_hold(&j->ctx, c);
    return 1;
}

static int l_dtype_size(lua_State *L)
{
    int dt = kd_dtype_from_name(luaL_checkstring(L, 1));
    if (dt < 0)
        return 0;
    lua_pushinteger(L, (lua_Integer)kd_dtype_size(dt));
    return 1;
}

static int bytes_opt(lua_State *L, int t, const char *k, const char *dflt, const char *const names[],
                     const int values[])
{
    const char *v = lh_optstrfield(L, t, k, dflt);
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0)
            return values[i];
    return luaL_error(L, "tensormap: %s '%s' is not one of the allowed values", k, v);
}

static void int_list(lua_State *L, int t, const char *k, uint64_t *out, int *n, int required)
{
    int ty = lua_getfield(L, t, k);
    if (ty == LUA_TNIL && !required) {
        lua_pop(L, 1);
        return;
    }
    if (ty != LUA_TTABLE)
        luaL_error(L, "tensormap: %s must be a list of integers", k);
    int len = (int)lua_rawlen(L, -1);
    if (len < 1 || len > TMAP_MAX_RANK)
        luaL_error(L, "tensormap: %s must have 1 to %d entries", k, TMAP_MAX_RANK);
    for (int i = 0; i < len; i++) {
        lua_rawgeti(L, -1, i + 1);
        int isint;
        lua_Integer v = lua_tointegerx(L, -1, &isint);
        if (!isint || v < 0)
            luaL_error(L, "tensormap: %s[%d] must be a non-negative integer", k, i + 1);
        out[i] = (uint64_t)v;
        lua_pop(L, 1);
    }
    *n = len;
    lua_pop(L, 1);
}

/* Reads a tensor-map spec at t into d. Raises on misuse. */
static void read_tmap(lua_State *L, int t, tmap_desc *d)
{
    luaL_checktype(L, t, LUA_TTABLE);
    memset(d, 0, sizeof *d);
    const char *dt = lh_optstrfield(L, t, "dtype", NULL);
    if (!dt || (d->dtype = kd_dtype_from_name(dt)) < 0)
        luaL_error(L, "tensormap: dtype missing or unknown");
    int nd = 0, nb = 0, ns = 0;
    uint64_t box[TMAP_MAX_RANK] = {0}, strides[TMAP_MAX_RANK] = {0};
    int_list(L, t, "dims", d->dims, &nd, 1);
    int_list(L, t, "box", box, &nb, 1);
    int_list(L, t, "strides", strides, &ns, 0);
    if (nb != nd)
        luaL_error(L, "tensormap: box has %d entries but dims has %d", nb, nd);
    if (ns && ns != nd - 1)
        luaL_error(L, "tensormap: strides needs %d entries (bytes, for dims 2..%d)", nd - 1, nd);
    d->rank = nd;
    for (int i = 0; i < nd; i++)
        d->box[i] = box[i] > UINT32_MAX ? UINT32_MAX : (uint32_t)box[i];
    for (int i = 0; i < ns; i++)
        d->strides[i + 1] = strides[i];
    static const char *const sw_names[] = {"none", "32B", "64B", "128B", NULL};
    static const int sw_vals[] = {0, 32, 64, 128};
    d->swizzle = bytes_opt(L, t, "swizzle", "none", sw_names, sw_vals);
    static const char *const l2_names[] = {"none", "64B", "128B", "256B", NULL};
    static const int l2_vals[] = {0, 64, 128, 256};
    d->l2_promotion = bytes_opt(L, t, "l2", "none", l2_names, l2_vals);
    static const char *const oob_names[] = {"zero", "nan", NULL};
    static const int oob_vals[] = {0, 1};
    d->oob_nan = bytes_opt(L, t, "oob", "zero", oob_names, oob_vals);
}

static int l_tensormap(lua_State *L)
{
    CUdeviceptr p = check_ptr(L, 1);
    tmap_desc d;
    read_tmap(L, 2, &d);
    unsigned char out[TMAP_BYTES];
    ks_status st;
    ks_clear(&st);
    if (tmap_encode(p, &d, out, &st))
        return fail(L, &st);
    lua_pushlstring(L, (const char *)out, TMAP_BYTES);
    return 1;
}

static int l_tensormap_check(lua_State *L)
{
    CUdeviceptr p = (CUdeviceptr)luaL_checkinteger(L, 1);
    tmap_desc d;
    read_tmap(L, 2, &d);
    ks_status st;
    ks_clear(&st);
    if (tmap_check(p, &d, &st))
        return fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

/* ---- methods ---- */

static int j_fill(lua_State *L)
{
    l_judge *j = check_judge(L, 1);
    CUdeviceptr p = check_ptr(L, 2);
    size_t n = check_size(L, 3);
    int dt = check_dtype(L, 4);
    static const char *const dists[] = {"normal", "uniform", "spiky", "int", "const", NULL};
    int dist = luaL_checkoption(L, 5, NULL, dists);
    uint64_t seed = (uint64_t)luaL_checkinteger(L, 6);
    double a = luaL_optnumber(L, 7, dist == KD_UNIFORM ? -1.0 : dist == KD_SPIKY ? 0.001 : 0.0);
    double b = luaL_optnumber(L, 8, dist == KD_SPIKY ? 10.0 : 1.0);
    double scale = luaL_optnumber(L, 9, 1.0);
    ks_status st;
    ks_clear(&st);
    if (devkern_fill(j->k, NULL, p, n, dt, dist, seed, a, b, scale, &st))
        return fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int j_pattern(lua_State *L)
{
    l_judge *j = check_judge(L, 1);
    CUdeviceptr p = check_ptr(L, 2);
    size_t n = check_size(L, 3);
    uint32_t pat = (uint32_t)luaL_checkinteger(L, 4);
    ks_status st;
    ks_clear(&st);
    if (devkern_pattern(j->k, NULL, p, n, pat, &st))
        return fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int j_l2_read(lua_State *L)
{
    l_judge *j = check_judge(L, 1);
    CUdeviceptr p = check_ptr(L, 2);
    size_t n = check_size(L, 3);
    ks_status st;
    ks_clear(&st);
    if (devkern_l2_read(j->k, NULL, p, n, &st))
        return fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int j_pattern_check(lua_State *L)
{
    l_judge *j = check_judge(L, 1);
    CUdeviceptr p = check_ptr(L, 2);
    size_t n = check_size(L, 3);
    uint32_t pat = (uint32_t)luaL_checkinteger(L, 4);
    uint64_t bad, first;
    ks_status st;
    ks_clear(&st);
    if (devkern_pattern_check(j->k, NULL, p, n, pat, &bad, &first, &st))
        return fail(L, &st);
    lua_pushinteger(L, (lua_Integer)bad);
    push_index(L, first);
    return 2;
}

static int j_checksum(lua_State *L)
{
    l_judge *j = check_judge(L, 1);
    CUdeviceptr p = check_ptr(L, 2);
    size_t n = check_size(L, 3);
    uint64_t sum;
    ks_status st;
    ks_clear(&st);
    if (devkern_checksum(j->k, NULL, p, n, &sum, &st))
        return fail(L, &st);
    lua_pushinteger(L, (lua_Integer)sum);
    return 1;
}

/* t[k] = v, or nil for "none" (UINT64_MAX). */
static void set_index(lua_State *L, const char *k, uint64_t v)
{
    push_index(L, v);
    lua_setfield(L, -2, k);
}

static int j_compare(lua_State *L)
{
    l_judge *j = check_judge(L, 1);
    CUdeviceptr got = check_ptr(L, 2);
    int dt = check_dtype(L, 3);
    CUdeviceptr want = check_ptr(L, 4);
    size_t n = check_size(L, 5);
    double atol = luaL_checknumber(L, 6), rtol = luaL_checknumber(L, 7);
    kd_compare r;
    ks_status st;
    ks_clear(&st);
    if (devkern_compare(j->k, NULL, got, dt, want, n, atol, rtol, &r, &st))
        return fail(L, &st);
    lua_createtable(L, 0, 9);
    set_index(L, "total", r.total);
    set_index(L, "failed", r.failed);
    set_index(L, "nan", r.nan);
    set_index(L, "inf", r.inf);
    lh_setnum(L, "max_abs", r.max_abs);
    set_index(L, "max_abs_at", r.max_abs_at);
    lh_setnum(L, "max_rel", r.max_rel);
    set_index(L, "max_rel_at", r.max_rel_at);
    set_index(L, "first_fail", r.first_fail);
    return 1;
}

static int j_bitdiff(lua_State *L)
{
    l_judge *j = check_judge(L, 1);
    CUdeviceptr a = check_ptr(L, 2), b = check_ptr(L, 3);
    size_t n = check_size(L, 4);
    uint64_t count, first;
    ks_status st;
    ks_clear(&st);
    if (devkern_bitdiff(j->k, NULL, a, b, n, &count, &first, &st))
        return fail(L, &st);
    lua_pushinteger(L, (lua_Integer)count);
    push_index(L, first);
    return 2;
}

static int j_gather(lua_State *L)
{
    l_judge *j = check_judge(L, 1);
    CUdeviceptr src = check_ptr(L, 2);
    int dt = check_dtype(L, 3);
    CUdeviceptr pos = check_ptr(L, 4);
    size_t n = check_size(L, 5);
    size_t unit = check_size(L, 6);
    CUdeviceptr dst = check_ptr(L, 7);
    ks_status st;
    ks_clear(&st);
    if (devkern_gather(j->k, NULL, src, dt, pos, n, unit, dst, &st))
        return fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int j_positions(lua_State *L)
{
    l_judge *j = check_judge(L, 1);
    CUdeviceptr out = check_ptr(L, 2);
    size_t n = check_size(L, 3);
    lua_Integer total = luaL_checkinteger(L, 4);
    luaL_argcheck(L, total > 0, 4, "needs at least one unit");
    uint64_t seed = (uint64_t)luaL_checkinteger(L, 5);
    ks_status st;
    ks_clear(&st);
    if (devkern_positions(j->k, NULL, out, n, (uint64_t)total, seed, &st))
        return fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int j_convert(lua_State *L)
{
    l_judge *j = check_judge(L, 1);
    CUdeviceptr src = check_ptr(L, 2);
    int dts = check_dtype(L, 3);
    CUdeviceptr dst = check_ptr(L, 4);
    int dtd = check_dtype(L, 5);
    size_t n = check_size(L, 6);
    ks_status st;
    ks_clear(&st);
    if (devkern_convert(j->k, NULL, src, dts, dst, dtd, n, &st))
        return fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int j_free(lua_State *L)
{
    l_judge *j = luaL_checkudata(L, 1, JUDGE_T);
    lua_pushboolean(L, judge_release(j));
    return 1;
}

static int j_gc(lua_State *L)
{
    judge_release(luaL_checkudata(L, 1, JUDGE_T));
    return 0;
}

static int j_tostring(lua_State *L)
{
    l_judge *j = luaL_checkudata(L, 1, JUDGE_T);
    if (j->k)
        lua_pushfstring(L, JUDGE_T " (%p)", (void *)j->k);
    else
        lua_pushliteral(L, JUDGE_T " (freed)");
    return 1;
}

static const luaL_Reg funcs[] = {
    {"source", l_source},
    {"prelude", l_prelude},
    {"open", l_open},
    {"dtype_size", l_dtype_size},
    {"tensormap", l_tensormap},
    {"tensormap_check", l_tensormap_check},
    {NULL, NULL},
};

static const luaL_Reg methods[] = {
    {"fill", j_fill},
    {"pattern", j_pattern},
    {"pattern_check", j_pattern_check},
    {"l2_read", j_l2_read},
    {"checksum", j_checksum},
    {"compare", j_compare},
    {"bitdiff", j_bitdiff},
    {"gather", j_gather},
    {"positions", j_positions},
    {"convert", j_convert},
    {"free", j_free},
    {NULL, NULL},
};

static const luaL_Reg metamethods[] = {
    {"__gc", j_gc},
    {"__close", j_gc},
    {"__tostring", j_tostring},
    {NULL, NULL},
};

int luaopen_klab_judge(lua_State *L)
{
    lh_newclass(L, JUDGE_T, methods, metamethods);
    lua_pop(L, 1);
    luaL_newlib(L, funcs);
    return 1;
}
