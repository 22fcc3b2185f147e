/* schema.c: the tables klab makes in a store, their migrations, and the
 * check of a store someone else may have made or changed (see
 * store_impl.h). */
#include "store/store_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Version 3: turns.awaiting, 1 while a turn's candidate, built and
 * plan-checked where no GPU was (a sweep's generate phase), waits for klab
 * judge to run its GPU stages; 0 for every judged turn. */
static const char schema_v3[] = "ALTER TABLE turns ADD COLUMN awaiting INTEGER NOT NULL DEFAULT 0;"
                                "CREATE INDEX IF NOT EXISTS turns_awaiting ON turns(awaiting) WHERE awaiting = 1;";

static const struct migration {
    int version;
    const char *description;
    const char *sql;
} migrations[] = {
    {1, "initial schema", schema_v1},
    {2, "experiment tables and the verdicts table", schema_v2},
    {3, "turns awaiting judgement", schema_v3},
};

#define NMIGRATIONS (sizeof migrations / sizeof migrations[0])

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


/* ------------------------------------------------------------------ */
/* The objects klab makes, and a store's check against them            */

#define MAX_OBJECTS 64

typedef struct object {
    char type[16];
    char name[64];
} object;

static object known[MAX_OBJECTS];
static int nknown = -1;
static pthread_mutex_t known_mu = PTHREAD_MUTEX_INITIALIZER;

/* The objects (type and name) of a fresh store, learned by making the
 * schema in memory, so that the list cannot drift from the DDL above. */
static int learn_objects(ks_status *st)
{
    pthread_mutex_lock(&known_mu);
    int rc = KS_OK;
    if (nknown >= 0)
        goto out;
    sqlite3 *h = NULL;
    int s = sqlite3_open_v2(":memory:", &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (s == SQLITE_OK)
        s = sqlite3_exec(h, "CREATE TABLE schema_version (version INTEGER PRIMARY KEY)", NULL, NULL, NULL);
    for (size_t i = 0; s == SQLITE_OK && i < NMIGRATIONS; i++)
        s = sqlite3_exec(h, migrations[i].sql, NULL, NULL, NULL);
    sqlite3_stmt *q = NULL;
    if (s == SQLITE_OK)
        s = sqlite3_prepare_v2(h, "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'", -1, &q, NULL);
    int n = 0;
    while (s == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW && n < MAX_OBJECTS) {
        snprintf(known[n].type, sizeof known[n].type, "%s", (const char *)sqlite3_column_text(q, 0));
        snprintf(known[n].name, sizeof known[n].name, "%s", (const char *)sqlite3_column_text(q, 1));
        n++;
    }
    sqlite3_finalize(q);
    if (s != SQLITE_OK)
        rc = sql_fail(h, s, st, "making the schema in memory", NULL);
    else
        nknown = n;
    sqlite3_close_v2(h);
out:
    pthread_mutex_unlock(&known_mu);
    return rc;
}

static const object *find_known(const char *name)
{
    for (int i = 0; i < nknown; i++)
        if (strcmp(known[i].name, name) == 0)
            return &known[i];
    return NULL;
}

int check_objects(store *db, int writable, ks_status *st)
{
    int rc = learn_objects(st);
    if (rc)
        return rc;
    sqlite3_stmt *s;
    rc = prep(db, "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'", &s, st);
    if (rc)
        return rc;
    int seen[MAX_OBJECTS] = {0};
    int r;
    while (rc == KS_OK && (r = sqlite3_step(s)) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(s, 0);
        const char *name = (const char *)sqlite3_column_text(s, 1);
        if (!type || !name)
            continue;
        const object *k = find_known(name);
        if (k) {
            seen[k - known] = 1;
            if (strcmp(k->type, type) != 0)
                rc = ks_fail(st, KS_EINVAL, 0,
                             "store: %s: %s is a %s, not the %s klab made (something else changed this store)",
                             db->path, name, type, k->type);
        } else if (writable && (!strcmp(type, "view") || !strcmp(type, "trigger"))) {
            rc = ks_fail(st, KS_EINVAL, 0,
                         "store: %s holds the %s %.64s, which klab did not make; klab writes only into stores "
                         "without views or triggers of someone else's",
                         db->path, type, name);
        }
    }
    if (rc == KS_OK && r != SQLITE_DONE)
        rc = sql_fail(db->h, r, st, "reading the schema", NULL);
    sqlite3_finalize(s);
    for (int i = 0; rc == KS_OK && i < nknown; i++)
        if (!seen[i] && !strcmp(known[i].type, "table"))
            rc = ks_fail(st, KS_EINVAL, 0, "store: %s has no table %s (something else changed this store)", db->path,
                         known[i].name);
    return rc;
}
