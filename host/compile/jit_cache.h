/*
 * jit_cache.h: the content hash of a request and the disk cache of results
 * under it (jit.h has jit_cache_dir).
 */
#ifndef KLAB_JIT_CACHE_H
#define KLAB_JIT_CACHE_H

#include <stddef.h>

#include "base/sha256.h"
#include "compile/jit.h"

/* Looks req up in the disk cache: hash gets its content hash (the key:
 * language, source, options, arch and compiler version), dir the cache
 * folder (req->cache_dir, else jit_cache_dir; "" when none), note why the
 * cache is not used ("" when it is), and *hit the entry when one is whole
 * and for this request (NULL otherwise). */
void jit_cache_lookup(const jit_request *req, jit_lang lang, const char *compiler,
                      char hash[SHA256_HEX_LEN + 1], char *dir, size_t ndir, char *note, size_t nnote,
                      jit_result **hit);

/* Writes r under its hash; failures are reported in r->cache_note only. */
void jit_cache_store(const char *dir, jit_result *r);

#endif
