/* tables.c: the tables of a klab store, described once (tables.h says how
 * the description is used). Floor 0 of host/store: data only. To add a
 * column or a table, add it here with since = the next version, and that
 * version's line to versions[] (docs/store.md, "Changing the schema"). */
#include "store/tables.h"
#include "store/store.h"

#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define NOW_SQL "(strftime('%Y-%m-%dT%H:%M:%fZ','now'))"

/* The two columns most tables have. */
#define ID {.name = "id", .type = "INTEGER", .primary_key = 1}
#define CREATED_AT {.name = "created_at", .type = "TEXT", .not_null = 1, .dflt = NOW_SQL}

static const store_version versions[] = {
    {1, "initial schema"},
    {2, "experiment tables and the verdicts table"},
    {3, "turns awaiting judgement"},
    {4, "the mark of the machine that wrote an evaluation"},
    {5, "the candidate language of a trajectory"},
};
_Static_assert(N(versions) == STORE_SCHEMA_VERSION, "store.h's STORE_SCHEMA_VERSION is the last version here");

/* ---- a store's own bookkeeping ---- */

static const store_column schema_version_cols[] = {
    {.name = "version", .type = "INTEGER", .primary_key = 1},
    {.name = "description", .type = "TEXT", .not_null = 1},
    {.name = "klab_version", .type = "TEXT"},
    {.name = "applied_at", .type = "TEXT", .not_null = 1, .dflt = NOW_SQL},
};

/* ---- the evaluation tables (host/store/records.c writes them) ---- */

static const store_column environments_cols[] = {
    ID, CREATED_AT,
    {.name = "host", .type = "TEXT"},
    {.name = "pid", .type = "INTEGER"},
    {.name = "gpu_name", .type = "TEXT"},
    {.name = "gpu_uuid", .type = "TEXT"},
    {.name = "driver_version", .type = "TEXT"},
    {.name = "cuda_version", .type = "TEXT"},
    {.name = "arch", .type = "TEXT"},
    {.name = "sm_clock_mhz", .type = "INTEGER"},
    {.name = "mem_clock_mhz", .type = "INTEGER"},
    {.name = "klab_version", .type = "TEXT", .not_null = 1},
    {.name = "klab_gitrev", .type = "TEXT"},
    {.name = "libs", .type = "TEXT"},
    {.name = "extra", .type = "TEXT"},
};

static const store_column candidates_cols[] = {
    ID,
    {.name = "hash", .type = "TEXT", .not_null = 1},
    {.name = "language", .type = "TEXT", .not_null = 1},
    {.name = "code", .type = "TEXT", .not_null = 1},
    {.name = "plan", .type = "TEXT"},
    {.name = "source", .type = "TEXT"},
    {.name = "meta", .type = "TEXT"},
    CREATED_AT,
};

static const store_column compiles_cols[] = {
    ID,
    {.name = "candidate_id", .type = "INTEGER", .not_null = 1, .references = "candidates"},
    {.name = "arch", .type = "TEXT", .not_null = 1},
    {.name = "hash", .type = "TEXT", .not_null = 1},
    {.name = "options", .type = "TEXT"},
    {.name = "compiler", .type = "TEXT"},
    {.name = "ok", .type = "INTEGER", .not_null = 1, .check = "ok IN (0, 1)"},
    {.name = "registers", .type = "INTEGER"},
    {.name = "spill_stores", .type = "INTEGER"},
    {.name = "spill_loads", .type = "INTEGER"},
    {.name = "shared_bytes", .type = "INTEGER"},
    {.name = "local_bytes", .type = "INTEGER"},
    {.name = "census", .type = "TEXT"},
    {.name = "log", .type = "TEXT"},
    {.name = "image", .type = "BLOB"},
    {.name = "seconds", .type = "REAL"},
    CREATED_AT,
};
static const store_index compiles_idx[] = {{.name = "compiles_candidate", .columns = "candidate_id"}};

