/* lgpu.c: lifetimes and checks of klab.gpu's handles (see lgpu.h). */
#include "lgpu.h"

#include <stdlib.h>
#include <string.h>

l_ctx *lgpu_ctx_of(gnode *n)
{
    while (n && n->kind != K_CTX)
        n = n->parent;
    return (l_ctx *)n;
}

/* Frees the driver resource of n; errors are ignored (after a sticky error
 * every call fails, and there is nothing left to do about it). K_OTHER
 * nodes released their own resource before closing. */
static void release_resource(gnode *n)
{
    ks_status st;
    ks_clear(&st);
    l_ctx *c = lgpu_ctx_of(n);
    switch (n->kind) {
    case K_CTX:
        cuda_ctx_close(c->ctx, &st);
        c->ctx = NULL;
        break;
    case K_MOD: {
        l_mod *m = (l_mod *)n;
        if (m->mod)
            cuda_module_unload(c->ctx, m->mod, &st);
        m->mod = NULL;
        break;
    }
    case K_FUNC: {
        l_func *f = (l_func *)n;
        free(f->params);
        f->params = NULL;
        f->fn = NULL;
        break;
    }
    case K_BUF: {
        l_buf *b = (l_buf *)n;
        if (b->ptr)
            cuda_mem_free(c->ctx, b->ptr, &st);
        b->ptr = 0;
        break;
    }
    default:
        break;
    }
}

/* Releases n and then any closed ancestor it was the last child of. */
static void node_settle(gnode *n)
{
    while (n && n->closed && !n->released && n->children == 0) {
        release_resource(n);
        n->released = 1;
        gnode *p = n->parent;
        if (p)
            p->children--;
        n = p;
    }
}

int lgpu_close(gnode *n)
{
    if (n->closed)
        return 0;
    n->closed = 1;
    node_settle(n);
    return 1;
}

void lgpu_hold(gnode *parent)
{
    parent->children++;
}

void lgpu_unhold(gnode *parent)
{
    parent->children--;
    node_settle(parent);
}

void *lgpu_new_child(lua_State *L, size_t sz, const char *tname, int ctx_idx)
{
    ctx_idx = lua_absindex(L, ctx_idx);
    void *h = lua_newuserdatauv(L, sz, 1);
    memset(h, 0, sz);
    luaL_setmetatable(L, tname);
    lua_pushvalue(L, ctx_idx);
    lua_setiuservalue(L, -2, 1);
    return h;
}

void lgpu_child_hold(l_ctx **slot, l_ctx *c)
{
    *slot = c;
    lgpu_hold(&c->n);
}

void lgpu_child_release(l_ctx **slot)
{
    l_ctx *c = *slot;
    *slot = NULL;
    if (c)
        lgpu_unhold(&c->n);
}

void *lgpu_new_handle(lua_State *L, size_t sz, const char *tname, int kind, int parent_idx)
{
    if (parent_idx)
        parent_idx = lua_absindex(L, parent_idx);
    gnode *n = lua_newuserdatauv(L, sz, 1);
    memset(n, 0, sz);
    n->kind = kind;
    n->closed = 1;
    n->released = 1;
    luaL_setmetatable(L, tname);
    if (parent_idx) {
        lua_pushvalue(L, parent_idx);
        lua_setiuservalue(L, -2, 1);
    }
    return n;
}

void lgpu_open(gnode *n, gnode *parent)
{
    n->closed = 0;
    n->released = 0;
    n->parent = parent;
    if (parent)
        parent->children++;
}

void *lgpu_check(lua_State *L, int idx, const char *tname)
{
    gnode *n = luaL_checkudata(L, idx, tname);
    if (n->closed)
        luaL_error(L, "attempt to use a freed %s", tname);
    return n;
}

l_ctx *lgpu_check_ctx(lua_State *L, int idx)
{
    return lgpu_check(L, idx, CTX_T);
}

l_func *lgpu_check_func(lua_State *L, int idx)
{
    return lgpu_check(L, idx, FUNC_T);
}

l_buf *lgpu_check_buf(lua_State *L, int idx)
{
    return lgpu_check(L, idx, BUF_T);
}

l_buf *lgpu_check_buf_of(lua_State *L, int idx, const l_ctx *c, const char *what)
{
    l_buf *b = luaL_testudata(L, idx, BUF_T);
    if (!b)
        luaL_error(L, "%s must be a " BUF_T ", got %s", what, luaL_typename(L, idx));
    if (b->n.closed)
        luaL_error(L, "%s: attempt to use a freed " BUF_T, what);
    if (cuda_ctx_handle(lgpu_ctx_of(&b->n)->ctx) != cuda_ctx_handle(c->ctx))
        luaL_error(L, "%s belongs to another device", what);
    return b;
}

CUdeviceptr lgpu_check_region(lua_State *L, int idx, const l_ctx *c, const char *what, size_t need)
{
    idx = lua_absindex(L, idx);
    size_t off = 0;
    l_buf *b;
    if (lua_istable(L, idx)) {
        lua_rawgeti(L, idx, 1);
        b = lgpu_check_buf_of(L, lua_gettop(L), c, what);
        lua_rawgeti(L, idx, 2);
        int isint = 0;
        lua_Integer o = lua_tointegerx(L, -1, &isint);
        if (!isint || o < 0)
            luaL_error(L, "%s: the offset of {buffer, offset} must be a non-negative integer", what);
        off = (size_t)o;
        lua_pop(L, 2);
    } else {
        b = lgpu_check_buf_of(L, idx, c, what);
    }
    if (off > b->size || b->size - off < need)
        luaL_error(L, "%s: %I bytes from offset %I do not fit in the %I-byte buffer", what,
                   (lua_Integer)need, (lua_Integer)off, (lua_Integer)b->size);
    return b->ptr + off;
}
