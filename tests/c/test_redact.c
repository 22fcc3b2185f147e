/*
 * test_redact.c: host/base/redact.c, the values of secrets kept out of what
 * klab writes: replacement, several secrets, short values left alone, the
 * environment scan (names holding KEY, TOKEN, SECRET, PASS, AUTH, COOKIE,
 * DSN, WEBHOOK, PRIVATE, ending in PAT, and any URL with a password), each
 * secret in its raw, JSON-escaped, URL-encoded and base64 spellings, and
 * the store, which binds every text and blob through it.
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

/* base64 of s[0..n) (standard or URL-safe, with '=' padding) into out. */
static void b64(const char *s, size_t n, int url_safe, char *out)
{
    const char *abc = url_safe ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                               : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned w = (unsigned char)s[i] << 16 | (i + 1 < n ? (unsigned char)s[i + 1] << 8 : 0) |
                     (i + 2 < n ? (unsigned char)s[i + 2] : 0);
        out[o++] = abc[w >> 18 & 63];
        out[o++] = abc[w >> 12 & 63];
        out[o++] = i + 1 < n ? abc[w >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? abc[w & 63] : '=';
    }
    out[o] = '\0';
}

/* Whether text, redacted, reads want exactly. */
static int redacts_to(const char *text, const char *want)
{
    char *r = apply(text);
    int ok = r && strcmp(r, want) == 0;
    if (!ok)
        fprintf(stderr, "  %s\n  -> %s\n  wanted %s\n", text, r ? r : "(unchanged)", want);
    free(r);
    return ok;
}

/* Each secret in the spellings a request body, a URL, a header or a log
 * gives it: JSON-escaped (quotes, backslashes, control bytes, \u00XX),
 * URL-encoded (%XX in either case, + for a space), base64 in both
 * alphabets alone, after "user:" (Basic auth) and at each of the three
 * alignments inside a longer encoded string. */
static void test_spellings(void)
{
    const char *quote = "ab\"cd\\ef\"gh"; /* ab"cd\ef"gh */
    CHECK(redact_add("QUOTE_TOKEN", quote, strlen(quote)) == 1);
    CHECK(redacts_to("{\"content\":\"ab\\\"cd\\\\ef\\\"gh\"}", "{\"content\":\"[redacted QUOTE_TOKEN]\"}"));
    CHECK(redacts_to("{\"c\":\"ab\\u0022cd\\u005Cef\\u0022gh\"}", "{\"c\":\"[redacted QUOTE_TOKEN]\"}"));
    CHECK(redacts_to("raw ab\"cd\\ef\"gh.", "raw [redacted QUOTE_TOKEN]."));
    const char *ctl = "tab\there\nnewline/";
    CHECK(redact_add("CTL_TOKEN", ctl, strlen(ctl)) == 1);
    CHECK(redacts_to("\"tab\\there\\nnewline\\/\"", "\"[redacted CTL_TOKEN]\""));
    CHECK(redacts_to("\"tab\\u0009here\\u000anewline/\"", "\"[redacted CTL_TOKEN]\""));
    const char *url = "p@ss word/+x%1";
    CHECK(redact_add("URL_SECRET", url, strlen(url)) == 1);
    CHECK(redacts_to("?q=p%40ss+word%2F%2bx%251&n=1", "?q=[redacted URL_SECRET]&n=1"));
    CHECK(redacts_to("?q=p%40ss%20word/%2Bx%1&n=1", "?q=[redacted URL_SECRET]&n=1"));
    char *part = apply("100%25 p%40ss"); /* a part of it is nothing */
    CHECKF(part == NULL, "%s", part);
    free(part);

    const char *key = "sk-b64-Zq9!x7~Lm2";
    CHECK(redact_add("B64_KEY", key, strlen(key)) == 1);
    char plain[200], enc[300], text[400];
    for (int url_safe = 0; url_safe < 2; url_safe++) {
        b64(key, strlen(key), url_safe, enc);
        snprintf(text, sizeof text, "x %s y", enc);
        CHECKF(redacts_to(text, "x [redacted B64_KEY] y"), "alone, url_safe %d", url_safe);
        for (int k = 0; k < 3; k++) {
            /* The key at each alignment inside a longer encoded string: no
             * character that holds a bit of it is left. */
            snprintf(plain, sizeof plain, "%.*s%s and more after it", k + 3, "user:", key);
            b64(plain, strlen(plain), url_safe, enc);
            snprintf(text, sizeof text, "Authorization: Basic %s", enc);
            char *r = apply(text);
            CHECKF(r && strstr(r, "[redacted B64_KEY]") && !strstr(r, enc) && strncmp(r, text, 21) == 0,
                   "alignment %d url_safe %d: %s -> %s", k, url_safe, text, r ? r : "(unchanged)");
            free(r);
        }
    }
    snprintf(plain, sizeof plain, "user:%s", key);
    b64(plain, strlen(plain), 0, enc);
    snprintf(text, sizeof text, "Authorization: Basic %s\r\n", enc);
    char *r = apply(text);
    CHECKF(r && strncmp(r, "Authorization: Basic ", 21) == 0 && strstr(r, "[redacted B64_KEY]\r\n"), "%s",
           r ? r : "(unchanged)");
    free(r);
}

