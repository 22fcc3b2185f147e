/*
 * http.h: a thin HTTP client over libcurl's multi interface (Lua-free).
 *
 * Many requests are in flight at once and nothing here blocks longer than
 * the caller allows: http_submit only queues a request, and http_poll drives
 * every transfer for at most the wait it is given, returning the requests
 * that completed (after all their retries). The caller interleaves polls
 * with other work (GPU launches, compiles).
 *
 * Retries are scheduled, never slept: after a retryable outcome (a transport
 * error, 429, 5xx; each can be turned off) the request waits
 *     max(Retry-After, uniform(0, min(max_delay, base_delay * 2^(k-1))))
 * seconds before attempt k+1 ("full jitter"), unless attempts are used up or
 * the retry would start later than budget_seconds after submission. Every
 * attempt is recorded (status or curl error, start offset, latency).
 *
 * libcurl is opened at run time (libcurl.so.4, or the file named by
 * KLAB_LIBCURL) through host/driver/dynlib.h, so the host library links without it
 * and a machine without libcurl still runs everything else; http_client_new
 * fails with KS_ENOLIB there. curl_global_init runs once per process.
 *
 * Transport: TLS peer and host verification stay at libcurl's defaults (on)
 * and are never turned off; only http and https are allowed; redirects are
 * not followed; compressed replies are decoded. Proxies: by default libcurl
 * takes them from http_proxy, https_proxy (HTTPS_PROXY), all_proxy and
 * no_proxy (NO_PROXY) in the environment; a request may name its own proxy
 * or none. Loopback hosts (localhost, 127.0.0.0/8, ::1; see
 * http_url_target) are always reached directly, in addition to what
 * no_proxy lists, at the address klab checked.
 *
 * Keys in clear: a request with a secret header over plain http:// to a
 * host that is not loopback (localhost, 127.0.0.0/8, [::1]) is refused
 * with KS_EREJECT unless it says allow_insecure.
 *
 * Secrets: a header named Authorization, Proxy-Authorization, x-api-key or
 * api-key (any case) is secret. Header values are never copied into a
 * status message, an attempt, a response or any output (and libcurl's
 * verbose mode is never on); the client's copies of all request headers are
 * wiped before they are freed. Messages about a header name only the name.
 *
 * One client belongs to one thread at a time.
 */
#ifndef KLAB_HOST_HTTP_H
#define KLAB_HOST_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct http_client http_client;

typedef enum { HTTP_POST = 0, HTTP_GET = 1 } http_method;

#define HTTP_MAX_ATTEMPTS 100                     /* the most attempts one request may ask for */
#define HTTP_MAX_BODY_DEFAULT ((size_t)64 << 20)  /* response body limit when max_body is 0 */
#define HTTP_ERROR_MAX 256                        /* an attempt's error text, NUL included */

typedef struct http_retry {
    int max_attempts;         /* attempts in all, the first included; < 1 means 1 */
    double base_delay;        /* seconds; the backoff scale */
    double max_delay;         /* seconds; cap on one backoff; <= 0: no cap */
    double budget_seconds;    /* no retry starts later than this after submission; <= 0: no limit */
    int retry_on_connect_error; /* transport errors: no connection, reset or dropped connection,
                                   empty or truncated reply, timeout */
    int retry_on_429;
    int retry_on_5xx;
} http_retry;

typedef struct http_request {
    http_method method;
    const char *url;              /* http:// or https:// */
    const char *const *headers;   /* nheaders lines "Name: value" (no CR or LF) */
    size_t nheaders;
    const void *body;             /* POST body (may be NULL when body_len is 0) */
    size_t body_len;
    double connect_timeout;       /* seconds, per attempt; <= 0: libcurl's default (300 s) */
    double timeout;               /* seconds for a whole attempt; <= 0: none */
    size_t max_body;              /* largest response body accepted; 0: HTTP_MAX_BODY_DEFAULT */
    const char *proxy;            /* NULL: from the environment; "": none; else the proxy URL */
    int allow_insecure;           /* send secret headers over plain http:// to a host that is
                                     not loopback (refused otherwise) */
    http_retry retry;
} http_request;

typedef struct http_header {
    char *name;   /* lower case */
    char *value;  /* surrounding blanks removed */
} http_header;

