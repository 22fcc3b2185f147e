/* store.c: the result store (SQLite, WAL). See store.h and docs/store.md. */
#include "store/store.h"

#include "base/redact.h"
#include "base/sha256.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sqlite3.h>

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

/* ------------------------------------------------------------------ */
/* Errors                                                               */

static const char *sqlite_code_name(int rc)
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
static int sqlite_to_ks(int rc)
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
static int sql_fail(sqlite3 *h, int rc, ks_status *st, const char *what, const char *sql)
{
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
/* Hashing                                                              */

void store_hash_parts(const char *const *p, const size_t *lens, size_t n,
                      char out[STORE_HASH_HEX + 1])
{
    sha256_ctx c;
    sha256_init(&c);
    for (size_t i = 0; i < n; i++) {
        uint64_t len = p[i] ? (lens ? lens[i] : strlen(p[i])) : UINT64_MAX;
        unsigned char lb[8];
        for (int k = 0; k < 8; k++)
            lb[k] = (unsigned char)(len >> (8 * k));
        sha256_update(&c, lb, 8);
        if (p[i])
            sha256_update(&c, p[i], (size_t)len);
    }
    unsigned char d[SHA256_DIGEST_LEN];
    sha256_final(&c, d);
    sha256_tohex(d, out);
}

/* ------------------------------------------------------------------ */
/* Schema and migrations                                                */

/* Version 1: the initial schema. Later versions append a migration below
 * (never edit an applied one); docs/store.md describes the tables. */
static const char schema_v1[] =
    "CREATE TABLE environments ("
    " id INTEGER PRIMARY KEY,"
    " created_at TEXT NOT NULL DEFAULT " NOW ","
    " host TEXT, pid INTEGER,"
    " gpu_name TEXT, gpu_uuid TEXT, driver_version TEXT, cuda_version TEXT, arch TEXT,"
    " sm_clock_mhz INTEGER, mem_clock_mhz INTEGER,"
    " klab_version TEXT NOT NULL, klab_gitrev TEXT,"
    " libs TEXT, extra TEXT);"
    "CREATE TABLE candidates ("
    " id INTEGER PRIMARY KEY,"
    " hash TEXT NOT NULL UNIQUE,"
    " language TEXT NOT NULL,"
    " code TEXT NOT NULL,"
    " plan TEXT, source TEXT, meta TEXT,"
    " created_at TEXT NOT NULL DEFAULT " NOW ");"
    "CREATE TABLE compiles ("
    " id INTEGER PRIMARY KEY,"
    " candidate_id INTEGER NOT NULL REFERENCES candidates(id),"
    " arch TEXT NOT NULL,"
    " hash TEXT NOT NULL UNIQUE,"
    " options TEXT, compiler TEXT,"
    " ok INTEGER NOT NULL CHECK (ok IN (0, 1)),"
    " registers INTEGER, spill_stores INTEGER, spill_loads INTEGER,"
    " shared_bytes INTEGER, local_bytes INTEGER,"
    " census TEXT, log TEXT, image BLOB, seconds REAL,"
    " created_at TEXT NOT NULL DEFAULT " NOW ");"
    "CREATE INDEX compiles_candidate ON compiles(candidate_id);"
    "CREATE TABLE evaluations ("
    " id INTEGER PRIMARY KEY,"
    " key TEXT NOT NULL UNIQUE,"
    " candidate_id INTEGER NOT NULL REFERENCES candidates(id),"
    " task TEXT NOT NULL,"
    " arch TEXT NOT NULL,"
    " replica INTEGER NOT NULL DEFAULT 0,"
    " options TEXT,"
    " env_id INTEGER REFERENCES environments(id),"
    " compile_id INTEGER REFERENCES compiles(id),"
    " state TEXT NOT NULL CHECK (state IN ('running', 'done')),"
    " attempts INTEGER NOT NULL DEFAULT 1,"
    " verdict TEXT, reason TEXT, timing_method TEXT, stage_times TEXT, detail TEXT,"
    " created_at TEXT NOT NULL DEFAULT " NOW ","
    " started_at TEXT NOT NULL DEFAULT " NOW ","
    " finished_at TEXT,"
    " CHECK ((state = 'done') = (verdict IS NOT NULL AND finished_at IS NOT NULL)));"
    "CREATE INDEX evaluations_candidate ON evaluations(candidate_id);"
    "CREATE INDEX evaluations_task ON evaluations(task, arch, verdict);"
    "CREATE TABLE measurements ("
    " id INTEGER PRIMARY KEY,"
    " evaluation_id INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,"
    " name TEXT NOT NULL,"
    " value REAL NOT NULL,"
    " unit TEXT,"
    " UNIQUE (evaluation_id, name));"
    "CREATE TABLE responses ("
    " hash TEXT PRIMARY KEY,"
    " request TEXT NOT NULL,"
    " response TEXT,"
    " status INTEGER, model TEXT, error TEXT,"
    " latency_ms REAL, input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL,"
    " created_at TEXT NOT NULL DEFAULT " NOW ");";

/* Version 2: the experiment tables (experiments, trajectories, turns), which
 * earlier versions created from the experiment library with IF NOT EXISTS,
 * so a store that already has them keeps them; and the verdicts table, the
 * store's copy of the one verdict list (klab.eval.verdict defines it and
 * writes it here), which every verdict recorded in evaluations or turns must
 * name. */
static const char schema_v2[] =
    "CREATE TABLE IF NOT EXISTS experiments ("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " config TEXT,"
    " created_at TEXT NOT NULL DEFAULT " NOW ","
    " updated_at TEXT);"
    "CREATE TABLE IF NOT EXISTS trajectories ("
    " id INTEGER PRIMARY KEY,"
    " experiment_id INTEGER NOT NULL REFERENCES experiments(id),"
    " key TEXT NOT NULL UNIQUE,"
    " model TEXT NOT NULL, task TEXT NOT NULL, tag TEXT NOT NULL, replica INTEGER NOT NULL,"
    " state TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done')),"
    " stop_reason TEXT,"
    " turns INTEGER NOT NULL DEFAULT 0,"
    " best_speedup REAL, best_turn INTEGER,"
    " selected_turn INTEGER, selected_speedup REAL, selection TEXT,"
    " messages TEXT,"
    " created_at TEXT NOT NULL DEFAULT " NOW ","
    " finished_at TEXT);"
    "CREATE INDEX IF NOT EXISTS trajectories_experiment ON trajectories(experiment_id);"
    "CREATE TABLE IF NOT EXISTS turns ("
    " id INTEGER PRIMARY KEY,"
    " trajectory_id INTEGER NOT NULL REFERENCES trajectories(id),"
    " turn INTEGER NOT NULL,"
    " request_hash TEXT, source TEXT,"
    " verdict TEXT NOT NULL, reason TEXT,"
    " speedup REAL, verified INTEGER,"
    " candidate TEXT, language TEXT,"
    " reply TEXT, feedback TEXT,"
    " input_tokens INTEGER, output_tokens INTEGER, reasoning_tokens INTEGER,"
    " latency_ms REAL, cost_usd REAL,"
    " workloads TEXT,"
    " created_at TEXT NOT NULL DEFAULT " NOW ","
    " UNIQUE (trajectory_id, turn));"
    "CREATE INDEX IF NOT EXISTS turns_verdict ON turns(verdict);"
    "CREATE TABLE verdicts ("
    " name TEXT PRIMARY KEY,"
    " rank INTEGER NOT NULL,"
    " short TEXT NOT NULL,"
    " stage TEXT,"
    " class TEXT NOT NULL CHECK (class IN ('correct', 'failed', 'not_measured')),"
    " means TEXT);"
    "CREATE TRIGGER evaluations_verdict_insert BEFORE INSERT ON evaluations"
    " WHEN NEW.verdict IS NOT NULL AND NOT EXISTS (SELECT 1 FROM verdicts WHERE name = NEW.verdict)"
    " BEGIN SELECT RAISE(ABORT, 'unknown verdict (not in the verdicts table)'); END;"
    "CREATE TRIGGER evaluations_verdict_update BEFORE UPDATE OF verdict ON evaluations"
    " WHEN NEW.verdict IS NOT NULL AND NOT EXISTS (SELECT 1 FROM verdicts WHERE name = NEW.verdict)"
    " BEGIN SELECT RAISE(ABORT, 'unknown verdict (not in the verdicts table)'); END;"
    "CREATE TRIGGER turns_verdict_insert BEFORE INSERT ON turns"
    " WHEN NOT EXISTS (SELECT 1 FROM verdicts WHERE name = NEW.verdict)"
    " BEGIN SELECT RAISE(ABORT, 'unknown verdict (not in the verdicts table)'); END;"
    "CREATE TRIGGER turns_verdict_update BEFORE UPDATE OF verdict ON turns"
    " WHEN NOT EXISTS (SELECT 1 FROM verdicts WHERE name = NEW.verdict)"
    " BEGIN SELECT RAISE(ABORT, 'unknown verdict (not in the verdicts table)'); END;";

static const struct migration {
    int version;
    const char *description;
    const char *sql;
} migrations[] = {
    {1, "initial schema", schema_v1},
    {2, "experiment tables and the verdicts table", schema_v2},
};

#define NMIGRATIONS (sizeof migrations / sizeof migrations[0])

/* ------------------------------------------------------------------ */
/* Small internal helpers                                               */

/* Runs SQL without results; fills st on failure. */
static int run(store *db, const char *sql, ks_status *st)
{
    int rc = sqlite3_exec(db->h, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(db->h, rc, st, "exec", sql);
    return KS_OK;
}

static int prep(store *db, const char *sql, sqlite3_stmt **s, ks_status *st)
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
static int bind_redacted(sqlite3_stmt *s, int idx, const void *p, size_t n, int blob)
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
static int bind_opt_text(sqlite3_stmt *s, int idx, const char *p)
{
    return p ? bind_redacted(s, idx, p, strlen(p), 0) : sqlite3_bind_null(s, idx);
}

/* Binds an id, or NULL for 0. */
static int bind_opt_id(sqlite3_stmt *s, int idx, int64_t v)
{
    return v ? sqlite3_bind_int64(s, idx, v) : sqlite3_bind_null(s, idx);
}

/* Steps a statement that returns no row (or whose rows are ignored). */
static int step_done(store *db, sqlite3_stmt *s, ks_status *st)
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
static int bind_fail(store *db, sqlite3_stmt *s, int rc, ks_status *st)
{
    return sql_fail(db->h, rc, st, "bind", sqlite3_sql(s));
}

/* Ends an internal transaction: commit on success, else roll back and keep
 * the first failure in st. */
static int tx_end(store *db, int rc, ks_status *st)
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
/* Open and close                                                       */

static int read_version(store *db, int *version, ks_status *st)
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
static int migrate(store *db, ks_status *st)
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
        rc = run(db,
                 "CREATE TABLE schema_version ("
                 " version INTEGER PRIMARY KEY,"
                 " description TEXT NOT NULL,"
                 " klab_version TEXT,"
                 " applied_at TEXT NOT NULL DEFAULT " NOW ")",
                 st);
    for (size_t i = 0; rc == KS_OK && i < NMIGRATIONS; i++) {
        if (migrations[i].version <= version)
            continue;
        rc = run(db, migrations[i].sql, st);
        if (rc)
            break;
        sqlite3_stmt *s;
        rc = prep(db, "INSERT INTO schema_version(version, description, klab_version) VALUES (?, ?, ?)",
                  &s, st);
        if (rc)
            break;
        sqlite3_bind_int(s, 1, migrations[i].version);
        sqlite3_bind_text(s, 2, migrations[i].description, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, KLAB_VERSION, -1, SQLITE_STATIC);
        rc = step_done(db, s, st);
        sqlite3_finalize(s);
        version = migrations[i].version;
    }
    if (rc == KS_OK)
        db->version = version;
    return tx_end(db, rc, st);
}

/* Sets the journal mode to WAL and checks that it took (":memory:" reports
 * "memory", which is fine: nothing else can open it). Switching a new file
 * to WAL needs an exclusive lock and SQLite does not run the busy handler
 * for it, so two processes opening one new store at once retry here, for
 * up to busy_ms. */
static int set_wal(store *db, int busy_ms, ks_status *st)
{
    sqlite3_stmt *s;
    int rc = prep(db, "PRAGMA journal_mode = WAL", &s, st);
    if (rc)
        return rc;
    int srs;
    for (int waited = 0;; waited += 5) {
        srs = sqlite3_step(s);
        if ((srs != SQLITE_BUSY && srs != SQLITE_LOCKED) || waited >= busy_ms)
            break;
        sqlite3_reset(s);
        sqlite3_sleep(5);
    }
    if (srs != SQLITE_ROW) {
        rc = sql_fail(db->h, srs, st, "setting WAL mode", NULL);
        sqlite3_finalize(s);
        return rc;
    }
    const char *mode = (const char *)sqlite3_column_text(s, 0);
    if (!mode || (strcmp(mode, "wal") != 0 && strcmp(mode, "memory") != 0))
        rc = ks_fail(st, KS_EUNSUPPORTED, 0, "store: %s cannot use WAL mode (journal mode is %s)",
                     db->path, mode ? mode : "unknown");
    sqlite3_finalize(s);
    return rc;
}

/* Opens db->h on name (a path, or a URI with SQLITE_OPEN_URI) and sets the
 * connection's options; fills st on failure (db->h may then be set). */
static int open_handle(store *db, const char *name, int flags, int busy, ks_status *st)
{
    int rc = sqlite3_open_v2(name, &db->h, flags, NULL);
    if (rc != SQLITE_OK) {
        int code = sqlite_to_ks(rc);
        return ks_fail(st, code == KS_EINVAL ? KS_EIO : code, rc, "store: cannot open %s: %s (%s)", db->path,
                       db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc), sqlite_code_name(rc));
    }
    sqlite3_extended_result_codes(db->h, 1);
    sqlite3_busy_timeout(db->h, busy);
    return run(db, "PRAGMA foreign_keys = ON", st);
}

