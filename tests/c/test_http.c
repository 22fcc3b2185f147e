/*
 * test_http.c: the HTTP client (host/net/http.c) against loopback sockets only.
 *
 * No model server here: a refused port (a bound socket that does not
 * listen), a silent port (listening, never answering) and a thread that
 * sends canned replies, one per connection. Every check that needs libcurl
 * is skipped when it cannot be loaded.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "net/http.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A TCP socket on 127.0.0.1 with an ephemeral port; listening or not. */
static int loopback_socket(int do_listen, int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0 || (do_listen && listen(fd, 16) != 0)) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* ---- a server of canned replies, one per connection ---- */

typedef struct {
    int fd;
    const char *const *replies;
    int n;
    char first[8192]; /* the first request as received */
    size_t first_len;
    int served;
} canned;

/* Reads one request (headers and a Content-Length body) into buf. */
static size_t read_request(int cfd, char *buf, size_t cap)
{
    size_t len = 0;
    long want = -1;
    while (len + 1 < cap) {
        struct pollfd p = {cfd, POLLIN, 0};
        if (poll(&p, 1, 5000) <= 0)
            break;
        ssize_t k = recv(cfd, buf + len, cap - 1 - len, 0);
        if (k <= 0)
            break;
        len += (size_t)k;
        buf[len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (end && want < 0) {
            const char *cl = strcasestr(buf, "\r\ncontent-length:");
            long body = cl && cl < end ? strtol(cl + 17, NULL, 10) : 0;
            want = (long)(end + 4 - buf) + body;
        }
        if (want >= 0 && (long)len >= want)
            break;
    }
    buf[len] = '\0';
    return len;
}

static void *canned_main(void *arg)
{
    canned *s = arg;
    for (int i = 0; i < s->n; i++) {
        struct pollfd p = {s->fd, POLLIN, 0};
        if (poll(&p, 1, 10000) <= 0)
            break;
        int cfd = accept(s->fd, NULL, NULL);
        if (cfd < 0)
            break;
        char buf[8192];
        size_t n = read_request(cfd, buf, sizeof buf);
        if (i == 0) {
            memcpy(s->first, buf, n + 1);
            s->first_len = n;
        }
        const char *r = s->replies[i];
        size_t off = 0, rl = strlen(r);
        while (off < rl) {
            ssize_t k = send(cfd, r + off, rl - off, MSG_NOSIGNAL);
            if (k <= 0)
                break;
            off += (size_t)k;
        }
        s->served++;
        close(cfd);
    }
    return NULL;
}

/* Polls until one response arrives (or 20 s pass); returns it (caller frees
 * with http_responses_free) or NULL. */
static http_response *wait_one(http_client *c)
{
    double t0 = now_s();
    while (now_s() - t0 < 20) {
        http_response *d = NULL;
        size_t n = 0;
        ks_status st;
        int rc = http_poll(c, 0.2, &d, &n, &st);
        CHECKF(rc == KS_OK, "poll: %s", st.msg);
        if (n > 0) {
            CHECK(n == 1);
            return d;
        }
        http_responses_free(d, n);
        if (rc != KS_OK)
            return NULL;
    }
    return NULL;
}

static http_request base_request(const char *url)
{
    http_request q;
    memset(&q, 0, sizeof q);
    q.method = HTTP_POST;
    q.url = url;
    q.body = "{\"x\":1}";
    q.body_len = 7;
    q.connect_timeout = 2;
    q.timeout = 5;
    return q;
}

/* Runs one request against canned replies; returns the response. */
static http_response *against_canned(const char *const *replies, int n, http_request *q,
                                     canned *s)
{
    int port = 0;
    memset(s, 0, sizeof *s);
    s->fd = loopback_socket(1, &port);
    s->replies = replies;
    s->n = n;
    CHECK(s->fd >= 0);
    if (s->fd < 0)
        return NULL;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/test", port);
    q->url = url;
    pthread_t th;
    pthread_create(&th, NULL, canned_main, s);
    http_client *c = NULL;
    ks_status st;
    http_response *r = NULL;
    if (http_client_new(&c, &st) == KS_OK) {
        uint64_t id = 0;
        int rc = http_submit(c, q, &id, &st);
        CHECKF(rc == KS_OK && id > 0, "submit: %s", st.msg);
        if (rc == KS_OK)
            r = wait_one(c);
        http_client_free(c);
    }
    shutdown(s->fd, SHUT_RDWR); /* ends the thread's poll on an idle listener */
    pthread_join(th, NULL);
    close(s->fd);
    q->url = NULL;
    return r;
}

/* ---- tests ---- */

static const char *SECRET_A = "sk-test-SECRETAAAA";
static const char *SECRET_B = "SECRETBBBB";

static int contains_secret(const char *s)
{
    return s && (strstr(s, "SECRET") != NULL);
}

static void test_refused(void)
{
    int port = 0;
    int fd = loopback_socket(0, &port); /* bound, not listening: connections are refused */
    CHECK(fd >= 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", port);
    char auth[128], key[128];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", SECRET_A);
    snprintf(key, sizeof key, "x-api-key: %s", SECRET_B);
    const char *hdrs[] = {"Content-Type: application/json", auth, key};

    http_client *c = NULL;
    ks_status st;
    CHECK(http_client_new(&c, &st) == KS_OK);
    http_request q = base_request(url);
    q.headers = hdrs;
    q.nheaders = 3;
    q.retry.max_attempts = 3;
    q.retry.base_delay = 0.05;
    q.retry.max_delay = 1;
    q.retry.retry_on_connect_error = 1;
    uint64_t id1 = 0, id2 = 0;
    CHECK(http_submit(c, &q, &id1, &st) == KS_OK);
    q.retry.retry_on_connect_error = 0; /* the same, never retried */
    CHECK(http_submit(c, &q, &id2, &st) == KS_OK);
    CHECK(id1 > 0 && id2 == id1 + 1);
    CHECK(http_pending(c) == 2);

    http_response *got[2] = {NULL, NULL};
    http_response *arr[4];
    size_t cnt[4], total = 0;
    int na = 0;
    double t0 = now_s();
    while (total < 2 && now_s() - t0 < 20 && na < 4) {
        http_response *d = NULL;
        size_t n = 0;
        CHECK(http_poll(c, 0.5, &d, &n, &st) == KS_OK);
        if (n == 0) {
            http_responses_free(d, n);
            continue;
        }
        arr[na] = d;
        cnt[na++] = n;
        for (size_t i = 0; i < n; i++)
            got[d[i].id == id1 ? 0 : 1] = &d[i];
        total += n;
    }
    CHECK(http_pending(c) == 0);
    http_response *r = got[0], *r1 = got[1];
    CHECK(r != NULL && r1 != NULL);
    if (r) {
        CHECKF(r->code == KS_EIO, "code %d", r->code);
        CHECK(r->status == 0);
        CHECKF(r->curl_code == 7, "curl code %d", r->curl_code); /* CURLE_COULDNT_CONNECT */
        CHECK(r->error != NULL && r->error[0] != '\0');
        CHECK(!contains_secret(r->error));
        CHECK(r->body != NULL && r->body_len == 0);
        CHECKF(r->nattempts == 3, "%zu attempts", r->nattempts);
        for (size_t i = 0; i < r->nattempts; i++) {
            const http_attempt *a = &r->attempts[i];
            CHECK(a->status == 0 && a->curl_code == 7 && a->error[0] != '\0');
            CHECK(!contains_secret(a->error));
            CHECK(a->latency >= 0 && a->latency < 2);
            CHECK(a->retry_after == -1);
            if (i + 1 < r->nattempts) {
                CHECK(a->wait >= 0 && a->wait <= 0.05 * (1 << i) + 1e-9);
                /* the next attempt starts after the wait */
                CHECK(r->attempts[i + 1].at >= a->at + a->wait - 1e-6);
            } else {
                CHECK(a->wait == -1);
            }
        }
        CHECK(r->attempts[0].at < 0.1);
        CHECK(r->elapsed >= r->attempts[r->nattempts - 1].at);
    }
    if (r1) {
        CHECK(r1->code == KS_EIO && r1->nattempts == 1 && r1->curl_code == 7);
        CHECK(!contains_secret(r1->error));
    }
    for (int i = 0; i < na; i++)
        http_responses_free(arr[i], cnt[i]);
    http_client_free(c);
    close(fd);
}

static void test_timeout_and_poll_bound(void)
{
    int port = 0;
    int fd = loopback_socket(1, &port); /* listens, never accepts or answers */
    CHECK(fd >= 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/messages", port);
    http_client *c = NULL;
    ks_status st;
    CHECK(http_client_new(&c, &st) == KS_OK);
    http_request q = base_request(url);
    q.timeout = 0.6;
    uint64_t id = 0;
    double t0 = now_s();
    CHECK(http_submit(c, &q, &id, &st) == KS_OK);

    /* A poll never blocks longer than its wait. */
    http_response *d = NULL;
    size_t n = 1;
    double a = now_s();
    CHECK(http_poll(c, 0, &d, &n, &st) == KS_OK && n == 0 && d == NULL);
    double b = now_s();
    CHECK(http_poll(c, 0.15, &d, &n, &st) == KS_OK && n == 0);
    double e = now_s();
    CHECKF(b - a < 0.05, "poll(0) took %.3f s", b - a);
    CHECKF(e - b >= 0.14 && e - b < 0.3, "poll(0.15) took %.3f s", e - b);

    http_response *r = wait_one(c);
    double took = now_s() - t0;
    CHECK(r != NULL);
    if (r) {
        CHECKF(r->code == KS_ETIMEOUT, "code %d (%s)", r->code, r->error ? r->error : "");
        CHECK(r->curl_code == 28); /* CURLE_OPERATION_TIMEDOUT */
        CHECK(r->nattempts == 1 && r->attempts[0].curl_code == 28);
        CHECKF(r->elapsed >= 0.59 && r->elapsed < 2.0, "elapsed %.3f", r->elapsed);
        CHECKF(took >= 0.59 && took < 2.5, "took %.3f", took);
        CHECKF(r->attempts[0].latency >= 0.55 && r->attempts[0].latency < 2.0, "latency %.3f",
               r->attempts[0].latency);
    }
    http_responses_free(r, r ? 1 : 0);
    http_client_free(c);
    close(fd);
}

static void test_retry_after_then_success(void)
{
    const char *replies[] = {
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
        "Content-Length: 2\r\nConnection: close\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Thing:  spaced  \r\n"
        "Content-Length: 5\r\nConnection: close\r\n\r\nhello",
    };
    char auth[128];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", SECRET_A);
    const char *hdrs[] = {"Content-Type: application/json", auth};
    http_request q = base_request(NULL);
    q.headers = hdrs;
    q.nheaders = 2;
    q.retry = (http_retry){.max_attempts = 3, .base_delay = 0.01, .max_delay = 0.02,
                           .budget_seconds = 10, .retry_on_429 = 1};
    canned s;
    http_response *r = against_canned(replies, 2, &q, &s);
    CHECK(r != NULL);
    if (r) {
        CHECK(r->code == KS_OK && r->error == NULL);
        CHECK(r->status == 200 && r->body_len == 5 && strcmp(r->body, "hello") == 0);
        CHECK(r->nattempts == 2);
        CHECK(r->attempts[0].status == 429 && r->attempts[0].retry_after == 1);
        CHECKF(r->attempts[0].wait >= 1.0, "wait %.3f", r->attempts[0].wait);
        CHECK(r->attempts[1].at >= 1.0);
        CHECKF(r->elapsed >= 1.0 && r->elapsed < 3.0, "elapsed %.3f", r->elapsed);
        const char *ct = http_response_header(r, "content-type");
        CHECK(ct && strcmp(ct, "text/plain") == 0);
        const char *xt = http_response_header(r, "X-THING");
        CHECK(xt && strcmp(xt, "spaced") == 0);
        CHECK(http_response_header(r, "retry-after") == NULL); /* the last attempt's headers */
    }
    CHECK(s.served == 2);
    /* What the server got: the body, the key header, no Expect round trip. */
    CHECK(strncmp(s.first, "POST /v1/test HTTP/1.1\r\n", 24) == 0);
    CHECK(strstr(s.first, "\r\n\r\n{\"x\":1}") != NULL);
    CHECK(strstr(s.first, auth) != NULL);
    CHECK(strcasestr(s.first, "\r\nexpect:") == NULL);
    http_responses_free(r, r ? 1 : 0);
}

static void test_5xx_attempts_and_budget(void)
{
    const char *r503 = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy";
    const char *replies[] = {r503, r503, r503};
    http_request q = base_request(NULL);
    q.retry = (http_retry){.max_attempts = 3, .base_delay = 0.01, .retry_on_5xx = 1};
    canned s;
    http_response *r = against_canned(replies, 3, &q, &s);
    CHECK(r != NULL);
    if (r) {
        CHECK(r->code == KS_OK && r->status == 503 && r->nattempts == 3);
        CHECK(strcmp(r->body, "busy") == 0);
        for (size_t i = 0; i < r->nattempts; i++)
            CHECK(r->attempts[i].status == 503 && r->attempts[i].curl_code == 0);
    }
    http_responses_free(r, r ? 1 : 0);

    /* 5xx not retried when told so. */
    q.retry.retry_on_5xx = 0;
    r = against_canned(replies, 1, &q, &s);
    CHECK(r != NULL && r->status == 503 && r->nattempts == 1);
    http_responses_free(r, r ? 1 : 0);

    /* A Retry-After beyond the budget: no retry, the 429 comes back. */
    const char *r429[] = {"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 5\r\nContent-Length: 0\r\n"
                          "Connection: close\r\n\r\n"};
    q.retry = (http_retry){.max_attempts = 5, .base_delay = 0.01, .budget_seconds = 1,
                           .retry_on_429 = 1};
    double t0 = now_s();
    r = against_canned(r429, 1, &q, &s);
    CHECK(r != NULL);
    if (r) {
        CHECK(r->status == 429 && r->nattempts == 1 && r->attempts[0].retry_after == 5);
        CHECK(r->attempts[0].wait == -1);
        CHECK(http_response_header(r, "Retry-After") != NULL);
    }
    CHECK(now_s() - t0 < 1.0);
    http_responses_free(r, r ? 1 : 0);

    /* A body over max_body is a transport error, not retried. */
    const char *big[] = {"HTTP/1.1 200 OK\r\nContent-Length: 40\r\nConnection: close\r\n\r\n"
                         "0123456789012345678901234567890123456789"};
    q.retry = (http_retry){.max_attempts = 3, .retry_on_connect_error = 1};
    q.max_body = 10;
    r = against_canned(big, 1, &q, &s);
    CHECK(r != NULL);
    if (r) {
        CHECK(r->code == KS_EIO && r->nattempts == 1 && r->error && strstr(r->error, "larger than"));
    }
    http_responses_free(r, r ? 1 : 0);
}

/* Proxies: from the environment unless the request names one, never for
 * loopback. The proxy is a refused loopback port, so going through it fails
 * to connect (7); the .invalid host is never resolved (the proxy would do
 * that) and nothing leaves this machine. */
static void test_proxies(void)
{
    int port = 0;
    int fd = loopback_socket(0, &port); /* refuses */
    CHECK(fd >= 0);
    char proxy[64];
    snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", port);
    setenv("http_proxy", proxy, 1);
    unsetenv("no_proxy");
    unsetenv("NO_PROXY");

    http_client *c = NULL;
    ks_status st;
    CHECK(http_client_new(&c, &st) == KS_OK);
    http_request q = base_request("http://model.invalid/v1/chat/completions");
    uint64_t id = 0;
    CHECK(http_submit(c, &q, &id, &st) == KS_OK);
    http_response *r = wait_one(c);
    CHECKF(r && r->curl_code == 7, "through the environment's proxy: %d %s", r ? r->curl_code : -1,
           r && r->error ? r->error : "");
    http_responses_free(r, r ? 1 : 0);

    unsetenv("http_proxy"); /* the request's own proxy */
    q.proxy = proxy;
    CHECK(http_submit(c, &q, &id, &st) == KS_OK);
    r = wait_one(c);
    CHECKF(r && r->curl_code == 7, "through the request's proxy: %d", r ? r->curl_code : -1);
    http_responses_free(r, r ? 1 : 0);
    setenv("http_proxy", proxy, 1);
    http_client_free(c);

    /* Loopback goes direct although http_proxy points nowhere. */
    const char *ok[] = {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"};
    http_request q2 = base_request(NULL);
    canned s;
    r = against_canned(ok, 1, &q2, &s);
    CHECK(r && r->status == 200 && strcmp(r->body, "ok") == 0);
    http_responses_free(r, r ? 1 : 0);
    /* Also when no_proxy lists other hosts. */
    setenv("no_proxy", "example.org", 1);
    r = against_canned(ok, 1, &q2, &s);
    CHECK(r && r->status == 200);
    http_responses_free(r, r ? 1 : 0);
    unsetenv("no_proxy");
    unsetenv("http_proxy");
    close(fd);
}

static void test_misuse_and_secrets(void)
{
    http_client *c = NULL;
    ks_status st;
    CHECK(http_client_new(&c, &st) == KS_OK);
    uint64_t id = 99;
    http_request q = base_request("ftp://127.0.0.1/x");
    CHECK(http_submit(c, &q, &id, &st) == KS_EINVAL && id == 0);
    q.url = "http://127.0.0.1:1/x";
    q.retry.max_attempts = HTTP_MAX_ATTEMPTS + 1;
    CHECK(http_submit(c, &q, &id, &st) == KS_EINVAL);
    q.retry.max_attempts = 1;

    /* Malformed header lines: the message never quotes the line. */
    const char *no_colon[] = {"Bearer sk-SECRETCCCC"};
    q.headers = no_colon;
    q.nheaders = 1;
    CHECK(http_submit(c, &q, &id, &st) == KS_EINVAL);
    CHECKF(!contains_secret(st.msg), "%s", st.msg);
    const char *bad_name[] = {"sk SECRETDDDD: x"};
    q.headers = bad_name;
    CHECK(http_submit(c, &q, &id, &st) == KS_EINVAL);
    CHECKF(!contains_secret(st.msg), "%s", st.msg);
    const char *crlf[] = {"Authorization: Bearer SECRETEEEE\r\nX-Evil: 1"};
    q.headers = crlf;
    CHECK(http_submit(c, &q, &id, &st) == KS_EINVAL);
    CHECKF(!contains_secret(st.msg) && strstr(st.msg, "Authorization"), "%s", st.msg);
    CHECK(http_pending(c) == 0);

    CHECK(http_header_is_secret("Authorization", 13));
    CHECK(http_header_is_secret("X-API-KEY", 9));
    CHECK(http_header_is_secret("api-key", 7));
    CHECK(!http_header_is_secret("Content-Type", 12));
    CHECK(!http_header_is_secret("x-api-keys", 10));

    /* Freeing a client with requests in flight abandons them cleanly. */
    q.headers = NULL;
    q.nheaders = 0;
    CHECK(http_submit(c, &q, &id, &st) == KS_OK);
    CHECK(http_pending(c) == 1);
    http_client_free(c);
    http_client_free(NULL);
    http_responses_free(NULL, 0);
}

/* "Loopback" is the address libcurl connects to: each spelling of a host is
 * read as libcurl and the resolver read it (octal, hex and short IPv4
 * forms, IPv6 and IPv4-mapped, user info, a trailing dot, names). */
static void test_loopback_forms(void)
{
    static const struct {
        const char *url;
        int loopback;
        const char *addr; /* "" for a name */
    } forms[] = {
        {"http://0127.0.0.1:8000/v1", 0, "87.0.0.1"}, /* octal: a public address */
        {"http://0x7f.1/", 1, "127.0.0.1"},
        {"http://0x7F.0.0.1/", 1, "127.0.0.1"},
        {"http://127.1/", 1, "127.0.0.1"},
        {"http://127.0.1/", 1, "127.0.0.1"},
        {"http://2130706433/", 1, "127.0.0.1"},
        {"http://0x7f000001/", 1, "127.0.0.1"},
        {"http://017700000001/", 1, "127.0.0.1"},
        {"http://127.000.000.001/", 1, "127.0.0.1"},
        {"http://127.1.2.3:9/", 1, "127.1.2.3"},
        {"http://0177.1/", 1, "127.0.0.1"},
        {"http://10.0.0.1/", 0, "10.0.0.1"},
        {"http://1.2.3.4/", 0, "1.2.3.4"},
        {"http://[::1]:8000/x", 1, "::1"},
        {"http://[0:0:0:0:0:0:0:1]/", 1, "::1"},
        {"http://[::ffff:127.0.0.1]/", 1, "::ffff:127.0.0.1"},
        {"http://[::ffff:7f00:1]/", 1, "::ffff:127.0.0.1"},
        {"http://[::ffff:10.0.0.1]/", 0, "::ffff:10.0.0.1"},
        {"http://[::127.0.0.1]/", 0, "::127.0.0.1"},
        {"http://[fe80::1%25eth0]/", 0, "fe80::1"},
        {"http://127.0.0.1./", 0, ""}, /* libcurl resolves it as a name: not this machine's address */
        {"http://127.0.0.256/", 0, ""},
        {"http://localhost:8000/v1", 1, ""},
        {"http://LOCALHOST:1/", 1, ""},
        {"http://localhost./", 1, ""},
        {"http://%6cocalhost/", 1, ""}, /* libcurl decodes the host */
        {"http://127.0.0.1@evil.example/", 0, ""},
        {"http://localhost@evil.example/", 0, ""},
        {"http://127.0.0.1.evil.example/", 0, ""},
        {"http://localhost.evil.example/", 0, ""},
        {"http://evil.example\\@127.0.0.1/", 1, "127.0.0.1"}, /* libcurl's host is 127.0.0.1 */
        {"https://api.openai.com/v1", 0, ""},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        http_target t;
        ks_status st;
        int rc = http_url_target(forms[i].url, &t, &st);
        CHECKF(rc == KS_OK, "%s: %s", forms[i].url, st.msg);
        CHECKF(t.loopback == forms[i].loopback && http_url_is_loopback(forms[i].url) == forms[i].loopback,
               "%s: loopback %d", forms[i].url, t.loopback);
        CHECKF(strcmp(t.addr, forms[i].addr) == 0 && t.numeric == (forms[i].addr[0] != 0), "%s: address '%s'",
               forms[i].url, t.addr);
    }
    http_target t;
    ks_status st;
    CHECK(http_url_target("http://[::1/", &t, &st) == KS_EINVAL);
    CHECK(http_url_target("ftp://127.0.0.1/", &t, &st) == KS_EINVAL);
    CHECK(!http_url_is_loopback("ftp://127.0.0.1/"));
}

/* A key over plain http goes to loopback only, as libcurl connects: the
 * octal spelling of a public address is refused before connecting, and the
 * other spellings of 127.0.0.1 (a name with a trailing dot included) reach
 * this machine's server at the address klab checked. */
static void test_loopback_connects_where_checked(void)
{
    const char *key[] = {"Authorization: Bearer sk-test-SECRETFFFF"};
    http_client *c = NULL;
    ks_status st;
    CHECK(http_client_new(&c, &st) == KS_OK);
    http_request q = base_request("http://0127.0.0.1:9/v1");
    q.headers = key;
    q.nheaders = 1;
    uint64_t id = 0;
    CHECK(http_submit(c, &q, &id, &st) == KS_EREJECT && strstr(st.msg, "plain http://"));
    http_client_free(c);

    static const char *const spellings[] = {"0x7f.1", "2130706433", "127.1", "localhost.", "LocalHost"};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        int port = 0;
        canned s;
        memset(&s, 0, sizeof s);
        const char *ok[] = {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"};
        s.fd = loopback_socket(1, &port);
        s.replies = ok;
        s.n = 1;
        CHECK(s.fd >= 0);
        char url[128];
        snprintf(url, sizeof url, "http://%s:%d/v1", spellings[i], port);
        q.url = url;
        pthread_t th;
        pthread_create(&th, NULL, canned_main, &s);
        CHECK(http_client_new(&c, &st) == KS_OK);
        int rc = http_submit(c, &q, &id, &st);
        CHECKF(rc == KS_OK, "%s: %s", url, st.msg);
        http_response *r = rc == KS_OK ? wait_one(c) : NULL;
        CHECKF(r && r->status == 200, "%s: %d %s", url, r ? r->curl_code : -1, r && r->error ? r->error : "");
        http_responses_free(r, r ? 1 : 0);
        http_client_free(c);
        shutdown(s.fd, SHUT_RDWR);
        pthread_join(th, NULL);
        close(s.fd);
        CHECKF(s.served == 1 && strstr(s.first, "sk-test-SECRETFFFF"), "%s reached the server with its key", url);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    check_prog = argv[0];
    http_client *c = NULL;
    ks_status st;
    if (http_client_new(&c, &st) != KS_OK) {
        SKIP(st.msg);
        return check_done();
    }
    http_client_free(c);
    CHECK(http_curl_version() != NULL);
    test_misuse_and_secrets();
    test_refused();
    test_timeout_and_poll_bound();
    test_retry_after_then_success();
    test_5xx_attempts_and_budget();
    test_proxies();
    test_loopback_forms();
    test_loopback_connects_where_checked();
    return check_done();
}