typedef struct http_attempt {
    int status;        /* HTTP status of the reply, 0 when none arrived */
    int curl_code;     /* CURLcode of the transfer, 0 when it completed */
    char error[HTTP_ERROR_MAX]; /* libcurl's message, "" when it completed */
    double at;         /* seconds from submission to the start of this attempt */
    double latency;    /* seconds this attempt took */
    double retry_after; /* seconds asked for by Retry-After (or retry-after-ms); -1: none */
    double wait;       /* seconds waited before the next attempt; -1: there was none */
} http_attempt;

typedef struct http_response {
    uint64_t id;
    int code;           /* KS_OK when a whole reply arrived (any status), KS_ETIMEOUT or
                           KS_EIO when the last attempt failed in transport */
    int status;         /* HTTP status of the last attempt; 0 when none */
    char *body;         /* the last attempt's body, NUL-terminated beyond body_len; never NULL */
    size_t body_len;
    http_header *headers; /* the last attempt's response headers */
    size_t nheaders;
    char *error;        /* NULL, or the transport error of the last attempt */
    int curl_code;      /* CURLcode of the last attempt, 0 when it completed */
    double elapsed;     /* seconds from submission to completion */
    http_attempt *attempts;
    size_t nattempts;
} http_response;

/* A new client: KS_ENOLIB when libcurl cannot be loaded (or lacks
 * curl_multi_poll, 7.66+), KS_ENOMEM, KS_EIO. */
int http_client_new(http_client **out, ks_status *st);

/* Abandons every pending request and frees c; NULL is a no-op. */
void http_client_free(http_client *c);

/* Queues a request (copying the URL, headers and body) and returns its id
 * (1, 2, ...) in *id. Starts nothing until the next http_poll. KS_EINVAL:
 * NULL arguments, a URL that is not http(s), a malformed header line (the
 * message names the header, never its value), a bad method;
 * KS_ENOMEM; KS_EIO when libcurl refuses the transfer. */
int http_submit(http_client *c, const http_request *req, uint64_t *id, ks_status *st);

/* Drives transfers for at most wait_seconds (0: one non-blocking pass) and
 * returns what completed meanwhile: *done is a malloc'd array of *ndone
 * responses (NULL when none), to be freed with http_responses_free. Returns
 * as soon as at least one request completed, or when nothing is pending.
 * A transport failure is not a failure of http_poll: it is in the response.
 * KS_EIO when libcurl's multi interface fails, KS_ENOMEM; *done and *ndone
 * are filled (and must be freed) on failure too. */
int http_poll(http_client *c, double wait_seconds, http_response **done, size_t *ndone,
              ks_status *st);

/* Requests submitted and not yet returned by http_poll. */
size_t http_pending(const http_client *c);

/* The value of response header name (any case), or NULL. */
const char *http_response_header(const http_response *r, const char *name);

/* Frees what n responses hold, and the array itself; NULL is a no-op. */
void http_responses_free(http_response *r, size_t n);

/* 1 when the header named by the n bytes at name is secret (see above). */
int http_header_is_secret(const char *name, size_t n);

/* The libcurl version in use ("7.88.1"), or NULL when it cannot be loaded. */
const char *http_curl_version(void);

/* Where a URL leads, read by libcurl's own URL parser (so user info,
 * brackets and odd spellings split as they will for the transfer), with an
 * IPv4 host read as the resolver reads it: each part decimal, octal (a
 * leading 0) or hex (0x), and the short forms (127.1, 2130706433), so
 * "0127.0.0.1" is 87.0.0.1, never 127.0.0.1. */
typedef struct http_target {
    char host[256];  /* the URL's host as libcurl parsed it (IPv6 without brackets) */
    int port;        /* the URL's port, or the scheme's */
    int numeric;     /* 1 when host is an IP address */
    char addr[64];   /* numeric: that address in canonical form ("127.0.0.1", "::1") */
    int loopback;    /* 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104, or the name localhost */
} http_target;

/* Fills t for url (http:// or https:// only). KS_EINVAL when libcurl
 * cannot parse it (the transfer would fail too); KS_ENOLIB without libcurl. */
int http_url_target(const char *url, http_target *t, ks_status *st);

/* Whether url's host is this machine, as http_url_target reads it. A request
 * to such a URL is pinned there: libcurl is handed the address klab checked
 * (localhost to 127.0.0.1 and ::1), so "loopback" is always the address
 * the connection goes to. */
int http_url_is_loopback(const char *url);

#endif
