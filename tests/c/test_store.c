/* test_store.c: the result store (host/store/store.c), Lua-free. */
#include <sqlite3.h>

#include "check.h"
#include "store/store.h"
#include "store/db.h"     /* run_args, the writers' one bind loop */
#include "store/schema.h" /* legacy_experiment_tables */
#include "store/tables.h"
#include "base/hmac.h"
#include "base/redact.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

static void remove_db(const char *path)
{
    char p[600];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

/* First column of the first row of sql as an integer; -1 on failure. */
static int64_t scalar(store *db, const char *sql)
{
    ks_status st;
    store_stmt *s;
    if (store_prepare(db, sql, &s, &st) != KS_OK) {
        fprintf(stderr, "scalar: %s\n", st.msg);
        return -1;
    }
    int64_t v = -1;
    if (store_step(s, &st) == STORE_ROW)
        v = store_column_int(s, 0);
    store_finalize(s);
    return v;
}

/* First column of the first row as text into out ("" on failure). */
static void scalar_text(store *db, const char *sql, char *out, size_t n)
{
    ks_status st;
    store_stmt *s;
    out[0] = '\0';
    if (store_prepare(db, sql, &s, &st) != KS_OK)
        return;
    if (store_step(s, &st) == STORE_ROW)
        snprintf(out, n, "%s", store_column_text(s, 0, NULL));
    store_finalize(s);
}

/* The verdicts a store accepts are the rows of its verdicts table, which
 * klab.eval.verdict writes; these tests write the few they use. */
static void define_verdicts(store *db)
{
    ks_status st;
    int rc = store_exec(db,
                        "INSERT OR REPLACE INTO verdicts(name, rank, short, class) VALUES"
                        " ('incorrect', 1, 'I', 'failed'), ('passed', 2, 'P', 'correct')",
                        &st);
    CHECKF(rc == KS_OK, "define verdicts: %s", st.msg);
}

static store *open_db(const char *path)
{
    store *db = NULL;
    ks_status st;
    int rc = store_open(&db, path, NULL, &st);
    CHECKF(rc == KS_OK, "open %s: %s", path, st.msg);
    if (db)
        define_verdicts(db);
    return db;
}

static int64_t put_cand(store *db, const char *code, const char *plan, int *created)
{
    store_candidate c = {.language = "ptx", .code = code, .plan = plan, .source = "test"};
    int64_t id = 0;
    int made = -1;
    ks_status st;
    int rc = store_put_candidate(db, &c, &id, &made, NULL, &st);
    CHECKF(rc == KS_OK, "put_candidate: %s", st.msg);
    if (created)
        *created = made;
    return id;
}

static void test_hash(void)
{
    char out[STORE_HASH_HEX + 1];
    const char *abc[] = {"abc"};
    store_hash_parts(abc, NULL, 1, out);
    CHECK(strcmp(out, "ce91dc5eec0139adf091900d225971d6ad246a845bad791b5693a9d0d55dd391") == 0);
    char big[1001];
    memset(big, 'a', 1000);
    big[1000] = '\0';
    const char *parts[] = {big, NULL, ""};
    store_hash_parts(parts, NULL, 3, out);
    CHECK(strcmp(out, "9424378e16c501b043e45c77b829b262f5e38b3859127cabf79635f954a47977") == 0);
    store_hash_parts(NULL, NULL, 0, out);
    CHECK(strcmp(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0);
}

/* The INSERT text the Lua binding's db:insert runs: quoted identifiers,
 * one parameter a column, and nothing else let through. */
static void test_insert_text(void)
{
    ks_status st;
    char *t = NULL;
    const char *cols[] = {"name", "config"};
    CHECK(store_insert_text("experiments", cols, 2, &t, &st) == KS_OK);
    CHECK(t && strcmp(t, "INSERT INTO \"experiments\" (\"name\", \"config\") VALUES (?, ?)") == 0);
    free(t);
    CHECK(store_insert_text("t", NULL, 0, &t, &st) == KS_OK);
    CHECK(t && strcmp(t, "INSERT INTO \"t\" DEFAULT VALUES") == 0);
    free(t);
    const char *bad[] = {"name", "x\" ) ; DROP TABLE t; --"};
    CHECK(store_insert_text("t", bad, 2, &t, &st) == KS_EINVAL && t == NULL);
    CHECK(store_insert_text("t; DROP", cols, 2, &t, &st) == KS_EINVAL && t == NULL);
    CHECK(!store_is_identifier("1x") && !store_is_identifier("") && store_is_identifier("_a1"));
}

static void test_schema(void)
{
    char path[512];
    path_in(path, sizeof path, "schema.db");
    store *db = open_db(path);
    if (!db)
        return;
    CHECK(store_schema_version(db) == STORE_SCHEMA_VERSION);
    const char *tables[] = {"schema_version", "environments", "candidates", "compiles", "evaluations",
                            "measurements", "responses", "experiments", "trajectories", "turns",
                            "verdicts"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char sql[200];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='%s'",
                 tables[i]);
        CHECKF(scalar(db, sql) == 1, "table %s", tables[i]);
    }
    char mode[32];
    scalar_text(db, "PRAGMA journal_mode", mode, sizeof mode);
    CHECKF(strcmp(mode, "wal") == 0, "journal mode %s", mode);
    CHECK(scalar(db, "PRAGMA foreign_keys") == 1);
    CHECK(scalar(db, "SELECT max(version) FROM schema_version") == STORE_SCHEMA_VERSION);
    store_close(&db);
    CHECK(db == NULL);
    store_close(&db); /* idempotent */
    store_close(NULL);

    /* Reopening neither recreates nor re-applies anything. */
    db = open_db(path);
    if (!db)
        return;
    CHECK(scalar(db, "SELECT count(*) FROM schema_version") == STORE_SCHEMA_VERSION);
    /* Foreign keys are enforced. */
    ks_status st;
    int rc = store_exec(db, "INSERT INTO compiles(candidate_id, arch, hash, ok) VALUES (999, 'sm_90a', 'h', 1)", &st);
    CHECKF(rc == KS_EREJECT && strstr(st.msg, "FOREIGN KEY"), "fk: %d %s", rc, st.msg);

    /* A version-1 store whose experiment tables the experiment library made
     * itself, in its own words (with rows in them), is migrated: the tables
     * and rows stay, the verdicts table and its triggers are added. */
    rc = store_exec(db,
                    "DROP TRIGGER turns_verdict_insert; DROP TRIGGER turns_verdict_update;"
                    " DROP TRIGGER evaluations_verdict_insert; DROP TRIGGER evaluations_verdict_update;"
                    " DROP TABLE verdicts; DROP TABLE turns; DROP TABLE trajectories; DROP TABLE experiments;"
                    " ALTER TABLE evaluations DROP COLUMN mark;"
                    " DELETE FROM schema_version WHERE version >= 2;",
                    &st);
    CHECKF(rc == KS_OK, "back to v1: %s", st.msg);
    rc = store_exec(db, legacy_experiment_tables, &st);
    if (rc == KS_OK)
        rc = store_exec(db, "INSERT INTO experiments(name) VALUES ('old');", &st);
    CHECKF(rc == KS_OK, "the library's tables: %s", st.msg);
    store_close(&db);
    db = open_db(path);
    if (!db)
        return;
    CHECK(store_schema_version(db) == STORE_SCHEMA_VERSION);
    CHECK(scalar(db, "SELECT count(*) FROM experiments WHERE name = 'old'") == 1);
    CHECK(scalar(db, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") == 4);
    CHECK(scalar(db, "SELECT count(*) FROM pragma_table_info('turns') WHERE name = 'awaiting'") == 1);

    /* A file from a newer klab is refused. */
    CHECK(store_exec(db, "INSERT INTO schema_version(version, description) VALUES (99, 'future')", &st) == KS_OK);
    store_close(&db);
    rc = store_open(&db, path, NULL, &st);
    CHECKF(rc == KS_EUNSUPPORTED && db == NULL && strstr(st.msg, "99"), "newer: %d %s", rc, st.msg);
    remove_db(path);

    /* An SQLite file that is not a store is refused, not adopted. */
    path_in(path, sizeof path, "other.db");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("this is not a database, just some text that is long enough to matter..........", f);
        fclose(f);
    }
    rc = store_open(&db, path, NULL, &st);
    CHECKF(rc == KS_EIO && db == NULL && strstr(st.msg, "SQLITE_NOTADB"), "not a db: %d %s", rc, st.msg);
    remove_db(path);

    /* Read-only: reads work, writes fail as ordinary I/O failures. */
    path_in(path, sizeof path, "ro.db");
    db = open_db(path);
    put_cand(db, "ro", NULL, NULL);
    store_close(&db);
    store_options ro = {.readonly = 1};
    rc = store_open(&db, path, &ro, &st);
    CHECKF(rc == KS_OK, "readonly open: %s", st.msg);
    if (db) {
        CHECK(scalar(db, "SELECT count(*) FROM candidates") == 1);
        rc = store_exec(db, "DELETE FROM candidates", &st);
        CHECKF(rc == KS_EIO && strstr(st.msg, "SQLITE_READONLY"), "readonly write: %d %s", rc, st.msg);
        store_close(&db);
    }
    remove_db(path);

    rc = store_open(&db, "", NULL, &st);
    CHECK(rc == KS_EINVAL && db == NULL);
}

/* A symbolic link planted at a store's name (to a file of the user's, or
 * dangling to where a file would be made) is refused by name; the file it
 * points to is neither written nor made. A link in the folder part of the
 * path is the user's own and works. */
static void test_store_behind_a_link(void)
{
    store *db = NULL;
    ks_status st;
    char marker[512], link[512], missing[512], real[512], folder[512], via[600];
    path_in(marker, sizeof marker, "marker");
    FILE *f = fopen(marker, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("marker", f);
    fclose(f);
    path_in(link, sizeof link, "linked.db");
    CHECK(symlink(marker, link) == 0);
    int rc = store_open(&db, link, NULL, &st);
    CHECKF(rc == KS_EINVAL && db == NULL && strstr(st.msg, link) && strstr(st.msg, "symbolic link"), "%d %s", rc,
           st.msg);
    char buf[32] = "";
    f = fopen(marker, "r");
    CHECK(f && fgets(buf, sizeof buf, f) && strcmp(buf, "marker") == 0);
    if (f)
        fclose(f);
    unlink(link);
    path_in(missing, sizeof missing, "made-through-a-link.db");
    CHECK(symlink(missing, link) == 0);
    CHECK(store_open(&db, link, NULL, &st) == KS_EINVAL && db == NULL);
    CHECK(access(missing, F_OK) != 0);
    unlink(link);
    unlink(marker);

    path_in(real, sizeof real, "real");
    path_in(folder, sizeof folder, "folder-link");
    CHECK(mkdir(real, 0700) == 0 && symlink(real, folder) == 0);
    snprintf(via, sizeof via, "%s/s.db", folder);
    rc = store_open(&db, via, NULL, &st);
    CHECKF(rc == KS_OK && db, "through a linked folder: %s", st.msg);
    store_close(&db);
    remove_db(via);
    unlink(folder);
    CHECK(rmdir(real) == 0);
}

static void test_statements(void)
{
    store *db = NULL;
    ks_status st;
    CHECK(store_open(&db, ":memory:", NULL, &st) == KS_OK);
    if (!db)
        return;
    CHECK(store_exec(db, "CREATE TABLE t(a, b, c, d, e)", &st) == KS_OK);
    store_stmt *s = NULL;
    CHECK(store_prepare(db, "INSERT INTO t VALUES (?, ?, ?, ?, :e);", &s, &st) == KS_OK);
    if (!s)
        return;
    CHECK(store_param_count(s) == 5);
    CHECK(store_param_index(s, ":e") == 5);
    CHECK(store_param_index(s, ":nope") == 0);
    const char blob[] = {1, 0, 2, (char)0xff};
    CHECK(store_bind_int(s, 1, INT64_C(9007199254740993), &st) == KS_OK);
    CHECK(store_bind_double(s, 2, 2.5, &st) == KS_OK);
    CHECK(store_bind_text(s, 3, "x\0y", 3, &st) == KS_OK);
    CHECK(store_bind_blob(s, 4, blob, sizeof blob, &st) == KS_OK);
    CHECK(store_bind_null(s, 5, &st) == KS_OK);
    int rc = store_bind_int(s, 6, 1, &st);
    CHECKF(rc == KS_EINVAL && strstr(st.msg, "out of range"), "range: %s", st.msg);
    CHECK(store_step(s, &st) == KS_OK);
    CHECK(store_last_rowid(db) == 1);
    CHECK(store_changes(db) == 1);
    /* Reuse: reset keeps bindings. */
    CHECK(store_reset(s, &st) == KS_OK);
    CHECK(store_bind_blob(s, 4, NULL, 0, &st) == KS_OK);
    CHECK(store_step(s, &st) == KS_OK);
    store_finalize(s);

    CHECK(store_prepare(db, "SELECT a, b, c, d, e FROM t ORDER BY rowid", &s, &st) == KS_OK);
    CHECK(store_column_count(s) == 5);
    CHECK(strcmp(store_column_name(s, 2), "c") == 0);
    CHECK(store_step(s, &st) == STORE_ROW);
    CHECK(store_column_type(s, 0) == STORE_INT && store_column_int(s, 0) == INT64_C(9007199254740993));
    CHECK(store_column_type(s, 1) == STORE_FLOAT && store_column_double(s, 1) == 2.5);
    size_t n = 0;
    const char *txt = store_column_text(s, 2, &n);
    CHECK(store_column_type(s, 2) == STORE_TEXT && n == 3 && memcmp(txt, "x\0y", 3) == 0);
    const void *b = store_column_blob(s, 3, &n);
    CHECK(store_column_type(s, 3) == STORE_BLOB && n == 4 && memcmp(b, blob, 4) == 0);
    CHECK(store_column_type(s, 4) == STORE_NULL);
    CHECK(store_step(s, &st) == STORE_ROW);
    CHECK(store_column_type(s, 3) == STORE_BLOB);   /* empty blob, not NULL */
    store_column_blob(s, 3, &n);
    CHECK(n == 0);
    CHECK(store_step(s, &st) == KS_OK);
    store_finalize(s);
    store_finalize(NULL);

    /* Errors name the SQL error. */
    s = NULL;
    rc = store_prepare(db, "SELEC 1", &s, &st);
    CHECKF(rc == KS_EINVAL && s == NULL && strstr(st.msg, "syntax error") && strstr(st.msg, "SQLITE_ERROR"),
           "syntax: %s", st.msg);
    rc = store_prepare(db, "SELECT * FROM nope", &s, &st);
    CHECKF(rc == KS_EINVAL && strstr(st.msg, "no such table: nope"), "table: %s", st.msg);
    rc = store_prepare(db, "SELECT 1; SELECT 2", &s, &st);
    CHECKF(rc == KS_EINVAL && s == NULL && strstr(st.msg, "more than one"), "two: %s", st.msg);
    rc = store_prepare(db, "SELECT 1; -- just a comment", &s, &st);
    CHECK(rc == KS_OK);
    store_finalize(s);
    rc = store_prepare(db, "  -- nothing", &s, &st);
    CHECK(rc == KS_EINVAL);
    CHECK(store_exec(db, "CREATE TABLE u(k TEXT PRIMARY KEY); INSERT INTO u VALUES ('a')", &st) == KS_OK);
    rc = store_exec(db, "INSERT INTO u VALUES ('a')", &st);
    CHECKF(rc == KS_EREJECT && strstr(st.msg, "UNIQUE constraint failed: u.k") &&
           strstr(st.msg, "SQLITE_CONSTRAINT") && (st.sub & 0xff) == 19, "constraint: %s", st.msg);
    CHECK(store_prepare(db, "INSERT INTO u VALUES (?)", &s, &st) == KS_OK);
    store_bind_text(s, 1, "a", 1, &st);
    rc = store_step(s, &st);
    CHECKF(rc == KS_EREJECT && strstr(st.msg, "UNIQUE"), "step constraint: %s", st.msg);
    store_finalize(s);
    store_close(&db);
}

static void test_candidates(void)
{
    store *db = NULL;
    ks_status st;
    CHECK(store_open(&db, ":memory:", NULL, &st) == KS_OK);
    if (!db)
        return;
    int c1, c2, c3, c4;
    int64_t a = put_cand(db, ".version 8.0\n", NULL, &c1);
    int64_t b = put_cand(db, ".version 8.0\n", NULL, &c2);
    int64_t c = put_cand(db, ".version 8.0\n", "return {}", &c3);
    int64_t d = put_cand(db, ".version 8.0\n", "", &c4);
    CHECK(a > 0 && a == b && c1 == 1 && c2 == 0);
    CHECK(c != a && c3 == 1);
    CHECK(d != a && d != c && c4 == 1); /* NULL plan and "" differ */
    CHECK(scalar(db, "SELECT count(*) FROM candidates") == 3);
    /* The stored hash is the documented one. */
    char h[STORE_HASH_HEX + 1], want[STORE_HASH_HEX + 1];
    store_candidate cc = {.language = "ptx", .code = ".version 8.0\n"};
    store_candidate_hash(&cc, want);
    const char *parts[] = {"klab.candidate.1", "ptx", ".version 8.0\n", NULL};
    store_hash_parts(parts, NULL, 4, h);
    CHECK(strcmp(h, want) == 0);
    char got[80];
    scalar_text(db, "SELECT hash FROM candidates WHERE id = 1", got, sizeof got);
    CHECK(strcmp(got, want) == 0);
    /* The language is part of the identity. */
    store_candidate cu = {.language = "cuda", .code = ".version 8.0\n"};
    int64_t e = 0;
    int made = 0;
    CHECK(store_put_candidate(db, &cu, &e, &made, h, &st) == KS_OK && made == 1 && e != a);
    CHECK(strcmp(h, want) != 0);
    store_candidate bad = {.language = "ptx"};
    CHECK(store_put_candidate(db, &bad, &e, &made, NULL, &st) == KS_EINVAL);
    store_close(&db);
}

static store_eval eval_of(const char *key, int64_t cand)
{
    store_eval ev = {.key = key, .candidate_id = cand, .task = "gemm_f16", .arch = "sm_90a"};
    return ev;
}

static void test_evaluations(void)
{
    char path[512];
    path_in(path, sizeof path, "eval.db");
    store *db = open_db(path);
    if (!db)
        return;
    ks_status st;
    int64_t cand = put_cand(db, "code-1", NULL, NULL);
    store_eval ev = eval_of("k1", cand);
    int64_t id = 0, id2 = 0;
    int done = -1;

    CHECK(store_evaluation_done(db, "k1", &id, &st) == KS_OK && id == 0);
    CHECK(store_begin_evaluation(db, &ev, &id, &done, &st) == KS_OK && id > 0 && done == 0);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE state = 'running'") == 1);
    CHECK(store_evaluation_done(db, "k1", &id2, &st) == KS_OK && id2 == 0); /* running is not done */

    store_measurement m[] = {{"median_us", 12.5, "us"}, {"tflops", 410.0, "TFLOP/s"}};
    store_result r = {.verdict = "passed", .reason = "ok", .timing_method = "cupti",
                      .stage_times = "{\"build\":0.1}", .m = m, .nm = 2};
    CHECKF(store_finish_evaluation(db, id, &r, &st) == KS_OK, "finish: %s", st.msg);
    CHECK(store_evaluation_done(db, "k1", &id2, &st) == KS_OK && id2 == id);
    CHECK(scalar(db, "SELECT count(*) FROM measurements") == 2);

    /* Same key again: reported done, nothing written. */
    done = -1;
    CHECK(store_begin_evaluation(db, &ev, &id2, &done, &st) == KS_OK && done == 1 && id2 == id);
    CHECK(scalar(db, "SELECT attempts FROM evaluations WHERE key = 'k1'") == 1);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations") == 1);
    /* Finishing twice is refused and changes nothing. */
    r.verdict = "incorrect";
    int rc = store_finish_evaluation(db, id, &r, &st);
    CHECKF(rc == KS_ENOTFOUND, "finish twice: %d %s", rc, st.msg);
    char v[64];
    scalar_text(db, "SELECT verdict FROM evaluations WHERE key = 'k1'", v, sizeof v);
    CHECK(strcmp(v, "passed") == 0);
    CHECK(store_finish_evaluation(db, 12345, &r, &st) == KS_ENOTFOUND);

    /* A finished evaluation is started again in place when asked to be
     * replaced (a result that was not a measurement). */
    store_eval again = eval_of("k1", cand);
    again.replace = 1;
    rc = store_begin_evaluation(db, &again, &id2, &done, &st);
    CHECKF(rc == KS_OK && done == 0 && id2 == id, "replace: %d %s", rc, st.msg);
    CHECK(scalar(db, "SELECT attempts FROM evaluations WHERE key = 'k1'") == 2);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key = 'k1' AND state = 'running'") == 1);
    CHECK(scalar(db, "SELECT count(*) FROM measurements WHERE evaluation_id = (SELECT id FROM evaluations WHERE key = 'k1')") == 0);
    CHECK(store_finish_evaluation(db, id, &r, &st) == KS_OK);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key = 'k1' AND state = 'done'") == 1);

    /* A key reused for another evaluation is misuse. */
    store_eval other = eval_of("k1", cand);
    other.arch = "sm_100a";
    rc = store_begin_evaluation(db, &other, &id2, &done, &st);
    CHECKF(rc == KS_EINVAL && strstr(st.msg, "already used"), "reuse: %s", st.msg);

    /* Bad input. */
    r.verdict = "pass";
    CHECK(store_finish_evaluation(db, id, &r, &st) == KS_EINVAL && strstr(st.msg, "unknown verdict 'pass'"));
    /* The constraint holds for any write, not only through the typed API. */
    rc = store_exec(db, "UPDATE evaluations SET verdict = 'fast' WHERE key = 'k1'", &st);
    CHECKF(rc == KS_EREJECT && strstr(st.msg, "unknown verdict"), "trigger: %s", st.msg);
    store_eval nokey = eval_of("", cand);
    CHECK(store_begin_evaluation(db, &nokey, &id2, &done, &st) == KS_EINVAL);
    store_eval nocand = eval_of("k9", 424242);
    rc = store_begin_evaluation(db, &nocand, &id2, &done, &st);
    CHECKF(rc == KS_EREJECT && strstr(st.msg, "FOREIGN KEY"), "fk: %s", st.msg);

    /* An unfinished evaluation is redone and replaced after a restart. */
    store_eval ev2 = eval_of("k2", cand);
    int64_t first = 0;
    CHECK(store_begin_evaluation(db, &ev2, &first, &done, &st) == KS_OK && done == 0);
    store_close(&db);
    db = open_db(path);
    if (!db)
        return;
    CHECK(store_evaluation_done(db, "k2", &id2, &st) == KS_OK && id2 == 0);
    CHECK(store_begin_evaluation(db, &ev2, &id2, &done, &st) == KS_OK && done == 0 && id2 == first);
    CHECK(scalar(db, "SELECT attempts FROM evaluations WHERE key = 'k2'") == 2);
    store_measurement m2[] = {{"median_us", 7.0, "us"}};
    store_result r2 = {.verdict = "incorrect", .reason = "stage timing passed 10 s", .m = m2, .nm = 1};
    CHECK(store_finish_evaluation(db, id2, &r2, &st) == KS_OK);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key = 'k2'") == 1);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key = 'k2' AND state = 'done'") == 1);
    CHECK(scalar(db, "SELECT count(*) FROM measurements WHERE evaluation_id = (SELECT id FROM evaluations WHERE key = 'k2')") == 1);

    /* record_evaluation: all or nothing. A duplicate measurement name makes
     * the whole evaluation vanish, not half of it. */
    store_measurement dup[] = {{"median_us", 1.0, "us"}, {"median_us", 2.0, "us"}};
    store_result rd = {.verdict = "passed", .m = dup, .nm = 2};
    store_eval ev3 = eval_of("k3", cand);
    rc = store_record_evaluation(db, &ev3, &rd, &id2, &done, &st);
    CHECKF(rc == KS_EREJECT && strstr(st.msg, "UNIQUE"), "dup measurement: %d %s", rc, st.msg);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key = 'k3'") == 0);
    CHECK(!store_in_transaction(db));
    store_measurement nan[] = {{"x", 0.0 / 0.0, NULL}};
    store_result rn = {.verdict = "passed", .m = nan, .nm = 1};
    CHECK(store_record_evaluation(db, &ev3, &rn, &id2, &done, &st) == KS_EINVAL);
    rd.nm = 1;
    CHECK(store_record_evaluation(db, &ev3, &rd, &id2, &done, &st) == KS_OK && done == 0);
    int64_t id3 = id2;
    CHECK(store_record_evaluation(db, &ev3, &rd, &id2, &done, &st) == KS_OK && done == 1 && id2 == id3);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key = 'k3'") == 1);
    CHECK(scalar(db, "SELECT count(*) FROM measurements WHERE evaluation_id = (SELECT id FROM evaluations WHERE key = 'k3')") == 1);
    store_close(&db);
    remove_db(path);
}

static void test_transactions(void)
{
    char path[512];
    path_in(path, sizeof path, "tx.db");
    store *db = open_db(path);
    if (!db)
        return;
    ks_status st;
    int64_t cand = put_cand(db, "base", NULL, NULL);

    /* A rollback leaves nothing: candidates, evaluations, measurements. */
    CHECK(store_begin(db, &st) == KS_OK && store_in_transaction(db));
    int64_t c2 = put_cand(db, "rolled back", NULL, NULL);
    store_eval ev = eval_of("tx1", c2);
    store_measurement m[] = {{"median_us", 1.0, "us"}};
    store_result r = {.verdict = "passed", .m = m, .nm = 1};
    int64_t id;
    int done;
    CHECK(store_record_evaluation(db, &ev, &r, &id, &done, &st) == KS_OK);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations") == 1); /* visible inside */
    CHECK(store_rollback(db, &st) == KS_OK && !store_in_transaction(db));
    CHECK(scalar(db, "SELECT count(*) FROM candidates") == 1);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations") == 0);
    CHECK(scalar(db, "SELECT count(*) FROM measurements") == 0);
    CHECK(store_rollback(db, &st) == KS_OK); /* nothing open: fine */
    CHECK(store_commit(db, &st) == KS_EINVAL);

    /* Nested: the inner rollback undoes only the inner part. */
    CHECK(store_begin(db, &st) == KS_OK);
    ev = eval_of("outer", cand);
    CHECK(store_record_evaluation(db, &ev, &r, &id, &done, &st) == KS_OK);
    CHECK(store_begin(db, &st) == KS_OK);
    ev = eval_of("inner", cand);
    CHECK(store_record_evaluation(db, &ev, &r, &id, &done, &st) == KS_OK);
    CHECK(store_rollback(db, &st) == KS_OK && store_in_transaction(db));
    CHECK(store_commit(db, &st) == KS_OK && !store_in_transaction(db));
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key = 'outer'") == 1);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key = 'inner'") == 0);

    /* Another writer holding the lock past the busy timeout: a timeout. */
    store *db2 = NULL;
    store_options quick = {.busy_timeout_ms = 100};
    CHECK(store_open(&db2, path, &quick, &st) == KS_OK);
    if (db2) {
        CHECK(store_begin(db, &st) == KS_OK);
        int rc = store_begin(db2, &st);
        CHECKF(rc == KS_ETIMEOUT && strstr(st.msg, "SQLITE_BUSY"), "busy: %d %s", rc, st.msg);
        ev = eval_of("busy", cand);
        rc = store_record_evaluation(db2, &ev, &r, &id, &done, &st);
        CHECK(rc == KS_ETIMEOUT);
        /* Readers are not blocked by the writer in WAL mode. */
        CHECK(scalar(db2, "SELECT count(*) FROM evaluations") == 1);
        CHECK(store_commit(db, &st) == KS_OK);
        CHECK(store_record_evaluation(db2, &ev, &r, &id, &done, &st) == KS_OK && done == 0);
        store_close(&db2);
    }
    store_close(&db);
    remove_db(path);
}

