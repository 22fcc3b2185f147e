/* mark.c: the proof that an evaluation row was written by this machine's
 * user. A store is shared (a paper's artifact, a colleague's shard), and an
 * evaluation's key is made of public parts (candidate, task, arch, GPU,
 * driver, klab version), so anyone can write a row klab would take for its
 * own measurement. Each row klab finishes is marked with an HMAC-SHA256 of
 * its content under a key kept in the user's klab folder ($KLAB_HOME, else
 * ~/.klab/store.key: made on first use, mode 0600, never stored, sent or
 * printed); a row answers again as a measurement only when its mark is
 * right. Without a usable key nothing is marked and nothing is taken as
 * proven: every result is measured again. */
#include "store/mark.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hmac.h"
#include "base/random.h"

#define KEY_LEN 32

static unsigned char machine_key[KEY_LEN];
static int key_state;   /* 0: not looked for yet, 1: loaded, -1: none to be had */
static pthread_mutex_t key_mu = PTHREAD_MUTEX_INITIALIZER;

/* The user's klab folder and the key's path in it; 0 when there is none. */
static int key_paths(char *dir, size_t ndir, char *file, size_t nfile)
{
    const char *home = getenv("KLAB_HOME");
    int n;
    if (home && *home) {
        n = snprintf(dir, ndir, "%s", home);
    } else {
        const char *h = getenv("HOME");
        if (!h || !*h)
            return 0;
        n = snprintf(dir, ndir, "%s/.klab", h);
    }
    if (n < 0 || (size_t)n >= ndir)
        return 0;
    n = snprintf(file, nfile, "%s/store.key", dir);
    return n > 0 && (size_t)n < nfile;
}

/* Reads the key from fd: a regular file of exactly KEY_LEN bytes, owned by
 * this user and readable by nobody else (else it may be known). */
static int read_key(int fd)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 077) ||
        sb.st_size != KEY_LEN)
        return 0;
    size_t got = 0;
    while (got < KEY_LEN) {
        ssize_t r = read(fd, machine_key + got, KEY_LEN - got);
        if (r <= 0)
            return 0;
        got += (size_t)r;
    }
    return 1;
}

/* Makes the key: written whole under a private name, then linked to its
 * own (link fails when another process made it first, and nobody ever
 * reads half a key). */
static void make_key(const char *file)
{
    unsigned char k[KEY_LEN];
    ks_status st;
    if (random_bytes(k, sizeof k, &st) != KS_OK)
        return;
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.%ld", file, (long)getpid()) >= (int)sizeof tmp)
        return;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    int ok = write(fd, k, sizeof k) == (ssize_t)sizeof k && fsync(fd) == 0;
    close(fd);
    memset(k, 0, sizeof k);
    if (ok)
        (void)link(tmp, file);
    unlink(tmp);
}

/* The machine's key, loaded (or made) once per process; NULL when there is
 * none to be had. */
static const unsigned char *the_key(void)
{
    pthread_mutex_lock(&key_mu);
    if (key_state == 0) {
        key_state = -1;
        char dir[4096], file[4200];
        if (key_paths(dir, sizeof dir, file, sizeof file)) {
            if (mkdir(dir, 0700) != 0 && errno != EEXIST)
                goto out;
            int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0 && errno == ENOENT) {
                make_key(file);
                fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            }
            if (fd >= 0) {
                if (read_key(fd))
                    key_state = 1;
                close(fd);
            }
        }
    }
out:
    pthread_mutex_unlock(&key_mu);
    return key_state == 1 ? machine_key : NULL;
}

/* One value into the HMAC: its SQLite type, its length and its bytes, so
 * that no two rows hash alike by moving bytes between fields. */
