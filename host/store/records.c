/* records.c: klab's own records in the store: candidates, evaluations and
 * their measurements, environments, and the response cache (see store.h). */
#include "store/db.h"
#include "store/mark.h"

#include "base/redact.h"
#include "base/sha256.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char STORE_SQL_EVALUATION_BY_ID[] = "SELECT * FROM evaluations WHERE id = ?";
const char STORE_SQL_MEASUREMENTS_OF[] =
    "SELECT name, value FROM measurements WHERE evaluation_id = ? ORDER BY name";
const char STORE_SQL_RESPONSE_BY_HASH[] = "SELECT * FROM responses WHERE hash = ?";

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

/* *id = the row that sql (one parameter: a hash) finds for hash: the one an
 * INSERT ... ON CONFLICT(hash) DO NOTHING found already there. */
static int id_of_hash(store *db, const char *sql, const char *what, const char *hash, int64_t *id, ks_status *st)
{
    sqlite3_stmt *s;
    int rc = prep(db, sql, &s, st);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, hash, -1, SQLITE_STATIC);
    int srs = sqlite3_step(s);
    if (srs == SQLITE_ROW)
        *id = sqlite3_column_int64(s, 0);
    else
        rc = srs == SQLITE_DONE ? ks_fail(st, KS_ENOTFOUND, 0, "store: %s %s vanished", what, hash)
                                : sql_fail(db->h, srs, st, "step", sqlite3_sql(s));
    sqlite3_finalize(s);
    return rc;
}

static int put_candidate_tx(store *db, const store_candidate *c, const char *hash, int64_t *id,
                            int *created, ks_status *st)
{
    const store_arg args[] = {ARG_NAME(hash), ARG_NAME(c->language),
                              ARG_BYTES(c->code, c->code_len ? c->code_len : strlen(c->code)),
                              ARG_TEXT(c->plan), ARG_TEXT(c->source), ARG_TEXT(c->meta)};
    int rc = run_args(db,
                      "INSERT INTO candidates(hash, language, code, plan, source, meta)"
                      " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(hash) DO NOTHING",
                      args, NARGS(args), st);
    if (rc)
        return rc;
    if (sqlite3_changes(db->h) == 1) {
        *id = sqlite3_last_insert_rowid(db->h);
        *created = 1;
        return KS_OK;
    }
    *created = 0;
    return id_of_hash(db, "SELECT id FROM candidates WHERE hash = ?", "candidate", hash, id, st);
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
/* Compiles                                                             */

static int put_compile_tx(store *db, const store_compile *c, int64_t *id, ks_status *st)
{
    const store_arg args[] = {
        ARG_INT(c->candidate_id), ARG_NAME(c->arch), ARG_NAME(c->hash),
        ARG_TEXT(c->options), ARG_TEXT(c->compiler), ARG_INT(c->ok ? 1 : 0),
        ARG_KNOWN_INT(c->registers), ARG_KNOWN_INT(c->spill_stores), ARG_KNOWN_INT(c->spill_loads),
        ARG_KNOWN_INT(c->shared_bytes), ARG_KNOWN_INT(c->local_bytes), ARG_TEXT(c->census),
        ARG_TEXT(c->log), ARG_KNOWN_REAL(c->seconds)};
    int rc = run_args(db,
                      "INSERT INTO compiles(candidate_id, arch, hash, options, compiler, ok, registers, spill_stores,"
                      " spill_loads, shared_bytes, local_bytes, census, log, seconds)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(hash) DO NOTHING",
                      args, NARGS(args), st);
    if (rc)
        return rc;
    if (sqlite3_changes(db->h) == 1) {
        *id = sqlite3_last_insert_rowid(db->h);
        return KS_OK;
    }
    return id_of_hash(db, "SELECT id FROM compiles WHERE hash = ?", "compile", c->hash, id, st);
}

int store_put_compile(store *db, const store_compile *c, int64_t *id, ks_status *st)
{
    if (!c || c->candidate_id <= 0 || !c->arch || !*c->arch || !c->hash || !*c->hash)
        return ks_fail(st, KS_EINVAL, 0, "store: a compile needs its candidate, arch and hash");
    int64_t cid = 0;
    int rc = store_begin(db, st);
    if (rc)
        return rc;
    rc = tx_end(db, put_compile_tx(db, c, &cid, st), st);
    if (rc == KS_OK && id)
        *id = cid;
    return rc;
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
        int proven = 0;
        if (is_done && !ev->replace && (rc = store_evaluation_proven(db, eid, &proven, st)) != KS_OK)
            return rc;
        if (proven) {
            *done = 1;
            return KS_OK;
        }
        /* A row nobody here can prove this machine wrote is measured again. */
        /* Interrupted earlier, or replaced: start it again in place. */
        *done = 0;
        const store_arg args[] = {ARG_ID(ev->env_id), ARG_ID(ev->compile_id), ARG_TEXT(ev->options),
                                  ARG_INT(eid)};
        rc = run_args(db,
                      "UPDATE evaluations SET state = 'running', attempts = attempts + 1, started_at = " NOW ","
                      " env_id = ?, compile_id = ?, options = ?, verdict = NULL, reason = NULL,"
                      " timing_method = NULL, stage_times = NULL, detail = NULL, finished_at = NULL"
                      " WHERE id = ?",
                      args, NARGS(args), st);
        if (rc)
            return rc;
        const store_arg of[] = {ARG_INT(eid)};
        return run_args(db, "DELETE FROM measurements WHERE evaluation_id = ?", of, NARGS(of), st);
    }
    if (srs != SQLITE_DONE) {
        rc = sql_fail(db->h, srs, st, "step", sqlite3_sql(s));
        sqlite3_finalize(s);
        return rc;
    }
    sqlite3_finalize(s);
    const store_arg args[] = {ARG_NAME(ev->key), ARG_INT(ev->candidate_id), ARG_NAME(ev->task),
                              ARG_NAME(ev->arch), ARG_INT(ev->replica), ARG_TEXT(ev->options),
                              ARG_ID(ev->env_id), ARG_ID(ev->compile_id)};
    rc = run_args(db,
                  "INSERT INTO evaluations(key, candidate_id, task, arch, replica, options, env_id,"
                  " compile_id, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running')",
                  args, NARGS(args), st);
    if (rc)
        return rc;
    *id = sqlite3_last_insert_rowid(db->h);
    *done = 0;
    return KS_OK;
}

