/* schema.c: a store's schema versions, its migration to this klab's, and
 * the check of a store someone else may have made or changed (floor 2 of
 * host/store: db.h). The tables themselves are described in tables.c. */
#include "store/schema.h"
#include "store/db.h"
#include "store/ddl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Versions and migrations                                              */

/* The SQL of each version is written from the tables' description
 * (tables.c, ddl.c): version 0 is the schema_version table, every later
 * one what tables.c says it added. A store migrates by running the
 * versions it lacks, in order; what a version made is never changed (a
 * change is a new version), so a store made long ago and one made today
 * hold the same SQL text, which check_schema compares. */

static size_t nversions(void)
{
    size_t n;
    store_versions(&n);
    return n;
}

/* Runs the SQL of version on h (a store's, or the check's in-memory one). */
static int apply_version(sqlite3 *h, int version, ks_status *st)
{
    char *sql;
    int rc = ddl_version(version, &sql, st);
    if (rc)
        return rc;
    int s = sqlite3_exec(h, sql, NULL, NULL, NULL);
    if (s != SQLITE_OK)
        rc = sql_fail(h, s, st, "making schema version", sql);
    free(sql);
    return rc;
}

int read_version(store *db, int *version, ks_status *st)
{
    sqlite3_stmt *s;
    int rc = prep(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
                  &s, st);
    if (rc)
        return rc;
    int srs = sqlite3_step(s);
    if (srs != SQLITE_ROW) {
        rc = sql_fail(db->h, srs, st, "reading the schema version", NULL);
        sqlite3_finalize(s);
        return rc;
    }
    int have = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    if (!have) {
        /* A database with tables but no version table is not ours. */
        rc = prep(db, "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'", &s, st);
        if (rc)
            return rc;
        srs = sqlite3_step(s);
        int other = srs == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
        sqlite3_finalize(s);
        if (other > 0)
            return ks_fail(st, KS_EINVAL, 0, "store: %s is an SQLite database but not a klab store",
                           db->path);
        *version = 0;
        return KS_OK;
    }
    rc = prep(db, "SELECT coalesce(max(version), 0) FROM schema_version", &s, st);
    if (rc)
        return rc;
    srs = sqlite3_step(s);
    if (srs != SQLITE_ROW) {
        rc = sql_fail(db->h, srs, st, "reading the schema version", NULL);
        sqlite3_finalize(s);
        return rc;
    }
    *version = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return KS_OK;
}

/* Creates or migrates the schema inside one write transaction. */
int migrate(store *db, ks_status *st)
{
    int rc = store_begin(db, st);
    if (rc)
        return rc;
    int version = 0;
    rc = read_version(db, &version, st);
    if (rc == KS_OK && version > STORE_SCHEMA_VERSION)
        rc = ks_fail(st, KS_EUNSUPPORTED, 0,
                     "store: %s has schema version %d, newer than this klab understands (%d)",
                     db->path, version, STORE_SCHEMA_VERSION);
    if (rc == KS_OK && version == 0)
        rc = apply_version(db->h, 0, st);
    /* What is there is checked before a migration writes into it. */
    if (rc == KS_OK && version > 0)
        rc = check_schema(db, "main", version, st);
    size_t nv;
    const store_version *versions = store_versions(&nv);
    for (size_t i = 0; rc == KS_OK && i < nv; i++) {
        if (versions[i].version <= version)
            continue;
        rc = apply_version(db->h, versions[i].version, st);
        if (rc)
            break;
        sqlite3_stmt *s;
        rc = prep(db, "INSERT INTO schema_version(version, description, klab_version) VALUES (?, ?, ?)",
                  &s, st);
        if (rc)
            break;
        sqlite3_bind_int(s, 1, versions[i].version);
        sqlite3_bind_text(s, 2, versions[i].description, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, KLAB_VERSION, -1, SQLITE_STATIC);
        rc = step_done(db, s, st);
        sqlite3_finalize(s);
        version = versions[i].version;
    }
    if (rc == KS_OK)
        db->version = version;
    return tx_end(db, rc, st);
}


/* ------------------------------------------------------------------ */
/* The objects klab makes, and a store's check against them            */

