/* store.c: the top floor of host/store (db.h lists the floors): opening a
 * store (WAL, the read-only and immutable opens, then schema.c's migration
 * and check), closing it, and the statements the caller runs. See store.h
 * and docs/store.md. */
#include "store/db.h"
#include "store/schema.h"

#include "base/fs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Open and close                                                       */

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
    /* A store may have been made or changed by someone else: its schema's
     * functions run only when innocuous, the schema cannot be written
     * through SQL, and no value klab reads may be larger than it ever
     * writes (a 1 GB blob is refused, not read). */
    sqlite3_db_config(db->h, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)0);
    sqlite3_db_config(db->h, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
    sqlite3_limit(db->h, SQLITE_LIMIT_LENGTH, STORE_VALUE_MAX);
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
    if (r == KS_OK)
        r = check_schema(db, "main", version, st);
    db->version = version;
    return r;
}

/* The writable open: SQLite makes the file when it is missing, and would
 * follow a symbolic link planted at path to make or write whatever it points
 * to. The folder's links are the user's own path, so the folder is resolved
 * first and SQLITE_OPEN_NOFOLLOW then refuses a link at the store's own name
 * (and any link that appears in the folder's place meanwhile). SQLite opens
 * the -wal and -shm files without following links itself. */
static int open_writable(store *db, int busy, ks_status *st)
{
    if (strcmp(db->path, ":memory:") == 0)
        return open_handle(db, db->path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, busy, st);
    if (fs_refuse_link(db->path, st) != KS_OK)
        return ks_fail(st, KS_EINVAL, FS_IS_LINK,
                       "store: %s is a symbolic link: klab does not write a store through a link "
                       "(name the file it points to)", db->path);
    const char *slash = strrchr(db->path, '/');
    char folder[PATH_MAX], name[PATH_MAX + NAME_MAX + 2];
    const char *open_as = db->path;
    if (slash != db->path) {
        int fl = slash ? (int)(slash - db->path) : 1;
        char given[PATH_MAX];
        ks_status ignored;
        if (snprintf(given, sizeof given, "%.*s", fl, slash ? db->path : ".") < (int)sizeof given &&
            fs_realpath(given, folder, sizeof folder, &ignored) == KS_OK &&
            snprintf(name, sizeof name, "%s/%s", folder, slash ? slash + 1 : db->path) < (int)sizeof name)
            open_as = name;
    }
    return open_handle(db, open_as, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW, busy,
                       st);
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
        r = open_writable(db, busy, st);
        if (r == KS_OK)
            r = set_wal(db, busy, st);
        if (r == KS_OK)
            r = run(db, "PRAGMA synchronous = NORMAL", st);
        if (r == KS_OK)
            r = migrate(db, st);
        if (r == KS_OK)
            r = check_schema(db, "main", db->version, st);
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
/* Statements run for the caller                                        */

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


int store_is_identifier(const char *p)
{
    if (!p || !(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
        return 0;
    for (p++; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

int store_insert_text(const char *table, const char *const *cols, size_t ncol, char **out, ks_status *st)
{
    *out = NULL;
    if (!store_is_identifier(table))
        return ks_fail(st, KS_EINVAL, 0, "store: a table name must be an identifier");
    size_t n = strlen(table) + 64;
    for (size_t i = 0; i < ncol; i++) {
        if (!store_is_identifier(cols[i]))
            return ks_fail(st, KS_EINVAL, 0, "store: column names must be identifiers");
        n += strlen(cols[i]) + 8;
    }
    char *t = malloc(n);
    if (!t)
        return ks_fail(st, KS_ENOMEM, 0, "store: out of memory");
    size_t k = (size_t)snprintf(t, n, "INSERT INTO \"%s\"", table);
    if (ncol == 0) {
        snprintf(t + k, n - k, " DEFAULT VALUES");
    } else {
        for (size_t i = 0; i < ncol; i++)
            k += (size_t)snprintf(t + k, n - k, "%s\"%s\"", i ? ", " : " (", cols[i]);
        k += (size_t)snprintf(t + k, n - k, ") VALUES (");
        for (size_t i = 0; i < ncol; i++)
            k += (size_t)snprintf(t + k, n - k, i ? ", ?" : "?");
        snprintf(t + k, n - k, ")");
    }
    *out = t;
    return KS_OK;
}