/* Whether a read-only open that failed may be tried again as immutable: the
 * failure is one of opening files (SQLite could not create the -shm and -wal
 * files of a WAL store, as in a folder the user cannot write), the file is
 * readable, and there is no -wal file with content, so that the main file
 * holds every committed transaction and nobody is writing it. */
static int immutable_fallback(const char *path, const ks_status *st)
{
    int c = st->sub & 0xff;
    if (c != SQLITE_CANTOPEN && c != SQLITE_READONLY && c != SQLITE_IOERR && c != SQLITE_PERM)
        return 0;
    if (access(path, R_OK) != 0)
        return 0;
    size_t n = strlen(path);
    char *wal = malloc(n + 5);
    if (!wal)
        return 0;
    memcpy(wal, path, n);
    memcpy(wal + n, "-wal", 5);
    FILE *f = fopen(wal, "rb");
    free(wal);
    if (!f)
        return errno == ENOENT;
    int empty = fgetc(f) == EOF;
    fclose(f);
    return empty;
}

/* "file:<path>?immutable=1" with the characters a URI path cannot hold
 * escaped; NULL when out of memory. */
static char *immutable_uri(const char *path)
{
    static const char tail[] = "?immutable=1";
    size_t n = strlen(path);
    char *uri = malloc(5 + 3 * n + sizeof tail);
    if (!uri)
        return NULL;
    char *o = uri;
    memcpy(o, "file:", 5);
    o += 5;
    for (const char *p = path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#')
            o += sprintf(o, "%%%02X", (unsigned char)*p);
        else
            *o++ = *p;
    }
    memcpy(o, tail, sizeof tail);
    return uri;
}