/* A store's schema is compared whole with the one klab writes: every row of
 * its sqlite_master (type, name, table and the SQL text SQLite keeps, which
 * is what SQLite builds the schema from) must be one klab made at the
 * store's version, and every column of every table a plain one. A trigger,
 * view or index of someone else's, one of klab's replaced under its name, a
 * generated column or an index on an expression is refused whatever it is
 * called, before anything else is read. The one thing a store may hold
 * beyond klab's schema is a plain table of its own (no generated columns,
 * nothing on it), which klab never writes or reads unless asked to. */

#define MAX_OBJECTS 64

typedef struct object {
    char *type, *name, *tbl, *sql; /* sql NULL for SQLite's own indexes */
} object;

typedef struct reference {
    object obj[MAX_OBJECTS];
    int n;
} reference;

/* The experiment tables as the experiment library made them before they
 * became part of migration 2 (which creates them only where missing): a
 * store from then keeps this text. Historical: never edit. */
const char legacy_experiment_tables[] =
    "CREATE TABLE IF NOT EXISTS experiments(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL UNIQUE,\n"
    "  config TEXT,\n"
    "  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),\n"
    "  updated_at TEXT);\n"
    "CREATE TABLE IF NOT EXISTS trajectories(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  experiment_id INTEGER NOT NULL REFERENCES experiments(id),\n"
    "  key TEXT NOT NULL UNIQUE,\n"
    "  model TEXT NOT NULL, task TEXT NOT NULL, tag TEXT NOT NULL, replica INTEGER NOT NULL,\n"
    "  state TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done')),\n"
    "  stop_reason TEXT,\n"
    "  turns INTEGER NOT NULL DEFAULT 0,\n"
    "  best_speedup REAL, best_turn INTEGER,\n"
    "  selected_turn INTEGER, selected_speedup REAL, selection TEXT,\n"
    "  messages TEXT,\n"
    "  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),\n"
    "  finished_at TEXT);\n"
    "CREATE INDEX IF NOT EXISTS trajectories_experiment ON trajectories(experiment_id);\n"
    "CREATE TABLE IF NOT EXISTS turns(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  trajectory_id INTEGER NOT NULL REFERENCES trajectories(id),\n"
    "  turn INTEGER NOT NULL,\n"
    "  request_hash TEXT, source TEXT,\n"
    "  verdict TEXT NOT NULL, reason TEXT,\n"
    "  speedup REAL, verified INTEGER,\n"
    "  candidate TEXT, language TEXT,\n"
    "  reply TEXT, feedback TEXT,\n"
    "  input_tokens INTEGER, output_tokens INTEGER, reasoning_tokens INTEGER,\n"
    "  latency_ms REAL, cost_usd REAL,\n"
    "  workloads TEXT,\n"
    "  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),\n"
    "  UNIQUE(trajectory_id, turn));\n"
    "CREATE INDEX IF NOT EXISTS turns_verdict ON turns(verdict);\n";

/* refs[0][v - 1]: the schema of a fresh store migrated to version v;
 * refs[1][v - 1]: the same for a store whose experiment tables the library
 * made first (legacy_experiment_tables). */
#define NLINEAGES 2
static reference refs[NLINEAGES][STORE_SCHEMA_VERSION];
static int learned;
static pthread_mutex_t refs_mu = PTHREAD_MUTEX_INITIALIZER;

static char *dup_col(sqlite3_stmt *q, int i)
{
    const char *p = (const char *)sqlite3_column_text(q, i);
    return p ? strdup(p) : NULL;
}

/* Makes the schema of each version in memory, so that the reference
 * cannot drift from the DDL above. */
