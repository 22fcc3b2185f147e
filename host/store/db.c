/* db.c: the floor every part of host/store stands on: SQLite's errors as
 * ks_status, the helpers statements are built with, and transactions. It
 * calls nothing else of host/store (db.h). */
#include "store/db.h"

#include "base/redact.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

/* ------------------------------------------------------------------ */
/* Errors                                                               */

const char *sqlite_code_name(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_ERROR: return "SQLITE_ERROR";
    case SQLITE_INTERNAL: return "SQLITE_INTERNAL";
    case SQLITE_PERM: return "SQLITE_PERM";
    case SQLITE_ABORT: return "SQLITE_ABORT";
    case SQLITE_BUSY: return "SQLITE_BUSY";
    case SQLITE_LOCKED: return "SQLITE_LOCKED";
    case SQLITE_NOMEM: return "SQLITE_NOMEM";
    case SQLITE_READONLY: return "SQLITE_READONLY";
    case SQLITE_INTERRUPT: return "SQLITE_INTERRUPT";
    case SQLITE_IOERR: return "SQLITE_IOERR";
    case SQLITE_CORRUPT: return "SQLITE_CORRUPT";
    case SQLITE_NOTFOUND: return "SQLITE_NOTFOUND";
    case SQLITE_FULL: return "SQLITE_FULL";
    case SQLITE_CANTOPEN: return "SQLITE_CANTOPEN";
    case SQLITE_PROTOCOL: return "SQLITE_PROTOCOL";
    case SQLITE_SCHEMA: return "SQLITE_SCHEMA";
    case SQLITE_TOOBIG: return "SQLITE_TOOBIG";
    case SQLITE_CONSTRAINT: return "SQLITE_CONSTRAINT";
    case SQLITE_MISMATCH: return "SQLITE_MISMATCH";
    case SQLITE_MISUSE: return "SQLITE_MISUSE";
    case SQLITE_RANGE: return "SQLITE_RANGE";
    case SQLITE_NOTADB: return "SQLITE_NOTADB";
    }
    return "SQLITE_?";
}

/* Which ks_code an SQLite result code means for the caller. */
int sqlite_to_ks(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return KS_ETIMEOUT;
    case SQLITE_CONSTRAINT:
        return KS_EREJECT;
    case SQLITE_NOMEM:
        return KS_ENOMEM;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_PERM:
    case SQLITE_PROTOCOL:
        return KS_EIO;
    }
    return KS_EINVAL;
}

/* Fills st from SQLite's state after a failed call: "store: <what>: <sqlite
 * message> (SQLITE_X) in: <sql>". h may be NULL (then errstr is used). */
int sql_fail(sqlite3 *h, int rc, ks_status *st, const char *what, const char *sql)
{
    /* A write the system refused: one line naming the file and, where it
     * can be told, why (the transaction is rolled back, so no row is half
     * written). SQLite keeps no reliable errno for it, so the limits are
     * asked directly. */
    int prim = rc & 0xff;
    if (h && (rc == SQLITE_IOERR_WRITE || rc == SQLITE_IOERR_FSYNC || rc == SQLITE_IOERR_TRUNCATE ||
              prim == SQLITE_FULL)) {
        const char *file = sqlite3_db_filename(h, "main");
        if (!file || !*file)
            file = "the store";
        struct rlimit rl;
        struct statvfs vs;
        char dir[1024];
        snprintf(dir, sizeof dir, "%s", file);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
            return ks_fail(st, KS_EIO, rc, "store: cannot write %s: the file-size limit (ulimit -f: %llu bytes) "
                           "stops it", file, (unsigned long long)rl.rlim_cur);
        if (statvfs(dir, &vs) == 0 && vs.f_bavail == 0)
            return ks_fail(st, KS_EIO, rc, "store: cannot write %s: the disk is full", file);
        return ks_fail(st, KS_EIO, rc, "store: cannot write %s: %s (%s)", file, sqlite3_errmsg(h),
                       sqlite_code_name(rc));
    }
    const char *m = h ? sqlite3_errmsg(h) : sqlite3_errstr(rc);
    if (sql)
        return ks_fail(st, sqlite_to_ks(rc), rc, "store: %s: %s (%s) in: %.160s", what, m,
                       sqlite_code_name(rc), sql);
    return ks_fail(st, sqlite_to_ks(rc), rc, "store: %s: %s (%s)", what, m, sqlite_code_name(rc));
}

const char *store_error_name(const ks_status *st)
{
    if (st->code == KS_ETIMEOUT && ((st->sub & 0xff) == SQLITE_BUSY || (st->sub & 0xff) == SQLITE_LOCKED))
        return "EBUSY";
    if (st->code == KS_EREJECT && (st->sub & 0xff) == SQLITE_CONSTRAINT)
        return "ECONSTRAINT";
    return ks_code_name(st->code);
}

/* ------------------------------------------------------------------ */
/* Small internal helpers                                               */

