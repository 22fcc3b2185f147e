/*
 * store.h: the result store, one SQLite database file per experiment.
 *
 * Lua-free. It holds the environment of each run, candidates by content hash,
 * compile results, evaluations with their measurements, and the model
 * response cache (docs/store.md has the schema). Every function returns a
 * ks_code and fills a ks_status; SQLite's extended result code, when there is
 * one, is in st->sub and its name is in st->msg.
 *
 * Two layers:
 *   - a general prepared-statement layer (store_prepare, store_bind_*,
 *     store_step, store_column_*, store_finalize) that the Lua binding uses
 *     for arbitrary SQL;
 *   - the few typed helpers that must be atomic: store_put_candidate and the
 *     evaluation life cycle keyed by a caller-supplied idempotency key
 *     (store_begin_evaluation, store_finish_evaluation,
 *     store_record_evaluation).
 *
 * Error mapping (st->code, st->sub = SQLite extended code):
 *   SQLITE_BUSY / SQLITE_LOCKED (after the busy timeout)  KS_ETIMEOUT
 *   SQLITE_CONSTRAINT                                     KS_EREJECT
 *   SQLITE_IOERR, CANTOPEN, FULL, READONLY, CORRUPT, ...  KS_EIO
 *   SQLITE_NOMEM                                          KS_ENOMEM
 *   SQL errors, bad bind index, misuse                    KS_EINVAL
 *
 * A store is used by one thread at a time. After fork(), a child opens its
 * own store; it never uses one opened by its parent.
 */
#ifndef KLAB_HOST_STORE_H
#define KLAB_HOST_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Version of the schema this build creates and understands. */
#define STORE_SCHEMA_VERSION 5

/* The largest text or blob klab reads or writes: a larger value in a store
 * (someone else's) is refused, not read. */
#define STORE_VALUE_MAX (256 * 1024 * 1024)

/* Length of a hash in hex (SHA-256), without the terminating NUL. */
#define STORE_HASH_HEX 64

typedef struct store store;
typedef struct store_stmt store_stmt;

typedef struct store_options {
    int busy_timeout_ms;    /* wait this long for another writer; <= 0: 5000 */
    int readonly;           /* open read-only; never creates or migrates; a WAL
                               store in a folder the user cannot write is read
                               as immutable when no -wal file holds data */
} store_options;

/* Opens (creating when new) the database at path, sets WAL mode, the busy
 * timeout and foreign keys, then creates the schema or migrates it to
 * STORE_SCHEMA_VERSION inside one write transaction (so two processes opening
 * a new file at once do not both create it). A database written by a newer
 * klab (higher schema version) is refused with KS_EUNSUPPORTED. Every store
 * is treated as possibly made or changed by someone else: trusted_schema is
 * off, SQLite's defensive mode on, values over STORE_VALUE_MAX are refused,
 * and the open fails (KS_EINVAL, naming the store and the object) unless the
 * schema is the one klab writes (store_check_schema), checked before a
 * migration writes into it. opt may be NULL. ":memory:" opens a private
 * in-memory database. */
int store_open(store **out, const char *path, const store_options *opt, ks_status *st);

/* Whether evaluation id carries the mark of this machine's user: an
 * HMAC-SHA256 of its content (key, candidate, task, arch, verdict, reason,
 * detail, measurements, ...) under the key in the user's klab folder
 * ($KLAB_HOME, else ~/.klab/store.key, made on first use with mode 0600).
 * A row someone else wrote, one changed since, or one from a machine
 * without the key is not (*proven = 0). store_evaluation_done and an
 * unreplaced store_begin_evaluation take only proven rows as done. */
int store_evaluation_proven(store *db, int64_t id, int *proven, ks_status *st);

/* Compares the whole schema of the database schema ("main", or one attached
 * under that name) with the one klab writes at the version it records:
 * every trigger, view and index must be klab's with klab's SQL text, every
 * table of klab's must be there as klab made it, and no table may have a
 * generated or hidden column. A store may hold plain tables of its own
 * besides (and SQLite's indexes of their constraints), nothing else. Names
 * are compared whole, never as patterns. KS_EINVAL names the object. */