static const store_column evaluations_cols[] = {
    ID,
    {.name = "key", .type = "TEXT", .not_null = 1},
    {.name = "candidate_id", .type = "INTEGER", .not_null = 1, .references = "candidates"},
    {.name = "task", .type = "TEXT", .not_null = 1},
    {.name = "arch", .type = "TEXT", .not_null = 1},
    {.name = "replica", .type = "INTEGER", .not_null = 1, .dflt = "0"},
    {.name = "options", .type = "TEXT"},
    {.name = "env_id", .type = "INTEGER", .references = "environments"},
    {.name = "compile_id", .type = "INTEGER", .references = "compiles"},
    {.name = "state", .type = "TEXT", .not_null = 1, .check = "state IN ('running', 'done')"},
    {.name = "attempts", .type = "INTEGER", .not_null = 1, .dflt = "1"},
    {.name = "verdict", .type = "TEXT", .listed_in = "verdicts", .listed_since = 2},
    {.name = "reason", .type = "TEXT"},
    {.name = "timing_method", .type = "TEXT"},
    {.name = "stage_times", .type = "TEXT"},
    {.name = "detail", .type = "TEXT"},
    CREATED_AT,
    {.name = "started_at", .type = "TEXT", .not_null = 1, .dflt = NOW_SQL},
    {.name = "finished_at", .type = "TEXT"},
    {.name = "mark", .type = "TEXT", .since = 4},
};
static const store_index evaluations_idx[] = {
    {.name = "evaluations_candidate", .columns = "candidate_id"},
    {.name = "evaluations_task", .columns = "task, arch, verdict"},
};

static const store_column measurements_cols[] = {
    ID,
    {.name = "evaluation_id", .type = "INTEGER", .not_null = 1, .references = "evaluations",
     .on_delete_cascade = 1},
    {.name = "name", .type = "TEXT", .not_null = 1},
    {.name = "value", .type = "REAL", .not_null = 1},
    {.name = "unit", .type = "TEXT"},
};

static const store_column responses_cols[] = {
    {.name = "hash", .type = "TEXT", .primary_key = 1},
    {.name = "request", .type = "TEXT", .not_null = 1},
    {.name = "response", .type = "TEXT"},
    {.name = "status", .type = "INTEGER"},
    {.name = "model", .type = "TEXT"},
    {.name = "error", .type = "TEXT"},
    {.name = "latency_ms", .type = "REAL"},
    {.name = "input_tokens", .type = "INTEGER"},
    {.name = "output_tokens", .type = "INTEGER"},
    {.name = "cost_usd", .type = "REAL"},
    CREATED_AT,
};

/* ---- the study tables (klab.store.records writes them) ---- */

static const store_column verdicts_cols[] = {
    {.name = "name", .type = "TEXT", .primary_key = 1},
    {.name = "rank", .type = "INTEGER", .not_null = 1},
    {.name = "short", .type = "TEXT", .not_null = 1},
    {.name = "stage", .type = "TEXT"},
    {.name = "class", .type = "TEXT", .not_null = 1, .check = "class IN ('correct', 'failed', 'not_measured')"},
    {.name = "means", .type = "TEXT"},
};

static const store_column experiments_cols[] = {
    ID,
    {.name = "name", .type = "TEXT", .not_null = 1},
    {.name = "config", .type = "TEXT"},
    CREATED_AT,
    {.name = "updated_at", .type = "TEXT"},
};

static const store_column trajectories_cols[] = {
    ID,
    {.name = "experiment_id", .type = "INTEGER", .not_null = 1, .references = "experiments"},
    {.name = "key", .type = "TEXT", .not_null = 1},
    {.name = "model", .type = "TEXT", .not_null = 1},
    {.name = "task", .type = "TEXT", .not_null = 1},
    {.name = "tag", .type = "TEXT", .not_null = 1},
    {.name = "replica", .type = "INTEGER", .not_null = 1},
    {.name = "state", .type = "TEXT", .not_null = 1, .dflt = "'running'", .check = "state IN ('running', 'done')"},
    {.name = "stop_reason", .type = "TEXT"},
    {.name = "turns", .type = "INTEGER", .not_null = 1, .dflt = "0"},
    {.name = "best_speedup", .type = "REAL"},
    {.name = "best_turn", .type = "INTEGER"},
    {.name = "selected_turn", .type = "INTEGER"},
    {.name = "selected_speedup", .type = "REAL"},
    {.name = "selection", .type = "TEXT"},
    {.name = "messages", .type = "TEXT"},
    CREATED_AT,
    {.name = "finished_at", .type = "TEXT"},
    /* The language a study asked this trajectory's kernels in (cuda, ptx,
     * cute, triton: klab.experiment.languages); every trajectory before
     * the column was CUDA C++ (or PTX), the only language studies had. */
    {.name = "language", .type = "TEXT", .not_null = 1, .dflt = "'cuda'", .since = 5},
};
static const store_index trajectories_idx[] = {{.name = "trajectories_experiment", .columns = "experiment_id"}};

