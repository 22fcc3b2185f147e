/*
 * test_redact.c: host/base/redact.c, the values of secrets kept out of what
 * klab writes: replacement, several secrets, short values left alone, the
 * environment scan (names holding KEY, TOKEN, SECRET, PASSWORD, ...), and the store, which binds every text
 * and blob through it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "base/fs.h"
#include "base/redact.h"
#include "store/store.h"

static char *apply(const char *s)
{
    size_t n;
    char *r = redact_apply(s, strlen(s), &n);
    return r;
}

int main(void)
{
    check_prog = "test_redact";
    const char *secret = "sk-live-0123456789abcdef";
    CHECK(redact_add("MY_API", secret, strlen(secret)) == 1);
    CHECK(redact_add("SHORT", "abc", 3) == 0); /* would match ordinary text */
    char *r = apply("key=sk-live-0123456789abcdef; again sk-live-0123456789abcdef.");
    CHECKF(r && strcmp(r, "key=[redacted MY_API]; again [redacted MY_API].") == 0, "%s", r ? r : "(null)");
    free(r);
    CHECK(apply("nothing secret here abc") == NULL);

    /* Many short keys with a long name, back to back: the output grows far
     * past the text's size, and every key is replaced. */
    {
        const char *name = "KLAB_A_RATHER_LONG_VARIABLE_NAME_FOR_THIS_TEST";
        CHECK(redact_add(name, "k3y-8chr", 8) == 1);
        char many[9 * 200 + 1], want[64 * 200 + 1];
        size_t m = 0, w = 0;
        for (int i = 0; i < 200; i++) {
            m += (size_t)snprintf(many + m, sizeof many - m, "k3y-8chr ");
            w += (size_t)snprintf(want + w, sizeof want - w, "[redacted %s] ", name);
        }
        r = apply(many);
        CHECKF(r && strcmp(r, want) == 0, "%.80s", r ? r : "(null)");
        free(r);
    }

    setenv("KLAB_REDACT_TEST_TOKEN", "tok-9876543210", 1);
    setenv("KLAB_REDACT_TEST_OTHER", "other-9876543210", 1);
    setenv("KLAB_REDACT_TEST_KEY", "short", 1);
    /* Names that look secret anywhere, in any case. */
    setenv("MY_SECRET_PASSWORD", "pw-1122334455", 1);
    setenv("aws_credentials_blob", "cred-5544332211", 1);
    setenv("DB_PASSWD", "pwd-6677889900", 1);
    setenv("KEYRING_NAME", "ring-0099887766", 1);
    redact_scan_environ();
    r = apply("a tok-9876543210 b other-9876543210 c short");
    CHECKF(r && strcmp(r, "a [redacted KLAB_REDACT_TEST_TOKEN] b other-9876543210 c short") == 0, "%s",
           r ? r : "(null)");
    free(r);
    r = apply("pw-1122334455 cred-5544332211 pwd-6677889900 ring-0099887766");
    CHECKF(r && strcmp(r, "[redacted MY_SECRET_PASSWORD] [redacted aws_credentials_blob] [redacted DB_PASSWD] "
                          "[redacted KEYRING_NAME]") == 0, "%s", r ? r : "(null)");
    free(r);
    CHECK(redact_add_env("KLAB_REDACT_TEST_OTHER") == 1);
    r = apply("other-9876543210");
    CHECK(r && strcmp(r, "[redacted KLAB_REDACT_TEST_OTHER]") == 0);
    free(r);
    CHECK(redact_add_env("KLAB_REDACT_TEST_UNSET_VARIABLE") == 0);

    /* The store: whatever binds text or a blob, the value does not land. */
    ks_status st;
    char dir[4096], path[4200];
    CHECK(fs_mkdtemp("klab-test-redact-", dir, sizeof dir, &st) == KS_OK);
    snprintf(path, sizeof path, "%s/r.db", dir);
    store *db = NULL;
    CHECK(store_open(&db, path, NULL, &st) == KS_OK);
    if (db) {
        store_candidate c = {.language = "cuda", .code = "// sk-live-0123456789abcdef\n", .plan = NULL};
        int64_t id;
        int created;
        char hash[STORE_HASH_HEX + 1];
        CHECK(store_put_candidate(db, &c, &id, &created, hash, &st) == KS_OK);
        CHECK(store_exec(db, "CREATE TABLE t(x TEXT, y BLOB)", &st) == KS_OK);
        store_stmt *s = NULL;
        CHECK(store_prepare(db, "INSERT INTO t VALUES (?, ?)", &s, &st) == KS_OK);
        if (s) {
            const char *txt = "echo: Bearer sk-live-0123456789abcdef";
            CHECK(store_bind_text(s, 1, txt, strlen(txt), &st) == KS_OK);
            CHECK(store_bind_blob(s, 2, txt, strlen(txt), &st) == KS_OK);
            CHECK(store_step(s, &st) == KS_OK);
            store_finalize(s);
        }
        CHECK(store_prepare(db, "SELECT x || CAST(y AS TEXT) AS v FROM t UNION ALL SELECT code FROM candidates", &s,
                            &st) == KS_OK);
        int rows = 0;
        while (s && store_step(s, &st) == STORE_ROW) {
            size_t n;
            const char *v = store_column_text(s, 0, &n);
            rows++;
            CHECKF(v && !strstr(v, secret) && strstr(v, "[redacted MY_API]"), "%s", v ? v : "(null)");
        }
        CHECK(rows == 2);
        store_finalize(s);
        store_close(&db);
    }
    char *raw = NULL;
    size_t len = 0;
    CHECK(fs_read(path, 0, 0, &raw, &len, &st) == KS_OK && raw && !memmem(raw, len, secret, strlen(secret)));
    free(raw);
    CHECK(fs_remove_tree(dir, &st) == KS_OK);
    return check_done();
}