static int learn_version(size_t upto, int legacy, reference *ref, ks_status *st)
{
    sqlite3 *h = NULL;
    int s = sqlite3_open_v2(":memory:", &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (s != SQLITE_OK) {
        int rc = sql_fail(h, s, st, "making the schema in memory", NULL);
        sqlite3_close_v2(h);
        return rc;
    }
    size_t nv;
    const store_version *versions = store_versions(&nv);
    int rc = apply_version(h, 0, st);
    for (size_t i = 0; rc == KS_OK && i < upto; i++) {
        rc = apply_version(h, versions[i].version, st);
        if (rc == KS_OK && legacy && i == 0 && (s = sqlite3_exec(h, legacy_experiment_tables, NULL, NULL, NULL)))
            rc = sql_fail(h, s, st, "making the schema in memory", NULL);
    }
    if (rc) {
        sqlite3_close_v2(h);
        return rc;
    }
    sqlite3_stmt *q = NULL;
    if (s == SQLITE_OK)
        s = sqlite3_prepare_v2(h, "SELECT type, name, tbl_name, sql FROM sqlite_master", -1, &q, NULL);
    int r = SQLITE_DONE;
    while (s == SQLITE_OK && (r = sqlite3_step(q)) == SQLITE_ROW && ref->n < MAX_OBJECTS) {
        object *o = &ref->obj[ref->n++];
        o->type = dup_col(q, 0);
        o->name = dup_col(q, 1);
        o->tbl = dup_col(q, 2);
        o->sql = dup_col(q, 3);
        if (!o->type || !o->name || !o->tbl)
            s = SQLITE_NOMEM;
    }
    sqlite3_finalize(q);
    if (s != SQLITE_OK || r != SQLITE_DONE)
        rc = sql_fail(h, s != SQLITE_OK ? s : r, st, "making the schema in memory", NULL);
    sqlite3_close_v2(h);
    return rc;
}

static int learn_objects(ks_status *st)
{
    pthread_mutex_lock(&refs_mu);
    int rc = KS_OK;
    for (int l = 0; !learned && rc == KS_OK && l < NLINEAGES; l++)
        for (size_t v = 0; rc == KS_OK && v < nversions(); v++)
            rc = learn_version(v + 1, l, &refs[l][v], st);
    if (rc == KS_OK)
        learned = 1;
    pthread_mutex_unlock(&refs_mu);
    return rc;
}

static const object *find_known(const reference *ref, const char *name)
{
    for (int i = 0; i < ref->n; i++)
        if (strcmp(ref->obj[i].name, name) == 0)
            return &ref->obj[i];
    return NULL;
}

static int same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The first generated or hidden column of any table of schema, if any:
 * its table and name (at most 64 characters each) in what. */
static int hidden_column(store *db, const char *schema, char *what, size_t n, int *found, ks_status *st)
{
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT m.name, x.name FROM \"%s\".sqlite_master AS m, pragma_table_xinfo(m.name, '%s') AS x"
             " WHERE m.type = 'table' AND x.hidden <> 0 LIMIT 1",
             schema, schema);
    sqlite3_stmt *s;
    *found = 0;
    int rc = prep(db, sql, &s, st);
    if (rc)
        return rc;
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(s, 0), *c = (const char *)sqlite3_column_text(s, 1);
        snprintf(what, n, "%.64s.%.64s", t ? t : "?", c ? c : "?");
        *found = 1;
    } else if (r != SQLITE_DONE) {
        rc = sql_fail(db->h, r, st, "reading the tables' columns", NULL);
    }
    sqlite3_finalize(s);
    return rc;
}

/* One object of the store that is not klab's: a plain table of the
 * store's own, or SQLite's index for one of its constraints, is fine;
 * anything else is refused. */
static int check_foreign(const char *path, const reference *ref, const char *type, const char *name,
                         const char *tbl, const char *sql, ks_status *st)
{
    if (!strcmp(type, "table"))
        return KS_OK; /* its columns are checked with every table's */
    if (!strcmp(type, "index") && !sql && tbl && !find_known(ref, tbl)) {
        /* SQLite's own index of a UNIQUE or PRIMARY KEY constraint. */
        static const char auto_prefix[] = "sqlite_autoindex_";
        if (!strncmp(name, auto_prefix, sizeof auto_prefix - 1))
            return KS_OK;
    }
    return ks_fail(st, KS_EINVAL, 0,
                   "store: %s holds the %s %.64s, which klab did not make; klab opens only stores whose schema "
                   "is the one klab writes (with no triggers, views or indexes of someone else's)",
                   path, type, name);
}