/* The read-only open: never creates, never migrates, and reads a store in a
 * folder the user cannot write (where SQLite cannot make the WAL's -shm
 * file) by opening it immutable when that is safe (immutable_fallback). */
static int open_readonly(store *db, int busy, ks_status *st)
{
    int version = 0;
    int r = open_handle(db, db->path, SQLITE_OPEN_READONLY, busy, st);
    if (r == KS_OK)
        r = read_version(db, &version, st);
    if (r != KS_OK && immutable_fallback(db->path, st)) {
        sqlite3_close_v2(db->h);
        db->h = NULL;
        char *uri = immutable_uri(db->path);
        if (!uri)
            return ks_fail(st, KS_ENOMEM, 0, "store: out of memory");
        ks_clear(st);
        r = open_handle(db, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, busy, st);
        free(uri);
        if (r == KS_OK)
            r = read_version(db, &version, st);
    }
    if (r == KS_OK && version != STORE_SCHEMA_VERSION)
        r = ks_fail(st, version > STORE_SCHEMA_VERSION ? KS_EUNSUPPORTED : KS_EINVAL, 0,
                    "store: %s has schema version %d, this klab needs %d (open it writable once to migrate)",
                    db->path, version, STORE_SCHEMA_VERSION);
    db->version = version;
    return r;
}

