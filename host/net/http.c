/* http.c: many HTTP requests in flight over one libcurl multi handle (see http.h). */
#include "base/clock.h"
#include "net/http.h"

/* libcurl's types and constants only: every function is reached through the
 * table below, resolved at run time. */
#define CURL_DISABLE_DEPRECATION 1
#include <curl/curl.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "driver/dynlib.h"

#ifndef KLAB_VERSION
#define KLAB_VERSION "0"
#endif

/* ---- libcurl, loaded once ---------------------------------------------- */

static const char *const curl_names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so", NULL};
static const dynlib_desc dynlib_curl = {"libcurl", "KLAB_LIBCURL", curl_names, NULL};

static struct {
    CURLcode (*global_init)(long);
    curl_version_info_data *(*version_info)(CURLversion);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    const char *(*easy_strerror)(CURLcode);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_cleanup)(CURLM *);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    const char *(*multi_strerror)(CURLMcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    time_t (*getdate)(const char *, const time_t *);
    CURLU *(*url)(void);
    void (*url_cleanup)(CURLU *);
    CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
    CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
    void (*free)(void *);
    unsigned int version_num;
    const char *version;
} cf;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static ks_status curl_load_st; /* KS_OK once libcurl is loaded and initialised */

static int curl_load(ks_status *st)
{
    const dynlib *lib = dynlib_get(&dynlib_curl, st);
    if (!lib)
        return st->code;
    const dynlib_symbol syms[] = {
        {"curl_global_init", (void **)&cf.global_init, 0},
        {"curl_version_info", (void **)&cf.version_info, 0},
        {"curl_easy_init", (void **)&cf.easy_init, 0},
        {"curl_easy_cleanup", (void **)&cf.easy_cleanup, 0},
        {"curl_easy_setopt", (void **)&cf.easy_setopt, 0},
        {"curl_easy_getinfo", (void **)&cf.easy_getinfo, 0},
        {"curl_easy_strerror", (void **)&cf.easy_strerror, 0},
        {"curl_multi_init", (void **)&cf.multi_init, 0},
        {"curl_multi_cleanup", (void **)&cf.multi_cleanup, 0},
        {"curl_multi_add_handle", (void **)&cf.multi_add_handle, 0},
        {"curl_multi_remove_handle", (void **)&cf.multi_remove_handle, 0},
        {"curl_multi_perform", (void **)&cf.multi_perform, 0},
        {"curl_multi_info_read", (void **)&cf.multi_info_read, 0},
        {"curl_multi_strerror", (void **)&cf.multi_strerror, 0},
        {"curl_slist_append", (void **)&cf.slist_append, 0},
        {"curl_slist_free_all", (void **)&cf.slist_free_all, 0},
        {"curl_getdate", (void **)&cf.getdate, 0},
        {"curl_url", (void **)&cf.url, 0},
        {"curl_url_cleanup", (void **)&cf.url_cleanup, 0},
        {"curl_url_set", (void **)&cf.url_set, 0},
        {"curl_url_get", (void **)&cf.url_get, 0},
        {"curl_free", (void **)&cf.free, 0},
        {"curl_multi_poll", (void **)&cf.multi_poll, 1},
    };
    if (dynlib_bind(lib, syms, DYNLIB_COUNT(syms), st) != KS_OK)
        return st->code;
    if (!cf.multi_poll)
        return ks_fail(st, KS_ENOLIB, 0, "%s is too old: klab needs libcurl 7.66 or later (curl_multi_poll)",
                       lib->path);
    curl_version_info_data *v = cf.version_info(CURLVERSION_NOW);
    cf.version_num = v ? v->version_num : 0;
    cf.version = v && v->version ? v->version : "unknown";
    CURLcode rc = cf.global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK)
        return ks_fail(st, KS_ENOLIB, (int)rc, "curl_global_init failed: %s", cf.easy_strerror(rc));
    return KS_OK;
}

static void curl_load_once(void)
{
    ks_clear(&curl_load_st);
    curl_load(&curl_load_st);
}

/* KS_OK when libcurl is usable; otherwise copies the load failure into st. */
static int curl_ready(ks_status *st)
{
    pthread_once(&curl_once, curl_load_once);
    if (curl_load_st.code != KS_OK) {
        *st = curl_load_st;
        return st->code;
    }
    return KS_OK;
}

const char *http_curl_version(void)
{
    ks_status st;
    return curl_ready(&st) == KS_OK ? cf.version : NULL;
}

/* ---- small helpers ------------------------------------------------------ */