/* Runs SQL without results; fills st on failure. */
int run(store *db, const char *sql, ks_status *st)
{
    int rc = sqlite3_exec(db->h, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(db->h, rc, st, "exec", sql);
    return KS_OK;
}

int prep(store *db, const char *sql, sqlite3_stmt **s, ks_status *st)
{
    int rc = sqlite3_prepare_v2(db->h, sql, -1, s, NULL);
    if (rc != SQLITE_OK) {
        *s = NULL;
        return sql_fail(db->h, rc, st, "prepare", sql);
    }
    return KS_OK;
}

/* Every text and blob written to the store is bound here, so that the
 * values of secrets (base/redact.h) are replaced before SQLite sees them,
 * whatever wrote them. */
int bind_redacted(sqlite3_stmt *s, int idx, const void *p, size_t n, int blob)
{
    size_t rl;
    char *r = redact_apply(p, n, &rl);
    if (!r && rl == (size_t)-1)
        return SQLITE_NOMEM;
    if (r)
        return blob ? sqlite3_bind_blob64(s, idx, r, rl, free) : sqlite3_bind_text64(s, idx, r, rl, free, SQLITE_UTF8);
    return blob ? sqlite3_bind_blob64(s, idx, p, n, SQLITE_TRANSIENT)
                : sqlite3_bind_text64(s, idx, p, n, SQLITE_TRANSIENT, SQLITE_UTF8);
}

/* Binds text or NULL (p == NULL). */
int bind_opt_text(sqlite3_stmt *s, int idx, const char *p)
{
    return p ? bind_redacted(s, idx, p, strlen(p), 0) : sqlite3_bind_null(s, idx);
}

/* Binds an id, or NULL for 0. */
int bind_opt_id(sqlite3_stmt *s, int idx, int64_t v)
{
    return v ? sqlite3_bind_int64(s, idx, v) : sqlite3_bind_null(s, idx);
}

static int bind_arg(sqlite3_stmt *s, int idx, const store_arg *a)
{
    switch (a->kind) {
    case BIND_NAME:
        return sqlite3_bind_text(s, idx, a->p, -1, SQLITE_STATIC);
    case BIND_TEXT:
        return bind_opt_text(s, idx, a->p);
    case BIND_BYTES:
        return bind_redacted(s, idx, a->p, a->len, 0);
    case BIND_INT:
        return sqlite3_bind_int64(s, idx, a->i);
    case BIND_ID:
        return bind_opt_id(s, idx, a->i);
    case BIND_KNOWN_INT:
        return a->i >= 0 ? sqlite3_bind_int64(s, idx, a->i) : sqlite3_bind_null(s, idx);
    case BIND_REAL:
        return sqlite3_bind_double(s, idx, a->d);
    case BIND_KNOWN_REAL:
        return a->d >= 0 ? sqlite3_bind_double(s, idx, a->d) : sqlite3_bind_null(s, idx);
    }
    return SQLITE_MISUSE;
}

int bind_args(sqlite3_stmt *s, const store_arg *args, size_t n)
{
    int b = SQLITE_OK;
    for (size_t k = 0; b == SQLITE_OK && k < n; k++)
        b = bind_arg(s, (int)k + 1, &args[k]);
    return b;
}

int run_args(store *db, const char *sql, const store_arg *args, size_t n, ks_status *st)
{
    sqlite3_stmt *s;
    int rc = prep(db, sql, &s, st);
    if (rc)
        return rc;
    int b = bind_args(s, args, n);
    rc = b ? bind_fail(db, s, b, st) : step_done(db, s, st);
    sqlite3_finalize(s);
    return rc;
}

/* Steps a statement that returns no row (or whose rows are ignored). */
int step_done(store *db, sqlite3_stmt *s, ks_status *st)
{
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        ;
    if (rc != SQLITE_DONE)
        return sql_fail(db->h, rc, st, "step", sqlite3_sql(s));
    return KS_OK;
}

/* Checks the rc of a run of bind calls (OR-ed codes are not meaningful, so
 * the caller passes the first failure). */
int bind_fail(store *db, sqlite3_stmt *s, int rc, ks_status *st)
{
    return sql_fail(db->h, rc, st, "bind", sqlite3_sql(s));
}

/* Ends an internal transaction: commit on success, else roll back and keep
 * the first failure in st. */
int tx_end(store *db, int rc, ks_status *st)
{
    if (rc == KS_OK) {
        rc = store_commit(db, st);
        if (rc == KS_OK)
            return KS_OK;
    }
    ks_status ignored;
    store_rollback(db, &ignored);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Transactions                                                         */

int store_begin(store *db, ks_status *st)
{
    if (sqlite3_get_autocommit(db->h)) {
        db->depth = 0;
        return run(db, "BEGIN IMMEDIATE", st);
    }
    char sql[48];
    snprintf(sql, sizeof sql, "SAVEPOINT ks_sp%d", db->depth + 1);
    int rc = run(db, sql, st);
    if (rc == KS_OK)
        db->depth++;
    return rc;
}

int store_commit(store *db, ks_status *st)
{
    if (sqlite3_get_autocommit(db->h)) {
        db->depth = 0;
        return ks_fail(st, KS_EINVAL, 0, "store: commit without an open transaction");
    }
    if (db->depth > 0) {
        char sql[48];
        snprintf(sql, sizeof sql, "RELEASE ks_sp%d", db->depth);
        int rc = run(db, sql, st);
        if (rc == KS_OK)
            db->depth--;
        return rc;
    }
    return run(db, "COMMIT", st);
}

int store_rollback(store *db, ks_status *st)
{
    if (sqlite3_get_autocommit(db->h)) {
        /* SQLite already rolled back (some errors do that) or nothing was open. */
        db->depth = 0;
        return KS_OK;
    }
    if (db->depth > 0) {
        char sql[96];
        snprintf(sql, sizeof sql, "ROLLBACK TO ks_sp%d; RELEASE ks_sp%d", db->depth, db->depth);
        int rc = run(db, sql, st);
        db->depth--;
        return rc;
    }
    return run(db, "ROLLBACK", st);
}

int store_in_transaction(const store *db)
{
    return !sqlite3_get_autocommit(db->h);
}