int store_open(store **out, const char *path, const store_options *opt, ks_status *st)
{
    *out = NULL;
    if (!path || !*path)
        return ks_fail(st, KS_EINVAL, 0, "store: empty database path");
    int busy = opt && opt->busy_timeout_ms > 0 ? opt->busy_timeout_ms : 5000;
    int readonly = opt && opt->readonly;

    store *db = calloc(1, sizeof *db);
    if (!db || !(db->path = strdup(path))) {
        free(db);
        return ks_fail(st, KS_ENOMEM, 0, "store: out of memory");
    }
    int r;
    if (readonly) {
        r = open_readonly(db, busy, st);
    } else {
        r = open_handle(db, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, busy, st);
        if (r == KS_OK)
            r = set_wal(db, busy, st);
        if (r == KS_OK)
            r = run(db, "PRAGMA synchronous = NORMAL", st);
        if (r == KS_OK)
            r = migrate(db, st);
    }
    if (r != KS_OK) {
        store_close(&db);
        return r;
    }
    *out = db;
    return KS_OK;
}

void store_close(store **pdb)
{
    if (!pdb || !*pdb)
        return;
    store *db = *pdb;
    *pdb = NULL;
    if (db->h)
        sqlite3_close_v2(db->h); /* rolls back an open transaction */
    free(db->path);
    free(db);
}

const char *store_path(const store *db)
{
    return db->path;
}