/* splitmix64: the jitter needs no cryptographic quality, only independence
 * between clients and processes. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static long ms_of(double seconds)
{
    if (!(seconds > 0))
        return 0;
    double ms = ceil(seconds * 1000.0);
    return ms >= (double)LONG_MAX ? LONG_MAX : (long)ms;
}

int http_header_is_secret(const char *name, size_t n)
{
    static const char *const secret[] = {"authorization", "proxy-authorization", "x-api-key",
                                         "api-key", NULL};
    for (int i = 0; secret[i]; i++)
        if (strlen(secret[i]) == n && strncasecmp(name, secret[i], n) == 0)
            return 1;
    return 0;
}

/* An IPv4 address written the way inet_aton reads it (and so the system
 * resolver libcurl calls): one to four parts, each decimal, octal with a
 * leading 0, or hex with 0x; the last part fills the bytes that are left.
 * Nothing else: no sign, no space, no empty part, no trailing dot. */
static int parse_ipv4(const char *s, struct in_addr *out)
{
    uint32_t part[4];
    int n = 0;
    const char *p = s;
    for (;;) {
        if (n == 4 || !isdigit((unsigned char)*p))
            return 0;
        int base = 10;
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
            base = 16;
            p += 2;
            if (!isxdigit((unsigned char)*p))
                return 0;
        } else if (p[0] == '0') {
            base = 8;
        }
        uint64_t v = 0;
        for (; *p && *p != '.'; p++) {
            int d = isdigit((unsigned char)*p) ? *p - '0'
                    : base == 16 && isxdigit((unsigned char)*p) ? tolower((unsigned char)*p) - 'a' + 10
                                                               : 99;
            if (d >= base)
                return 0;
            v = v * (uint64_t)base + (uint64_t)d;
            if (v > 0xffffffffu)
                return 0;
        }
        part[n++] = (uint32_t)v;
        if (!*p)
            break;
        p++; /* the dot: a part must follow */
    }
    uint32_t a;
    switch (n) {
    case 1: a = part[0]; break;
    case 2:
        if (part[0] > 255 || part[1] > 0xffffff)
            return 0;
        a = part[0] << 24 | part[1];
        break;
    case 3:
        if (part[0] > 255 || part[1] > 255 || part[2] > 0xffff)
            return 0;
        a = part[0] << 24 | part[1] << 16 | part[2];
        break;
    default:
        if (part[0] > 255 || part[1] > 255 || part[2] > 255 || part[3] > 255)
            return 0;
        a = part[0] << 24 | part[1] << 16 | part[2] << 8 | part[3];
    }
    out->s_addr = htonl(a);
    return 1;
}

/* Reads t->host into t->numeric, t->addr and t->loopback. */
static void classify_host(http_target *t)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (parse_ipv4(t->host, &a4)) {
        t->numeric = 1;
        inet_ntop(AF_INET, &a4, t->addr, sizeof t->addr);
        t->loopback = (ntohl(a4.s_addr) >> 24) == 127;
    } else if (inet_pton(AF_INET6, t->host, &a6) == 1) {
        t->numeric = 1;
        inet_ntop(AF_INET6, &a6, t->addr, sizeof t->addr);
        /* ::1, or an IPv4-mapped loopback (::ffff:127.x.y.z), which the
         * kernel connects to as 127.x.y.z. */
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        t->loopback = IN6_IS_ADDR_LOOPBACK(&a6) || (memcmp(a6.s6_addr, mapped, 12) == 0 && a6.s6_addr[12] == 127);
    } else {
        /* A name: only localhost is this machine (with or without the
         * root's trailing dot), and a request to it is pinned to 127.0.0.1
         * and ::1 whatever a resolver would say. */
        t->loopback = strcasecmp(t->host, "localhost") == 0 || strcasecmp(t->host, "localhost.") == 0;
    }
}

int http_url_target(const char *url, http_target *t, ks_status *st)
{
    memset(t, 0, sizeof *t);
    if (!url || (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0))
        return ks_fail(st, KS_EINVAL, 0, "the URL must start with http:// or https://");
    if (curl_ready(st) != KS_OK)
        return st->code;
    CURLU *u = cf.url();
    if (!u)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory parsing a URL");
    char *host = NULL, *port = NULL;
    CURLUcode rc = cf.url_set(u, CURLUPART_URL, url, 0);
    if (rc == CURLUE_OK)
        rc = cf.url_get(u, CURLUPART_HOST, &host, 0);
    if (rc == CURLUE_OK)
        rc = cf.url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    int r = KS_OK;
    size_t hl = host ? strlen(host) : 0;
    if (rc != CURLUE_OK || hl == 0 || hl >= sizeof t->host || !port) {
        r = ks_fail(st, KS_EINVAL, (int)rc, "cannot read the host of the URL (libcurl URL error %d)", (int)rc);
    } else {
        /* An IPv6 host comes in brackets; a zone ("%25eth0") stays with it,
         * and such an address is never loopback. */
        if (host[0] == '[' && host[hl - 1] == ']')
            snprintf(t->host, sizeof t->host, "%.*s", (int)(hl - 2), host + 1);
        else
            snprintf(t->host, sizeof t->host, "%s", host);
        t->port = atoi(port);
        classify_host(t);
    }
    cf.free(host);
    cf.free(port);
    cf.url_cleanup(u);
    return r;
}

