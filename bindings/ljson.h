/*
 * ljson.h: a growable byte buffer owned by the Lua stack, and klab's one
 * JSON encoder, shared by the bindings (klab.json, klab.store).
 *
 * The encoding is canonical, so equal tables give equal text and equal
 * hashes (request hashes, evaluation keys, stored JSON columns): object keys
 * sorted bytewise, no spaces, an empty table as [], a table whose keys are
 * exactly 1..n as an array, integers and integral floats below 2^53 as
 * integers, other floats as the shortest of %.15g/%.16g/%.17g that reads
 * back the same, strings with \" \\ \n \t \r and \u00XX for other control
 * bytes (well-formed UTF-8 passes through; any other byte >= 0x80 becomes
 * U+FFFD, so the text is valid UTF-8), nil and json.null as null. NaN,
 * infinities, functions, mixed or non-string keys and nesting deeper than
 * LJ_DEPTH raise.
 */
#ifndef KLAB_BINDINGS_LJSON_H
#define KLAB_BINDINGS_LJSON_H

#include <stddef.h>

#include "lhost.h"

#define LJ_DEPTH 64

typedef struct lj_buf {
    char *p;
    size_t n, cap;
    int nonfinite;   /* 1: NaN and infinities as the literals NaN, Infinity, -Infinity */
} lj_buf;

/* [-0, +1, m] A new empty buffer as a userdata on the stack; its __gc frees
 * the bytes, so a raised error leaks nothing. */
lj_buf *lj_buf_new(lua_State *L);

/* [-0, +0, m] Appends bytes (raises "out of memory"). */
void lj_buf_add(lua_State *L, lj_buf *b, const char *p, size_t n);
void lj_buf_adds(lua_State *L, lj_buf *b, const char *s);

/* [-0, +1, m] Pushes the canonical JSON text of the value at idx. */
void lj_push(lua_State *L, int idx);

/* [-0, +1, m] The same, writing NaN, +Inf and -Inf as the literals NaN,
 * Infinity and -Infinity (the explicit marker of a non-finite number that
 * klab.json's decoder, and Python's json, read back as numbers). */
void lj_push_nonfinite(lua_State *L, int idx);

#endif