int store_schema_version(const store *db)
{
    return db->version;
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

int store_exec(store *db, const char *sql, ks_status *st)
{
    if (!sql)
        return ks_fail(st, KS_EINVAL, 0, "store: exec: no SQL");
    return run(db, sql, st);
}

/* ------------------------------------------------------------------ */
/* Prepared statements                                                  */

int store_prepare(store *db, const char *sql, store_stmt **out, ks_status *st)
{
    *out = NULL;
    if (!sql)
        return ks_fail(st, KS_EINVAL, 0, "store: prepare: no SQL");
    sqlite3_stmt *s = NULL;
    const char *tail = NULL;
    int rc = sqlite3_prepare_v2(db->h, sql, -1, &s, &tail);
    if (rc != SQLITE_OK)
        return sql_fail(db->h, rc, st, "prepare", sql);
    if (!s)
        return ks_fail(st, KS_EINVAL, 0, "store: prepare: no SQL statement in: %.160s", sql);
    if (tail && *tail) {
        /* Anything but spaces and comments after the first statement is a
         * second statement, which would silently not run. */
        sqlite3_stmt *s2 = NULL;
        rc = sqlite3_prepare_v2(db->h, tail, -1, &s2, NULL);
        sqlite3_finalize(s2);
        if (rc != SQLITE_OK || s2) {
            sqlite3_finalize(s);
            return ks_fail(st, KS_EINVAL, 0,
                           "store: prepare: more than one SQL statement (use exec) in: %.160s", sql);
        }
    }
    store_stmt *ss = malloc(sizeof *ss);
    if (!ss) {
        sqlite3_finalize(s);
        return ks_fail(st, KS_ENOMEM, 0, "store: out of memory");
    }
    ss->s = s;
    ss->db = db;
    *out = ss;
    return KS_OK;
}

int store_param_count(const store_stmt *s)
{
    return sqlite3_bind_parameter_count(s->s);
}

int store_param_index(const store_stmt *s, const char *name)
{
    return sqlite3_bind_parameter_index(s->s, name);
}

const char *store_param_name(const store_stmt *s, int idx)
{
    return sqlite3_bind_parameter_name(s->s, idx);
}

static int bind_result(store_stmt *s, int rc, int idx, ks_status *st)
{
    if (rc == SQLITE_OK)
        return KS_OK;
    if (rc == SQLITE_RANGE)
        return ks_fail(st, KS_EINVAL, rc, "store: bind: parameter %d out of range (statement has %d) in: %.160s",
                       idx, sqlite3_bind_parameter_count(s->s), sqlite3_sql(s->s));
    return bind_fail(s->db, s->s, rc, st);
}

int store_bind_int(store_stmt *s, int idx, int64_t v, ks_status *st)
{
    return bind_result(s, sqlite3_bind_int64(s->s, idx, v), idx, st);
}

int store_bind_double(store_stmt *s, int idx, double v, ks_status *st)
{
    return bind_result(s, sqlite3_bind_double(s->s, idx, v), idx, st);
}

int store_bind_text(store_stmt *s, int idx, const char *p, size_t n, ks_status *st)
{
    return bind_result(s, bind_redacted(s->s, idx, p ? p : "", p ? n : 0, 0), idx, st);
}

int store_bind_blob(store_stmt *s, int idx, const void *p, size_t n, ks_status *st)
{
    /* A NULL pointer would bind SQL NULL; an empty blob is still a blob. */
    int rc = n == 0 ? sqlite3_bind_zeroblob(s->s, idx, 0) : bind_redacted(s->s, idx, p, n, 1);
    return bind_result(s, rc, idx, st);
}

int store_bind_null(store_stmt *s, int idx, ks_status *st)
{
    return bind_result(s, sqlite3_bind_null(s->s, idx), idx, st);
}

int store_step(store_stmt *s, ks_status *st)
{
    int rc = sqlite3_step(s->s);
    if (rc == SQLITE_ROW)
        return STORE_ROW;
    if (rc == SQLITE_DONE)
        return KS_OK;
    int code = sql_fail(s->db->h, rc, st, "step", sqlite3_sql(s->s));
    sqlite3_reset(s->s);
    return code;
}

int store_reset(store_stmt *s, ks_status *st)
{
    /* sqlite3_reset repeats the last step's error; that one was reported. */
    sqlite3_reset(s->s);
    (void)st;
    return KS_OK;
}

int store_column_count(const store_stmt *s)
{
    return sqlite3_column_count(s->s);
}

const char *store_column_name(const store_stmt *s, int idx)
{
    return sqlite3_column_name(s->s, idx);
}

int store_column_type(const store_stmt *s, int idx)
{
    switch (sqlite3_column_type(s->s, idx)) {
    case SQLITE_INTEGER: return STORE_INT;
    case SQLITE_FLOAT: return STORE_FLOAT;
    case SQLITE_TEXT: return STORE_TEXT;
    case SQLITE_BLOB: return STORE_BLOB;
    }
    return STORE_NULL;
}

int64_t store_column_int(const store_stmt *s, int idx)
{
    return sqlite3_column_int64(s->s, idx);
}

double store_column_double(const store_stmt *s, int idx)
{
    return sqlite3_column_double(s->s, idx);
}

const char *store_column_text(const store_stmt *s, int idx, size_t *len)
{
    const char *p = (const char *)sqlite3_column_text(s->s, idx);
    size_t n = (size_t)sqlite3_column_bytes(s->s, idx);
    if (len)
        *len = p ? n : 0;
    return p ? p : "";
}

const void *store_column_blob(const store_stmt *s, int idx, size_t *len)
{
    const void *p = sqlite3_column_blob(s->s, idx);
    size_t n = (size_t)sqlite3_column_bytes(s->s, idx);
    if (len)
        *len = p ? n : 0;
    return p ? p : "";
}

int64_t store_last_rowid(const store *db)
{
    return sqlite3_last_insert_rowid(db->h);
}

int64_t store_changes(const store *db)
{
    return sqlite3_changes64(db->h);
}

void store_finalize(store_stmt *s)
{
    if (!s)
        return;
    sqlite3_finalize(s->s);
    free(s);
}

/* ------------------------------------------------------------------ */
/* Candidates                                                           */

void store_candidate_hash(const store_candidate *c, char out[STORE_HASH_HEX + 1])
{
    const char *p[4] = {"klab.candidate.1", c->language, c->code, c->plan};
    size_t n[4] = {strlen(p[0]), c->language ? strlen(c->language) : 0,
                   c->code ? (c->code_len ? c->code_len : strlen(c->code)) : 0,
                   c->plan ? strlen(c->plan) : 0};
    store_hash_parts(p, n, 4, out);
}

static int put_candidate_tx(store *db, const store_candidate *c, const char *hash, int64_t *id,
                            int *created, ks_status *st)
{
    sqlite3_stmt *s;
    int rc = prep(db,
                  "INSERT INTO candidates(hash, language, code, plan, source, meta)"
                  " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(hash) DO NOTHING",
                  &s, st);
    if (rc)
        return rc;
    size_t n = c->code_len ? c->code_len : strlen(c->code);
    int b = sqlite3_bind_text(s, 1, hash, -1, SQLITE_STATIC);
    if (!b) b = sqlite3_bind_text(s, 2, c->language, -1, SQLITE_STATIC);
    if (!b) b = bind_redacted(s, 3, c->code, n, 0);
    if (!b) b = bind_opt_text(s, 4, c->plan);
    if (!b) b = bind_opt_text(s, 5, c->source);
    if (!b) b = bind_opt_text(s, 6, c->meta);
    rc = b ? bind_fail(db, s, b, st) : step_done(db, s, st);
    sqlite3_finalize(s);
    if (rc)
        return rc;
    if (sqlite3_changes(db->h) == 1) {
        *id = sqlite3_last_insert_rowid(db->h);
        *created = 1;
        return KS_OK;
    }
    *created = 0;
    rc = prep(db, "SELECT id FROM candidates WHERE hash = ?", &s, st);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, hash, -1, SQLITE_STATIC);
    int srs = sqlite3_step(s);
    if (srs == SQLITE_ROW)
        *id = sqlite3_column_int64(s, 0);
    else
        rc = srs == SQLITE_DONE ? ks_fail(st, KS_ENOTFOUND, 0, "store: candidate %s vanished", hash)
                                : sql_fail(db->h, srs, st, "step", sqlite3_sql(s));
    sqlite3_finalize(s);
    return rc;
}

