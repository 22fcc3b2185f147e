/*
 * l_store.c: require "klab.store", the result store (host/store/store.h).
 *
 *   store.open(path [, {busy_timeout = ms, readonly = bool}]) -> Store | nil, msg, code
 *   store.hash(...)          -> hex SHA-256 of the string/nil parts (store_hash_parts)
 *   store.blob(s)            -> marks s to be bound as a BLOB (default: TEXT)
 *   store.schema()           -> the store's tables as host/store/tables.c describes them:
 *                               {version=, versions={{version=, description=}, ...},
 *                                tables={{name=, owner="c"|"lua", purpose=, since=, per_store=,
 *                                         if_missing=, key={col, ...}|nil, check=,
 *                                         columns={{name=, type=, not_null=, primary_key=, default=,
 *                                                   check=, references=, on_delete_cascade=,
 *                                                   listed_in=, since=}, ...},
 *                                         indexes={{name=, columns=, where=, since=}, ...}}, ...}}
 *                               (tables in the order a merge copies them)
 *   store.SCHEMA_VERSION
 *
 *   db:exec(sql)                       -> true
 *   db:query(sql, ...)                 -> { row, ... }  (row: column name -> value)
 *   db:first(sql, ...)                 -> row | nil
 *   db:insert(table, row)              -> rowid
 *   db:transaction(fn, ...)            -> fn's results (commit), or rollback and re-raise
 *   db:put_candidate{language=, code=, plan=, source=, meta=} -> id, hash, created
 *   db:put_compile{candidate=, arch=, hash=, ok=, options=, compiler=, registers=, spill_stores=,
 *                  spill_loads=, shared_bytes=, local_bytes=, census=, log=, seconds=} -> id
 *                                      (the first row of a hash stays: store_put_compile)
 *   db:evaluation_done(key)            -> evaluation row (with .measurements) | nil: only a row
 *                                         proven to be this machine's user's (store_evaluation_proven)
 *   db:evaluation_proven(id)           -> whether evaluation id carries this machine's mark
 *   db:begin_evaluation{key=, candidate=, task=, arch=, ...}  -> id, already_done
 *   db:finish_evaluation(id, {verdict=, ..., measurements=})  -> true
 *   db:record_evaluation{key=, ..., verdict=, ..., measurements=} -> id, already_done
 *   db:put_environment{...}            -> id
 *   db:cache_get(hash)                 -> response row | nil
 *   db:cache_put{hash=, request=, response=, ...} -> true
 *   db:check_schema(name)              -> true | nil, msg, code: the attached database name
 *                                         has the schema klab writes (store_check_schema)
 *   db:in_transaction(), db:path(), db:close() / db:free() / <close>
 *
 * Parameters: nil -> NULL, boolean -> 0/1, integer, float, string -> TEXT,
 * store.blob(s) -> BLOB, table -> JSON text (sorted keys). One table argument
 * to a statement with named parameters (:name, @name, $name) binds by name.
 * SQL failures in normal operation (busy past the timeout: "EBUSY", a
 * constraint: "ECONSTRAINT", I/O: "EIO", ...) return nil, message, code;
 * misuse (bad SQL, wrong argument types, a closed store) raises.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ljson.h"
#include "lhost.h"
#include "store/store.h"
#include "store/tables.h"

#define STORE_T "klab.Store"
#define STMT_T "klab.Store.stmt"
#define BLOB_T "klab.store.blob"

typedef struct lstore {
    store *db;
} lstore;

/* ------------------------------------------------------------------ */
/* Handles                                                              */

static lstore *check_store(lua_State *L, int idx)
{
    lstore *s = luaL_checkudata(L, idx, STORE_T);
    if (!s->db)
        luaL_error(L, "attempt to use a closed klab.Store");
    return s;
}

/* Closes the store; true if it was open. Shared by __gc, __close, :close(). */
static int store_release(lstore *s)
{
    if (!s->db)
        return 0;
    store_close(&s->db);
    return 1;
}

/* A statement in a to-be-closed box, so that an error raised while it is
 * alive still finalizes it. [-0, +1, m] */
static store_stmt **new_stmt_box(lua_State *L)
{
    store_stmt **box = lua_newuserdatauv(L, sizeof *box, 0);
    *box = NULL;
    luaL_setmetatable(L, STMT_T);
    lua_toclose(L, -1);
    return box;
}