static int check_against(store *db, const char *schema, const reference *ref, ks_status *st)
{
    int rc;
    /* Messages name the file of the database checked (an attached one is
     * not the store's own). */
    const char *file = strcmp(schema, "main") ? sqlite3_db_filename(db->h, schema) : NULL;
    const char *path = file && *file ? file : db->path;
    char sqlbuf[96];
    snprintf(sqlbuf, sizeof sqlbuf, "SELECT type, name, tbl_name, sql FROM \"%s\".sqlite_master", schema);
    sqlite3_stmt *s;
    rc = prep(db, sqlbuf, &s, st);
    if (rc)
        return rc;
    int seen[MAX_OBJECTS] = {0};
    int r;
    while (rc == KS_OK && (r = sqlite3_step(s)) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(s, 0);
        const char *name = (const char *)sqlite3_column_text(s, 1);
        const char *tbl = (const char *)sqlite3_column_text(s, 2);
        const char *sql = (const char *)sqlite3_column_text(s, 3);
        if (!type || !name) {
            rc = ks_fail(st, KS_EINVAL, 0, "store: %s has a schema entry without a type or name", path);
            break;
        }
        const object *k = find_known(ref, name);
        if (k) {
            seen[k - ref->obj] = 1;
            if (strcmp(k->type, type) != 0)
                rc = ks_fail(st, KS_EINVAL, 0,
                             "store: %s: %s is a %s, not the %s klab made (something else changed this store)",
                             path, name, type, k->type);
            else if (!same_text(k->tbl, tbl) || !same_text(k->sql, sql))
                rc = ks_fail(st, KS_EINVAL, 0,
                             "store: %s: the %s %s is not the one klab made (its definition was changed: "
                             "something else changed this store)",
                             path, type, name);
        } else {
            rc = check_foreign(path, ref, type, name, tbl, sql, st);
        }
    }
    if (rc == KS_OK && r != SQLITE_DONE)
        rc = sql_fail(db->h, r, st, "reading the schema", NULL);
    sqlite3_finalize(s);
    for (int i = 0; rc == KS_OK && i < ref->n; i++)
        if (!seen[i])
            rc = ks_fail(st, KS_EINVAL, 0, "store: %s has no %s %s (something else changed this store)", path,
                         ref->obj[i].type, ref->obj[i].name);
    /* The SQL text says it already, but a generated column is what made a
     * read of 90 rows take minutes: each table's columns are asked too. */
    if (rc == KS_OK) {
        char what[160];
        int found = 0;
        rc = hidden_column(db, schema, what, sizeof what, &found, st);
        if (rc == KS_OK && found)
            rc = ks_fail(st, KS_EINVAL, 0, "store: %s: %s is a generated or hidden column, which klab did not make",
                         path, what);
    }
    return rc;
}

int check_schema(store *db, const char *schema, int version, ks_status *st)
{
    if (version < 1 || version > (int)nversions())
        return KS_OK; /* nothing of klab's yet (a new store), or refused by the version check */
    int rc = learn_objects(st);
    if (rc)
        return rc;
    rc = check_against(db, schema, &refs[0][version - 1], st);
    for (int l = 1; rc == KS_EINVAL && l < NLINEAGES; l++) {
        ks_status other;
        if (check_against(db, schema, &refs[l][version - 1], &other) == KS_OK) {
            ks_clear(st);
            rc = KS_OK;
        }
    }
    return rc;
}

int store_check_schema(store *db, const char *schema, ks_status *st)
{
    size_t n = schema ? strlen(schema) : 0;
    if (n == 0 || n > 32 || strspn(schema, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n)
        return ks_fail(st, KS_EINVAL, 0, "store: a schema name is letters, digits and '_'");
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT coalesce(max(version), 0) FROM \"%s\".schema_version", schema);
    sqlite3_stmt *s;
    int rc = prep(db, sql, &s, st);
    if (rc)
        return rc;
    int r = sqlite3_step(s);
    int version = r == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
    if (r != SQLITE_ROW)
        rc = sql_fail(db->h, r, st, "reading the schema version", NULL);
    sqlite3_finalize(s);
    if (rc == KS_OK && (version < 1 || version > (int)nversions()))
        rc = ks_fail(st, KS_EINVAL, 0, "store: %s.schema_version says %d, which no klab wrote", schema, version);
    if (rc == KS_OK)
        rc = check_schema(db, schema, version, st);
    return rc;
}