int store_put_candidate(store *db, const store_candidate *c, int64_t *id, int *created,
                        char hash[STORE_HASH_HEX + 1], ks_status *st)
{
    if (!c || !c->language || !*c->language || !c->code)
        return ks_fail(st, KS_EINVAL, 0, "store: a candidate needs language and code");
    char h[STORE_HASH_HEX + 1];
    store_candidate_hash(c, h);
    int64_t cid = 0;
    int made = 0;
    int rc = store_begin(db, st);
    if (rc)
        return rc;
    rc = tx_end(db, put_candidate_tx(db, c, h, &cid, &made, st), st);
    if (rc)
        return rc;
    if (id)
        *id = cid;
    if (created)
        *created = made;
    if (hash)
        memcpy(hash, h, sizeof h);
    return KS_OK;
}

/* ------------------------------------------------------------------ */
/* Evaluations                                                          */

/* The verdict must be one the verdicts table names (the store's copy of
 * klab.eval.verdict's list); the triggers enforce the same for any write. */
static int verdict_known(store *db, const char *v, ks_status *st)
{
    if (!v || !*v)
        return ks_fail(st, KS_EINVAL, 0, "store: an evaluation result needs a verdict");
    sqlite3_stmt *s;
    int rc = prep(db, "SELECT count(*), (SELECT count(*) FROM verdicts) FROM verdicts WHERE name = ?", &s, st);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, v, -1, SQLITE_STATIC);
    int srs = sqlite3_step(s);
    if (srs != SQLITE_ROW) {
        rc = sql_fail(db->h, srs, st, "step", sqlite3_sql(s));
        sqlite3_finalize(s);
        return rc;
    }
    int64_t found = sqlite3_column_int64(s, 0), defined = sqlite3_column_int64(s, 1);
    sqlite3_finalize(s);
    if (defined == 0)
        return ks_fail(st, KS_EINVAL, 0,
                       "store: %s defines no verdicts yet (the evaluation pipeline writes them before recording)",
                       db->path);
    if (!found)
        return ks_fail(st, KS_EINVAL, 0, "store: unknown verdict '%s'", v);
    return KS_OK;
}

static int check_eval(const store_eval *ev, ks_status *st)
{
    if (!ev || !ev->key || !*ev->key)
        return ks_fail(st, KS_EINVAL, 0, "store: an evaluation needs a key");
    if (ev->candidate_id <= 0)
        return ks_fail(st, KS_EINVAL, 0, "store: evaluation %s needs a candidate id", ev->key);
    if (!ev->task || !*ev->task || !ev->arch || !*ev->arch)
        return ks_fail(st, KS_EINVAL, 0, "store: evaluation %s needs a task and an arch", ev->key);
    return KS_OK;
}

static int check_result(store *db, const store_result *r, ks_status *st)
{
    if (!r)
        return ks_fail(st, KS_EINVAL, 0, "store: no evaluation result");
    int rc = verdict_known(db, r->verdict, st);
    if (rc)
        return rc;
    for (size_t i = 0; i < r->nm; i++) {
        if (!r->m[i].name || !*r->m[i].name)
            return ks_fail(st, KS_EINVAL, 0, "store: measurement %zu has no name", i + 1);
        if (isnan(r->m[i].value))
            return ks_fail(st, KS_EINVAL, 0, "store: measurement %s is NaN", r->m[i].name);
    }
    return KS_OK;
}

static int begin_eval_tx(store *db, const store_eval *ev, int64_t *id, int *done, ks_status *st)
{
    sqlite3_stmt *s;
    int rc = prep(db,
                  "SELECT id, state, candidate_id, task, arch, replica FROM evaluations WHERE key = ?",
                  &s, st);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, ev->key, -1, SQLITE_STATIC);
    int srs = sqlite3_step(s);
    if (srs == SQLITE_ROW) {
        int64_t eid = sqlite3_column_int64(s, 0);
        int is_done = strcmp((const char *)sqlite3_column_text(s, 1), "done") == 0;
        int64_t cand = sqlite3_column_int64(s, 2);
        const char *task = (const char *)sqlite3_column_text(s, 3);
        const char *arch = (const char *)sqlite3_column_text(s, 4);
        int64_t replica = sqlite3_column_int64(s, 5);
        if (cand != ev->candidate_id || strcmp(task, ev->task) != 0 || strcmp(arch, ev->arch) != 0 ||
            replica != ev->replica)
            rc = ks_fail(st, KS_EINVAL, 0,
                         "store: evaluation key %s is already used for candidate %lld, task %s, arch %s, replica %lld",
                         ev->key, (long long)cand, task, arch, (long long)replica);
        sqlite3_finalize(s);
        if (rc)
            return rc;
        *id = eid;
        if (is_done && !ev->replace) {
            *done = 1;
            return KS_OK;
        }
        /* Interrupted earlier, or replaced: start it again in place. */
        *done = 0;
        rc = prep(db,
                  "UPDATE evaluations SET state = 'running', attempts = attempts + 1, started_at = " NOW ","
                  " env_id = ?, compile_id = ?, options = ?, verdict = NULL, reason = NULL,"
                  " timing_method = NULL, stage_times = NULL, detail = NULL, finished_at = NULL"
                  " WHERE id = ?",
                  &s, st);
        if (rc)
            return rc;
        int b = bind_opt_id(s, 1, ev->env_id);
        if (!b) b = bind_opt_id(s, 2, ev->compile_id);
        if (!b) b = bind_opt_text(s, 3, ev->options);
        if (!b) b = sqlite3_bind_int64(s, 4, eid);
        rc = b ? bind_fail(db, s, b, st) : step_done(db, s, st);
        sqlite3_finalize(s);
        if (rc)
            return rc;
        rc = prep(db, "DELETE FROM measurements WHERE evaluation_id = ?", &s, st);
        if (rc)
            return rc;
        sqlite3_bind_int64(s, 1, eid);
        rc = step_done(db, s, st);
        sqlite3_finalize(s);
        return rc;
    }
    if (srs != SQLITE_DONE) {
        rc = sql_fail(db->h, srs, st, "step", sqlite3_sql(s));
        sqlite3_finalize(s);
        return rc;
    }
    sqlite3_finalize(s);
    rc = prep(db,
              "INSERT INTO evaluations(key, candidate_id, task, arch, replica, options, env_id,"
              " compile_id, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running')",
              &s, st);
    if (rc)
        return rc;
    int b = sqlite3_bind_text(s, 1, ev->key, -1, SQLITE_STATIC);
    if (!b) b = sqlite3_bind_int64(s, 2, ev->candidate_id);
    if (!b) b = sqlite3_bind_text(s, 3, ev->task, -1, SQLITE_STATIC);
    if (!b) b = sqlite3_bind_text(s, 4, ev->arch, -1, SQLITE_STATIC);
    if (!b) b = sqlite3_bind_int64(s, 5, ev->replica);
    if (!b) b = bind_opt_text(s, 6, ev->options);
    if (!b) b = bind_opt_id(s, 7, ev->env_id);
    if (!b) b = bind_opt_id(s, 8, ev->compile_id);
    rc = b ? bind_fail(db, s, b, st) : step_done(db, s, st);
    sqlite3_finalize(s);
    if (rc)
        return rc;
    *id = sqlite3_last_insert_rowid(db->h);
    *done = 0;
    return KS_OK;
}