/* Child: writes n evaluations with keys "<tag>-<i>", one transaction each. */
static int child_writer(const char *path, const char *tag, int n)
{
    store *db = NULL;
    ks_status st;
    if (store_open(&db, path, NULL, &st) != KS_OK) {
        fprintf(stderr, "child %s: %s\n", tag, st.msg);
        return 2;
    }
    define_verdicts(db);
    store_candidate c = {.language = "ptx", .code = "shared candidate"};
    int64_t cand;
    if (store_put_candidate(db, &c, &cand, NULL, NULL, &st) != KS_OK) {
        fprintf(stderr, "child %s: %s\n", tag, st.msg);
        return 3;
    }
    for (int i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s-%d", tag, i);
        store_eval ev = {.key = key, .candidate_id = cand, .task = "t", .arch = "sm_90a"};
        store_measurement m[] = {{"median_us", (double)i, "us"}};
        store_result r = {.verdict = "passed", .m = m, .nm = 1};
        int64_t id;
        int done;
        if (store_record_evaluation(db, &ev, &r, &id, &done, &st) != KS_OK || done) {
            fprintf(stderr, "child %s at %d: %s\n", tag, i, st.msg);
            return 4;
        }
    }
    store_close(&db);
    return 0;
}

static void test_concurrent_processes(void)
{
    char path[512];
    path_in(path, sizeof path, "conc.db");
    remove_db(path);
    const char *tags[2] = {"A", "B"};
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        pids[i] = fork();
        if (pids[i] == 0)
            _exit(child_writer(path, tags[i], 200));
        CHECK(pids[i] > 0);
    }
    for (int i = 0; i < 2; i++) {
        int status = 0;
        if (pids[i] > 0) {
            waitpid(pids[i], &status, 0);
            CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %s status %d", tags[i], status);
        }
    }
    store *db = open_db(path);
    if (!db)
        return;
    CHECK(scalar(db, "SELECT count(*) FROM evaluations") == 400);
    CHECK(scalar(db, "SELECT count(DISTINCT key) FROM evaluations") == 400);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key LIKE 'A-%'") == 200);
    CHECK(scalar(db, "SELECT count(*) FROM measurements") == 400);
    CHECK(scalar(db, "SELECT count(*) FROM candidates") == 1);
    CHECK(scalar(db, "SELECT count(*) FROM schema_version") == STORE_SCHEMA_VERSION);
    store_close(&db);
    remove_db(path);
}