/* The names that hold secrets, and URLs with a password whatever their
 * variable's name: each value, its password, and user:password. */
static void test_secret_names(void)
{
    static const char *const vars[][2] = {
        {"SENTRY_DSN", "https://abc123def456@o1.ingest.sentry.io/42"},
        {"SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T0/B0/xyzzy0123"},
        {"AUTH", "auth-value-2468"},
        {"NPM_AUTH", "npm-auth-value-1357"},
        {"COOKIE", "session=cookie-value-9753"},
        {"SSH_PRIVATE", "-----BEGIN OPENSSH PRIVATE KEY-----"},
        {"GH_PAT", "ghp_pat_value_8642"},
        {"DB_PASS", "db-pass-value-1234"},
        {"mysql_pass_file", "pass-file-value-4321"},
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        setenv(vars[i][0], vars[i][1], 1);
    setenv("DATABASE_URL", "postgres://klab:hunter2-db-pass@db.example:5432/runs", 1);
    setenv("SOME_REMOTE", "https://me:p%40ss-w0rd-remote@git.example/x.git", 1);
    setenv("PLAIN_URL", "https://example.org/nothing-secret-here", 1);
    setenv("SPATH_LIKE", "not-a-secret-value", 1);
    redact_scan_environ();
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        char want[200];
        snprintf(want, sizeof want, "<[redacted %s]>", vars[i][0]);
        char text[300];
        snprintf(text, sizeof text, "<%s>", vars[i][1]);
        CHECKF(redacts_to(text, want), "%s", vars[i][0]);
    }
    CHECK(redacts_to("url postgres://klab:hunter2-db-pass@db.example:5432/runs",
                     "url [redacted DATABASE_URL]"));
    CHECK(redacts_to("password hunter2-db-pass said", "password [redacted DATABASE_URL] said"));
    CHECK(redacts_to("decoded p@ss-w0rd-remote", "decoded [redacted SOME_REMOTE]"));
    CHECK(redacts_to("as given p%40ss-w0rd-remote", "as given [redacted SOME_REMOTE]"));
    char enc[200];
    b64("klab:hunter2-db-pass", 20, 0, enc);
    char text[300], want[300];
    snprintf(text, sizeof text, "Basic %s", enc);
    snprintf(want, sizeof want, "Basic [redacted DATABASE_URL]");
    CHECK(redacts_to(text, want));
    char *r = apply("https://example.org/nothing-secret-here not-a-secret-value");
    CHECKF(r == NULL, "%s", r ? r : "");
    free(r);
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
    test_spellings();
    test_secret_names();

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