int store_check_schema(store *db, const char *schema, ks_status *st);

/* Closes *pdb (rolling back any open transaction) and sets *pdb to NULL.
 * Idempotent: pdb == NULL or *pdb == NULL does nothing. */
void store_close(store **pdb);

/* Short name of a failure for scripts: "EBUSY" (busy or locked past the
 * timeout), "ECONSTRAINT" (a constraint failed), else ks_code_name(code). */
const char *store_error_name(const ks_status *st);

/* The path the store was opened with. */
const char *store_path(const store *db);

/* Schema version found in the file after open (== STORE_SCHEMA_VERSION). */
int store_schema_version(const store *db);

/* ---- transactions ----
 * store_begin starts a write transaction (BEGIN IMMEDIATE, so that the write
 * lock is taken, waiting up to the busy timeout, before anything is read) or,
 * inside a transaction, a savepoint. store_commit and store_rollback end the
 * innermost one. store_rollback never fails in a way the caller can act on:
 * it returns KS_OK when nothing is open any more. */
int store_begin(store *db, ks_status *st);
int store_commit(store *db, ks_status *st);
int store_rollback(store *db, ks_status *st);

/* 1 while a transaction is open on this connection, else 0. */
int store_in_transaction(const store *db);

/* Runs one or more SQL statements with no parameters and no results. */
int store_exec(store *db, const char *sql, ks_status *st);

/* ---- prepared statements ---- */

/* Column types returned by store_column_type. */
enum { STORE_NULL = 0, STORE_INT = 1, STORE_FLOAT = 2, STORE_TEXT = 3, STORE_BLOB = 4 };

/* store_step's result when a row is ready; KS_OK (0) means the statement is
 * done; a negative ks_code is a failure. */
#define STORE_ROW 1

/* Prepares exactly one SQL statement (trailing spaces, comments and one
 * semicolon allowed; a second statement is KS_EINVAL). */
int store_prepare(store *db, const char *sql, store_stmt **out, ks_status *st);

/* Number of parameters, and the 1-based index of a named one (":name",
 * "@name", "$name"; give the prefix) or 0 when absent. */
int store_param_count(const store_stmt *s);
int store_param_index(const store_stmt *s, const char *name);

/* Name of parameter idx (1-based) with its prefix (":name"), or NULL for
 * a nameless "?". */
const char *store_param_name(const store_stmt *s, int idx);

/* Bind by 1-based index. Text and blobs are copied. */
int store_bind_int(store_stmt *s, int idx, int64_t v, ks_status *st);
int store_bind_double(store_stmt *s, int idx, double v, ks_status *st);
int store_bind_text(store_stmt *s, int idx, const char *p, size_t n, ks_status *st);
int store_bind_blob(store_stmt *s, int idx, const void *p, size_t n, ks_status *st);
int store_bind_null(store_stmt *s, int idx, ks_status *st);

/* Returns STORE_ROW, KS_OK (done) or a failure. */
int store_step(store_stmt *s, ks_status *st);

/* Resets a statement so that it can be stepped again (bindings are kept). */
int store_reset(store_stmt *s, ks_status *st);

/* Column access for the current row; idx is 0-based. Text and blob pointers
 * stay valid until the next step, reset or finalize. */
int store_column_count(const store_stmt *s);
const char *store_column_name(const store_stmt *s, int idx);
int store_column_type(const store_stmt *s, int idx);
int64_t store_column_int(const store_stmt *s, int idx);
double store_column_double(const store_stmt *s, int idx);
const char *store_column_text(const store_stmt *s, int idx, size_t *len);
const void *store_column_blob(const store_stmt *s, int idx, size_t *len);

/* rowid of the last INSERT and rows changed by the last statement on db. */
int64_t store_last_rowid(const store *db);
int64_t store_changes(const store *db);

/* Frees a statement; NULL is allowed. */
void store_finalize(store_stmt *s);

/* 1 when p is an SQL identifier klab writes unquoted-safe: a letter or
 * '_', then letters, digits and '_'. */
