/*
 * jit_common.h: what every part of the compiler shares, below all of them
 * (it calls none): the limits on sizes and time, the toolkit's include
 * folders, a request's name in messages, bounded texts, whole writes and
 * reads, and how a compiler child's limits read when it ran into one.
 *
 * The compiler's files call only downwards, floor by floor:
 *   jit.c          the entry point: a request from start to result
 *   jit_target.c   whether the compilers know a target
 *   jit_ptxas.c, jit_nvrtc.c, jit_cache.c
 *                  the two compilers; the content hash and the disk cache
 *   jit_result.c   a result: its life, and what the cubin says of its kernels
 *   jit_policy.c   what klab refuses in a request, in PTX, in a cubin
 *   jit_common.c, jit_log.c, jit_trust.c, cubin.c, ptx_census.c, std_headers.c
 * (tests/lua/layering_test.lua holds the same floors and checks them.)
 */
#ifndef KLAB_JIT_COMMON_H
#define KLAB_JIT_COMMON_H

#include <stddef.h>

#include "compile/jit.h"
#include "proc/spawn.h"

#define JIT_MAX_SOURCE (64u << 20)      /* larger inputs are refused */
#define JIT_MAX_OUTPUT (16u << 20)      /* subprocess output kept */
#define JIT_MAX_ENTRY (512u << 20)      /* cache entries larger than this are ignored */
#define JIT_DEFAULT_TIMEOUT_MS 120000

/* The folders a candidate's compiler may read: $CUDA_HOME/include and,
 * when present, its cccl/ subtree, resolved. */
#define JIT_TOOLKIT_MAX_ROOTS 2
void jit_toolkit_roots(char roots[][4096], int *n);
/* The toolkit's folders, then req->include_dir resolved (when given and
 * present): what a candidate's compiler may read. */
#define JIT_MAX_ROOTS (JIT_TOOLKIT_MAX_ROOTS + 1)
void jit_include_roots(const jit_request *req, char roots[][4096], int *n);

/* A copy of s[0..n) with a NUL after it; NULL when out of memory. */
char *jit_dupn(const char *s, size_t n);

/* req->name, or "<source>". */
const char *jit_display_name(const jit_request *req);

int jit_ends_with(const char *s, const char *suffix);

/* 0 when all n bytes were written (retrying on EINTR), -1 otherwise. */
int jit_write_all(int fd, const void *p, size_t n);

/* Reads a whole regular file (up to limit bytes). NULL on any failure. */
unsigned char *jit_read_file(const char *path, size_t limit, size_t *len);

/* Keeps at most max bytes of *text: its head and tail around a line
 * "[... N bytes cut]", cut at line ends where there are some. */
void jit_bound_text(char **text, size_t *len, size_t max);

/* When the compiler's child ended by one of req's limits: KS_ECOMPILE
 * naming that limit. KS_OK otherwise. */
int jit_limit_failure(const jit_request *req, const spawn_result *r, ks_status *st);

#endif