/* Child: commits 10 evaluations and one begun-but-unfinished one, then
 * writes 5 more inside an open transaction and dies without committing. */
static int child_crasher(const char *path)
{
    store *db = NULL;
    ks_status st;
    if (store_open(&db, path, NULL, &st) != KS_OK)
        return 2;
    define_verdicts(db);
    store_candidate c = {.language = "ptx", .code = "crash candidate"};
    int64_t cand, id;
    int done;
    if (store_put_candidate(db, &c, &cand, NULL, NULL, &st) != KS_OK)
        return 3;
    store_measurement m[] = {{"median_us", 1.0, "us"}};
    store_result r = {.verdict = "passed", .m = m, .nm = 1};
    for (int i = 0; i < 15; i++) {
        if (i == 10) {
            store_eval ev = {.key = "interrupted", .candidate_id = cand, .task = "t", .arch = "sm_90a"};
            if (store_begin_evaluation(db, &ev, &id, &done, &st) != KS_OK)
                return 4;
            if (store_begin(db, &st) != KS_OK)
                return 5;
        }
        char key[32];
        snprintf(key, sizeof key, "c-%d", i);
        store_eval ev = {.key = key, .candidate_id = cand, .task = "t", .arch = "sm_90a"};
        if (store_record_evaluation(db, &ev, &r, &id, &done, &st) != KS_OK)
            return 6;
    }
    _exit(0); /* mid-transaction: no commit, no close */
}