static void put_value(hmac_sha256_ctx *c, sqlite3_stmt *s, int col)
{
    int t = sqlite3_column_type(s, col);
    char num[40];
    const void *p = NULL;
    size_t n = 0;
    if (t == SQLITE_INTEGER) {
        n = (size_t)snprintf(num, sizeof num, "%lld", (long long)sqlite3_column_int64(s, col));
        p = num;
    } else if (t == SQLITE_FLOAT) {
        n = (size_t)snprintf(num, sizeof num, "%.17g", sqlite3_column_double(s, col));
        p = num;
    } else if (t != SQLITE_NULL) {
        p = sqlite3_column_blob(s, col);
        n = (size_t)sqlite3_column_bytes(s, col);
    }
    unsigned char head[9];
    head[0] = (unsigned char)t;
    for (int i = 0; i < 8; i++)
        head[1 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
    hmac_sha256_update(c, head, sizeof head);
    if (n)
        hmac_sha256_update(c, p, n);
}

/* Runs sql (one parameter: the evaluation's id) and puts every value of
 * every row into c. */
static int put_rows(store *db, hmac_sha256_ctx *c, const char *sql, int64_t id, int *rows, ks_status *st)
{
    sqlite3_stmt *s;
    int rc = prep(db, sql, &s, st);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, id);
    int r;
    *rows = 0;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        (*rows)++;
        for (int i = 0; i < sqlite3_column_count(s); i++)
            put_value(c, s, i);
    }
    if (r != SQLITE_DONE)
        rc = sql_fail(db->h, r, st, "reading an evaluation", sqlite3_sql(s));
    sqlite3_finalize(s);
    return rc;
}

/* The mark of evaluation id as it is stored now, in hex; *have = 0 when
 * this machine has no key (or the row is not there). */
static int compute_mark(store *db, int64_t id, char hex[SHA256_HEX_LEN + 1], int *have, ks_status *st)
{
    *have = 0;
    const unsigned char *key = the_key();
    if (!key)
        return KS_OK;
    static const char domain[] = "klab.evaluation.mark.1";
    hmac_sha256_ctx c;
    hmac_sha256_init(&c, key, KEY_LEN);
    hmac_sha256_update(&c, domain, sizeof domain);
    int rows = 0, more = 0;
    int rc = put_rows(db, &c,
                      "SELECT e.key, c.hash, e.task, e.arch, e.replica, e.options, e.state, e.verdict, e.reason,"
                      " e.timing_method, e.stage_times, e.detail FROM evaluations e"
                      " JOIN candidates c ON c.id = e.candidate_id WHERE e.id = ?",
                      id, &rows, st);
    if (rc == KS_OK)
        rc = put_rows(db, &c, "SELECT name, value, unit FROM measurements WHERE evaluation_id = ? ORDER BY name", id,
                      &more, st);
    unsigned char d[SHA256_DIGEST_LEN];
    hmac_sha256_final(&c, d);
    if (rc == KS_OK && rows == 1) {
        sha256_tohex(d, hex);
        *have = 1;
    }
    return rc;
}

int mark_evaluation(store *db, int64_t id, ks_status *st)
{
    char hex[SHA256_HEX_LEN + 1];
    int have = 0;
    int rc = compute_mark(db, id, hex, &have, st);
    if (rc)
        return rc;
    sqlite3_stmt *s;
    rc = prep(db, "UPDATE evaluations SET mark = ? WHERE id = ?", &s, st);
    if (rc)
        return rc;
    int b = have ? sqlite3_bind_text(s, 1, hex, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, 1);
    if (!b)
        b = sqlite3_bind_int64(s, 2, id);
    rc = b ? bind_fail(db, s, b, st) : step_done(db, s, st);
    sqlite3_finalize(s);
    return rc;
}

int store_evaluation_proven(store *db, int64_t id, int *proven, ks_status *st)
{
    *proven = 0;
    char hex[SHA256_HEX_LEN + 1];
    int have = 0;
    int rc = compute_mark(db, id, hex, &have, st);
    if (rc || !have)
        return rc;
    sqlite3_stmt *s;
    rc = prep(db, "SELECT mark FROM evaluations WHERE id = ?", &s, st);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, id);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW) {
        const unsigned char *m = sqlite3_column_text(s, 0);
        /* Every byte compared, whatever the first difference. */
        int whole = m && sqlite3_column_bytes(s, 0) == SHA256_HEX_LEN;
        unsigned diff = whole ? 0 : 1;
        for (int i = 0; whole && i < SHA256_HEX_LEN; i++)
            diff |= (unsigned)(m[i] ^ (unsigned char)hex[i]);
        *proven = diff == 0;
    } else if (r != SQLITE_DONE) {
        rc = sql_fail(db->h, r, st, "reading an evaluation's mark", NULL);
    }
    sqlite3_finalize(s);
    return rc;
}
