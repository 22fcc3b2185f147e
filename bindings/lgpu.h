/*
 * lgpu.h: klab.gpu's handles, shared with the bindings that work on GPU
 * objects (klab.blas, klab.timing, klab.judge). The one place that knows
 * their layout and the parent/child lifetime rule.
 *
 * Every handle starts with a gnode. `closed` is what Lua sees (freed by
 * :free, __close or __gc); `released` says the resource is gone, which waits
 * until no live child needs it. A binding that hangs its own object under a
 * context (a cuBLASLt plan, say) gives it kind K_OTHER: it releases its own
 * resource first and then calls lgpu_close, which settles the parents.
 */
#ifndef KLAB_BINDINGS_LGPU_H
#define KLAB_BINDINGS_LGPU_H

#include <stddef.h>

#include "lhost.h"
#include "driver/cuda.h"

#define CTX_T "klab.gpu.Context"
#define MOD_T "klab.gpu.Module"
#define FUNC_T "klab.gpu.Function"
#define BUF_T "klab.gpu.Buffer"

enum { K_CTX, K_MOD, K_FUNC, K_BUF, K_OTHER };

typedef struct gnode {
    int kind;
    int closed;
    int released;
    int children;
    struct gnode *parent;
} gnode;

typedef struct l_ctx {
    gnode n;
    cuda_ctx *ctx;
} l_ctx;

typedef struct l_mod {
    gnode n;
    CUmodule mod;
} l_mod;

enum { P_UNKNOWN = 0, P_KNOWN = 1, P_UNSUPPORTED = 2 };

typedef struct l_func {
    gnode n;
    CUfunction fn;
    int pstate;
    size_t nparams;
    cuda_param *params;
    char pmsg[KS_MSG_MAX];   /* why params are unsupported */
    char name[256];
} l_func;

typedef struct l_buf {
    gnode n;
    CUdeviceptr ptr;
    size_t size;
} l_buf;

/* The judge's kernels of the klab.judge handle at idx (raises when it is
 * not one, or freed). klab.timing borrows them for the L2 flush's read: the
 * caller keeps the handle alive and open for the measurement. */
struct devkern *lgpu_judge_kernels(lua_State *L, int idx);

/* The context a node hangs under (itself for a context). */
l_ctx *lgpu_ctx_of(gnode *n);

/* [-0, +1, m] A new handle of type tname, created closed and released (so a
 * failure before it is filled leaves nothing to free), with user value 1 =
 * the value at parent_idx (0: none). */
void *lgpu_new_handle(lua_State *L, size_t sz, const char *tname, int kind, int parent_idx);

/* A handle of another binding that lives under a context (a cuBLASLt or
 * cuDNN plan, a profiler, the judge's kernels): a zeroed userdata of sz
 * bytes with metatable tname, whose user value 1 keeps the context at
 * ctx_idx from being collected first. Made before its resource, so that a
 * failure leaves nothing to free. Once the resource exists,
 * lgpu_child_hold(&h->ctx, c) holds the context (its driver context
 * outlives the child); the child's one release frees its resource, then
 * calls lgpu_child_release(&h->ctx) (idempotent). */
void *lgpu_new_child(lua_State *L, size_t sz, const char *tname, int ctx_idx);
void lgpu_child_hold(l_ctx **slot, l_ctx *c);
void lgpu_child_release(l_ctx **slot);

/* Marks a filled handle live and links it under its parent. */
void lgpu_open(gnode *n, gnode *parent);

/* The one release shared by :free, __close and __gc: 1 if it closed now. */
int lgpu_close(gnode *n);

/* For objects of other bindings that are not gnodes themselves: hold keeps
 * parent's resource alive; unhold lets it go, releasing it when Lua already
 * freed it and this was the last hold. */
void lgpu_hold(gnode *parent);
void lgpu_unhold(gnode *parent);

/* [-0, +0, v] A live handle of type tname at idx; raises otherwise. */
void *lgpu_check(lua_State *L, int idx, const char *tname);
l_ctx *lgpu_check_ctx(lua_State *L, int idx);
l_func *lgpu_check_func(lua_State *L, int idx);
l_buf *lgpu_check_buf(lua_State *L, int idx);

/* [-0, +0, v] A live buffer at idx on the same device as c; `what` names the
 * argument in the message. */
l_buf *lgpu_check_buf_of(lua_State *L, int idx, const l_ctx *c, const char *what);

/* [-0, +0, v] A device region at idx on c's device: a Buffer (its start),
 * or {buffer, offset} (a place inside it, e.g. past a guard region). At
 * least `need` bytes must lie between the address and the buffer's end. */
CUdeviceptr lgpu_check_region(lua_State *L, int idx, const l_ctx *c, const char *what, size_t need);

#endif