int http_url_is_loopback(const char *url)
{
    http_target t;
    ks_status st;
    return http_url_target(url, &t, &st) == KS_OK && t.loopback;
}

/* An HTTP token character (RFC 9110), the alphabet of header names. */
static int is_tchar(int ch)
{
    return isalnum(ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* Writes zeros over every string of l, then frees it: the list may carry
 * keys. */
static void slist_wipe_free(struct curl_slist *l)
{
    for (struct curl_slist *p = l; p; p = p->next)
        if (p->data)
            explicit_bzero(p->data, strlen(p->data));
    if (l)
        cf.slist_free_all(l);
}

/* ---- transfers ---------------------------------------------------------- */

enum { X_ACTIVE, X_WAITING };

#define MAX_RESPONSE_HEADERS 128
#define MAX_HEADER_LINE 16384

typedef struct xfer {
    struct xfer *next;
    uint64_t id;
    CURL *easy;
    struct curl_slist *hdrs; /* our own copy of the request headers (wiped on free) */
    char *body;              /* our copy of the request body */
    size_t body_len;
    http_retry retry;
    size_t max_body;
    int state;
    double t_submit;   /* monotonic */
    double t_attempt;  /* start of the current attempt */
    double next_start; /* X_WAITING: when the next attempt starts */
    /* What the current attempt received. */
    char *rbody;
    size_t rlen, rcap;
    int overflow;
    size_t overflow_at;      /* bytes received when the body passed max_body */
    http_header *rh;
    size_t nrh, caprh;
    int too_many_headers;
    char errbuf[CURL_ERROR_SIZE];
    /* Every attempt so far. */
    http_attempt *att;
    size_t natt, capatt;
    struct curl_slist *pin; /* CURLOPT_CONNECT_TO or CURLOPT_RESOLVE of a loopback request */
} xfer;

struct http_client {
    CURLM *multi;
    xfer *list; /* pending requests, most recent first */
    size_t npending;
    uint64_t next_id;
    uint64_t rng;
};

static void headers_free(http_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(h[i].name);
        free(h[i].value);
    }
    free(h);
}

/* Forgets what the current attempt received. */
static void capture_reset(xfer *x)
{
    free(x->rbody);
    x->rbody = NULL;
    x->rlen = x->rcap = 0;
    x->overflow = 0;
    x->overflow_at = 0;
    headers_free(x->rh, x->nrh);
    x->rh = NULL;
    x->nrh = x->caprh = 0;
    x->too_many_headers = 0;
    x->errbuf[0] = '\0';
}

static void xfer_free(xfer *x)
{
    if (!x)
        return;
    if (x->easy)
        cf.easy_cleanup(x->easy);
    slist_wipe_free(x->hdrs);
    if (x->pin)
        cf.slist_free_all(x->pin);
    if (x->body) {
        explicit_bzero(x->body, x->body_len);
        free(x->body);
    }
    capture_reset(x);
    free(x->att);
    free(x);
}

/* Pins a loopback request to the address klab checked: a numeric host is
 * connected to as that address (CURLOPT_CONNECT_TO), localhost to 127.0.0.1
 * and ::1 (CURLOPT_RESOLVE), so that no parser or resolver can send it
 * elsewhere. The lists are kept in x and freed with it. */
static int pin_loopback(xfer *x, const http_target *t, ks_status *st)
{
    char entry[400];
    if (t->numeric)
        snprintf(entry, sizeof entry, "::%s%s%s:%d", strchr(t->addr, ':') ? "[" : "", t->addr,
                 strchr(t->addr, ':') ? "]" : "", t->port);
    else
        snprintf(entry, sizeof entry, "%s:%d:127.0.0.1,[::1]", t->host, t->port);
    struct curl_slist *l = cf.slist_append(NULL, entry);
    if (!l)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory for a request");
    x->pin = l;
    CURLcode rc = cf.easy_setopt(x->easy, t->numeric ? CURLOPT_CONNECT_TO : CURLOPT_RESOLVE, l);
    if (rc != CURLE_OK)
        return ks_fail(st, KS_EIO, (int)rc, "libcurl cannot pin a loopback address: %s", cf.easy_strerror(rc));
    return KS_OK;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (n == 0)
        return 0;
    if (x->rlen + n > x->max_body) {
        /* Nothing of an over-size body is kept: a truncated body is not
         * the reply, and nobody should store or parse it. */
        x->overflow = 1;
        x->overflow_at = x->rlen + n;
        free(x->rbody);
        x->rbody = NULL;
        x->rlen = x->rcap = 0;
        return 0; /* CURLE_WRITE_ERROR ends the transfer */
    }
    if (x->rlen + n + 1 > x->rcap) {
        size_t cap = x->rcap ? x->rcap : 4096;
        while (cap < x->rlen + n + 1)
            cap *= 2;
        char *p = realloc(x->rbody, cap);
        if (!p)
            return 0;
        x->rbody = p;
        x->rcap = cap;
    }
    memcpy(x->rbody + x->rlen, ptr, n);
    x->rlen += n;
    x->rbody[x->rlen] = '\0';
    return n;
}

/* One response header line. A status line ("HTTP/...") starts a new set:
 * what an interim reply (100 Continue) or a proxy's CONNECT reply sent is
 * dropped. Lines beyond the limits are ignored, not fatal. */
static size_t on_header(char *buf, size_t size, size_t nitems, void *ud)
{
    xfer *x = ud;
    size_t n = size * nitems;
    if (n >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
        headers_free(x->rh, x->nrh);
        x->rh = NULL;
        x->nrh = x->caprh = 0;
        return n;
    }
    if (n > MAX_HEADER_LINE)
        return n;
    const char *colon = memchr(buf, ':', n);
    if (!colon || colon == buf)
        return n;
    if (x->nrh >= MAX_RESPONSE_HEADERS) {
        x->too_many_headers = 1;
        return n;
    }
    size_t nl = (size_t)(colon - buf);
    const char *v = colon + 1, *end = buf + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if (x->nrh == x->caprh) {
        size_t cap = x->caprh ? 2 * x->caprh : 16;
        http_header *p = realloc(x->rh, cap * sizeof *p);
        if (!p)
            return n;
        x->rh = p;
        x->caprh = cap;
    }
    char *name = strndup(buf, nl);
    char *value = strndup(v, (size_t)(end - v));
    if (!name || !value) {
        free(name);
        free(value);
        return n;
    }
    for (char *p = name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    x->rh[x->nrh].name = name;
    x->rh[x->nrh].value = value;
    x->nrh++;
    return n;
}

static const char *find_header(const http_header *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(h[i].name, name) == 0)
            return h[i].value;
    return NULL;
}

const char *http_response_header(const http_response *r, const char *name)
{
    return r && name ? find_header(r->headers, r->nheaders, name) : NULL;
}

/* Seconds the server asked us to wait, or -1: retry-after-ms (milliseconds,
 * sent by some APIs) wins over Retry-After, which is either seconds or an
 * HTTP date. */
static double retry_after_of(const xfer *x)
{
    const char *ms = find_header(x->rh, x->nrh, "retry-after-ms");
    if (ms) {
        char *e;
        double v = strtod(ms, &e);
        if (e != ms && *e == '\0' && isfinite(v) && v >= 0)
            return v / 1000.0;
    }
    const char *ra = find_header(x->rh, x->nrh, "retry-after");
    if (!ra || !*ra)
        return -1;
    if (isdigit((unsigned char)ra[0])) {
        char *e;
        double v = strtod(ra, &e);
        if (*e == '\0' && isfinite(v) && v >= 0)
            return v;
        return -1;
    }
    time_t when = cf.getdate(ra, NULL);
    if (when == (time_t)-1)
        return -1;
    double d = difftime(when, time(NULL));
    return d > 0 ? d : 0;
}

/* Transport errors worth another attempt: the network or the server
 * failed, not the request (a bad URL, TLS verification, a refused option
 * are final). */
static int transient_curl_error(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
        return 1;
    default:
        return 0;
    }
}

