/* redact.c: keeping secrets out of what klab writes (see redact.h). */
#include "base/redact.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

/* The value's base64 spellings that any text holding it encoded must
 * contain: for each of the three alignments the value can have inside a
 * longer encoded string (alone, or after "user:" in Basic auth), in the
 * standard and the URL-safe alphabets, the characters that depend on the
 * value's bytes only. */
#define B64_FORMS 6
typedef struct b64_form {
    char *core;
    size_t len;
    int left, right; /* characters before and after the core that still hold some of the value's bits */
    int url_safe;
} b64_form;

typedef struct secret {
    char *name;
    char *value;
    size_t len;
    char mark[96];     /* "[redacted NAME]" */
    size_t mark_len;
    b64_form b64[B64_FORMS];
} secret;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static secret *secrets;
static size_t nsecrets, capsecrets;

static const char B64_STD[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char B64_URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Fills f with the characters of base64(k zero bytes, v) that depend on v
 * alone (see b64_form). Returns 0 when out of memory. */
static int make_b64_form(b64_form *f, const char *v, size_t len, int k, int url_safe)
{
    const char *abc = url_safe ? B64_URL : B64_STD;
    size_t total = (size_t)k + len, groups = total / 3, rest = total % 3;
    size_t full = 4 * groups + rest; /* characters made of whole known bytes */
    size_t skip = k == 0 ? 0 : (size_t)k + 1;
    char *out = malloc(4 * groups + 4 + 1);
    if (!out)
        return 0;
    size_t o = 0;
    for (size_t g = 0; g * 3 < total; g++) {
        unsigned b[3] = {0, 0, 0};
        for (int j = 0; j < 3; j++) {
            size_t at = g * 3 + (size_t)j;
            b[j] = at < (size_t)k || at >= total ? 0 : (unsigned char)v[at - (size_t)k];
        }
        unsigned w = b[0] << 16 | b[1] << 8 | b[2];
        for (int j = 0; j < 4; j++)
            out[o++] = abc[(w >> (18 - 6 * j)) & 63];
    }
    memmove(out, out + skip, full - skip);
    out[full - skip] = '\0';
    f->core = out;
    f->len = full - skip;
    f->left = k == 0 ? 0 : 1;
    f->right = rest ? 1 : 0;
    f->url_safe = url_safe;
    return 1;
}

/* Keeps value under name (the caller holds mu). */
static int keep(const char *name, const char *value, size_t len)
{
    if (len < REDACT_MIN_LEN)
        return 0;
    for (size_t i = 0; i < nsecrets; i++)
        if (secrets[i].len == len && memcmp(secrets[i].value, value, len) == 0)
            return 1; /* the same value under another name: one is enough */
    if (nsecrets == capsecrets) {
        size_t nc = capsecrets ? 2 * capsecrets : 8;
        secret *p = realloc(secrets, nc * sizeof *p);
        if (!p)
            return 0;
        secrets = p;
        capsecrets = nc;
    }
    secret *s = &secrets[nsecrets];
    memset(s, 0, sizeof *s);
    s->name = strdup(name);
    s->value = malloc(len);
    int ok = s->name && s->value;
    for (int f = 0; ok && f < B64_FORMS; f++)
        ok = make_b64_form(&s->b64[f], value, len, f % 3, f / 3);
    if (!ok) {
        free(s->name);
        free(s->value);
        for (int f = 0; f < B64_FORMS; f++)
            free(s->b64[f].core);
        return 0;
    }
    memcpy(s->value, value, len);
    s->len = len;
    int w = snprintf(s->mark, sizeof s->mark, "[redacted %.80s]", name);
    s->mark_len = w > 0 && (size_t)w < sizeof s->mark ? (size_t)w : strlen(s->mark);
    nsecrets++;
    return 1;
}

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The password of a URL with one (scheme://user:password@host...), as
 * [*at, *at + *n) in value; 0 when value is no such URL. */
static int url_password(const char *value, size_t len, size_t *at, size_t *n, size_t *user_at)
{
    size_t i = 0;
    while (i < len && (isalnum((unsigned char)value[i]) || strchr("+.-", value[i])))
        i++;
    if (i == 0 || i + 3 > len || memcmp(value + i, "://", 3) != 0)
        return 0;
    size_t auth = i + 3, end = auth;
    while (end < len && !strchr("/?#", value[end]))
        end++;
    size_t last_at = 0;
    int has_at = 0;
    for (size_t j = auth; j < end; j++)
        if (value[j] == '@') {
            last_at = j;
            has_at = 1;
        }
    if (!has_at)
        return 0;
    const char *colon = memchr(value + auth, ':', last_at - auth);
    if (!colon || (size_t)(colon - value) + 1 >= last_at)
        return 0;
    *user_at = auth;
    *at = (size_t)(colon - value) + 1;
    *n = last_at - *at;
    return 1;
}

/* A URL's password travels as the URL holds it (percent-encoded), decoded,
 * and with its user ("user:password", what Basic auth encodes): each is
 * kept under name when long enough to be told from ordinary text. */
static void keep_url_password(const char *name, const char *value, size_t len)
{
    size_t at, n, user_at;
    if (!url_password(value, len, &at, &n, &user_at))
        return;
    keep(name, value + at, n);
    char *plain = malloc(n + 1);
    if (!plain)
        return;
    size_t k = 0;
    for (size_t i = at; i < at + n; i++) {
        int h, l;
        if (value[i] == '%' && i + 2 < at + n && (h = hex_value(value[i + 1])) >= 0 &&
            (l = hex_value(value[i + 2])) >= 0) {
            plain[k++] = (char)(h << 4 | l);
            i += 2;
        } else {
            plain[k++] = value[i];
        }
    }
    keep(name, plain, k);
    free(plain);
    keep(name, value + user_at, at + n - user_at);
}

int redact_add(const char *name, const char *value, size_t len)
{
    if (!name || !value || len < REDACT_MIN_LEN)
        return 0;
    pthread_mutex_lock(&mu);
    int kept = keep(name, value, len);
    keep_url_password(name, value, len);
    pthread_mutex_unlock(&mu);
    return kept;
}

int redact_add_env(const char *name)
{
    const char *v = name ? getenv(name) : NULL;
    return v ? redact_add(name, v, strlen(v)) : 0;
}

/* A name that looks like a secret's: it holds KEY, TOKEN, SECRET, PASS
 * (PASSWORD, PASSWD, DB_PASS), CREDENTIAL, AUTH, COOKIE, DSN, WEBHOOK or
 * PRIVATE, or ends in PAT (a personal access token: GH_PAT), in any case
 * (OPENAI_API_KEY, HF_TOKEN, NPM_AUTH, SENTRY_DSN, SLACK_WEBHOOK_URL,
 * aws_credentials_file). Redacting a value that was no secret costs a word
 * in a log; missing one costs the secret. */
static int secret_name(const char *name, size_t n)
{
    static const char *const marks[] = {"KEY", "TOKEN", "SECRET", "PASS", "CREDENTIAL",
                                        "AUTH", "COOKIE", "DSN", "WEBHOOK", "PRIVATE"};
    for (size_t m = 0; m < sizeof marks / sizeof marks[0]; m++) {
        size_t ml = strlen(marks[m]);
        for (size_t i = 0; i + ml <= n; i++)
            if (strncasecmp(name + i, marks[m], ml) == 0)
                return 1;
    }
    return n >= 3 && strncasecmp(name + n - 3, "PAT", 3) == 0;
}

void redact_scan_environ(void)
{
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t pw_at, pw_n, user_at;
        /* Any variable whose value is a URL with a password in it (a
         * DATABASE_URL), whatever its name. */
        if (!eq || (!secret_name(*e, (size_t)(eq - *e)) &&
                    !url_password(eq + 1, strlen(eq + 1), &pw_at, &pw_n, &user_at)))
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

/* The length of an escape at t[0..n) that stands for byte c: %XX (either
 * case), + for a space, or a JSON escape (\" \\ \/ \b \f \n \r \t, \u00XX);
 * 0 when there is none. */
static size_t escape_len(const char *t, size_t n, unsigned char c)
{
    if (n >= 3 && t[0] == '%' && hex_value(t[1]) >= 0 && hex_value(t[2]) >= 0)
        return (hex_value(t[1]) << 4 | hex_value(t[2])) == c ? 3 : 0;
    if (n >= 1 && t[0] == '+')
        return c == ' ' ? 1 : 0;
    if (n >= 2 && t[0] == '\\') {
        static const char pairs[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
        for (size_t e = 0; e + 1 < sizeof pairs; e += 2)
            if (t[1] == pairs[e])
                return c == (unsigned char)pairs[e + 1] ? 2 : 0;
        if (n >= 6 && t[1] == 'u' && t[2] == '0' && t[3] == '0' && hex_value(t[4]) >= 0 && hex_value(t[5]) >= 0)
            return c < 0x80 && (hex_value(t[4]) << 4 | hex_value(t[5])) == c ? 6 : 0;
    }
    return 0;
}

/* The length of the text at t[0..n) that spells v[0..vl) byte for byte,
 * each byte as itself or escaped (escape_len): the value raw, JSON-escaped,
 * URL-encoded, or a mix; 0 when it does not. Where both an escape and the
 * byte itself fit (a value holding '%', '+' or '\\'), the escape is tried
 * first and the byte after it (to a depth of 8; past that, the escape). */
static size_t spelled_at(const char *t, size_t n, const char *v, size_t vl, int depth)
{
    size_t q = 0;
    for (size_t i = 0; i < vl; i++) {
        unsigned char c = (unsigned char)v[i];
        size_t esc = escape_len(t + q, n - q, c);
        int itself = q < n && (unsigned char)t[q] == c;
        if (esc && itself && depth < 8) {
            size_t rest = spelled_at(t + q + esc, n - q - esc, v + i + 1, vl - i - 1, depth + 1);
            if (rest || i + 1 == vl)
                return q + esc + rest;
            esc = 0;
        }
        size_t step = esc ? esc : (size_t)itself;
        if (!step)
            return 0;
        q += step;
    }
    return q;
}

/* A match: where it starts, how long it is, whose value. */
typedef struct hit {
    size_t at, len;
    const secret *s;
} hit;

/* Widens a base64 core found at [at, at + f->len) over the characters
 * around it that still hold bits of the value, and over '=' padding, never
 * before from. */
static void widen_b64(const char *text, size_t len, size_t from, const b64_form *f, size_t at, hit *h)
{
    const char *abc = f->url_safe ? B64_URL : B64_STD;
    size_t a = at, e = at + f->len;
    if (f->left && a > from && text[a - 1] && strchr(abc, text[a - 1]))
        a--;
    if (f->right && e < len && text[e] && strchr(abc, text[e]))
        e++;
    while (e < len && text[e] == '=' && e - at < f->len + 4)
        e++;
    h->at = a;
    h->len = e - a;
}

/* The first secret in text[from..len), in any of its spellings, into h;
 * 0 when there is none. The earliest start wins, then the longest. */
static int first_hit(const char *text, size_t len, size_t from, hit *h)
{
    h->s = NULL;
    h->at = len;
    h->len = 0;
    for (size_t i = 0; i < nsecrets; i++)
        for (int f = 0; f < B64_FORMS; f++) {
            const b64_form *b = &secrets[i].b64[f];
            if (b->len < REDACT_MIN_LEN || b->len > len - from)
                continue;
            const char *p = memmem(text + from, len - from, b->core, b->len);
            if (!p)
                continue;
            hit w;
            widen_b64(text, len, from, b, (size_t)(p - text), &w);
            if (w.at < h->at || (w.at == h->at && w.len > h->len)) {
                *h = w;
                h->s = &secrets[i];
            }
        }
    /* The value itself, escaped or not: a spelling starts with the value's
     * first byte or with an escape. */
    for (size_t p = from; p < len && p <= h->at; p++) {
        char c = text[p];
        for (size_t i = 0; i < nsecrets; i++) {
            const secret *s = &secrets[i];
            if (c != s->value[0] && c != '%' && c != '\\' && c != '+')
                continue;
            size_t n = spelled_at(text + p, len - p, s->value, s->len, 0);
            if (n && (p < h->at || n > h->len)) {
                h->at = p;
                h->len = n;
                h->s = s;
            }
        }
        if (h->s && h->at == p)
            break;
    }
    return h->s != NULL;
}

char *redact_apply(const char *text, size_t len, size_t *out_len)
{
    *out_len = 0;
    if (!text)
        return NULL;
    pthread_mutex_lock(&mu);
    hit h;
    if (!nsecrets || !first_hit(text, len, 0, &h)) {
        pthread_mutex_unlock(&mu);
        return NULL;
    }
    /* Room for the text and a few marks; more is made as marks are found
     * (a buffer sized for the worst case would be many times the text). */
    size_t cap = len + 4 * sizeof h.s->mark + 1, n = 0, pos = 0;
    char *out = malloc(cap);
    int more = 1;
    while (out && more) {
        const secret *s = h.s;
        if (n + (h.at - pos) + s->mark_len + (len - h.at) + 1 > cap) {
            size_t need = n + (len - pos) + s->mark_len + 1;
            size_t want = cap * 2 > need ? cap * 2 : need;
            char *grown = realloc(out, want);
            if (!grown) {
                free(out);
                out = NULL;
                break;
            }
            out = grown;
            cap = want;
        }
        memcpy(out + n, text + pos, h.at - pos);
        n += h.at - pos;
        memcpy(out + n, s->mark, s->mark_len);
        n += s->mark_len;
        pos = h.at + h.len;
        more = pos < len && first_hit(text, len, pos, &h);
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
