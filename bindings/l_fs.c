/*
 * l_fs.c: require "klab.fs", file operations without a shell (host/base/fs.h).
 * (Making folders and removing trees: klab.sys.mkdir and sys.remove_tree,
 * over the same host/base/fs.c.)
 *
 *   fs.list(dir)            -> {{name=, type=, size=}, ...} sorted by name | nil, msg, code
 *       type: "file", "dir", "link", "other" (of the entry itself: links are not followed)
 *   fs.type(path)           -> "file" | "dir" | "link" | "other" | nil (missing), size
 *   fs.read(path [, max [, {one_name=true}]]) -> string | nil, msg, code
 *                           (one_name: refuse a file with hard links)
 *       a regular file only, at most max bytes (default 64 MiB); a symbolic
 *       link, folder, FIFO, device or larger file is refused (code "EINVAL")
 *       with a message naming the path and why
 *   fs.mkdtemp([prefix])    -> path of a new private folder under $TMPDIR or /tmp
 *   fs.mkstemp([prefix])    -> path of a new private, empty file there
 *   fs.realpath(path)       -> path | nil, msg, code
 *   fs.lock(path, key [, note [, wait]]) -> lock | nil, msg, code, holder
 *       an exclusive lock on key's slot of lock file path, released by
 *       lock:free() (also __close and __gc) or when the process ends; when
 *       another holds it: nil, msg, "EBUSY", and the note that holder wrote;
 *       with wait true, waits until the holder lets go instead
 *   fs.write(path, data)    -> true | nil, msg, code
 *       path's whole content; a new file beside path renamed over it, so a
 *       symbolic link at path is replaced, never followed
 *   fs.create(path)         -> writer | nil, msg, code
 *       the same, a piece at a time: writer:write(s, ...) -> writer | nil,
 *       msg, code; writer:close() -> true | nil, msg, code puts the file in
 *       place; writer:abort() (also __close and __gc before close) leaves
 *       path as it was
 *   fs.append(path, data)   -> true | nil, msg, code
 *       adds to a regular file (made when missing); a link is refused
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lhost.h"
#include "base/fs.h"

#define LOCK_T "klab.fs.Lock"
#define WRITER_T "klab.fs.Writer"

static int l_list(lua_State *L)
{
    const char *dir = luaL_checkstring(L, 1);
    fs_entry *e;
    size_t n;
    ks_status st;
    if (fs_list(dir, &e, &n, &st) != KS_OK)
        return lh_pushfail(L, &st);
    lua_createtable(L, (int)(n < INT_MAX ? n : 0), 0);
    for (size_t i = 0; i < n; i++) {
        lua_createtable(L, 0, 3);
        lh_setstr(L, "name", e[i].name);
        lh_setstr(L, "type", fs_type_name(e[i].type));
        lh_setint(L, "size", (lua_Integer)e[i].size);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    fs_list_free(e, n);
    return 1;
}

static int l_type(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    fs_type t;
    uint64_t size;
    ks_status st;
    if (fs_lstat(path, &t, &size, &st) != KS_OK)
        return lh_pushfail(L, &st);
    if (t == FS_MISSING) {
        luaL_pushfail(L);
        return 1;
    }
    lua_pushstring(L, fs_type_name(t));
    lua_pushinteger(L, (lua_Integer)size);
    return 2;
}

static int l_read(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer max = luaL_optinteger(L, 2, 0);
    if (max < 0)
        return luaL_argerror(L, 2, "the limit must be >= 0");
    int flags = 0;
    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        if (lh_optboolfield(L, 3, "one_name", 0))
            flags |= FS_ONE_NAME;
    }
    char *buf;
    size_t len;
    ks_status st;
    if (fs_read(path, (size_t)max, flags, &buf, &len, &st) != KS_OK)
        return lh_pushfail(L, &st);
    lua_pushlstring(L, buf, len);
    free(buf);
    return 1;
}

/* A new temporary folder or file, by make (fs_mkdtemp or fs_mkstemp). */
static int push_temp(lua_State *L, int (*make)(const char *, char *, size_t, ks_status *))
{
    const char *prefix = luaL_optstring(L, 1, "klab-");
    char path[PATH_MAX];
    ks_status st;
    if (make(prefix, path, sizeof path, &st) != KS_OK)
        return lh_pushfail(L, &st);
    lua_pushstring(L, path);
    return 1;
}

static int l_mkdtemp(lua_State *L) { return push_temp(L, fs_mkdtemp); }

static int l_mkstemp(lua_State *L) { return push_temp(L, fs_mkstemp); }

static int l_realpath(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    char out[PATH_MAX];
    ks_status st;
    if (fs_realpath(path, out, sizeof out, &st) != KS_OK)
        return lh_pushfail(L, &st);
    lua_pushstring(L, out);
    return 1;
}