static int xfer_start(http_client *c, xfer *x, double now, ks_status *st)
{
    capture_reset(x);
    x->t_attempt = now;
    x->state = X_ACTIVE;
    CURLMcode mc = cf.multi_add_handle(c->multi, x->easy);
    if (mc != CURLM_OK)
        return ks_fail(st, KS_EIO, (int)mc, "curl_multi_add_handle: %s", cf.multi_strerror(mc));
    return KS_OK;
}

int http_client_new(http_client **out, ks_status *st)
{
    if (!out)
        return ks_fail(st, KS_EINVAL, 0, "http_client_new: NULL out");
    *out = NULL;
    if (curl_ready(st) != KS_OK)
        return st->code;
    http_client *c = calloc(1, sizeof *c);
    if (!c)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory for an HTTP client");
    c->multi = cf.multi_init();
    if (!c->multi) {
        free(c);
        return ks_fail(st, KS_EIO, 0, "curl_multi_init failed");
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    c->rng = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40) ^
             (uint64_t)(uintptr_t)c;
    c->next_id = 1;
    *out = c;
    return KS_OK;
}

void http_client_free(http_client *c)
{
    if (!c)
        return;
    for (xfer *x = c->list, *nx; x; x = nx) {
        nx = x->next;
        if (x->state == X_ACTIVE)
            cf.multi_remove_handle(c->multi, x->easy);
        xfer_free(x);
    }
    cf.multi_cleanup(c->multi);
    free(c);
}

