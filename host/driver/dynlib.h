/*
 * dynlib.h: CUDA libraries opened at run time by a stated search order.
 *
 * klab never links NVRTC, CUPTI, cuBLASLt or cuDNN, so the binary starts on
 * a machine that lacks any of them. A library is described by a small
 * descriptor (name, environment variable, sonames); dynlib_open tries, in
 * this order, and stops at the first file that loads:
 *
 *   (a) the file named by the descriptor's environment variable (a full
 *       path, e.g. KLAB_NVRTC=/opt/cuda/lib64/libnvrtc.so.13); when it is
 *       set and fails, nothing else is tried (an explicit choice wins);
 *   (b) $CUDA_HOME/lib64/<soname> for each soname (CUDA_HOME from the
 *       environment, else the compiled-in KLAB_CUDA_HOME);
 *   (c) the system loader's search (LD_LIBRARY_PATH, ld.so.cache) by soname.
 *
 * The result records the file that was loaded. A failure lists what was
 * tried. dynlib_get keeps one process-wide handle per descriptor (opened
 * once, thread-safe, never closed), which is what most callers want.
 */
#ifndef KLAB_HOST_DYNLIB_H
#define KLAB_HOST_DYNLIB_H

#include <stddef.h>

#include "base/status.h"

#define DYNLIB_PATH_MAX 1024

struct dynlib;

typedef struct dynlib_desc {
    const char *name;              /* short name for messages: "nvrtc" */
    const char *env;               /* environment variable with a full path, or NULL */
    const char *const *sonames;    /* NULL-terminated, most specific first */
    /* Optional: writes the library's version into buf ("13.0"); returns a
     * ks_code. NULL when the library has no version call. */
    int (*version)(const struct dynlib *lib, char *buf, size_t n, ks_status *st);
} dynlib_desc;

typedef struct dynlib {
    void *handle;                  /* dlopen handle, NULL when not open */
    const dynlib_desc *desc;
    char path[DYNLIB_PATH_MAX];    /* the file that was loaded */
    char how[16];                  /* "env", "CUDA_HOME" or "soname" */
} dynlib;

/* The libraries klab uses. */
extern const dynlib_desc dynlib_nvrtc;
extern const dynlib_desc dynlib_cupti;
extern const dynlib_desc dynlib_cublaslt;
extern const dynlib_desc dynlib_cudnn;

/* The CUDA toolkit root: $CUDA_HOME if set and non-empty, else the
 * compiled-in KLAB_CUDA_HOME, else /usr/local/cuda. Never NULL. */
const char *dynlib_cuda_home(void);

/* Opens desc by the search order above into *out (which the caller owns
 * and releases with dynlib_close). KS_ENOLIB with the list of attempts and
 * the loader's reasons on failure. */
int dynlib_open(const dynlib_desc *desc, dynlib *out, ks_status *st);

/* Closes a library opened with dynlib_open; idempotent. */
void dynlib_close(dynlib *lib);

/* The process-wide handle for desc: opened on first use, then shared.
 * Returns NULL and fills st (KS_ENOLIB) when it cannot be loaded; a later
 * call tries again. The returned object lives until the process ends. */
const dynlib *dynlib_get(const dynlib_desc *desc, ks_status *st);

/* Looks up a symbol. KS_ENOTFOUND naming the symbol and the file when it
 * is missing (an older library, for example). */
int dynlib_sym(const dynlib *lib, const char *symbol, void **out, ks_status *st);

/* One symbol of a table that dynlib_bind fills: its name and where its
 * address goes. An optional one that is missing leaves NULL there. */
typedef struct dynlib_symbol {
    const char *name;
    void **slot;
    int optional;
} dynlib_symbol;

/* Looks up every symbol of syms (n of them) in lib, which may be NULL (st
 * then says why already and is kept). KS_OK, or the first missing
 * required symbol's failure; every slot is NULL then. */
int dynlib_bind(const dynlib *lib, const dynlib_symbol *syms, size_t n, ks_status *st);
#define DYNLIB_COUNT(syms) (sizeof(syms) / sizeof((syms)[0]))

/* Writes the version of desc's library into buf, loading it through
 * dynlib_get. Never fails hard: returns KS_ENOLIB when the library is
 * missing, KS_EUNSUPPORTED when it has no version call, with st saying
 * why; buf is then "". */
int dynlib_version(const dynlib_desc *desc, char *buf, size_t n, ks_status *st);

#endif