static int finish_eval_tx(store *db, int64_t id, const store_result *r, ks_status *st)
{
    sqlite3_stmt *s;
    int rc = prep(db,
                  "UPDATE evaluations SET state = 'done', verdict = ?, reason = ?, timing_method = ?,"
                  " stage_times = ?, detail = ?, compile_id = coalesce(?, compile_id),"
                  " finished_at = " NOW " WHERE id = ? AND state = 'running'",
                  &s, st);
    if (rc)
        return rc;
    int b = sqlite3_bind_text(s, 1, r->verdict, -1, SQLITE_STATIC);
    if (!b) b = bind_opt_text(s, 2, r->reason);
    if (!b) b = bind_opt_text(s, 3, r->timing_method);
    if (!b) b = bind_opt_text(s, 4, r->stage_times);
    if (!b) b = bind_opt_text(s, 5, r->detail);
    if (!b) b = bind_opt_id(s, 6, r->compile_id);
    if (!b) b = sqlite3_bind_int64(s, 7, id);
    rc = b ? bind_fail(db, s, b, st) : step_done(db, s, st);
    sqlite3_finalize(s);
    if (rc)
        return rc;
    if (sqlite3_changes(db->h) != 1)
        return ks_fail(st, KS_ENOTFOUND, 0, "store: evaluation %lld is not running (never begun, or finished)",
                       (long long)id);
    if (r->nm == 0)
        return KS_OK;
    rc = prep(db, "INSERT INTO measurements(evaluation_id, name, value, unit) VALUES (?, ?, ?, ?)", &s, st);
    if (rc)
        return rc;
    for (size_t i = 0; rc == KS_OK && i < r->nm; i++) {
        sqlite3_reset(s);
        b = sqlite3_bind_int64(s, 1, id);
        if (!b) b = sqlite3_bind_text(s, 2, r->m[i].name, -1, SQLITE_STATIC);
        if (!b) b = sqlite3_bind_double(s, 3, r->m[i].value);
        if (!b) b = bind_opt_text(s, 4, r->m[i].unit);
        rc = b ? bind_fail(db, s, b, st) : step_done(db, s, st);
    }
    sqlite3_finalize(s);
    return rc;
}

int store_begin_evaluation(store *db, const store_eval *ev, int64_t *id, int *done, ks_status *st)
{
    int rc = check_eval(ev, st);
    if (rc)
        return rc;
    int64_t eid = 0;
    int d = 0;
    rc = store_begin(db, st);
    if (rc)
        return rc;
    rc = tx_end(db, begin_eval_tx(db, ev, &eid, &d, st), st);
    if (rc)
        return rc;
    *id = eid;
    *done = d;
    return KS_OK;
}

int store_finish_evaluation(store *db, int64_t id, const store_result *r, ks_status *st)
{
    int rc = check_result(db, r, st);
    if (rc)
        return rc;
    rc = store_begin(db, st);
    if (rc)
        return rc;
    return tx_end(db, finish_eval_tx(db, id, r, st), st);
}

int store_record_evaluation(store *db, const store_eval *ev, const store_result *r, int64_t *id,
                            int *done, ks_status *st)
{
    int rc = check_eval(ev, st);
    if (!rc)
        rc = check_result(db, r, st);
    if (rc)
        return rc;
    int64_t eid = 0;
    int d = 0;
    rc = store_begin(db, st);
    if (rc)
        return rc;
    rc = begin_eval_tx(db, ev, &eid, &d, st);
    if (rc == KS_OK && !d)
        rc = finish_eval_tx(db, eid, r, st);
    rc = tx_end(db, rc, st);
    if (rc)
        return rc;
    *id = eid;
    *done = d;
    return KS_OK;
}