static const store_column turns_cols[] = {
    ID,
    {.name = "trajectory_id", .type = "INTEGER", .not_null = 1, .references = "trajectories"},
    {.name = "turn", .type = "INTEGER", .not_null = 1},
    {.name = "request_hash", .type = "TEXT"},
    {.name = "source", .type = "TEXT"},
    {.name = "verdict", .type = "TEXT", .not_null = 1, .listed_in = "verdicts", .listed_since = 2},
    {.name = "reason", .type = "TEXT"},
    {.name = "speedup", .type = "REAL"},
    {.name = "verified", .type = "INTEGER"},
    {.name = "candidate", .type = "TEXT"},
    {.name = "language", .type = "TEXT"},
    {.name = "reply", .type = "TEXT"},
    {.name = "feedback", .type = "TEXT"},
    {.name = "input_tokens", .type = "INTEGER"},
    {.name = "output_tokens", .type = "INTEGER"},
    {.name = "reasoning_tokens", .type = "INTEGER"},
    {.name = "latency_ms", .type = "REAL"},
    {.name = "cost_usd", .type = "REAL"},
    {.name = "workloads", .type = "TEXT"},
    CREATED_AT,
    /* 1 while a turn's candidate, built and plan-checked where no GPU was
     * (a sweep's generate phase), waits for klab judge's GPU stages. */
    {.name = "awaiting", .type = "INTEGER", .not_null = 1, .dflt = "0", .since = 3},
};
static const store_index turns_idx[] = {
    {.name = "turns_verdict", .columns = "verdict"},
    {.name = "turns_awaiting", .columns = "awaiting", .where = "awaiting = 1", .since = 3},
};

static const char *const key_version[] = {"version", NULL};
static const char *const key_hash[] = {"hash", NULL};
static const char *const key_key[] = {"key", NULL};
static const char *const key_name[] = {"name", NULL};
static const char *const key_measurement[] = {"evaluation_id", "name", NULL};
static const char *const key_turn[] = {"trajectory_id", "turn", NULL};

#define COLS(c) .columns = c, .ncolumns = N(c)
#define IDX(i) .indexes = i, .nindexes = N(i)

static const store_table tables[] = {
    {.name = "schema_version", .owner = STORE_OWNER_C, .purpose = "the schema versions applied to this store",
     .since = 0, .per_store = 1, .key = key_version, COLS(schema_version_cols)},
    /* The verdict list (klab.eval.verdict defines it and writes it here),
     * which every verdict recorded in evaluations or turns must name. */
    {.name = "verdicts", .owner = STORE_OWNER_LUA, .purpose = "the verdicts a row may record", .since = 2,
     .key = key_name, COLS(verdicts_cols)},
    /* No key: each row is one run's provenance, kept as its own row. */
    {.name = "environments", .owner = STORE_OWNER_C, .purpose = "the machine and libraries of a run", .since = 1,
     COLS(environments_cols)},
    {.name = "candidates", .owner = STORE_OWNER_C, .purpose = "kernels, by content hash", .since = 1,
     .key = key_hash, COLS(candidates_cols)},
    {.name = "compiles", .owner = STORE_OWNER_C, .purpose = "compile results", .since = 1, .key = key_hash,
     COLS(compiles_cols), IDX(compiles_idx)},
    {.name = "evaluations", .owner = STORE_OWNER_C, .purpose = "one evaluation of a candidate on a task",
     .since = 1, .key = key_key, .check = "(state = 'done') = (verdict IS NOT NULL AND finished_at IS NOT NULL)",
     COLS(evaluations_cols), IDX(evaluations_idx)},
    {.name = "measurements", .owner = STORE_OWNER_C, .purpose = "an evaluation's numbers", .since = 1,
     .key = key_measurement, COLS(measurements_cols)},
    {.name = "responses", .owner = STORE_OWNER_C, .purpose = "the model response cache", .since = 1,
     .key = key_hash, COLS(responses_cols)},
    /* The experiment tables: before version 2 the experiment library made
     * them itself, so version 2 makes them only where missing. */
    {.name = "experiments", .owner = STORE_OWNER_LUA, .purpose = "a sweep and its config", .since = 2,
     .if_missing = 1, .key = key_name, COLS(experiments_cols)},
    {.name = "trajectories", .owner = STORE_OWNER_LUA, .purpose = "one model's attempts at one task", .since = 2,
     .if_missing = 1, .key = key_key, COLS(trajectories_cols), IDX(trajectories_idx)},
    {.name = "turns", .owner = STORE_OWNER_LUA, .purpose = "one reply of a trajectory and its verdict", .since = 2,
     .if_missing = 1, .key = key_turn, COLS(turns_cols), IDX(turns_idx)},
};

const store_table *store_tables(size_t *n)
{
    *n = N(tables);
    return tables;
}

const store_version *store_versions(size_t *n)
{
    *n = N(versions);
    return versions;
}

const store_table *store_table_named(const char *name)
{
    for (size_t i = 0; i < N(tables); i++)
        if (strcmp(tables[i].name, name) == 0)
            return &tables[i];
    return NULL;
}