static int stmt_close(lua_State *L)
{
    store_stmt **box = luaL_checkudata(L, 1, STMT_T);
    store_finalize(*box);
    *box = NULL;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Failures                                                             */

/* [-0, +3, -] nil, message, code (EBUSY, ECONSTRAINT, EIO, ...). */
static int push_fail(lua_State *L, const ks_status *st)
{
    luaL_pushfail(L);
    lua_pushstring(L, st->msg[0] ? st->msg : ks_code_name(st->code));
    lua_pushstring(L, store_error_name(st));
    return 3;
}

/* Misuse (KS_EINVAL: bad SQL, a bad argument) raises; anything else is an
 * ordinary failure. */
static int fail(lua_State *L, const ks_status *st)
{
    if (st->code == KS_EINVAL)
        return lh_raise(L, st);
    return push_fail(L, st);
}

/* ------------------------------------------------------------------ */
/* Binding values and reading rows                                      */

static int is_blob(lua_State *L, int idx)
{
    return luaL_testudata(L, idx, BLOB_T) != NULL;
}

/* Binds the Lua value at idx to parameter pidx. Raises on a value that
 * cannot be stored. */
static void bind_value(lua_State *L, store_stmt *s, int pidx, int idx)
{
    ks_status st;
    int rc;
    size_t n;
    switch (lua_type(L, idx)) {
    case LUA_TNONE:
    case LUA_TNIL:
        rc = store_bind_null(s, pidx, &st);
        break;
    case LUA_TBOOLEAN:
        rc = store_bind_int(s, pidx, lua_toboolean(L, idx), &st);
        break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            rc = store_bind_int(s, pidx, (int64_t)lua_tointeger(L, idx), &st);
        else
            rc = store_bind_double(s, pidx, (double)lua_tonumber(L, idx), &st);
        break;
    case LUA_TSTRING: {
        const char *p = lua_tolstring(L, idx, &n);
        rc = store_bind_text(s, pidx, p, n, &st);
        break;
    }
    case LUA_TTABLE: {
        lj_push(L, idx);
        const char *p = lua_tolstring(L, -1, &n);
        rc = store_bind_text(s, pidx, p, n, &st);
        lua_pop(L, 1);
        break;
    }
    case LUA_TUSERDATA:
        if (is_blob(L, idx)) {
            lua_getiuservalue(L, idx, 1);
            const char *p = lua_tolstring(L, -1, &n);
            rc = store_bind_blob(s, pidx, p, n, &st);
            lua_pop(L, 1);
            break;
        }
        /* fall through */
    default:
        luaL_error(L, "cannot store a %s in SQL parameter %d", luaL_typename(L, idx), pidx);
        return;
    }
    if (rc != KS_OK)
        lh_raise(L, &st);
}

/* [-0, +1, m] Pushes the current row as a table column name -> value
 * (NULL columns are absent). */
static void push_row(lua_State *L, store_stmt *s)
{
    int nc = store_column_count(s);
    lua_createtable(L, 0, nc);
    for (int i = 0; i < nc; i++) {
        size_t n;
        const char *p;
        switch (store_column_type(s, i)) {
        case STORE_NULL:
            continue;
        case STORE_INT:
            lua_pushinteger(L, (lua_Integer)store_column_int(s, i));
            break;
        case STORE_FLOAT:
            lua_pushnumber(L, (lua_Number)store_column_double(s, i));
            break;
        case STORE_TEXT:
            p = store_column_text(s, i, &n);
            lua_pushlstring(L, p, n);
            break;
        default:
            p = store_column_blob(s, i, &n);
            lua_pushlstring(L, p, n);
            break;
        }
        lua_setfield(L, -2, store_column_name(s, i));
    }
}

/* Prepares sql into a to-be-closed box (pushed) and binds the nargs values
 * from stack index first on. Returns the statement, or NULL after pushing
 * nil, msg, code (the box stays below them). Raises on misuse. */
static store_stmt *prepare_bound(lua_State *L, store *db, const char *sql, int first, int nargs)
{
    ks_status st;
    store_stmt **box = new_stmt_box(L);
    if (store_prepare(db, sql, box, &st) != KS_OK) {
        fail(L, &st);
        return NULL;
    }
    store_stmt *s = *box;
    int np = store_param_count(s);
    int named = 0;
    for (int i = 1; i <= np && !named; i++)
        named = store_param_name(s, i) != NULL && store_param_name(s, i)[0] != '?';
    if (named && nargs == 1 && lua_type(L, first) == LUA_TTABLE) {
        for (int i = 1; i <= np; i++) {
            const char *name = store_param_name(s, i);
            if (name && name[0] != '?')
                lua_getfield(L, first, name + 1);
            else
                lua_rawgeti(L, first, i);
            bind_value(L, s, i, lua_gettop(L));
            lua_pop(L, 1);
        }
        return s;
    }
    if (nargs != np)
        luaL_error(L, "SQL statement takes %d parameter%s, got %d: %s", np, np == 1 ? "" : "s", nargs, sql);
    for (int i = 1; i <= np; i++)
        bind_value(L, s, i, first + i - 1);
    return s;
}

/* Runs sql with parameters and pushes all rows (or, with only_first, the
 * first row or nil). Returns the number of values pushed. */
static int run_query(lua_State *L, store *db, const char *sql, int first, int nargs, int only_first)
{
    ks_status st;
    store_stmt *s = prepare_bound(L, db, sql, first, nargs);
    if (!s)
        return 3;
    if (!only_first)
        lua_newtable(L);
    lua_Integer nrows = 0;
    int rc;
    while ((rc = store_step(s, &st)) == STORE_ROW) {
        push_row(L, s);
        if (only_first)
            return 1;
        lua_rawseti(L, -2, ++nrows);
    }
    if (rc != KS_OK)
        return fail(L, &st);
    if (only_first)
        lua_pushnil(L);
    return 1;
}

/* ------------------------------------------------------------------ */
/* Module functions                                                     */

static int l_open(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    store_options opt = {0};
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        opt.busy_timeout_ms = (int)lh_optintfield(L, 2, "busy_timeout", 0);
        opt.readonly = lh_optboolfield(L, 2, "readonly", 0);
    }
    lstore *s = lua_newuserdatauv(L, sizeof *s, 0);
    s->db = NULL; /* released first: a failed open leaves a closed handle */
    luaL_setmetatable(L, STORE_T);
    ks_status st;
    if (store_open(&s->db, path, &opt, &st) != KS_OK)
        return push_fail(L, &st);
    return 1;
}