static int finish_eval_tx(store *db, int64_t id, const store_result *r, ks_status *st)
{
    const store_arg args[] = {ARG_NAME(r->verdict), ARG_TEXT(r->reason), ARG_TEXT(r->timing_method),
                              ARG_TEXT(r->stage_times), ARG_TEXT(r->detail), ARG_ID(r->compile_id),
                              ARG_INT(id)};
    int rc = run_args(db,
                      "UPDATE evaluations SET state = 'done', verdict = ?, reason = ?, timing_method = ?,"
                      " stage_times = ?, detail = ?, compile_id = coalesce(?, compile_id),"
                      " finished_at = " NOW " WHERE id = ? AND state = 'running'",
                      args, NARGS(args), st);
    if (rc)
        return rc;
    if (sqlite3_changes(db->h) != 1)
        return ks_fail(st, KS_ENOTFOUND, 0, "store: evaluation %lld is not running (never begun, or finished)",
                       (long long)id);
    /* The row is marked once it is whole, measurements included. */
    if (r->nm == 0)
        return mark_evaluation(db, id, st);
    sqlite3_stmt *s;
    rc = prep(db, "INSERT INTO measurements(evaluation_id, name, value, unit) VALUES (?, ?, ?, ?)", &s, st);
    if (rc)
        return rc;
    for (size_t i = 0; rc == KS_OK && i < r->nm; i++) {
        sqlite3_reset(s);
        const store_arg m[] = {ARG_INT(id), ARG_NAME(r->m[i].name), ARG_REAL(r->m[i].value),
                               ARG_TEXT(r->m[i].unit)};
        int b = bind_args(s, m, NARGS(m));
        rc = b ? bind_fail(db, s, b, st) : step_done(db, s, st);
    }
    sqlite3_finalize(s);
    return rc ? rc : mark_evaluation(db, id, st);
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
    int64_t found = 0;
    if (srs == SQLITE_ROW)
        found = sqlite3_column_int64(s, 0);
    else if (srs != SQLITE_DONE)
        rc = sql_fail(db->h, srs, st, "step", sqlite3_sql(s));
    sqlite3_finalize(s);
    /* Only a row this machine's user is proven to have written answers as
     * a measurement (mark.c). */
    int proven = 0;
    if (rc == KS_OK && found)
        rc = store_evaluation_proven(db, found, &proven, st);
    if (rc == KS_OK && proven)
        *id = found;
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
    const store_arg args[] = {
        ARG_NAME(h), ARG_INT((int64_t)getpid()), ARG_TEXT(e->gpu_name), ARG_TEXT(e->gpu_uuid),
        ARG_TEXT(e->driver_version), ARG_TEXT(e->cuda_version), ARG_TEXT(e->arch), ARG_ID(e->sm_clock_mhz),
        ARG_ID(e->mem_clock_mhz), ARG_NAME(e->klab_version ? e->klab_version : KLAB_VERSION),
        ARG_NAME(e->klab_gitrev ? e->klab_gitrev : KLAB_GITREV), ARG_TEXT(e->libs), ARG_TEXT(e->extra)};
    int rc = run_args(db,
                      "INSERT INTO environments(host, pid, gpu_name, gpu_uuid, driver_version, cuda_version,"
                      " arch, sm_clock_mhz, mem_clock_mhz, klab_version, klab_gitrev, libs, extra)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      args, NARGS(args), st);
    if (rc == KS_OK && id)
        *id = sqlite3_last_insert_rowid(db->h);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Response cache                                                       */

int store_cache_put(store *db, const store_response *r, ks_status *st)
{
    if (!r || !r->hash || !*r->hash || !r->request)
        return ks_fail(st, KS_EINVAL, 0, "store: a cached response needs a hash and a request");
    if (redact_has_credential(r->request))
        return ks_fail(st, KS_EINVAL, 0, "store: request %s carries a credential field; API keys are never stored",
                       r->hash);
    const store_arg args[] = {
        ARG_NAME(r->hash), ARG_BYTES(r->request, strlen(r->request)), ARG_TEXT(r->response),
        ARG_ID(r->status), ARG_TEXT(r->model), ARG_TEXT(r->error), ARG_KNOWN_REAL(r->latency_ms),
        ARG_KNOWN_INT(r->input_tokens), ARG_KNOWN_INT(r->output_tokens), ARG_KNOWN_REAL(r->cost_usd)};
    return run_args(db,
                    "INSERT OR REPLACE INTO responses(hash, request, response, status, model, error,"
                    " latency_ms, input_tokens, output_tokens, cost_usd)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    args, NARGS(args), st);
}