int store_evaluation_done(store *db, const char *key, int64_t *id, ks_status *st)
{
    *id = 0;
    if (!key || !*key)
        return ks_fail(st, KS_EINVAL, 0, "store: evaluation_done needs a key");
    sqlite3_stmt *s;
    int rc = prep(db, "SELECT id FROM evaluations WHERE key = ? AND state = 'done'", &s, st);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    int srs = sqlite3_step(s);
    if (srs == SQLITE_ROW)
        *id = sqlite3_column_int64(s, 0);
    else if (srs != SQLITE_DONE)
        rc = sql_fail(db->h, srs, st, "step", sqlite3_sql(s));
    sqlite3_finalize(s);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Environment                                                          */

int store_put_environment(store *db, const store_env *e, int64_t *id, ks_status *st)
{
    static const store_env none;
    if (!e)
        e = &none;
    char host[256];
    const char *h = e->host;
    if (!h) {
        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "unknown");
        host[sizeof host - 1] = '\0';
        h = host;
    }
    sqlite3_stmt *s;
    int rc = prep(db,
                  "INSERT INTO environments(host, pid, gpu_name, gpu_uuid, driver_version, cuda_version,"
                  " arch, sm_clock_mhz, mem_clock_mhz, klab_version, klab_gitrev, libs, extra)"
                  " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  &s, st);
    if (rc)
        return rc;
    int b = sqlite3_bind_text(s, 1, h, -1, SQLITE_TRANSIENT);
    if (!b) b = sqlite3_bind_int64(s, 2, (int64_t)getpid());
    if (!b) b = bind_opt_text(s, 3, e->gpu_name);
    if (!b) b = bind_opt_text(s, 4, e->gpu_uuid);
    if (!b) b = bind_opt_text(s, 5, e->driver_version);
    if (!b) b = bind_opt_text(s, 6, e->cuda_version);
    if (!b) b = bind_opt_text(s, 7, e->arch);
    if (!b) b = bind_opt_id(s, 8, e->sm_clock_mhz);
    if (!b) b = bind_opt_id(s, 9, e->mem_clock_mhz);
    if (!b) b = sqlite3_bind_text(s, 10, e->klab_version ? e->klab_version : KLAB_VERSION, -1, SQLITE_STATIC);
    if (!b) b = sqlite3_bind_text(s, 11, e->klab_gitrev ? e->klab_gitrev : KLAB_GITREV, -1, SQLITE_STATIC);
    if (!b) b = bind_opt_text(s, 12, e->libs);
    if (!b) b = bind_opt_text(s, 13, e->extra);
    rc = b ? bind_fail(db, s, b, st) : step_done(db, s, st);
    sqlite3_finalize(s);
    if (rc == KS_OK && id)
        *id = sqlite3_last_insert_rowid(db->h);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Response cache                                                       */

static const char *const credential_keys[] = {
    "authorization", "proxy-authorization", "api_key", "api-key", "apikey", "x-api-key",
    "x-goog-api-key", "openai_api_key", "anthropic_api_key", "access_token", "bearer",
};

int store_has_credential(const char *json)
{
    if (!json)
        return 0;
    const char *p = json;
    while ((p = strchr(p, '"')) != NULL) {
        const char *start = ++p;
        while (*p && *p != '"') {
            if (*p == '\\' && p[1])
                p++;
            p++;
        }
        if (!*p)
            return 0;
        size_t n = (size_t)(p - start);
        p++; /* past the closing quote */
        const char *q = p;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
            q++;
        if (*q != ':')
            continue;
        for (size_t k = 0; k < sizeof credential_keys / sizeof credential_keys[0]; k++)
            if (strlen(credential_keys[k]) == n && strncasecmp(start, credential_keys[k], n) == 0)
                return 1;
    }
    return 0;
}

int store_cache_put(store *db, const store_response *r, ks_status *st)
{
    if (!r || !r->hash || !*r->hash || !r->request)
        return ks_fail(st, KS_EINVAL, 0, "store: a cached response needs a hash and a request");
    if (store_has_credential(r->request))
        return ks_fail(st, KS_EINVAL, 0, "store: request %s carries a credential field; API keys are never stored",
                       r->hash);
    sqlite3_stmt *s;
    int rc = prep(db,
                  "INSERT OR REPLACE INTO responses(hash, request, response, status, model, error,"
                  " latency_ms, input_tokens, output_tokens, cost_usd)"
                  " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  &s, st);
    if (rc)
        return rc;
    int b = sqlite3_bind_text(s, 1, r->hash, -1, SQLITE_STATIC);
    if (!b) b = bind_redacted(s, 2, r->request, strlen(r->request), 0);
    if (!b) b = bind_opt_text(s, 3, r->response);
    if (!b) b = r->status ? sqlite3_bind_int64(s, 4, r->status) : sqlite3_bind_null(s, 4);
    if (!b) b = bind_opt_text(s, 5, r->model);
    if (!b) b = bind_opt_text(s, 6, r->error);
    if (!b) b = r->latency_ms >= 0 ? sqlite3_bind_double(s, 7, r->latency_ms) : sqlite3_bind_null(s, 7);
    if (!b) b = r->input_tokens >= 0 ? sqlite3_bind_int64(s, 8, r->input_tokens) : sqlite3_bind_null(s, 8);
    if (!b) b = r->output_tokens >= 0 ? sqlite3_bind_int64(s, 9, r->output_tokens) : sqlite3_bind_null(s, 9);
    if (!b) b = r->cost_usd >= 0 ? sqlite3_bind_double(s, 10, r->cost_usd) : sqlite3_bind_null(s, 10);
    rc = b ? bind_fail(db, s, b, st) : step_done(db, s, st);
    sqlite3_finalize(s);
    return rc;
}