static int l_hash(lua_State *L)
{
    int n = lua_gettop(L);
    const char **parts = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof *parts, 0);
    size_t *lens = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof *lens, 0);
    for (int i = 1; i <= n; i++) {
        if (lua_isnil(L, i)) {
            parts[i - 1] = NULL;
            lens[i - 1] = 0;
        } else if (lua_type(L, i) == LUA_TSTRING) {
            parts[i - 1] = lua_tolstring(L, i, &lens[i - 1]);
        } else {
            return luaL_argerror(L, i, "string or nil expected");
        }
    }
    char out[STORE_HASH_HEX + 1];
    store_hash_parts(parts, lens, (size_t)n, out);
    lua_pushstring(L, out);
    return 1;
}

static int l_blob(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TSTRING);
    lua_newuserdatauv(L, 0, 1);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    luaL_setmetatable(L, BLOB_T);
    return 1;
}

static int blob_tostring(lua_State *L)
{
    lua_getiuservalue(L, 1, 1);
    lua_pushfstring(L, "klab.store.blob (%d bytes)", (int)lua_rawlen(L, -1));
    return 1;
}

/* ------------------------------------------------------------------ */
/* Methods: general SQL                                                 */

static int m_exec(lua_State *L)
{
    lstore *s = check_store(L, 1);
    const char *sql = luaL_checkstring(L, 2);
    ks_status st;
    if (store_exec(s->db, sql, &st) != KS_OK)
        return fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int m_query(lua_State *L)
{
    lstore *s = check_store(L, 1);
    const char *sql = luaL_checkstring(L, 2);
    return run_query(L, s->db, sql, 3, lua_gettop(L) - 2, 0);
}

static int m_first(lua_State *L)
{
    lstore *s = check_store(L, 1);
    const char *sql = luaL_checkstring(L, 2);
    return run_query(L, s->db, sql, 3, lua_gettop(L) - 2, 1);
}

static int is_identifier(const char *p)
{
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
        return 0;
    for (p++; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

static int m_insert(lua_State *L)
{
    lstore *s = check_store(L, 1);
    const char *table = luaL_checkstring(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    if (!is_identifier(table))
        return luaL_argerror(L, 2, "table name must be an identifier");
    /* Column names, sorted for a stable statement text. */
    lua_newtable(L);
    int cols = lua_gettop(L);
    lua_Integer ncol = 0;
    lua_pushnil(L);
    while (lua_next(L, 3)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING || !is_identifier(lua_tostring(L, -1)))
            return luaL_error(L, "insert: column names must be identifiers (got %s)",
                              lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1));
        lua_pushvalue(L, -1);
        lua_rawseti(L, cols, ++ncol);
    }
    const char **names = lua_newuserdatauv(L, (size_t)(ncol ? ncol : 1) * sizeof *names, 0);
    for (lua_Integer i = 1; i <= ncol; i++) {
        lua_rawgeti(L, cols, i);
        names[i - 1] = lua_tostring(L, -1); /* alive: held by cols */
        lua_pop(L, 1);
    }
    for (lua_Integer i = 1; i < ncol; i++) /* insertion sort: rows are small */
        for (lua_Integer j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    ks_status st;
    char *text;
    if (store_insert_text(table, names, (size_t)ncol, &text, &st) != KS_OK)
        return fail(L, &st);
    lua_pushstring(L, text);
    free(text);
    const char *sql = lua_tostring(L, -1);
    if (ncol == 0) {
        if (store_exec(s->db, sql, &st) != KS_OK)
            return fail(L, &st);
    } else {
        /* Values in the same order, pushed as parameters. */
        luaL_checkstack(L, (int)ncol + 4, "insert: too many columns");
        int first = lua_gettop(L) + 1;
        for (lua_Integer i = 0; i < ncol; i++)
            lua_getfield(L, 3, names[i]);
        store_stmt *stmt = prepare_bound(L, s->db, sql, first, (int)ncol);
        if (!stmt)
            return 3;
        if (store_step(stmt, &st) != KS_OK)
            return fail(L, &st);
    }
    lua_pushinteger(L, (lua_Integer)store_last_rowid(s->db));
    return 1;
}

static int m_transaction(lua_State *L)
{
    lstore *s = check_store(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    int nargs = lua_gettop(L) - 2;
    ks_status st;
    if (store_begin(s->db, &st) != KS_OK)
        return fail(L, &st);
    /* No message handler: the error value is re-raised unchanged (tables
     * with codes survive); the caller's handler adds the traceback. */
    int base = 2;
    int rc = lua_pcall(L, nargs, LUA_MULTRET, 0);
    if (!s->db) {
        /* fn closed the store: the transaction was rolled back by close. */
        if (rc != LUA_OK)
            return lua_error(L);
        return luaL_error(L, "the store was closed inside its transaction");
    }
    if (rc != LUA_OK) {
        ks_status ignored;
        store_rollback(s->db, &ignored);
        return lua_error(L);
    }
    if (store_commit(s->db, &st) != KS_OK) {
        ks_status ignored;
        store_rollback(s->db, &ignored);
        return fail(L, &st);
    }
    return lua_gettop(L) - base + 1;
}

/* ------------------------------------------------------------------ */
/* Methods: typed helpers                                               */

/* Raises if the table at idx has a key not in allowed (NULL-terminated). */
static void check_fields(lua_State *L, int idx, const char *what, const char *const *allowed)
{
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        int ok = 0;
        if (lua_type(L, -1) == LUA_TSTRING) {
            const char *k = lua_tostring(L, -1);
            for (const char *const *a = allowed; *a && !ok; a++)
                ok = strcmp(k, *a) == 0;
        }
        if (!ok) {
            lua_pushvalue(L, -1);
            luaL_error(L, "%s: unknown field '%s'", what, luaL_tolstring(L, -1, NULL));
        }
    }
}

/* A string field, or a table field as JSON text (kept alive on the stack
 * until the caller's function returns); NULL when absent. */
static const char *json_field(lua_State *L, int t, const char *k)
{
    int ty = lua_getfield(L, t, k);
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        return NULL;
    }
    if (ty == LUA_TSTRING)
        return lua_tostring(L, -1); /* left on the stack: keeps it alive */
    if (ty != LUA_TTABLE)
        luaL_error(L, "field '%s' must be a JSON string or a table, got %s", k, luaL_typename(L, -1));
    lj_push(L, -1);
    lua_remove(L, -2);
    return lua_tostring(L, -1);
}

/* A required non-empty string field. */
static const char *req_str(lua_State *L, int t, const char *k, const char *what)
{
    const char *v = lh_optstrfield(L, t, k, NULL);
    if (!v || !*v)
        luaL_error(L, "%s: field '%s' is required", what, k);
    return v;
}

static int m_put_candidate(lua_State *L)
{
    lstore *s = check_store(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    static const char *const fields[] = {"language", "code", "plan", "source", "meta", NULL};
    check_fields(L, 2, "put_candidate", fields);
    store_candidate c = {0};
    c.language = req_str(L, 2, "language", "put_candidate");
    lua_getfield(L, 2, "code");
    if (lua_type(L, -1) != LUA_TSTRING)
        return luaL_error(L, "put_candidate: field 'code' must be a string");
    c.code = lua_tolstring(L, -1, &c.code_len);
    if (c.code_len == 0)
        c.code = ""; /* code_len 0 means strlen: same thing for "" */
    lua_pop(L, 1); /* alive: referenced by the argument table */
    c.plan = lh_optstrfield(L, 2, "plan", NULL);
    c.source = lh_optstrfield(L, 2, "source", NULL);
    c.meta = json_field(L, 2, "meta");
    int64_t id;
    int created;
    char hash[STORE_HASH_HEX + 1];
    ks_status st;
    if (store_put_candidate(s->db, &c, &id, &created, hash, &st) != KS_OK)
        return fail(L, &st);
    lua_pushinteger(L, (lua_Integer)id);
    lua_pushstring(L, hash);
    lua_pushboolean(L, created);
    return 3;
}

static int m_put_compile(lua_State *L)
{
    lstore *s = check_store(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    static const char *const fields[] = {"candidate", "arch", "hash", "ok", "options", "compiler", "registers",
                                         "spill_stores", "spill_loads", "shared_bytes", "local_bytes", "census",
                                         "log", "seconds", NULL};
    check_fields(L, 2, "put_compile", fields);
    store_compile c = {0};
    c.candidate_id = (int64_t)lh_optintfield(L, 2, "candidate", 0);
    if (c.candidate_id <= 0)
        return luaL_error(L, "put_compile: field 'candidate' is required (a candidate's id)");
    c.arch = req_str(L, 2, "arch", "put_compile");
    c.hash = req_str(L, 2, "hash", "put_compile");
    c.ok = lh_optboolfield(L, 2, "ok", 0);
    c.options = json_field(L, 2, "options");
    c.compiler = lh_optstrfield(L, 2, "compiler", NULL);
    c.registers = (int64_t)lh_optintfield(L, 2, "registers", -1);
    c.spill_stores = (int64_t)lh_optintfield(L, 2, "spill_stores", -1);
    c.spill_loads = (int64_t)lh_optintfield(L, 2, "spill_loads", -1);
    c.shared_bytes = (int64_t)lh_optintfield(L, 2, "shared_bytes", -1);
    c.local_bytes = (int64_t)lh_optintfield(L, 2, "local_bytes", -1);
    c.census = json_field(L, 2, "census");
    c.log = lh_optstrfield(L, 2, "log", NULL);
    c.seconds = (double)lh_optnumfield(L, 2, "seconds", -1);
    int64_t id;
    ks_status st;
    if (store_put_compile(s->db, &c, &id, &st) != KS_OK)
        return fail(L, &st);
    lua_pushinteger(L, (lua_Integer)id);
    return 1;
}

static const char *const eval_fields[] = {
    "key", "candidate", "task", "arch", "replica", "env", "compile", "options", "replace",
    "verdict", "reason", "timing_method", "stage_times", "detail", "measurements", NULL,
};
static const char *const result_fields[] = {
    "verdict", "reason", "timing_method", "stage_times", "detail", "compile", "measurements", NULL,
};

static void read_eval(lua_State *L, int t, store_eval *ev)
{
    ev->key = req_str(L, t, "key", "evaluation");
    ev->candidate_id = (int64_t)lh_optintfield(L, t, "candidate", 0);
    if (ev->candidate_id <= 0)
        luaL_error(L, "evaluation: field 'candidate' (a candidate id) is required");
    ev->task = req_str(L, t, "task", "evaluation");
    ev->arch = req_str(L, t, "arch", "evaluation");
    ev->replica = (int64_t)lh_optintfield(L, t, "replica", 0);
    ev->replace = lh_optboolfield(L, t, "replace", 0);
    ev->env_id = (int64_t)lh_optintfield(L, t, "env", 0);
    ev->compile_id = (int64_t)lh_optintfield(L, t, "compile", 0);
    ev->options = json_field(L, t, "options");
}

/* Reads the result fields; the measurement array lives in a userdata left
 * on the stack. */
static void read_result(lua_State *L, int t, store_result *r)
{
    r->verdict = req_str(L, t, "verdict", "evaluation");
    r->reason = lh_optstrfield(L, t, "reason", NULL);
    r->timing_method = lh_optstrfield(L, t, "timing_method", NULL);
    r->compile_id = (int64_t)lh_optintfield(L, t, "compile", 0);
    r->stage_times = json_field(L, t, "stage_times");
    r->detail = json_field(L, t, "detail");
    r->m = NULL;
    r->nm = 0;
    int ty = lua_getfield(L, t, "measurements");
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    if (ty != LUA_TTABLE)
        luaL_error(L, "evaluation: field 'measurements' must be a table");
    int mt = lua_gettop(L);
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, mt)) {
        n++;
        lua_pop(L, 1);
    }
    store_measurement *m = lua_newuserdatauv(L, (n ? n : 1) * sizeof *m, 0);
    size_t k = 0;
    lua_pushnil(L);
    while (lua_next(L, mt)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            luaL_error(L, "evaluation: measurement names must be strings");
        /* Names and units stay alive: the measurements table holds them. */
        m[k].name = lua_tostring(L, -2);
        m[k].unit = NULL;
        if (lua_type(L, -1) == LUA_TNUMBER) {
            m[k].value = (double)lua_tonumber(L, -1);
        } else if (lua_type(L, -1) == LUA_TTABLE) {
            if (lua_getfield(L, -1, "value") != LUA_TNUMBER)
                luaL_error(L, "evaluation: measurement '%s' needs a number value", m[k].name);
            m[k].value = (double)lua_tonumber(L, -1);
            lua_pop(L, 1);
            m[k].unit = lh_optstrfield(L, lua_gettop(L), "unit", NULL);
        } else {
            luaL_error(L, "evaluation: measurement '%s' must be a number or {value=, unit=}", m[k].name);
        }
        if (isnan(m[k].value))
            luaL_error(L, "evaluation: measurement '%s' is NaN", m[k].name);
        k++;
        lua_pop(L, 1);
    }
    /* Sorted by name: rows go in in a stable order. */
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && strcmp(m[j - 1].name, m[j].name) > 0; j--) {
            store_measurement tmp = m[j];
            m[j] = m[j - 1];
            m[j - 1] = tmp;
        }
    r->m = m;
    r->nm = k;
}

static int m_begin_evaluation(lua_State *L)
{
    lstore *s = check_store(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    check_fields(L, 2, "begin_evaluation", eval_fields);
    store_eval ev = {0};
    read_eval(L, 2, &ev);
    int64_t id;
    int done;
    ks_status st;
    if (store_begin_evaluation(s->db, &ev, &id, &done, &st) != KS_OK)
        return fail(L, &st);
    lua_pushinteger(L, (lua_Integer)id);
    lua_pushboolean(L, done);
    return 2;
}

static int m_finish_evaluation(lua_State *L)
{
    lstore *s = check_store(L, 1);
    lua_Integer id = luaL_checkinteger(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    check_fields(L, 3, "finish_evaluation", result_fields);
    store_result r = {0};
    read_result(L, 3, &r);
    ks_status st;
    if (store_finish_evaluation(s->db, (int64_t)id, &r, &st) != KS_OK)
        return fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int m_record_evaluation(lua_State *L)
{
    lstore *s = check_store(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    check_fields(L, 2, "record_evaluation", eval_fields);
    store_eval ev = {0};
    store_result r = {0};
    read_eval(L, 2, &ev);
    read_result(L, 2, &r);
    int64_t id;
    int done;
    ks_status st;
    if (store_record_evaluation(s->db, &ev, &r, &id, &done, &st) != KS_OK)
        return fail(L, &st);
    lua_pushinteger(L, (lua_Integer)id);
    lua_pushboolean(L, done);
    return 2;
}

static int m_evaluation_done(lua_State *L)
{
    lstore *s = check_store(L, 1);
    const char *key = luaL_checkstring(L, 2);
    ks_status st;
    int64_t id = 0;
    /* Only a row this machine's user is proven to have written. */
    if (store_evaluation_done(s->db, key, &id, &st) != KS_OK)
        return fail(L, &st);
    if (id == 0) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, (lua_Integer)id);
    int n = run_query(L, s->db, STORE_SQL_EVALUATION_BY_ID, lua_gettop(L), 1, 1);
    if (n != 1 || lua_isnil(L, -1))
        return n;
    int row = lua_gettop(L);
    lua_getfield(L, row, "id");
    int idarg = lua_gettop(L);
    n = run_query(L, s->db, STORE_SQL_MEASUREMENTS_OF, idarg, 1, 0);
    if (n != 1)
        return n;
    lua_newtable(L);
    lua_Integer len = (lua_Integer)lua_rawlen(L, -2);
    for (lua_Integer i = 1; i <= len; i++) {
        lua_rawgeti(L, -2, i);
        lua_getfield(L, -1, "value");
        lua_getfield(L, -2, "name");
        lua_insert(L, -2);
        lua_rawset(L, -4);
        lua_pop(L, 1);
    }
    lua_setfield(L, row, "measurements");
    lua_settop(L, row);
    return 1;
}

static int m_put_environment(lua_State *L)
{
    lstore *s = check_store(L, 1);
    store_env e = {0};
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        static const char *const fields[] = {
            "host", "gpu_name", "gpu_uuid", "driver_version", "cuda_version", "arch",
            "sm_clock_mhz", "mem_clock_mhz", "klab_version", "klab_gitrev", "libs", "extra", NULL,
        };
        check_fields(L, 2, "put_environment", fields);
        e.host = lh_optstrfield(L, 2, "host", NULL);
        e.gpu_name = lh_optstrfield(L, 2, "gpu_name", NULL);
        e.gpu_uuid = lh_optstrfield(L, 2, "gpu_uuid", NULL);
        e.driver_version = lh_optstrfield(L, 2, "driver_version", NULL);
        e.cuda_version = lh_optstrfield(L, 2, "cuda_version", NULL);
        e.arch = lh_optstrfield(L, 2, "arch", NULL);
        e.sm_clock_mhz = (int64_t)lh_optintfield(L, 2, "sm_clock_mhz", 0);
        e.mem_clock_mhz = (int64_t)lh_optintfield(L, 2, "mem_clock_mhz", 0);
        e.klab_version = lh_optstrfield(L, 2, "klab_version", NULL);
        e.klab_gitrev = lh_optstrfield(L, 2, "klab_gitrev", NULL);
        e.libs = json_field(L, 2, "libs");
        e.extra = json_field(L, 2, "extra");
    }
    int64_t id;
    ks_status st;
    if (store_put_environment(s->db, &e, &id, &st) != KS_OK)
        return fail(L, &st);
    lua_pushinteger(L, (lua_Integer)id);
    return 1;
}

static int m_cache_get(lua_State *L)
{
    lstore *s = check_store(L, 1);
    luaL_checkstring(L, 2);
    return run_query(L, s->db, STORE_SQL_RESPONSE_BY_HASH, 2, 1, 1);
}

static int m_cache_put(lua_State *L)
{
    lstore *s = check_store(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    static const char *const fields[] = {
        "hash", "request", "response", "status", "model", "error", "latency_ms",
        "input_tokens", "output_tokens", "cost_usd", NULL,
    };
    check_fields(L, 2, "cache_put", fields);
    store_response r = {0};
    r.hash = req_str(L, 2, "hash", "cache_put");
    r.request = json_field(L, 2, "request");
    if (!r.request)
        return luaL_error(L, "cache_put: field 'request' is required");
    r.response = json_field(L, 2, "response");
    r.status = (int64_t)lh_optintfield(L, 2, "status", 0);
    r.model = lh_optstrfield(L, 2, "model", NULL);
    r.error = lh_optstrfield(L, 2, "error", NULL);
    r.latency_ms = (double)lh_optnumfield(L, 2, "latency_ms", -1);
    r.input_tokens = (int64_t)lh_optintfield(L, 2, "input_tokens", -1);
    r.output_tokens = (int64_t)lh_optintfield(L, 2, "output_tokens", -1);
    r.cost_usd = (double)lh_optnumfield(L, 2, "cost_usd", -1);
    ks_status st;
    if (store_cache_put(s->db, &r, &st) != KS_OK)
        return fail(L, &st);
    lua_pushboolean(L, 1);
    return 1;
}

static int m_evaluation_proven(lua_State *L)
{
    lstore *s = check_store(L, 1);
    lua_Integer id = luaL_checkinteger(L, 2);
    ks_status st;
    int proven = 0;
    if (store_evaluation_proven(s->db, (int64_t)id, &proven, &st) != KS_OK)
        return fail(L, &st);
    lua_pushboolean(L, proven);
    return 1;
}

static int m_check_schema(lua_State *L)
{
    lstore *s = check_store(L, 1);
    const char *name = luaL_checkstring(L, 2);
    ks_status st;
    if (store_check_schema(s->db, name, &st) != KS_OK)
        return push_fail(L, &st); /* a store someone else changed: a normal failure */
    lua_pushboolean(L, 1);
    return 1;
}

static int m_in_transaction(lua_State *L)
{
    lstore *s = check_store(L, 1);
    lua_pushboolean(L, store_in_transaction(s->db));
    return 1;
}

static int m_path(lua_State *L)
{
    lstore *s = check_store(L, 1);
    lua_pushstring(L, store_path(s->db));
    return 1;
}

static int m_close(lua_State *L)
{
    lstore *s = luaL_checkudata(L, 1, STORE_T);
    lua_pushboolean(L, store_release(s));
    return 1;
}

static int mm_gc(lua_State *L)
{
    store_release(luaL_checkudata(L, 1, STORE_T));
    return 0;
}

static int mm_tostring(lua_State *L)
{
    lstore *s = luaL_checkudata(L, 1, STORE_T);
    if (s->db)
        lua_pushfstring(L, "klab.Store (%s)", store_path(s->db));
    else
        lua_pushliteral(L, "klab.Store (freed)");
    return 1;
}

/* ------------------------------------------------------------------ */
/* The schema's description                                             */

static void push_column(lua_State *L, const store_column *c)
{
    lua_createtable(L, 0, 10);
    lh_setstr(L, "name", c->name);
    lh_setstr(L, "type", c->type);
    lh_setbool(L, "not_null", c->not_null);
    lh_setbool(L, "primary_key", c->primary_key);
    lh_setstr(L, "default", c->dflt);
    lh_setstr(L, "check", c->check);
    lh_setstr(L, "references", c->references);
    lh_setbool(L, "on_delete_cascade", c->on_delete_cascade);
    lh_setstr(L, "listed_in", c->listed_in);
    lh_setint(L, "since", c->since);
}

static void push_table(lua_State *L, const store_table *t)
{
    lua_createtable(L, 0, 11);
    lh_setstr(L, "name", t->name);
    lh_setstr(L, "owner", t->owner);
    lh_setstr(L, "purpose", t->purpose);
    lh_setint(L, "since", t->since);
    lh_setbool(L, "per_store", t->per_store);
    lh_setbool(L, "if_missing", t->if_missing);
    lh_setstr(L, "check", t->check);
    if (t->key) {
        lua_newtable(L);
        for (int i = 0; t->key[i]; i++) {
            lua_pushstring(L, t->key[i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "key");
    }
    lua_createtable(L, (int)t->ncolumns, 0);
    for (size_t i = 0; i < t->ncolumns; i++) {
        push_column(L, &t->columns[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "columns");
    lua_createtable(L, (int)t->nindexes, 0);
    for (size_t i = 0; i < t->nindexes; i++) {
        lua_createtable(L, 0, 4);
        lh_setstr(L, "name", t->indexes[i].name);
        lh_setstr(L, "columns", t->indexes[i].columns);
        lh_setstr(L, "where", t->indexes[i].where);
        lh_setint(L, "since", t->indexes[i].since);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "indexes");
}

/* store.schema(): a fresh copy each call (the caller may change it). */
static int l_schema(lua_State *L)
{
    size_t nt, nv;
    const store_table *tables = store_tables(&nt);
    const store_version *versions = store_versions(&nv);
    lua_createtable(L, 0, 3);
    lh_setint(L, "version", STORE_SCHEMA_VERSION);
    lua_createtable(L, (int)nv, 0);
    for (size_t i = 0; i < nv; i++) {
        lua_createtable(L, 0, 2);
        lh_setint(L, "version", versions[i].version);
        lh_setstr(L, "description", versions[i].description);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "versions");
    lua_createtable(L, (int)nt, 0);
    for (size_t i = 0; i < nt; i++) {
        push_table(L, &tables[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "tables");
    return 1;
}

static const luaL_Reg funcs[] = {
    {"open", l_open},
    {"hash", l_hash},
    {"blob", l_blob},
    {"schema", l_schema},
    {NULL, NULL},
};

static const luaL_Reg methods[] = {
    {"exec", m_exec},
    {"query", m_query},
    {"first", m_first},
    {"insert", m_insert},
    {"transaction", m_transaction},
    {"put_candidate", m_put_candidate},
    {"put_compile", m_put_compile},
    {"begin_evaluation", m_begin_evaluation},
    {"finish_evaluation", m_finish_evaluation},
    {"record_evaluation", m_record_evaluation},
    {"evaluation_done", m_evaluation_done},
    {"put_environment", m_put_environment},
    {"cache_get", m_cache_get},
    {"cache_put", m_cache_put},
    {"check_schema", m_check_schema},
    {"evaluation_proven", m_evaluation_proven},
    {"in_transaction", m_in_transaction},
    {"path", m_path},
    {"close", m_close},
    {"free", m_close},
    {NULL, NULL},
};

static const luaL_Reg metamethods[] = {
    {"__gc", mm_gc},
    {"__close", mm_gc},
    {"__tostring", mm_tostring},
    {NULL, NULL},
};

int luaopen_klab_store(lua_State *L)
{
    lh_newclass(L, STORE_T, methods, metamethods);
    lua_pop(L, 1);
    static const luaL_Reg stmt_mm[] = {{"__gc", stmt_close}, {"__close", stmt_close}, {NULL, NULL}};
    lh_newclass(L, STMT_T, NULL, stmt_mm);
    lua_pop(L, 1);
    static const luaL_Reg blob_mm[] = {{"__tostring", blob_tostring}, {NULL, NULL}};
    lh_newclass(L, BLOB_T, NULL, blob_mm);
    lua_pop(L, 1);

    luaL_newlib(L, funcs);
    lua_pushinteger(L, STORE_SCHEMA_VERSION);
    lua_setfield(L, -2, "SCHEMA_VERSION");
    return 1;
}