size_t http_pending(const http_client *c)
{
    return c ? c->npending : 0;
}

/* Checks one request header line; the message never quotes the line (it
 * may be a key), only a name that is a well-formed token. */
static int check_header(const char *line, size_t i, ks_status *st)
{
    if (!line)
        return ks_fail(st, KS_EINVAL, 0, "request header %zu is NULL", i + 1);
    const char *colon = strchr(line, ':');
    size_t nl = colon ? (size_t)(colon - line) : 0;
    if (nl == 0)
        return ks_fail(st, KS_EINVAL, 0, "request header %zu is not \"Name: value\"", i + 1);
    for (size_t k = 0; k < nl; k++)
        if (!is_tchar((unsigned char)line[k]))
            return ks_fail(st, KS_EINVAL, 0, "request header %zu has a malformed name", i + 1);
    if (strpbrk(line, "\r\n"))
        return ks_fail(st, KS_EINVAL, 0, "request header '%.*s' contains a line break", (int)nl, line);
    return KS_OK;
}

static int valid_seconds(double s)
{
    return !isnan(s);
}

/* Loopback is never reached through a proxy (a local model server behind
 * a proxy from the environment is never what is meant): CURLOPT_NOPROXY
 * replaces no_proxy/NO_PROXY, so their list is carried over. */
static int set_noproxy(CURL *e, ks_status *st)
{
    static const char loopback[] = "localhost,127.0.0.1,::1";
    const char *env = getenv("no_proxy");
    if (!env || !*env)
        env = getenv("NO_PROXY");
    if (env && strcmp(env, "*") == 0)
        return KS_OK; /* no proxy for anything already */
    size_t n = (env ? strlen(env) : 0) + sizeof loopback + 1;
    char *list = malloc(n);
    if (!list)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory for the proxy exceptions");
    snprintf(list, n, "%s%s%s", env && *env ? env : "", env && *env ? "," : "", loopback);
    CURLcode rc = cf.easy_setopt(e, CURLOPT_NOPROXY, list); /* libcurl copies it */
    free(list);
    if (rc != CURLE_OK)
        return ks_fail(st, KS_EIO, (int)rc, "libcurl refused CURLOPT_NOPROXY: %s", cf.easy_strerror(rc));
    return KS_OK;
}