int store_is_identifier(const char *p);

/* The text of an INSERT of one row into table with these columns (in this
 * order, one "?" each; none: DEFAULT VALUES). table and every column must
 * be identifiers (KS_EINVAL otherwise). *out is malloc'ed; the caller
 * frees it. */
int store_insert_text(const char *table, const char *const *cols, size_t ncol, char **out, ks_status *st);

/* Reads whose rows the Lua binding hands over whole, one field a column;
 * each takes one parameter. */
extern const char STORE_SQL_EVALUATION_BY_ID[];  /* ?: evaluations.id */
extern const char STORE_SQL_MEASUREMENTS_OF[];   /* ?: evaluation_id; name, value by name */
extern const char STORE_SQL_RESPONSE_BY_HASH[];  /* ?: responses.hash */

/* ---- hashing ----
 * SHA-256 in lower-case hex over parts, each framed as its 8-byte
 * little-endian length then its bytes; a NULL part (p[i] == NULL) is framed
 * as the length 0xFFFFFFFFFFFFFFFF and no bytes, so NULL and "" differ.
 * lens may be NULL when every part is a NUL-terminated string. */
void store_hash_parts(const char *const *p, const size_t *lens, size_t n,
                      char out[STORE_HASH_HEX + 1]);

/* ---- typed helpers ---- */

typedef struct store_candidate {
    const char *language;   /* "ptx", "cuda", ... (required) */
    const char *code;       /* device code text (required) */
    size_t code_len;        /* 0: strlen(code) */
    const char *plan;       /* launch plan chunk; NULL = the task's default */
    const char *source;     /* where it came from (model, file, seed); may be NULL */
    const char *meta;       /* JSON text; may be NULL */
} store_candidate;

/* Content hash of a candidate: store_hash_parts over
 * {"klab.candidate.1", language, code, plan}. */
void store_candidate_hash(const store_candidate *c, char out[STORE_HASH_HEX + 1]);

/* Inserts the candidate unless one with the same content hash exists, and
 * returns its id (and, when not NULL, whether it was new and its hash).
 * source and meta of the first insert are kept. Atomic. */
int store_put_candidate(store *db, const store_candidate *c, int64_t *id, int *created,
                        char hash[STORE_HASH_HEX + 1], ks_status *st);

/* One compile of a candidate for an architecture: what the compiler made
 * of it (the compiles table). The module image itself is not kept: it is
 * made again from the code, and the compile cache holds it. */
typedef struct store_compile {
    int64_t candidate_id;   /* required, must exist */
    const char *arch;       /* required, e.g. "sm_90a" */
    const char *hash;       /* required: what identifies the compile (the compile cache's key) */
    const char *options;    /* JSON text of the compile's options; may be NULL */
    const char *compiler;   /* e.g. "nvrtc 12.8"; may be NULL */
    int ok;                 /* 1: it built; 0: it failed (log says why) */
    int64_t registers;      /* the largest of the module's kernels; < 0: unknown */
    int64_t spill_stores;   /* bytes, the largest of its kernels; < 0: unknown */
    int64_t spill_loads;
    int64_t shared_bytes;   /* static shared memory */
    int64_t local_bytes;
    const char *census;     /* JSON text of the PTX census; may be NULL */
    const char *log;        /* the compiler's log; may be NULL */
    double seconds;         /* how long the compile took; < 0: unknown */
} store_compile;

/* Records a compile unless one with its hash is there (the same hash is
 * the same compile: the first row stays) and sets *id to its row. Atomic. */
int store_put_compile(store *db, const store_compile *c, int64_t *id, ks_status *st);

/* What identifies an evaluation. key is the idempotency key: the same key
 * always means the same (candidate, task, arch, options, replica). */
typedef struct store_eval {
    const char *key;        /* required */
    int64_t candidate_id;   /* required, must exist */
    const char *task;       /* required */
    const char *arch;       /* required, e.g. "sm_90a" */
    int64_t env_id;         /* environment (run) id; 0 = none */
    int64_t compile_id;     /* compile result id; 0 = none */
    int64_t replica;        /* 0, 1, ... */
    const char *options;    /* JSON text of the evaluation options; may be NULL */
    int replace;            /* a finished evaluation with this key is started again (its result replaced) */
} store_eval;

