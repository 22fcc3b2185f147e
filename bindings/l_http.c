/*
 * l_http.c: require "klab.http", HTTP requests to model APIs (host/net/http.h).
 *
 *   http.client() -> Client | nil, msg, code       (code "ENOLIB" without libcurl)
 *   c:submit(spec) -> id | nil, msg, code          queues; nothing blocks
 *   c:poll(wait_seconds?) -> {response, ...} | nil, msg, code
 *       drives every transfer for at most wait_seconds (default 0) and
 *       returns the requests that completed meanwhile (possibly none)
 *   c:pending() -> integer                         submitted, not yet returned
 *   c:free() -> true if it freed the client (also __gc and __close);
 *       requests still pending are abandoned
 *
 *   http.request(spec) -> response | nil, msg, code, response
 *   http.post(url, headers?, body?, opts?) -> the same (spec = opts + these)
 *   http.get(url, headers?, opts?) -> the same
 *       blocking: a private client, polled until the request completes (it
 *       ends by its own timeouts and retries). Failure means a transport
 *       failure (code "EIO" or "ETIMEOUT"); any HTTP status is a response.
 *   http.is_secret(header_name) -> boolean
 *   http.is_loopback(url) -> boolean     localhost, 127.0.0.0/8, [::1] or
 *                                        [::ffff:127.x.y.z], as libcurl
 *                                        reads the host (0127.0.0.1 is
 *                                        87.0.0.1); see http_url_target
 *   http.curl_version() -> "7.88.1" | nil
 *
 * spec = {
 *   url = "https://...",                 required; http or https only
 *   method = "POST" | "GET",             default "POST"
 *   headers = {Name = "value" | {env = "VAR", prefix = "Bearer "}, ...},
 *   body = string,                       POST only
 *   connect_timeout = 10, timeout = 300, seconds per attempt (<= 0: none)
 *   max_body = bytes,                    default 64 MiB; a larger reply is an
 *                                        error with its size, and no body
 *   allow_insecure_http = false,         a key over plain http:// to a host
 *                                        other than this machine is refused
 *                                        unless this is true
 *   proxy = "http://host:port" | false,  default: from the environment
 *                                        (http_proxy, https_proxy, no_proxy);
 *                                        loopback hosts always go direct
 *   retry = {attempts = 4, base = 0.5, max = 30, budget = 0,
 *            on_connect = true, on_429 = true, on_5xx = true},
 *                                        without retry: a single attempt
 * }
 * A POST without a Content-Type header gets "Content-Type: application/json".
 *
 * Keys: a header value {env = "VAR", prefix = "Bearer "} is read from the
 * environment inside C at submission and never becomes a Lua string; a
 * missing or empty variable raises an error naming the variable. A secret
 * header (Authorization, Proxy-Authorization, x-api-key, api-key) given as
 * a plain string raises: keys come only from the environment. Each such
 * variable's value joins the values klab redacts (base/redact.h), and every
 * body sent is redacted first: whatever a prompt picked up, a key does not
 * go back out in it.
 *
 * response = {id=, status= (absent when no reply arrived), body=,
 *   headers = {lower-case name = value},  (repeated names joined by ", ")
 *   error = (transport error, absent on success), code = "EIO"|"ETIMEOUT",
 *   curl_code=, elapsed=,
 *   attempts = {{status=, error=, curl_code=, at=, latency=, retry_after=,
 *                wait=}, ...}}
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lhost.h"
#include "base/redact.h"
#include "net/http.h"

#define CLIENT_T "klab.HttpClient"
#define BOX_T "klab.HttpResponses"

#define MAX_HEADERS 64

typedef struct {
    http_client *c; /* NULL once released */
} lclient;

/* Responses owned while they are turned into Lua tables: a memory error
 * while pushing cannot leak them. */
typedef struct {
    http_response *r;
    size_t n;
} rbox;

/* [-0, +0, v] The live client at absolute index i, or raise. */
static http_client *check_client(lua_State *L, int i)
{
    lclient *lc = luaL_checkudata(L, i, CLIENT_T);
    if (lc->c == NULL)
        luaL_error(L, "attempt to use a freed HTTP client");
    return lc->c;
}