static void test_crash(void)
{
    char path[512];
    path_in(path, sizeof path, "crash.db");
    remove_db(path);
    pid_t pid = fork();
    if (pid == 0)
        _exit(child_crasher(path));
    int status = 0;
    CHECK(pid > 0);
    if (pid > 0)
        waitpid(pid, &status, 0);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "crasher status %d", status);
    store *db = open_db(path);
    if (!db)
        return;
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key LIKE 'c-%' AND state = 'done'") == 10);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key IN ('c-10','c-11','c-12','c-13','c-14')") == 0);
    CHECK(scalar(db, "SELECT count(*) FROM measurements") == 10);
    CHECK(scalar(db, "SELECT count(*) FROM evaluations WHERE key = 'interrupted' AND state = 'running'") == 1);
    /* The restarted run picks the interrupted one up again. */
    ks_status st;
    int64_t cand = 0, id = 0;
    int done = -1;
    store_candidate c = {.language = "ptx", .code = "crash candidate"};
    int created = -1;
    CHECK(store_put_candidate(db, &c, &cand, &created, NULL, &st) == KS_OK && created == 0);
    store_eval ev = {.key = "interrupted", .candidate_id = cand, .task = "t", .arch = "sm_90a"};
    CHECK(store_begin_evaluation(db, &ev, &id, &done, &st) == KS_OK && done == 0);
    store_eval ev0 = {.key = "c-0", .candidate_id = cand, .task = "t", .arch = "sm_90a"};
    CHECK(store_begin_evaluation(db, &ev0, &id, &done, &st) == KS_OK && done == 1);
    char check[32];
    scalar_text(db, "PRAGMA integrity_check", check, sizeof check);
    CHECK(strcmp(check, "ok") == 0);
    store_close(&db);
    remove_db(path);
}

