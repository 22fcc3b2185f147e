/*
 * jit_impl.h: what the parts of the compiler share (not an interface):
 * jit.c (requests, results, the entry point), jit_policy.c (what klab
 * refuses in a request, in PTX and in a cubin; targets), jit_log.c (the
 * compilers' logs), jit_ptxas.c (ptxas), jit_nvrtc.c (NVRTC and its
 * confined child), jit_cache.c (the content hash and the disk cache).
 */
#ifndef KLAB_JIT_IMPL_H
#define KLAB_JIT_IMPL_H

#include <stddef.h>

#include "base/sha256.h"
#include "compile/cubin.h"
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

/* jit.c */
char *jit_dupn(const char *s, size_t n);
const char *jit_display_name(const jit_request *req);
int jit_ends_with(const char *s, const char *suffix);
int jit_write_all(int fd, const void *p, size_t n);
unsigned char *jit_read_file(const char *path, size_t limit, size_t *len);
void jit_bound_text(char **text, size_t *len, size_t max);
jit_result *jit_result_new(const jit_request *req, jit_lang lang);
void jit_set_log(jit_result *r, char *log, size_t len);
int jit_finish_result(jit_result *r, ks_status *st);

/* jit_policy.c */
int jit_check_text(const jit_request *req, ks_status *st);
int jit_check_cubin(const cubin_info *ci, ks_status *st);
int jit_nvrtc_reject_reason(const char *log, const char *arch, ks_status *st);

/* jit_log.c: the first error of a log, and ptxas -v's per-function lines. */
void jit_first_error(const char *log, char *buf, size_t n);
typedef struct log_fn {
    char name[256];
    int registers;
    long smem;
    long frame, spill_st, spill_ld;
    int has_regs, has_spills;
} log_fn;
typedef struct log_info {
    log_fn *fn;
    int n, cap;
} log_info;
void jit_parse_log(const char *log, log_info *li);
log_fn *jit_log_find(log_info *li, const char *name, size_t len, int create);

/* jit_ptxas.c: facts about one ptxas binary, asked once per process and path. */
typedef struct ptxas_facts {
    char path[1024];
    char version[64];
    char *targets;      /* " sm_75 sm_80 ... " (space-delimited, padded) */
} ptxas_facts;
int jit_ptxas_facts(ptxas_facts *f, ks_status *st);
int jit_limit_failure(const jit_request *req, const spawn_result *r, ks_status *st);
int jit_compile_ptx(const jit_request *req, jit_result *r, ks_status *st);

/* jit_nvrtc.c */
typedef struct nvrtc_api {
    int (*version)(int *, int *);
    int (*num_archs)(int *);
    int (*archs)(int *);
    const char *(*error_string)(int);
    int (*create)(void **, const char *, const char *, int, const char *const *, const char *const *);
    int (*destroy)(void **);
    int (*compile)(void *, int, const char *const *);
    int (*log_size)(void *, size_t *);
    int (*log)(void *, char *);
    int (*ptx_size)(void *, size_t *);
    int (*ptx)(void *, char *);
    int (*cubin_size)(void *, size_t *);
    int (*cubin)(void *, char *);
    char version_str[32];
} nvrtc_api;
int jit_nvrtc_load(const nvrtc_api **api, ks_status *st);
int jit_compile_cuda(const jit_request *req, const nvrtc_api *api, jit_result *r, ks_status *st);
int jit_compile_cuda_limited(const jit_request *req, const nvrtc_api *api, jit_result *r, ks_status *st);

/* jit_cache.c */
void jit_content_hash(const jit_request *req, jit_lang lang, const char *compiler, char out[SHA256_HEX_LEN + 1]);
int jit_cache_entry_path(const char *dir, const char *hash, char *buf, size_t n);
int jit_cache_load(const char *path, const jit_request *req, jit_lang lang, const char *compiler, jit_result **out);
void jit_cache_store(const char *dir, jit_result *r);

#endif
