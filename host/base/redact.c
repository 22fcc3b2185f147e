/* redact.c: keeping secrets out of what klab writes (see redact.h). */
#include "base/redact.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

typedef struct secret {
    char *name;
    char *value;
    size_t len;
    char mark[96];     /* "[redacted NAME]" */
    size_t mark_len;
} secret;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static secret *secrets;
static size_t nsecrets, capsecrets;

int redact_add(const char *name, const char *value, size_t len)
{
    if (!name || !value || len < REDACT_MIN_LEN)
        return 0;
    pthread_mutex_lock(&mu);
    int kept = 0;
    for (size_t i = 0; i < nsecrets; i++)
        if (secrets[i].len == len && memcmp(secrets[i].value, value, len) == 0) {
            kept = 1; /* the same value under another name: one is enough */
            goto out;
        }
    if (nsecrets == capsecrets) {
        size_t nc = capsecrets ? 2 * capsecrets : 8;
        secret *p = realloc(secrets, nc * sizeof *p);
        if (!p)
            goto out;
        secrets = p;
        capsecrets = nc;
    }
    secret *s = &secrets[nsecrets];
    s->name = strdup(name);
    s->value = malloc(len);
    if (!s->name || !s->value) {
        free(s->name);
        free(s->value);
        goto out;
    }
    memcpy(s->value, value, len);
    s->len = len;
    int w = snprintf(s->mark, sizeof s->mark, "[redacted %.80s]", name);
    s->mark_len = w > 0 && (size_t)w < sizeof s->mark ? (size_t)w : strlen(s->mark);
    nsecrets++;
    kept = 1;
out:
    pthread_mutex_unlock(&mu);
    return kept;
}

int redact_add_env(const char *name)
{
    const char *v = name ? getenv(name) : NULL;
    return v ? redact_add(name, v, strlen(v)) : 0;
}

/* A name that looks like a secret's: it holds KEY, TOKEN, SECRET,
 * PASSWORD, PASSWD or CREDENTIAL, in any case (OPENAI_API_KEY, HF_TOKEN,
 * MY_SECRET_PASSWORD, aws_credentials_file). Redacting a value that was no
 * secret costs a word in a log; missing one costs the secret. */
static int secret_name(const char *name, size_t n)
{
    static const char *const marks[] = {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"};
    for (size_t m = 0; m < sizeof marks / sizeof marks[0]; m++) {
        size_t ml = strlen(marks[m]);
        for (size_t i = 0; i + ml <= n; i++)
            if (strncasecmp(name + i, marks[m], ml) == 0)
                return 1;
    }
    return 0;
}

void redact_scan_environ(void)
{
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || !secret_name(*e, (size_t)(eq - *e)))
            continue;
        char name[256];
        size_t n = (size_t)(eq - *e);
        if (n >= sizeof name)
            continue;
        memcpy(name, *e, n);
        name[n] = '\0';
        redact_add(name, eq + 1, strlen(eq + 1));
    }
}

size_t redact_count(void)
{
    pthread_mutex_lock(&mu);
    size_t n = nsecrets;
    pthread_mutex_unlock(&mu);
    return n;
}

/* The secret that occurs first in text[from..len), or NULL. */
static const secret *first_secret(const char *text, size_t len, size_t from, size_t *at)
{
    const secret *best = NULL;
    size_t best_at = len;
    for (size_t i = 0; i < nsecrets; i++) {
        if (secrets[i].len > len - from)
            continue;
        const char *p = memmem(text + from, len - from, secrets[i].value, secrets[i].len);
        if (p && (size_t)(p - text) < best_at) {
            best_at = (size_t)(p - text);
            best = &secrets[i];
        }
    }
    *at = best_at;
    return best;
}

char *redact_apply(const char *text, size_t len, size_t *out_len)
{
    *out_len = 0;
    if (!text)
        return NULL;
    pthread_mutex_lock(&mu);
    size_t at;
    const secret *s = nsecrets ? first_secret(text, len, 0, &at) : NULL;
    if (!s) {
        pthread_mutex_unlock(&mu);
        return NULL;
    }
    /* Room for the text and a few marks; more is made as marks are found
     * (a buffer sized for the worst case would be many times the text). */
    size_t cap = len + 4 * sizeof s->mark + 1, n = 0, pos = 0;
    char *out = malloc(cap);
    while (out && s) {
        if (n + (at - pos) + s->mark_len + (len - at) + 1 > cap) {
            size_t want = cap * 2 > n + (len - pos) + s->mark_len + 1 ? cap * 2 : n + (len - pos) + s->mark_len + 1;
            char *grown = realloc(out, want);
            if (!grown) {
                free(out);
                out = NULL;
                break;
            }
            out = grown;
            cap = want;
        }
        memcpy(out + n, text + pos, at - pos);
        n += at - pos;
        memcpy(out + n, s->mark, s->mark_len);
        n += s->mark_len;
        pos = at + s->len;
        s = first_secret(text, len, pos, &at);
    }
    if (!out) {
        pthread_mutex_unlock(&mu);
        *out_len = (size_t)-1;
        return NULL;
    }
    memcpy(out + n, text + pos, len - pos);
    n += len - pos;
    out[n] = '\0';
    pthread_mutex_unlock(&mu);
    *out_len = n;
    return out;
}

/* Field names that carry a credential in a request or its headers. */
static const char *const credential_keys[] = {
    "authorization", "proxy-authorization", "api_key", "api-key", "apikey", "x-api-key",
    "x-goog-api-key", "openai_api_key", "anthropic_api_key", "access_token", "bearer",
};

int redact_has_credential(const char *json)
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
