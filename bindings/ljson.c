/* ljson.c: the stack-owned byte buffer and the canonical JSON encoder (see ljson.h). */
#include "ljson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_T "klab.buffer"

static int buf_gc(lua_State *L)
{
    lj_buf *b = luaL_checkudata(L, 1, BUF_T);
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
    return 0;
}

lj_buf *lj_buf_new(lua_State *L)
{
    lj_buf *b = lua_newuserdatauv(L, sizeof *b, 0);
    memset(b, 0, sizeof *b);
    if (luaL_newmetatable(L, BUF_T)) {
        lua_pushcfunction(L, buf_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return b;
}

void lj_buf_add(lua_State *L, lj_buf *b, const char *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q)
            luaL_error(L, "out of memory");
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void lj_buf_adds(lua_State *L, lj_buf *b, const char *s)
{
    lj_buf_add(L, b, s, strlen(s));
}

/* The length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k < len; k++)
        if (s[k] < 0x80 || s[k] > 0xBF)
            return 0;
    return len;
}

/* Strings are JSON text, so valid UTF-8 whatever bytes they held (a
 * compiler log quoting a binary file): a byte that starts no well-formed
 * sequence becomes U+FFFD. */
static void json_string(lua_State *L, lj_buf *b, const char *s, size_t n)
{
    lj_buf_add(L, b, "\"", 1);
    size_t run = 0; /* bytes copied as they are, flushed before an escape */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        if (c >= 0x80) {
            size_t len = utf8_len((const unsigned char *)s + i, n - i);
            if (len) {
                run += len;
                i += len - 1;
                continue;
            }
            esc = "\xEF\xBF\xBD";
        } else if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\r')
            esc = "\\r";
        else if (c < 0x20 || c == 0x7f) {
            snprintf(u, sizeof u, "\\u%04x", c);
            esc = u;
        }
        if (esc) {
            lj_buf_add(L, b, s + i - run, run);
            run = 0;
            lj_buf_adds(L, b, esc);
        } else {
            run++;
        }
    }
    lj_buf_add(L, b, s + n - run, run);
    lj_buf_add(L, b, "\"", 1);
}

typedef struct jkey {
    const char *s;
    size_t n;
} jkey;

static int jkey_cmp(const void *a, const void *b)
{
    const jkey *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

static void json_value(lua_State *L, lj_buf *b, int idx, int depth);

static void json_table(lua_State *L, lj_buf *b, int idx, int depth)
{
    if (depth > LJ_DEPTH)
        luaL_error(L, "JSON: a table nested deeper than %d (a cycle?)", LJ_DEPTH);
    luaL_checkstack(L, 6, "JSON");
    lua_Integer len = (lua_Integer)lua_rawlen(L, idx);
    lua_Integer count = 0;
    int all_strings = 1, all_index = 1;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        count++;
        if (lua_type(L, -2) != LUA_TSTRING)
            all_strings = 0;
        if (!lua_isinteger(L, -2) || lua_tointeger(L, -2) < 1 || lua_tointeger(L, -2) > len)
            all_index = 0;
        lua_pop(L, 1);
    }
    if (count == len && all_index) { /* an array, or empty: [] */
        lj_buf_add(L, b, "[", 1);
        for (lua_Integer i = 1; i <= len; i++) {
            if (i > 1)
                lj_buf_add(L, b, ",", 1);
            lua_rawgeti(L, idx, i);
            json_value(L, b, lua_gettop(L), depth + 1);
            lua_pop(L, 1);
        }
        lj_buf_add(L, b, "]", 1);
        return;
    }
    if (!all_strings)
        luaL_error(L, "JSON: a table must be an array (keys 1..n) or have string keys only");
    /* Keys sorted, so that equal tables give equal text (and hashes). The
     * key strings stay alive: the table at idx holds them. */
    jkey *keys = lua_newuserdatauv(L, (size_t)count * sizeof *keys + 1, 0);
    size_t k = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        keys[k].s = lua_tolstring(L, -2, &keys[k].n);
        k++;
        lua_pop(L, 1);
    }
    qsort(keys, k, sizeof *keys, jkey_cmp);
    lj_buf_add(L, b, "{", 1);
    for (size_t i = 0; i < k; i++) {
        if (i > 0)
            lj_buf_add(L, b, ",", 1);
        json_string(L, b, keys[i].s, keys[i].n);
        lj_buf_add(L, b, ":", 1);
        lua_pushlstring(L, keys[i].s, keys[i].n);
        lua_rawget(L, idx);
        json_value(L, b, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    lj_buf_add(L, b, "}", 1);
    lua_pop(L, 1); /* keys */
}

static void json_number(lua_State *L, lj_buf *b, int idx)
{
    char num[64];
    if (lua_isinteger(L, idx)) {
        snprintf(num, sizeof num, LUA_INTEGER_FMT, (LUAI_UACINT)lua_tointeger(L, idx));
    } else {
        double v = (double)lua_tonumber(L, idx);
        if (!isfinite(v) && b->nonfinite) {
            lj_buf_adds(L, b, isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
            return;
        }
        if (!isfinite(v))
            luaL_error(L, "JSON: cannot encode %f (not a finite number)", v);
        if (v == floor(v) && fabs(v) < 9007199254740992.0) {
            snprintf(num, sizeof num, "%lld", (long long)v); /* -0.0 becomes 0 */
        } else {
            /* The shortest text that reads back as the same double. */
            for (int prec = 15; prec <= 17; prec++) {
                snprintf(num, sizeof num, "%.*g", prec, v);
                if (strtod(num, NULL) == v)
                    break;
            }
        }
    }
    lj_buf_adds(L, b, num);
}

static void json_value(lua_State *L, lj_buf *b, int idx, int depth)
{
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        lj_buf_adds(L, b, "null");
        break;
    case LUA_TBOOLEAN:
        lj_buf_adds(L, b, lua_toboolean(L, idx) ? "true" : "false");
        break;
    case LUA_TNUMBER:
        json_number(L, b, idx);
        break;
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        json_string(L, b, s, n);
        break;
    }
    case LUA_TTABLE:
        json_table(L, b, idx, depth);
        break;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == NULL) { /* cjson.null */
            lj_buf_adds(L, b, "null");
            break;
        }
        /* fall through */
    default:
        luaL_error(L, "JSON: cannot encode a %s", luaL_typename(L, idx));
    }
}

static void push_text(lua_State *L, int idx, int nonfinite)
{
    idx = lua_absindex(L, idx);
    lj_buf *b = lj_buf_new(L);
    b->nonfinite = nonfinite;
    json_value(L, b, idx, 0);
    lua_pushlstring(L, b->p ? b->p : "", b->n);
    lua_remove(L, -2); /* the buffer; its __gc frees the bytes */
}

void lj_push(lua_State *L, int idx) { push_text(L, idx, 0); }

void lj_push_nonfinite(lua_State *L, int idx) { push_text(L, idx, 1); }
