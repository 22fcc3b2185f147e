/*
 * db.h: the lowest floor of host/store, which every other part uses and
 * which uses none of them: the handle's layout, SQLite's errors as a
 * ks_status, the helpers statements are built with, and transactions
 * (db.c). The floors above it, each calling only those below:
 *   1  ddl.c      the SQL text of the schema, made from tables.c
 *      mark.c     the mark of the machine that wrote an evaluation
 *   2  schema.c   versions, migrations, the check of a store's schema
 *      records.c  klab's own records (candidates, evaluations, ...)
 *   3  store.c    open and close, statements run for the caller
 * (tables.c, the description of the tables, and hash.c, the content
 * hashes, are data and arithmetic on floor 0 beside db.c.)
 * tests/lua/layering_test.lua checks that no call goes back up.
 */
#ifndef KLAB_HOST_STORE_DB_H
#define KLAB_HOST_STORE_DB_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#ifndef KLAB_VERSION
#define KLAB_VERSION "0.0.0"
#endif
#ifndef KLAB_GITREV
#define KLAB_GITREV "unknown"
#endif

#define NOW "(strftime('%Y-%m-%dT%H:%M:%fZ','now'))"

struct store {
    sqlite3 *h;
    char *path;
    int depth;      /* savepoints open inside the outer transaction */
    int version;    /* schema version after open */
};

struct store_stmt {
    sqlite3_stmt *s;
    store *db;
};

/* SQLite's name of a result code ("SQLITE_BUSY"), and what it means for
 * the caller as a ks_code. */
const char *sqlite_code_name(int rc);
int sqlite_to_ks(int rc);

/* Fills st from SQLite's state after a failed call: "store: <what>: <sqlite
 * message> (SQLITE_X) in: <sql>". h may be NULL (then errstr is used). */
int sql_fail(sqlite3 *h, int rc, ks_status *st, const char *what, const char *sql);

/* Runs SQL without results; prepares one statement. Fill st on failure. */
int run(store *db, const char *sql, ks_status *st);
int prep(store *db, const char *sql, sqlite3_stmt **s, ks_status *st);

/* Every text and blob written to the store is bound through bind_redacted,
 * so that the values of secrets (base/redact.h) are replaced before SQLite
 * sees them (the names klab makes, BIND_NAME below, are bound as given);
 * bind_opt_text binds NULL for p == NULL, bind_opt_id NULL for 0. */
int bind_redacted(sqlite3_stmt *s, int idx, const void *p, size_t n, int blob);
int bind_opt_text(sqlite3_stmt *s, int idx, const char *p);
int bind_opt_id(sqlite3_stmt *s, int idx, int64_t v);

/* One parameter of a statement, bound by bind_args as its kind says:
 *   BIND_NAME        text klab makes (a hash, an arch, a key), as given;
 *   BIND_TEXT        text through bind_redacted, NULL for a NULL pointer;
 *   BIND_BYTES       len bytes of text through bind_redacted (a candidate's code);
 *   BIND_INT         an integer;
 *   BIND_ID          an integer, NULL for 0 (no row, no HTTP status);
 *   BIND_KNOWN_INT   an integer, NULL when negative (not measured);
 *   BIND_REAL        a double;
 *   BIND_KNOWN_REAL  a double, NULL when negative (not measured).
 * A writer lists its statement's parameters in order, one ARG_ each, and
 * runs them with run_args: the kinds say what each column takes, one loop
 * binds them all. */
typedef struct store_arg {
    enum { BIND_NAME, BIND_TEXT, BIND_BYTES, BIND_INT, BIND_ID, BIND_KNOWN_INT, BIND_REAL, BIND_KNOWN_REAL } kind;
    const char *p;
    size_t len;
    int64_t i;
    double d;
} store_arg;

#define ARG_NAME(v) ((store_arg){.kind = BIND_NAME, .p = (v)})
#define ARG_TEXT(v) ((store_arg){.kind = BIND_TEXT, .p = (v)})
#define ARG_BYTES(v, n) ((store_arg){.kind = BIND_BYTES, .p = (v), .len = (n)})
#define ARG_INT(v) ((store_arg){.kind = BIND_INT, .i = (v)})
#define ARG_ID(v) ((store_arg){.kind = BIND_ID, .i = (v)})
#define ARG_KNOWN_INT(v) ((store_arg){.kind = BIND_KNOWN_INT, .i = (v)})
#define ARG_REAL(v) ((store_arg){.kind = BIND_REAL, .d = (v)})
#define ARG_KNOWN_REAL(v) ((store_arg){.kind = BIND_KNOWN_REAL, .d = (v)})
#define NARGS(a) (sizeof(a) / sizeof((a)[0]))

/* Binds args[0..n) to s's parameters 1..n; SQLite's code of the first
 * failure, SQLITE_OK when all are bound. */
int bind_args(sqlite3_stmt *s, const store_arg *args, size_t n);

/* Prepares sql, binds args and steps it to its end (its rows ignored). */
int run_args(store *db, const char *sql, const store_arg *args, size_t n, ks_status *st);

/* Steps a statement whose rows are ignored; turns a failed bind into st. */
int step_done(store *db, sqlite3_stmt *s, ks_status *st);
int bind_fail(store *db, sqlite3_stmt *s, int rc, ks_status *st);

/* Ends an internal transaction: commit on success, else roll back and keep
 * the first failure in st. */
int tx_end(store *db, int rc, ks_status *st);

#endif