/* [-0, +1, m] A new, released Client userdata. */
static lclient *new_client(lua_State *L)
{
    lclient *lc = lua_newuserdatauv(L, sizeof *lc, 0);
    lc->c = NULL;
    luaL_setmetatable(L, CLIENT_T);
    return lc;
}

/* ---- requests ---- */

typedef struct {
    const char *name;   /* header name (kept alive by the spec table) */
    const char *var;    /* environment variable */
    const char *prefix; /* put before the value, may be "" */
    size_t slot;        /* index into the header list */
} env_header;

typedef struct {
    http_request req;
    const char *hdrs[MAX_HEADERS];
    env_header env[MAX_HEADERS];
    size_t nenv;
} parsed;

/* [-0, +0, v] Checks a header name: a token, so that a message may name it. */
static void check_header_name(lua_State *L, const char *name)
{
    if (!*name)
        luaL_error(L, "a header name is empty");
    for (const char *p = name; *p; p++)
        if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') || ('0' <= *p && *p <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *p)))
            luaL_error(L, "header name '%s' is malformed", name);
}

/* [-0, +1, e] Reads spec (a table at absolute index s) into p. Plain header
 * lines are made here and anchored in a table left on the stack; headers
 * from the environment are only checked (their values are made in C by
 * submit_parsed). Raises on misuse. */