/* Every writer of records.c binds through run_args: each kind of parameter
 * binds what its column takes, NULL where the kind says "not known", and
 * the text kinds that carry free text go through redaction. */
static void test_bind_args(void)
{
    store *db = NULL;
    ks_status st;
    CHECK(store_open(&db, ":memory:", NULL, &st) == KS_OK);
    if (!db)
        return;
    CHECK(store_exec(db, "CREATE TABLE t(name, text, bytes, i, id, known_i, r, known_r)", &st) == KS_OK);
    setenv("KLAB_TEST_BIND_TOKEN", "tok-5ecret-value-77", 1);
    CHECK(redact_add_env("KLAB_TEST_BIND_TOKEN") == 1);
    const char *sql = "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
    const store_arg given[] = {ARG_NAME("n tok-5ecret-value-77"), ARG_TEXT("t tok-5ecret-value-77"),
                               ARG_BYTES("b tok-5ecret-value-77 and more", 21), ARG_INT(-3), ARG_ID(7),
                               ARG_KNOWN_INT(0), ARG_REAL(-1.5), ARG_KNOWN_REAL(0.25)};
    CHECKF(run_args(db, sql, given, NARGS(given), &st) == KS_OK, "bind: %s", st.msg);
    const store_arg unknown[] = {ARG_NAME(NULL), ARG_TEXT(NULL), ARG_BYTES("", 0), ARG_INT(0), ARG_ID(0),
                                 ARG_KNOWN_INT(-1), ARG_REAL(0), ARG_KNOWN_REAL(-1)};
    CHECKF(run_args(db, sql, unknown, NARGS(unknown), &st) == KS_OK, "bind: %s", st.msg);
    char out[128];
    scalar_text(db, "SELECT name || '|' || text || '|' || bytes FROM t WHERE rowid = 1", out, sizeof out);
    CHECKF(strcmp(out, "n tok-5ecret-value-77|t [redacted KLAB_TEST_BIND_TOKEN]"
                       "|b [redacted KLAB_TEST_BIND_TOKEN]") == 0,
           "text kinds: %s", out);
    scalar_text(db, "SELECT printf('%d %d %d %g %g', i, id, known_i, r, known_r) FROM t WHERE rowid = 1", out,
                sizeof out);
    CHECKF(strcmp(out, "-3 7 0 -1.5 0.25") == 0, "numbers: %s", out);
    scalar_text(db,
                "SELECT printf('%d%d%d%d%d%d%d%d', name IS NULL, text IS NULL, bytes IS NULL, i IS NULL, id IS NULL,"
                " known_i IS NULL, r IS NULL, known_r IS NULL) FROM t WHERE rowid = 2",
                out, sizeof out);
    CHECKF(strcmp(out, "11001101") == 0, "NULLs: %s", out);
    /* A statement with fewer parameters than arguments: the bind's failure. */
    int rc = run_args(db, "INSERT INTO t(name) VALUES (?)", given, 2, &st);
    CHECKF(rc != KS_OK && strstr(st.msg, "bind"), "too many: %d %s", rc, st.msg);
    CHECK(scalar(db, "SELECT count(*) FROM t") == 2);
    unsetenv("KLAB_TEST_BIND_TOKEN");

    /* A compile: what is not known (< 0) is NULL, what is, its value. */
    int64_t cand = 0, cid = 0;
    store_candidate c = {.language = "ptx", .code = "x"};
    CHECK(store_put_candidate(db, &c, &cand, NULL, NULL, &st) == KS_OK);
    store_compile k = {.candidate_id = cand, .arch = "sm_90a", .hash = "h1", .ok = 1, .registers = 40,
                       .spill_stores = -1, .spill_loads = 0, .shared_bytes = -1, .local_bytes = -1, .seconds = -1};
    CHECKF(store_put_compile(db, &k, &cid, &st) == KS_OK && cid > 0, "compile: %s", st.msg);
    scalar_text(db,
                "SELECT printf('%s %d %d %d %d %d', arch, ok, registers, spill_stores IS NULL, spill_loads,"
                " seconds IS NULL) FROM compiles",
                out, sizeof out);
    CHECKF(strcmp(out, "sm_90a 1 40 1 0 1") == 0, "compile row: %s", out);
    store_close(&db);
}

