/*
 * store_impl.h: what the parts of host/store share and nothing else sees:
 * the handle's layout and the helpers every part builds its statements
 * with. store.c is the database (open, transactions, statements), schema.c
 * the tables klab makes and checks, records.c klab's own records
 * (candidates, evaluations, environments, the response cache).
 */
#ifndef KLAB_HOST_STORE_IMPL_H
#define KLAB_HOST_STORE_IMPL_H

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
 * sees them; bind_opt_text binds NULL for p == NULL, bind_opt_id NULL for 0. */
int bind_redacted(sqlite3_stmt *s, int idx, const void *p, size_t n, int blob);
int bind_opt_text(sqlite3_stmt *s, int idx, const char *p);
int bind_opt_id(sqlite3_stmt *s, int idx, int64_t v);

/* Steps a statement whose rows are ignored; turns a failed bind into st. */
int step_done(store *db, sqlite3_stmt *s, ks_status *st);
int bind_fail(store *db, sqlite3_stmt *s, int rc, ks_status *st);

/* Ends an internal transaction: commit on success, else roll back and keep
 * the first failure in st. */
int tx_end(store *db, int rc, ks_status *st);

/* The schema (schema.c): the version a database holds (0: none, KS_EINVAL
 * when it is an SQLite database but not a klab store); creating or
 * migrating it in one write transaction; and the check that the schema of
 * the database named schema ("main", or an attached one) is the one klab
 * writes at version (store_check_schema in store.h says what it refuses). */
int read_version(store *db, int *version, ks_status *st);
int migrate(store *db, ks_status *st);
int check_schema(store *db, const char *schema, int version, ks_status *st);

/* The experiment tables as the experiment library made them before
 * migration 2 owned them (schema.c): a store from then keeps this text. */
extern const char legacy_experiment_tables[];

/* Marks evaluation id as written by this machine's user (mark.c): an
 * HMAC of its content under the user's key, or NULL without a key. */
int mark_evaluation(store *db, int64_t id, ks_status *st);

#endif