static void parse_spec(lua_State *L, int s, parsed *p)
{
    luaL_checktype(L, s, LUA_TTABLE);
    memset(p, 0, sizeof *p);
    http_request *q = &p->req;
    lua_newtable(L); /* anchor */
    int anchor = lua_gettop(L);
    int nanchor = 0;

    q->url = lh_optstrfield(L, s, "url", NULL);
    if (!q->url)
        luaL_error(L, "field 'url' is required");
    const char *m = lh_optstrfield(L, s, "method", "POST");
    if (strcasecmp(m, "POST") == 0)
        q->method = HTTP_POST;
    else if (strcasecmp(m, "GET") == 0)
        q->method = HTTP_GET;
    else
        luaL_error(L, "field 'method' must be \"POST\" or \"GET\"");
    if (lua_getfield(L, s, "body") != LUA_TNIL) {
        if (lua_type(L, -1) != LUA_TSTRING)
            luaL_error(L, "field 'body' must be a string");
        if (q->method == HTTP_GET)
            luaL_error(L, "a GET request has no body");
        q->body = lua_tolstring(L, -1, &q->body_len); /* alive: referenced by the spec */
    }
    lua_pop(L, 1);
    q->connect_timeout = lh_optnumfield(L, s, "connect_timeout", 10);
    q->timeout = lh_optnumfield(L, s, "timeout", 300);
    lua_Integer mb = lh_optintfield(L, s, "max_body", 0);
    if (mb < 0)
        luaL_error(L, "field 'max_body' must be >= 0");
    q->max_body = (size_t)mb;
    q->allow_insecure = lh_optboolfield(L, s, "allow_insecure_http", 0);
    if (lua_getfield(L, s, "proxy") != LUA_TNIL) {
        if (lua_type(L, -1) == LUA_TSTRING)
            q->proxy = lua_tostring(L, -1); /* alive: referenced by the spec */
        else if (lua_isboolean(L, -1) && !lua_toboolean(L, -1))
            q->proxy = "";
        else
            luaL_error(L, "field 'proxy' must be a URL or false");
    }
    lua_pop(L, 1);

    if (lua_getfield(L, s, "retry") != LUA_TNIL) {
        if (!lua_istable(L, -1))
            luaL_error(L, "field 'retry' must be a table");
        int r = lua_gettop(L);
        lua_Integer att = lh_optintfield(L, r, "attempts", 4);
        if (att < 1 || att > HTTP_MAX_ATTEMPTS)
            luaL_error(L, "retry.attempts must be in 1..%d", HTTP_MAX_ATTEMPTS);
        q->retry.max_attempts = (int)att;
        q->retry.base_delay = lh_optnumfield(L, r, "base", 0.5);
        q->retry.max_delay = lh_optnumfield(L, r, "max", 30);
        q->retry.budget_seconds = lh_optnumfield(L, r, "budget", 0);
        if (!(q->retry.base_delay >= 0) || !(q->retry.max_delay >= 0) ||
            !(q->retry.budget_seconds >= 0))
            luaL_error(L, "retry.base, retry.max and retry.budget must be >= 0");
        q->retry.retry_on_connect_error = lh_optboolfield(L, r, "on_connect", 1);
        q->retry.retry_on_429 = lh_optboolfield(L, r, "on_429", 1);
        q->retry.retry_on_5xx = lh_optboolfield(L, r, "on_5xx", 1);
    } else {
        q->retry.max_attempts = 1;
    }
    lua_pop(L, 1);

    int has_ct = 0;
    size_t n = 0;
    if (lua_getfield(L, s, "headers") != LUA_TNIL) {
        if (!lua_istable(L, -1))
            luaL_error(L, "field 'headers' must be a table of name = value");
        int h = lua_gettop(L);
        lua_pushnil(L);
        while (lua_next(L, h)) {
            if (lua_type(L, -2) != LUA_TSTRING)
                luaL_error(L, "header names must be strings");
            const char *name = lua_tostring(L, -2);
            check_header_name(L, name);
            if (n >= MAX_HEADERS - 1)
                luaL_error(L, "too many headers (at most %d)", MAX_HEADERS - 1);
            if (strcasecmp(name, "content-type") == 0)
                has_ct = 1;
            if (lua_type(L, -1) == LUA_TTABLE) {
                int e = lua_gettop(L);
                const char *var = lh_optstrfield(L, e, "env", NULL);
                const char *prefix = lh_optstrfield(L, e, "prefix", "");
                if (!var || !*var)
                    luaL_error(L, "header '%s': field 'env' must name an environment variable", name);
                const char *v = getenv(var);
                if (!v)
                    luaL_error(L, "environment variable %s is not set (for header '%s')", var, name);
                if (!*v)
                    luaL_error(L, "environment variable %s is empty (for header '%s')", var, name);
                if (strpbrk(prefix, "\r\n"))
                    luaL_error(L, "header '%s': the prefix contains a line break", name);
                redact_add_env(var);
                env_header *eh = &p->env[p->nenv++];
                eh->name = name; /* keys of the headers table: alive while it is */
                eh->var = var;
                eh->prefix = prefix;
                eh->slot = n;
                p->hdrs[n++] = NULL; /* filled by submit_parsed */
            } else if (lua_type(L, -1) == LUA_TSTRING) {
                if (http_header_is_secret(name, strlen(name)))
                    luaL_error(L, "header '%s' carries a key: give it as {env = \"VAR\", prefix = ...} "
                               "so that it is read from the environment", name);
                const char *v = lua_tostring(L, -1);
                if (strpbrk(v, "\r\n"))
                    luaL_error(L, "header '%s' contains a line break", name);
                lua_pushfstring(L, "%s: %s", name, v);
                p->hdrs[n++] = lua_tostring(L, -1);
                lua_rawseti(L, anchor, ++nanchor);
            } else {
                luaL_error(L, "header '%s' must be a string or {env = \"VAR\", prefix = ...}", name);
            }
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    if (!has_ct && q->method == HTTP_POST)
        p->hdrs[n++] = "Content-Type: application/json";
    q->headers = p->hdrs;
    q->nheaders = n;
}

/* Builds the headers that come from the environment, submits, and wipes
 * them. No Lua call happens while a key is in memory here. Returns a
 * ks_code; st says why on failure. */
static int submit_parsed(http_client *c, parsed *p, uint64_t *id, ks_status *st)
{
    char *made[MAX_HEADERS];
    size_t nmade = 0;
    int rc = KS_OK;
    for (size_t i = 0; i < p->nenv; i++) {
        const env_header *e = &p->env[i];
        const char *v = getenv(e->var);
        if (!v || !*v) {
            rc = ks_fail(st, KS_EINVAL, 0, "environment variable %s is not set (for header '%s')",
                         e->var, e->name);
            break;
        }
        size_t len = strlen(e->name) + 2 + strlen(e->prefix) + strlen(v) + 1;
        char *line = malloc(len);
        if (!line) {
            rc = ks_fail(st, KS_ENOMEM, 0, "out of memory for a header");
            break;
        }
        snprintf(line, len, "%s: %s%s", e->name, e->prefix, v);
        made[nmade++] = line;
        p->hdrs[e->slot] = line;
    }
    /* The body as sent: secrets redacted (http_submit copies it). */
    const void *body = p->req.body;
    size_t body_len = p->req.body_len, rl = 0;
    char *redacted = rc == KS_OK && body ? redact_apply(body, body_len, &rl) : NULL;
    if (!redacted && rl == (size_t)-1)
        rc = ks_fail(st, KS_ENOMEM, 0, "out of memory for the request body");
    if (redacted) {
        p->req.body = redacted;
        p->req.body_len = rl;
    }
    if (rc == KS_OK)
        rc = http_submit(c, &p->req, id, st);
    p->req.body = body;
    p->req.body_len = body_len;
    free(redacted);
    for (size_t i = 0; i < nmade; i++) {
        explicit_bzero(made[i], strlen(made[i]));
        free(made[i]);
    }
    for (size_t i = 0; i < p->nenv; i++)
        p->hdrs[p->env[i].slot] = NULL;
    return rc;
}

/* ---- responses ---- */

/* [-0, +1, m] The response table of r. */
static void push_response(lua_State *L, const http_response *r)
{
    lua_createtable(L, 0, 10);
    lua_pushinteger(L, (lua_Integer)r->id);
    lua_setfield(L, -2, "id");
    if (r->status > 0) {
        lua_pushinteger(L, r->status);
        lua_setfield(L, -2, "status");
    }
    lua_pushlstring(L, r->body ? r->body : "", r->body ? r->body_len : 0);
    lua_setfield(L, -2, "body");
    lua_createtable(L, 0, (int)r->nheaders);
    for (size_t i = 0; i < r->nheaders; i++) {
        if (lua_getfield(L, -1, r->headers[i].name) == LUA_TSTRING) {
            lua_pushfstring(L, "%s, %s", lua_tostring(L, -1), r->headers[i].value);
            lua_remove(L, -2);
        } else {
            lua_pop(L, 1);
            lua_pushstring(L, r->headers[i].value);
        }
        lua_setfield(L, -2, r->headers[i].name);
    }
    lua_setfield(L, -2, "headers");
    if (r->error) {
        lua_pushstring(L, r->error);
        lua_setfield(L, -2, "error");
        lua_pushstring(L, ks_code_name(r->code));
        lua_setfield(L, -2, "code");
    }
    lua_pushinteger(L, r->curl_code);
    lua_setfield(L, -2, "curl_code");
    lua_pushnumber(L, r->elapsed);
    lua_setfield(L, -2, "elapsed");
    lua_createtable(L, (int)r->nattempts, 0);
    for (size_t i = 0; i < r->nattempts; i++) {
        const http_attempt *a = &r->attempts[i];
        lua_createtable(L, 0, 7);
        if (a->status > 0) {
            lua_pushinteger(L, a->status);
            lua_setfield(L, -2, "status");
        }
        if (a->curl_code) {
            lua_pushinteger(L, a->curl_code);
            lua_setfield(L, -2, "curl_code");
            lua_pushstring(L, a->error);
            lua_setfield(L, -2, "error");
        }
        lua_pushnumber(L, a->at);
        lua_setfield(L, -2, "at");
        lua_pushnumber(L, a->latency);
        lua_setfield(L, -2, "latency");
        if (a->retry_after >= 0) {
            lua_pushnumber(L, a->retry_after);
            lua_setfield(L, -2, "retry_after");
        }
        if (a->wait >= 0) {
            lua_pushnumber(L, a->wait);
            lua_setfield(L, -2, "wait");
        }
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "attempts");
}

static int box_gc(lua_State *L)
{
    rbox *b = luaL_checkudata(L, 1, BOX_T);
    http_responses_free(b->r, b->n);
    b->r = NULL;
    b->n = 0;
    return 0;
}

/* [-0, +1, m] A box that owns nothing yet. */
static rbox *new_box(lua_State *L)
{
    rbox *b = lua_newuserdatauv(L, sizeof *b, 0);
    b->r = NULL;
    b->n = 0;
    luaL_setmetatable(L, BOX_T);
    return b;
}

/* ---- Client ---- */

static int l_client(lua_State *L)
{
    lclient *lc = new_client(L);
    ks_status st;
    ks_clear(&st);
    if (http_client_new(&lc->c, &st) != KS_OK)
        return lh_pushfail(L, &st);
    return 1;
}

static int l_submit(lua_State *L)
{
    http_client *c = check_client(L, 1);
    parsed *p = lua_newuserdatauv(L, sizeof *p, 0); /* big: not on the C stack */
    parse_spec(L, 2, p);
    ks_status st;
    ks_clear(&st);
    uint64_t id = 0;
    if (submit_parsed(c, p, &id, &st) != KS_OK) {
        if (st.code == KS_EINVAL)
            return lh_raise(L, &st);
        return lh_pushfail(L, &st);
    }
    lua_pushinteger(L, (lua_Integer)id);
    return 1;
}

static int l_poll(lua_State *L)
{
    http_client *c = check_client(L, 1);
    lua_Number wait = luaL_optnumber(L, 2, 0);
    luaL_argcheck(L, wait == wait, 2, "wait must be a number");
    rbox *b = new_box(L);
    ks_status st;
    ks_clear(&st);
    int rc = http_poll(c, wait, &b->r, &b->n, &st);
    /* Responses that completed are returned even when libcurl failed
     * afterwards; the failure shows on the next poll. */
    if (rc != KS_OK && b->n == 0) {
        http_responses_free(b->r, 0);
        b->r = NULL;
        return lh_pushfail(L, &st);
    }
    lua_createtable(L, (int)b->n, 0);
    for (size_t i = 0; i < b->n; i++) {
        push_response(L, &b->r[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    http_responses_free(b->r, b->n);
    b->r = NULL;
    b->n = 0;
    return 1;
}

static int l_pending(lua_State *L)
{
    http_client *c = check_client(L, 1);
    lua_pushinteger(L, (lua_Integer)http_pending(c));
    return 1;
}

/* The one release shared by __gc, __close and :free(). */
static int l_free(lua_State *L)
{
    lclient *lc = luaL_checkudata(L, 1, CLIENT_T);
    http_client *c = lc->c;
    lc->c = NULL;
    http_client_free(c);
    lua_pushboolean(L, c != NULL);
    return 1;
}

static int l_tostring(lua_State *L)
{
    lclient *lc = luaL_checkudata(L, 1, CLIENT_T);
    if (lc->c == NULL)
        lua_pushstring(L, CLIENT_T " (freed)");
    else
        lua_pushfstring(L, CLIENT_T " (%d pending)", (int)http_pending(lc->c));
    return 1;
}

/* ---- blocking requests ---- */

/* [-0, +(1|4), e] Runs the spec at absolute index s to completion on a
 * private client. */
static int run_blocking(lua_State *L, int s)
{
    parsed *p = lua_newuserdatauv(L, sizeof *p, 0);
    parse_spec(L, s, p);
    lclient *lc = new_client(L); /* collected if anything below raises */
    ks_status st;
    ks_clear(&st);
    if (http_client_new(&lc->c, &st) != KS_OK)
        return lh_pushfail(L, &st);
    uint64_t id = 0;
    if (submit_parsed(lc->c, p, &id, &st) != KS_OK) {
        if (st.code == KS_EINVAL)
            return lh_raise(L, &st);
        return lh_pushfail(L, &st);
    }
    rbox *b = new_box(L);
    while (b->n == 0) {
        if (http_poll(lc->c, 1.0, &b->r, &b->n, &st) != KS_OK && b->n == 0) {
            http_responses_free(b->r, 0);
            b->r = NULL;
            return lh_pushfail(L, &st);
        }
        if (b->n == 0) {
            http_responses_free(b->r, 0);
            b->r = NULL;
        }
    }
    const http_response *r = &b->r[0];
    if (r->error) {
        ks_status fail;
        ks_fail(&fail, r->code, r->curl_code, "%s", r->error);
        lh_pushfail(L, &fail);
        push_response(L, r);
    } else {
        push_response(L, r);
    }
    int nret = r->error ? 4 : 1;
    http_responses_free(b->r, b->n);
    b->r = NULL;
    b->n = 0;
    http_client_free(lc->c);
    lc->c = NULL;
    return nret;
}

static int l_request(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    return run_blocking(L, 1);
}

/* [-0, +1, e] A spec: a shallow copy of the options table at o (0: none)
 * with the given fields set. */
static int make_spec(lua_State *L, int o, const char *method, int url, int headers, int body)
{
    lua_newtable(L);
    int s = lua_gettop(L);
    if (o) {
        lua_pushnil(L);
        while (lua_next(L, o)) {
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_settable(L, s);
        }
    }
    lua_pushstring(L, method);
    lua_setfield(L, s, "method");
    lua_pushvalue(L, url);
    lua_setfield(L, s, "url");
    if (headers) {
        lua_pushvalue(L, headers);
        lua_setfield(L, s, "headers");
    }
    if (body) {
        lua_pushvalue(L, body);
        lua_setfield(L, s, "body");
    }
    return s;
}

static int l_post(lua_State *L)
{
    luaL_checkstring(L, 1);
    if (!lua_isnoneornil(L, 2))
        luaL_checktype(L, 2, LUA_TTABLE);
    if (!lua_isnoneornil(L, 3))
        luaL_checktype(L, 3, LUA_TSTRING);
    if (!lua_isnoneornil(L, 4))
        luaL_checktype(L, 4, LUA_TTABLE);
    int s = make_spec(L, lua_istable(L, 4) ? 4 : 0, "POST", 1, lua_istable(L, 2) ? 2 : 0,
                      lua_isstring(L, 3) ? 3 : 0);
    return run_blocking(L, s);
}

static int l_get(lua_State *L)
{
    luaL_checkstring(L, 1);
    if (!lua_isnoneornil(L, 2))
        luaL_checktype(L, 2, LUA_TTABLE);
    if (!lua_isnoneornil(L, 3))
        luaL_checktype(L, 3, LUA_TTABLE);
    int s = make_spec(L, lua_istable(L, 3) ? 3 : 0, "GET", 1, lua_istable(L, 2) ? 2 : 0, 0);
    return run_blocking(L, s);
}

static int l_is_loopback(lua_State *L)
{
    lua_pushboolean(L, http_url_is_loopback(luaL_checkstring(L, 1)));
    return 1;
}

static int l_is_secret(lua_State *L)
{
    size_t n;
    const char *name = luaL_checklstring(L, 1, &n);
    lua_pushboolean(L, http_header_is_secret(name, n));
    return 1;
}

static int l_curl_version(lua_State *L)
{
    const char *v = http_curl_version();
    if (v)
        lua_pushstring(L, v);
    else
        lua_pushnil(L);
    return 1;
}

static const luaL_Reg http_funcs[] = {
    {"client", l_client},
    {"request", l_request},
    {"post", l_post},
    {"get", l_get},
    {"is_secret", l_is_secret},
    {"is_loopback", l_is_loopback},
    {"curl_version", l_curl_version},
    {NULL, NULL},
};

static const luaL_Reg client_methods[] = {
    {"submit", l_submit},
    {"poll", l_poll},
    {"pending", l_pending},
    {"free", l_free},
    {NULL, NULL},
};

static const luaL_Reg client_meta[] = {
    {"__gc", l_free},
    {"__close", l_free},
    {"__tostring", l_tostring},
    {NULL, NULL},
};

static const luaL_Reg box_meta[] = {
    {"__gc", box_gc},
    {"__close", box_gc},
    {NULL, NULL},
};

int luaopen_klab_http(lua_State *L)
{
    lh_newclass(L, CLIENT_T, client_methods, client_meta);
    lua_pop(L, 1);
    lh_newclass(L, BOX_T, NULL, box_meta);
    lua_pop(L, 1);
    luaL_newlib(L, http_funcs);
    return 1;
}