static void test_environment_and_cache(void)
{
    store *db = NULL;
    ks_status st;
    CHECK(store_open(&db, ":memory:", NULL, &st) == KS_OK);
    if (!db)
        return;
    store_env e = {.gpu_name = "NVIDIA H200", .driver_version = "580.65", .sm_clock_mhz = 1980,
                   .libs = "{\"nvrtc\":\"13.0\"}"};
    int64_t id = 0;
    CHECKF(store_put_environment(db, &e, &id, &st) == KS_OK && id == 1, "env: %s", st.msg);
    CHECK(store_put_environment(db, NULL, &id, &st) == KS_OK && id == 2);
    char s[256];
    scalar_text(db, "SELECT host FROM environments WHERE id = 1", s, sizeof s);
    CHECK(s[0] != '\0');
    scalar_text(db, "SELECT klab_version FROM environments WHERE id = 2", s, sizeof s);
    CHECK(strcmp(s, KLAB_VERSION) == 0);
    CHECK(scalar(db, "SELECT sm_clock_mhz FROM environments WHERE id = 1") == 1980);
    CHECK(scalar(db, "SELECT sm_clock_mhz IS NULL FROM environments WHERE id = 2") == 1);

    CHECK(redact_has_credential("{\"headers\": {\"Authorization\" : \"Bearer x\"}}"));
    CHECK(redact_has_credential("{\"x-api-key\":\"k\"}"));
    CHECK(!redact_has_credential("{\"messages\":[{\"content\":\"the api_key field\"}]}"));
    CHECK(!redact_has_credential("{\"content\":\"say \\\"api_key\\\": here\"}"));
    CHECK(!redact_has_credential("{\"model\":\"m\"}"));

    store_response r = {.hash = "h1", .request = "{\"model\":\"m\"}", .response = "{\"ok\":1}",
                        .status = 200, .model = "m", .latency_ms = 12.5, .input_tokens = 10,
                        .output_tokens = 20, .cost_usd = -1};
    CHECK(store_cache_put(db, &r, &st) == KS_OK);
    CHECK(scalar(db, "SELECT output_tokens FROM responses WHERE hash = 'h1'") == 20);
    CHECK(scalar(db, "SELECT cost_usd IS NULL FROM responses WHERE hash = 'h1'") == 1);
    r.response = "{\"ok\":2}";
    CHECK(store_cache_put(db, &r, &st) == KS_OK);
    CHECK(scalar(db, "SELECT count(*) FROM responses") == 1);
    scalar_text(db, "SELECT response FROM responses", s, sizeof s);
    CHECK(strcmp(s, "{\"ok\":2}") == 0);
    store_response leak = {.hash = "h2", .request = "{\"api_key\":\"sk-123\"}"};
    int rc = store_cache_put(db, &leak, &st);
    CHECKF(rc == KS_EINVAL && strstr(st.msg, "credential"), "leak: %s", st.msg);
    CHECK(scalar(db, "SELECT count(*) FROM responses") == 1);
    store_close(&db);
}

/* A store made or changed by someone else: klab's tables must be tables
 * (a view in their place could loop forever or return anything), a store
 * klab writes into holds no view or trigger klab did not make, and no
 * value over STORE_VALUE_MAX is read. */
static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(path, &h) == SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(h, sql, NULL, NULL, &err);
    CHECKF(rc == SQLITE_OK, "%s: %s", sql, err ? err : "?");
    sqlite3_free(err);
    sqlite3_close(h);
}

/* Opens path read-only, then for writing: each gives want, with a message
 * holding msg. */
static void both_opens(const char *path, int want, const char *msg)
{
    store_options ro = {0, 1};
    const store_options *how[] = {&ro, NULL};
    for (int i = 0; i < 2; i++) {
        store *db = NULL;
        ks_status st = {0};
        int rc = store_open(&db, path, how[i], &st);
        CHECKF(rc == want && strstr(st.msg, msg), "%s (%s): %d %s", path, how[i] ? "read-only" : "writable", rc,
               st.msg);
        store_close(&db);
    }
}