#define SETOPT(opt, val)                                                              \
    do {                                                                              \
        CURLcode e_ = cf.easy_setopt(x->easy, opt, val);                              \
        if (e_ != CURLE_OK) {                                                         \
            ks_fail(st, KS_EIO, (int)e_, "libcurl refused %s: %s", #opt, cf.easy_strerror(e_)); \
            goto fail;                                                                \
        }                                                                             \
    } while (0)

int http_submit(http_client *c, const http_request *req, uint64_t *id, ks_status *st)
{
    if (!c || !req || !id)
        return ks_fail(st, KS_EINVAL, 0, "http_submit: NULL argument");
    *id = 0;
    if (!req->url || (strncasecmp(req->url, "http://", 7) != 0 &&
                      strncasecmp(req->url, "https://", 8) != 0))
        return ks_fail(st, KS_EINVAL, 0, "the URL must start with http:// or https://");
    if (req->method != HTTP_POST && req->method != HTTP_GET)
        return ks_fail(st, KS_EINVAL, 0, "unknown HTTP method %d", (int)req->method);
    if (req->nheaders && !req->headers)
        return ks_fail(st, KS_EINVAL, 0, "http_submit: NULL header list");
    if (req->body_len && !req->body)
        return ks_fail(st, KS_EINVAL, 0, "http_submit: NULL body with a length");
    const http_retry *r = &req->retry;
    if (r->max_attempts > HTTP_MAX_ATTEMPTS)
        return ks_fail(st, KS_EINVAL, 0, "at most %d attempts", HTTP_MAX_ATTEMPTS);
    if (!valid_seconds(req->connect_timeout) || !valid_seconds(req->timeout) ||
        !(r->base_delay >= 0 && isfinite(r->base_delay)) || isnan(r->max_delay) ||
        isnan(r->budget_seconds))
        return ks_fail(st, KS_EINVAL, 0, "timeouts and delays must be numbers (delays >= 0)");
    int has_expect = 0, has_secret = 0;
    for (size_t i = 0; i < req->nheaders; i++) {
        if (check_header(req->headers[i], i, st) != KS_OK)
            return st->code;
        if (strncasecmp(req->headers[i], "expect:", 7) == 0)
            has_expect = 1;
        const char *colon = strchr(req->headers[i], ':');
        if (colon && http_header_is_secret(req->headers[i], (size_t)(colon - req->headers[i])))
            has_secret = 1;
    }
    http_target target;
    if (http_url_target(req->url, &target, st) != KS_OK)
        return st->code;
    if (has_secret && strncasecmp(req->url, "http://", 7) == 0 && !target.loopback && !req->allow_insecure)
        return ks_fail(st, KS_EREJECT, 0,
                       "refusing to send a key over plain http:// to a host other than this machine "
                       "(it would cross the network unencrypted): use https://, or allow_insecure_http");

    xfer *x = calloc(1, sizeof *x);
    if (!x)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory for an HTTP request");
    x->retry = *r;
    if (x->retry.max_attempts < 1)
        x->retry.max_attempts = 1;
    x->max_body = req->max_body ? req->max_body : HTTP_MAX_BODY_DEFAULT;
    x->body_len = req->body_len;
    x->body = malloc(req->body_len + 1);
    x->easy = cf.easy_init();
    if (!x->body || !x->easy) {
        ks_fail(st, KS_ENOMEM, 0, "out of memory for an HTTP request");
        goto fail;
    }
    if (req->body_len)
        memcpy(x->body, req->body, req->body_len);
    x->body[req->body_len] = '\0';
    for (size_t i = 0; i < req->nheaders; i++) {
        struct curl_slist *l = cf.slist_append(x->hdrs, req->headers[i]);
        if (!l) {
            ks_fail(st, KS_ENOMEM, 0, "out of memory for request headers");
            goto fail;
        }
        x->hdrs = l;
    }
    if (!has_expect && req->method == HTTP_POST) {
        /* No "Expect: 100-continue" round trip before large bodies. */
        struct curl_slist *l = cf.slist_append(x->hdrs, "Expect:");
        if (!l) {
            ks_fail(st, KS_ENOMEM, 0, "out of memory for request headers");
            goto fail;
        }
        x->hdrs = l;
    }

    SETOPT(CURLOPT_URL, req->url);
    SETOPT(CURLOPT_PRIVATE, (void *)x);
    SETOPT(CURLOPT_NOSIGNAL, 1L);
    SETOPT(CURLOPT_VERBOSE, 0L);
    SETOPT(CURLOPT_ERRORBUFFER, x->errbuf);
    SETOPT(CURLOPT_WRITEFUNCTION, on_body);
    SETOPT(CURLOPT_WRITEDATA, (void *)x);
    SETOPT(CURLOPT_HEADERFUNCTION, on_header);
    SETOPT(CURLOPT_HEADERDATA, (void *)x);
    SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
    if (cf.version_num >= 0x075500) {
        SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
    } else {
        SETOPT(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    }
    SETOPT(CURLOPT_CONNECTTIMEOUT_MS, ms_of(req->connect_timeout));
    SETOPT(CURLOPT_TIMEOUT_MS, ms_of(req->timeout));
    SETOPT(CURLOPT_HTTPHEADER, x->hdrs);
    if (req->proxy)
        SETOPT(CURLOPT_PROXY, req->proxy);
    if (set_noproxy(x->easy, st) != KS_OK)
        goto fail;
    /* The same loopback as the plain-http rule above (all of 127.0.0.0/8,
     * ::1, localhost): never through a proxy, which would carry a key that
     * rule let go unencrypted off the host, and pinned to the address that
     * rule checked. */
    if (target.loopback) {
        SETOPT(CURLOPT_PROXY, "");
        if (pin_loopback(x, &target, st) != KS_OK)
            goto fail;
    }
    SETOPT(CURLOPT_USERAGENT, "klab/" KLAB_VERSION);
    /* Optional comforts: an older libcurl may not know them, which is fine. */
    cf.easy_setopt(x->easy, CURLOPT_ACCEPT_ENCODING, "");
    cf.easy_setopt(x->easy, CURLOPT_TCP_KEEPALIVE, 1L);
    if (req->method == HTTP_POST) {
        SETOPT(CURLOPT_POST, 1L);
        SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
        SETOPT(CURLOPT_POSTFIELDS, x->body);
    } else {
        SETOPT(CURLOPT_HTTPGET, 1L);
    }

    double now = clock_now();
    x->t_submit = now;
    if (xfer_start(c, x, now, st) != KS_OK)
        goto fail;
    x->id = c->next_id++;
    x->next = c->list;
    c->list = x;
    c->npending++;
    *id = x->id;
    return KS_OK;
fail:
    xfer_free(x);
    return st->code;
}

/* The attempt x just finished with rc: records it, then either schedules
 * the next attempt (returns 0) or says the request is complete (returns 1). */
static int attempt_done(http_client *c, xfer *x, CURLcode rc, double now)
{
    if (x->natt == x->capatt) {
        size_t cap = x->capatt ? 2 * x->capatt : 4;
        http_attempt *p = realloc(x->att, cap * sizeof *p);
        if (!p) /* cannot record: stop retrying, keep what we have */
            return 1;
        x->att = p;
        x->capatt = cap;
    }
    http_attempt *a = &x->att[x->natt++];
    memset(a, 0, sizeof *a);
    long status = 0;
    if (cf.easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
        status = 0;
    a->status = (int)status;
    a->curl_code = (int)rc;
    if (rc != CURLE_OK) {
        if (x->overflow) {
            /* Its size as the server announced it, when it did. */
            const char *cl = NULL;
            for (size_t i = 0; i < x->nrh; i++)
                if (strcmp(x->rh[i].name, "content-length") == 0)
                    cl = x->rh[i].value;
            if (cl && strspn(cl, "0123456789") == strlen(cl) && *cl)
                snprintf(a->error, sizeof a->error,
                         "response body of %.20s bytes (Content-Length) is larger than the limit of %zu bytes; "
                         "it was not kept", cl, x->max_body);
            else
                snprintf(a->error, sizeof a->error,
                         "response body larger than the limit of %zu bytes (%zu bytes had arrived); "
                         "it was not kept", x->max_body, x->overflow_at);
        } else
            snprintf(a->error, sizeof a->error, "%s", x->errbuf[0] ? x->errbuf : cf.easy_strerror(rc));
        size_t n = strlen(a->error);
        while (n && (a->error[n - 1] == '\n' || a->error[n - 1] == '\r'))
            a->error[--n] = '\0';
    }
    a->at = x->t_attempt - x->t_submit;
    curl_off_t us = 0;
    if (cf.easy_getinfo(x->easy, CURLINFO_TOTAL_TIME_T, &us) == CURLE_OK && us > 0)
        a->latency = (double)us * 1e-6;
    else
        a->latency = now - x->t_attempt;
    a->retry_after = retry_after_of(x);
    a->wait = -1;

    const http_retry *r = &x->retry;
    int retryable;
    if (rc != CURLE_OK)
        retryable = r->retry_on_connect_error && !x->overflow && transient_curl_error(rc);
    else
        retryable = (status == 429 && r->retry_on_429) ||
                    (status >= 500 && status <= 599 && r->retry_on_5xx);
    if (!retryable || (int)x->natt >= r->max_attempts)
        return 1;

    double backoff = r->base_delay * ldexp(1.0, (int)x->natt - 1);
    if (r->max_delay > 0 && backoff > r->max_delay)
        backoff = r->max_delay;
    double wait = rng_unit(&c->rng) * backoff;
    if (a->retry_after > wait)
        wait = a->retry_after;
    if (r->budget_seconds > 0 && (now + wait) - x->t_submit > r->budget_seconds)
        return 1;
    a->wait = wait;
    x->state = X_WAITING;
    x->next_start = now + wait;
    return 0;
}

/* Moves what x holds into r (x is left to be freed). */
static void fill_response(xfer *x, double now, http_response *r)
{
    memset(r, 0, sizeof *r);
    r->id = x->id;
    const http_attempt *last = x->natt ? &x->att[x->natt - 1] : NULL;
    r->status = last ? last->status : 0;
    r->curl_code = last ? last->curl_code : 0;
    r->code = KS_OK;
    if (last && last->curl_code != CURLE_OK) {
        r->code = last->curl_code == CURLE_OPERATION_TIMEDOUT ? KS_ETIMEOUT : KS_EIO;
        r->error = strdup(last->error);
        if (!r->error)
            r->error = strdup("transport error");
    }
    if (x->rbody) {
        r->body = x->rbody;
        r->body_len = x->rlen;
        x->rbody = NULL;
        x->rlen = x->rcap = 0;
    } else {
        r->body = calloc(1, 1);
    }
    r->headers = x->rh;
    r->nheaders = x->nrh;
    x->rh = NULL;
    x->nrh = x->caprh = 0;
    r->attempts = x->att;
    r->nattempts = x->natt;
    x->att = NULL;
    x->natt = x->capatt = 0;
    r->elapsed = now - x->t_submit;
}

static void unlink_xfer(http_client *c, xfer *x)
{
    for (xfer **pp = &c->list; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            c->npending--;
            return;
        }
}

int http_poll(http_client *c, double wait_seconds, http_response **done, size_t *ndone,
              ks_status *st)
{
    if (!c || !done || !ndone)
        return ks_fail(st, KS_EINVAL, 0, "http_poll: NULL argument");
    *done = NULL;
    *ndone = 0;
    if (isnan(wait_seconds) || wait_seconds < 0)
        wait_seconds = 0;
    double deadline = clock_now() + wait_seconds;
    http_response *out = NULL;
    size_t nout = 0, capout = 0;
    int rc = KS_OK;

    for (;;) {
        double now = clock_now();
        for (xfer *x = c->list; x; x = x->next)
            if (x->state == X_WAITING && x->next_start <= now) {
                if (xfer_start(c, x, now, st) != KS_OK) {
                    rc = st->code;
                    goto out;
                }
            }
        int running = 0;
        CURLMcode mc = cf.multi_perform(c->multi, &running);
        if (mc != CURLM_OK) {
            rc = ks_fail(st, KS_EIO, (int)mc, "curl_multi_perform: %s", cf.multi_strerror(mc));
            goto out;
        }
        CURLMsg *m;
        int left;
        while ((m = cf.multi_info_read(c->multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            CURL *e = m->easy_handle;
            CURLcode res = m->data.result; /* read before the message is invalidated */
            xfer *x = NULL;
            cf.easy_getinfo(e, CURLINFO_PRIVATE, (char **)&x);
            cf.multi_remove_handle(c->multi, e);
            if (!x)
                continue;
            now = clock_now();
            if (!attempt_done(c, x, res, now))
                continue;
            if (nout == capout) {
                size_t cap = capout ? 2 * capout : 8;
                http_response *p = realloc(out, cap * sizeof *p);
                if (!p) {
                    /* Keep x pending: it is reported by a later poll. */
                    x->state = X_WAITING;
                    x->next_start = now;
                    rc = ks_fail(st, KS_ENOMEM, 0, "out of memory for HTTP responses");
                    goto out;
                }
                out = p;
                capout = cap;
            }
            fill_response(x, now, &out[nout++]);
            unlink_xfer(c, x);
            xfer_free(x);
        }
        if (nout > 0 || c->list == NULL)
            break;
        now = clock_now();
        if (now >= deadline)
            break;
        double t = deadline - now;
        for (xfer *x = c->list; x; x = x->next)
            if (x->state == X_WAITING && x->next_start - now < t)
                t = x->next_start - now;
        if (t < 0)
            t = 0;
        /* Rounded down, so that the wait is never overrun; the loop picks up
         * the remaining fraction of a millisecond. */
        int ms = t * 1000.0 >= (double)INT_MAX ? INT_MAX : (int)(t * 1000.0);
        mc = cf.multi_poll(c->multi, NULL, 0, ms, NULL);
        if (mc != CURLM_OK) {
            rc = ks_fail(st, KS_EIO, (int)mc, "curl_multi_poll: %s", cf.multi_strerror(mc));
            goto out;
        }
    }
out:
    *done = out;
    *ndone = nout;
    return rc;
}

void http_responses_free(http_response *r, size_t n)
{
    if (!r)
        return;
    for (size_t i = 0; i < n; i++) {
        free(r[i].body);
        headers_free(r[i].headers, r[i].nheaders);
        free(r[i].error);
        free(r[i].attempts);
    }
    free(r);
}