/* ---- locks ---- */

typedef struct llock {
    int fd;
} llock;

static int lock_release(lua_State *L)
{
    llock *k = luaL_checkudata(L, 1, LOCK_T);
    fs_unlock(k->fd);
    k->fd = -1;
    return 0;
}

static int lock_tostring(lua_State *L)
{
    llock *k = luaL_checkudata(L, 1, LOCK_T);
    lua_pushstring(L, k->fd >= 0 ? "klab.fs.Lock" : "klab.fs.Lock (freed)");
    return 1;
}

static int l_lock(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    const char *key = luaL_checkstring(L, 2);
    const char *note = luaL_optstring(L, 3, "");
    int wait = lua_toboolean(L, 4);
    llock *k = lua_newuserdatauv(L, sizeof *k, 0);
    k->fd = -1;
    luaL_setmetatable(L, LOCK_T);
    char held[FS_LOCK_NOTE + 2];
    held[0] = '\0';
    ks_status st;
    int rc = wait ? fs_lock_wait(path, key, note, &k->fd, &st)
                  : fs_lock(path, key, note, &k->fd, held, sizeof held, &st);
    if (rc != KS_OK) {
        luaL_pushfail(L);
        lua_pushstring(L, st.msg);
        lua_pushstring(L, st.sub == EAGAIN ? "EBUSY" : ks_code_name(st.code));
        lua_pushstring(L, held);
        return 4;
    }
    return 1;
}

static const luaL_Reg lock_methods[] = {
    {"free", lock_release},
    {NULL, NULL},
};

static const luaL_Reg lock_meta[] = {
    {"__gc", lock_release},
    {"__close", lock_release},
    {"__tostring", lock_tostring},
    {NULL, NULL},
};

/* ---- writing ---- */

/* fs.write or fs.append (by put: fs_write or fs_append) of path and data. */
static int put_file(lua_State *L, int (*put)(const char *, const void *, size_t, ks_status *))
{
    const char *path = luaL_checkstring(L, 1);
    size_t n;
    const char *data = luaL_checklstring(L, 2, &n);
    ks_status st;
    if (put(path, data, n, &st) != KS_OK)
        return lh_pushfail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int l_write(lua_State *L) { return put_file(L, fs_write); }

static int l_append(lua_State *L) { return put_file(L, fs_append); }

static int l_create(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    fs_writer *w = lua_newuserdatauv(L, sizeof *w, 0);
    w->fd = -1;
    w->path = w->tmp = NULL;
    luaL_setmetatable(L, WRITER_T);
    ks_status st;
    if (fs_create(path, w, &st) != KS_OK)
        return lh_pushfail(L, &st);
    return 1;
}

/* writer:write(s, ...): like a Lua file's, strings and numbers. */
static int writer_write(lua_State *L)
{
    fs_writer *w = luaL_checkudata(L, 1, WRITER_T);
    int top = lua_gettop(L);
    for (int i = 2; i <= top; i++) {
        size_t n;
        const char *s = luaL_checklstring(L, i, &n);
        ks_status st;
        if (fs_writer_write(w, s, n, &st) != KS_OK)
            return lh_pushfail(L, &st);
    }
    lua_settop(L, 1);
    return 1;
}

static int writer_close(lua_State *L)
{
    fs_writer *w = luaL_checkudata(L, 1, WRITER_T);
    ks_status st;
    if (fs_commit(w, &st) != KS_OK)
        return lh_pushfail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int writer_abort(lua_State *L)
{
    fs_abort(luaL_checkudata(L, 1, WRITER_T));
    return 0;
}

static const luaL_Reg writer_methods[] = {
    {"write", writer_write},
    {"close", writer_close},
    {"abort", writer_abort},
    {NULL, NULL},
};

static const luaL_Reg writer_meta[] = {
    {"__gc", writer_abort},
    {"__close", writer_abort},
    {NULL, NULL},
};

static const luaL_Reg fs_funcs[] = {
    {"write", l_write},
    {"create", l_create},
    {"append", l_append},
    {"list", l_list},
    {"type", l_type},
    {"read", l_read},
    {"mkdtemp", l_mkdtemp},
    {"mkstemp", l_mkstemp},
    {"realpath", l_realpath},
    {"lock", l_lock},
    {NULL, NULL},
};

int luaopen_klab_fs(lua_State *L)
{
    lh_newclass(L, LOCK_T, lock_methods, lock_meta);
    lua_pop(L, 1);
    lh_newclass(L, WRITER_T, writer_methods, writer_meta);
    lua_pop(L, 1);
    luaL_newlib(L, fs_funcs);
    return 1;
}