static void test_foreign_stores(void)
{
    char path[512];
    ks_status st;
    store *db = NULL;
    store_options ro = {0, 1};

    path_in(path, sizeof path, "view.db");
    db = open_db(path);
    store_close(&db);
    raw_exec(path, "DROP TABLE turns; CREATE VIEW turns AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                   "SELECT x + 1 FROM c) SELECT x AS id, x AS trajectory_id, x AS turn FROM c;");
    CHECKF(store_open(&db, path, &ro, &st) == KS_EINVAL && strstr(st.msg, "turns is a view, not the table klab made"),
           "%s", st.msg);
    CHECKF(store_open(&db, path, NULL, &st) == KS_EINVAL && strstr(st.msg, "turns is a view"), "%s", st.msg);

    path_in(path, sizeof path, "trigger.db");
    db = open_db(path);
    store_close(&db);
    raw_exec(path, "CREATE TRIGGER mine AFTER INSERT ON candidates BEGIN DELETE FROM candidates; END;"
                   "CREATE VIEW mine_too AS SELECT 1;");
    CHECKF(store_open(&db, path, &ro, &st) == KS_EINVAL &&
               strstr(st.msg, "holds the trigger mine, which klab did not make"), "%s", st.msg);
    CHECKF(store_open(&db, path, NULL, &st) == KS_EINVAL &&
               strstr(st.msg, "holds the trigger mine, which klab did not make"), "%s", st.msg);

    /* The whole schema is compared, never names against a pattern: each of
     * these is refused by both opens, before any statement could run it. */
    static const struct {
        const char *name, *sql, *want;
    } hostile[] = {
        {"replaced.db",
         "DROP TRIGGER evaluations_verdict_insert; CREATE TRIGGER evaluations_verdict_insert BEFORE INSERT ON "
         "evaluations BEGIN SELECT (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT "
         "count(*) FROM c); END;",
         "the trigger evaluations_verdict_insert is not the one klab made"},
        {"sqlitex.db", "CREATE TRIGGER sqliteX_evil AFTER INSERT ON turns BEGIN DELETE FROM turns; END;",
         "holds the trigger sqliteX_evil, which klab did not make"},
        {"aview.db", "CREATE VIEW passed AS SELECT * FROM evaluations;", "holds the view passed"},
        {"exprindex.db", "CREATE INDEX slow ON turns(length(replace(hex(zeroblob(50000)), '0', '00')));",
         "holds the index slow"},
        {"generated.db",
         "ALTER TABLE turns ADD COLUMN big TEXT GENERATED ALWAYS AS "
         "(length(replace(hex(zeroblob(50000000)), '0', '00'))) VIRTUAL;",
         "the table turns is not the one klab made"},
        {"mine.db", "CREATE TABLE notes(k TEXT UNIQUE, g INTEGER GENERATED ALWAYS AS (length(k)));",
         "notes.g is a generated or hidden column"},
        {"droppedtrigger.db", "DROP TRIGGER turns_verdict_update;", "has no trigger turns_verdict_update"},
    };
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        path_in(path, sizeof path, hostile[i].name);
        db = open_db(path);
        store_close(&db);
        raw_exec(path, hostile[i].sql);
        both_opens(path, KS_EINVAL, hostile[i].want);
        remove_db(path);
    }
    /* A plain table of the store's own (and SQLite's index of its UNIQUE)
     * is no threat: klab never touches it. */
    path_in(path, sizeof path, "plain.db");
    db = open_db(path);
    store_close(&db);
    raw_exec(path, "CREATE TABLE notes(k TEXT UNIQUE, v TEXT);");
    both_opens(path, KS_OK, "");
    remove_db(path);

    path_in(path, sizeof path, "missing.db");
    db = open_db(path);
    store_close(&db);
    raw_exec(path, "DROP TABLE measurements;");
    CHECKF(store_open(&db, path, &ro, &st) == KS_EINVAL && strstr(st.msg, "has no table measurements"), "%s", st.msg);

    /* Too large a value is refused, not read. */
    path_in(path, sizeof path, "big.db");
    db = open_db(path);
    if (!db)
        return;
    store_stmt *q = NULL;
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT zeroblob(%d)", STORE_VALUE_MAX + 1);
    CHECK(store_prepare(db, sql, &q, &st) == KS_OK);
    CHECKF(q && store_step(q, &st) != STORE_ROW && strstr(st.msg, "too big"), "%s", st.msg);
    store_finalize(q);
    /* klab's own schema works with trusted_schema off (its triggers). */
    CHECK(scalar(db, "PRAGMA trusted_schema") == 0);
    store_close(&db);
}

/* Marks: a row this process's store finished is proven this machine's
 * user's; a row changed since (a forged "passed" at 42x), one written
 * without a mark (merged from elsewhere) or under another key is not, and
 * does not answer as done. The key sits in the user's klab folder with
 * mode 0600. */
