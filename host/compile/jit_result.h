/*
 * jit_result.h: a compile result's life, and what its cubin says (jit.h
 * has jit_result itself and jit_result_free).
 */
#ifndef KLAB_JIT_RESULT_H
#define KLAB_JIT_RESULT_H

#include <stddef.h>

#include "compile/jit.h"

/* An empty result for req in lang (an empty log); NULL when out of memory. */
jit_result *jit_result_new(const jit_request *req, jit_lang lang);

/* Gives r the log (malloc'd, len bytes), freeing the one it had. */
void jit_set_log(jit_result *r, char *log, size_t len);

/* Fills kernels, census and cubin hash from r->cubin, r->ptx and r->log,
 * and applies the cubin checks (jit_policy.h). */
int jit_finish_result(jit_result *r, ks_status *st);

#endif