typedef struct store_measurement {
    const char *name;       /* e.g. "median_us"; unique per evaluation */
    double value;
    const char *unit;       /* may be NULL */
} store_measurement;

typedef struct store_result {
    const char *verdict;        /* required: a name in the store's verdicts table */
    const char *reason;         /* short, human-readable; may be NULL */
    const char *timing_method;  /* e.g. "cupti", "events"; may be NULL */
    const char *stage_times;    /* JSON object of seconds per stage; may be NULL */
    const char *detail;         /* JSON text (worst error location, ...); may be NULL */
    int64_t compile_id;         /* when known only at the end; 0 = keep */
    const store_measurement *m;
    size_t nm;
} store_result;

/* Resume rule, step 1. In one transaction: if key is finished, sets *done = 1
 * and *id to it and writes nothing (unless ev->replace: then it is started
 * again in place, like an interrupted one); if key exists but is unfinished (an
 * interrupted run), resets it to a fresh start (its attempts count goes up)
 * and sets *done = 0; otherwise inserts it as running. A key already used for
 * a different candidate, task, arch or replica is KS_EINVAL. */
int store_begin_evaluation(store *db, const store_eval *ev, int64_t *id, int *done,
                           ks_status *st);

/* Resume rule, step 2. In one transaction: marks the running evaluation id
 * finished with r's verdict and fields, and writes its measurements. Fails
 * with KS_ENOTFOUND when id is not a running evaluation (never started or
 * already finished); then nothing is written. */
int store_finish_evaluation(store *db, int64_t id, const store_result *r, ks_status *st);

/* Begin and finish in one transaction: if key is already finished (and
 * proven, unless replaced), *done = 1 and nothing is written; else the
 * evaluation and its measurements are written at once. A finished row is
 * marked as this machine's (store_evaluation_proven). */
int store_record_evaluation(store *db, const store_eval *ev, const store_result *r,
                            int64_t *id, int *done, ks_status *st);

/* *id = the finished evaluation with this key, or 0 when there is none
 * (never started, started and not finished, or not proven to be this
 * machine's user's: store_evaluation_proven). */
int store_evaluation_done(store *db, const char *key, int64_t *id, ks_status *st);

typedef struct store_env {
    const char *host;           /* NULL: gethostname() */
    const char *gpu_name;
    const char *gpu_uuid;
    const char *driver_version;
    const char *cuda_version;
    const char *arch;
    int64_t sm_clock_mhz;       /* 0 = unknown */
    int64_t mem_clock_mhz;      /* 0 = unknown */
    const char *klab_version;   /* NULL: this build's version */
    const char *klab_gitrev;    /* NULL: this build's revision */
    const char *libs;           /* JSON object of library versions */
    const char *extra;          /* JSON object of anything else */
} store_env;

/* Records the environment of a run; *id is the run's environment id. */
int store_put_environment(store *db, const store_env *e, int64_t *id, ks_status *st);

/* One model request and its response, for the response cache. */
typedef struct store_response {
    const char *hash;           /* request hash (required) */
    const char *request;        /* request JSON (required); never API keys */
    const char *response;       /* response JSON; NULL when the call failed */
    int64_t status;             /* HTTP status; 0 = none */
    const char *model;          /* may be NULL */
    const char *error;          /* failure message; may be NULL */
    double latency_ms;          /* < 0: unknown */
    int64_t input_tokens;       /* < 0: unknown */
    int64_t output_tokens;      /* < 0: unknown */
    double cost_usd;            /* < 0: unknown */
} store_response;

/* Stores (or replaces) the response for r->hash. A request that carries a
 * credential field ("authorization", "api_key", "x-api-key", ... as a JSON
 * key) is refused with KS_EINVAL: API keys are never stored. */
int store_cache_put(store *db, const store_response *r, ks_status *st);

#endif