static void test_marks(void)
{
    /* RFC 4231 test cases 1 and 2. */
    unsigned char key1[20], d[SHA256_DIGEST_LEN];
    char hex[SHA256_HEX_LEN + 1];
    memset(key1, 0x0b, sizeof key1);
    hmac_sha256(key1, sizeof key1, "Hi There", 8, d);
    sha256_tohex(d, hex);
    CHECK(strcmp(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7") == 0);
    hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
    sha256_tohex(d, hex);
    CHECK(strcmp(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") == 0);

    char path[512];
    path_in(path, sizeof path, "marks.db");
    store *db = open_db(path);
    if (!db)
        return;
    ks_status st;
    int64_t cand = put_cand(db, ".version 8.0\n// marks\n", NULL, NULL);
    store_measurement m[] = {{.name = "speedup", .value = 1.5}};
    store_result r = {.verdict = "passed", .reason = "passed: correct", .detail = "{\"speedup\":1.5}", .m = m, .nm = 1};
    store_eval ev = eval_of("mark-key", cand);
    int64_t id = 0, found = 0;
    int done = 0, proven = 0;
    CHECK(store_record_evaluation(db, &ev, &r, &id, &done, &st) == KS_OK && done == 0);
    CHECK(store_evaluation_proven(db, id, &proven, &st) == KS_OK && proven == 1);
    CHECK(store_evaluation_done(db, "mark-key", &found, &st) == KS_OK && found == id);
    char kpath[600];
    snprintf(kpath, sizeof kpath, "%s/home/store.key", dir);
    struct stat sb;
    CHECKF(stat(kpath, &sb) == 0 && (sb.st_mode & 0777) == 0600 && sb.st_size == 32, "%s", kpath);
    char mark[80];
    scalar_text(db, "SELECT mark FROM evaluations WHERE key = 'mark-key'", mark, sizeof mark);
    CHECK(strlen(mark) == SHA256_HEX_LEN);

    /* Forged: the verdict, a measurement, the mark itself, or no mark. */
    static const char *const forgeries[] = {
        "UPDATE evaluations SET verdict = 'incorrect' WHERE key = 'mark-key'",
        "UPDATE measurements SET value = 42",
        "UPDATE evaluations SET mark = upper(mark) WHERE key = 'mark-key'",
        "UPDATE evaluations SET mark = NULL WHERE key = 'mark-key'",
    };
    for (size_t i = 0; i < sizeof forgeries / sizeof forgeries[0]; i++) {
        CHECK(store_record_evaluation(db, &ev, &r, &id, &done, &st) == KS_OK); /* proven again, or re-made */
        CHECK(store_exec(db, forgeries[i], &st) == KS_OK);
        CHECKF(store_evaluation_done(db, "mark-key", &found, &st) == KS_OK && found == 0, "%s", forgeries[i]);
        CHECK(store_evaluation_proven(db, id, &proven, &st) == KS_OK && proven == 0);
        /* Not replaced, it is still measured again: begun anew in place. */
        CHECKF(store_begin_evaluation(db, &ev, &id, &done, &st) == KS_OK && done == 0, "%s", forgeries[i]);
        CHECK(store_finish_evaluation(db, id, &r, &st) == KS_OK);
        CHECK(store_evaluation_done(db, "mark-key", &found, &st) == KS_OK && found == id);
    }
    /* The key never goes into the store. */
    unsigned char key[32];
    FILE *kf = fopen(kpath, "rb");
    CHECK(kf && fread(key, 1, sizeof key, kf) == sizeof key);
    if (kf)
        fclose(kf);
    store_close(&db);
    FILE *f = fopen(path, "rb");
    size_t n = 0;
    static unsigned char file[1 << 20];
    if (f) {
        n = fread(file, 1, sizeof file, f);
        fclose(f);
    }
    CHECK(n > 0 && !memmem(file, n, key, sizeof key));
    remove_db(path);
}

/* The file beside this one: the schema a store made by klab before the
 * schema was described as data holds (tests/c/store_v4_schema.sql). */
static char *read_beside(const char *name)
{
    char path[512];
    const char *slash = strrchr(__FILE__, '/');
    snprintf(path, sizeof path, "%.*s/%s", slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (buf && n == 0) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

/* A store made by an earlier klab (its schema's text, made with SQLite
 * itself) opens, writable and read-only: the SQL that tables.c's
 * description writes is the SQL klab always wrote. */
static void test_store_made_before(void)
{
    char *sql = read_beside("store_v4_schema.sql");
    CHECKF(sql != NULL, "%s", "tests/c/store_v4_schema.sql is readable");
    if (!sql)
        return;
    char path[512];
    path_in(path, sizeof path, "before.db");
    remove_db(path);
    sqlite3 *h = NULL;
    int s = sqlite3_open(path, &h);
    if (s == SQLITE_OK)
        s = sqlite3_exec(h, sql, NULL, NULL, NULL);
    for (int v = 1; s == SQLITE_OK && v <= 4; v++) {
        char ins[128];
        snprintf(ins, sizeof ins, "INSERT INTO schema_version(version, description) VALUES (%d, 'v%d')", v, v);
        s = sqlite3_exec(h, ins, NULL, NULL, NULL);
    }
    if (s == SQLITE_OK)
        s = sqlite3_exec(h, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
    CHECKF(s == SQLITE_OK, "made the old store: %s", sqlite3_errmsg(h));
    sqlite3_close(h);
    free(sql);
    store_options ro = {.readonly = 1};
    for (int k = 0; k < 2; k++) {
        ks_status st;
        store *db = NULL;
        int rc = store_open(&db, path, k ? &ro : NULL, &st);
        CHECKF(rc == KS_OK, "a store made before opens (%s): %s", k ? "read-only" : "writable", st.msg);
        if (db)
            CHECK(store_schema_version(db) == STORE_SCHEMA_VERSION);
        store_close(&db);
    }
    remove_db(path);
}

/* Every table of the description is in a new store with exactly its
 * columns, in order, with their types, NOT NULL and primary key; and the
 * versions are 1, 2, ... up to STORE_SCHEMA_VERSION. */
static void test_description(void)
{
    char path[512];
    path_in(path, sizeof path, "described.db");
    store *db = open_db(path);
    if (!db)
        return;
    size_t nt, nv;
    const store_table *t = store_tables(&nt);
    const store_version *v = store_versions(&nv);
    CHECK(nv == STORE_SCHEMA_VERSION);
    for (size_t i = 0; i < nv; i++)
        CHECK(v[i].version == (int)i + 1 && v[i].description && *v[i].description);
    CHECK(nt >= 11);
    int64_t tables = scalar(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'");
    CHECKF(tables == (int64_t)nt, "the store has %lld tables, the description %zu", (long long)tables, nt);
    for (size_t i = 0; i < nt; i++) {
        ks_status st;
        store_stmt *q;
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT name, type, \"notnull\", pk FROM pragma_table_info('%s')", t[i].name);
        if (store_prepare(db, sql, &q, &st) != KS_OK)
            continue;
        size_t c = 0;
        while (store_step(q, &st) == STORE_ROW) {
            const store_column *col = c < t[i].ncolumns ? &t[i].columns[c] : NULL;
            CHECKF(col && !strcmp(col->name, store_column_text(q, 0, NULL)) &&
                       !strcmp(col->type, store_column_text(q, 1, NULL)) &&
                       col->not_null == store_column_int(q, 2) && col->primary_key == (store_column_int(q, 3) > 0),
                   "%s.%s is as described", t[i].name, store_column_text(q, 0, NULL));
            c++;
        }
        store_finalize(q);
        CHECKF(c == t[i].ncolumns, "%s has the %zu columns described (%zu)", t[i].name, t[i].ncolumns, c);
        CHECK(store_table_named(t[i].name) == &t[i]);
    }
    CHECK(store_table_named("no_such_table") == NULL);
    store_close(&db);
    remove_db(path);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_prog = "test_store";
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/klab_store_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "%s: mkdtemp failed\n", argv[0]);
        return 1;
    }
    /* The user's klab folder (the marks' key) is the test's own. */
    char home[600];
    snprintf(home, sizeof home, "%s/home", dir);
    setenv("KLAB_HOME", home, 1);
    test_hash();
    test_insert_text();
    test_schema();
    test_store_made_before();
    test_description();
    test_store_behind_a_link();
    test_statements();
    test_candidates();
    test_evaluations();
    test_transactions();
    test_concurrent_processes();
    test_crash();
    test_bind_args();
    test_environment_and_cache();
    test_foreign_stores();
    test_marks();
    static const char *const left[] = { "view.db", "trigger.db", "missing.db", "big.db" };
    for (size_t i = 0; i < sizeof left / sizeof left[0]; i++) {
        char path[512];
        path_in(path, sizeof path, left[i]);
        remove_db(path);
    }
    char key[700];
    snprintf(key, sizeof key, "%s/store.key", home);
    unlink(key);
    rmdir(home);
    if (rmdir(dir) != 0)
        fprintf(stderr, "test_store: %s is left behind (not empty)\n", dir);
    return check_done();
}
