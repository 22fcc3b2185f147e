/*
 * jit_nvrtc.h: CUDA C++ through NVRTC (jit.h has jit_confinement).
 */
#ifndef KLAB_JIT_NVRTC_H
#define KLAB_JIT_NVRTC_H

#include <stddef.h>

#include "compile/jit.h"

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

/* NVRTC, loaded once per process. */
int jit_nvrtc_load(const nvrtc_api **api, ks_status *st);

/* Compiles req in this process. */
int jit_compile_cuda(const jit_request *req, const nvrtc_api *api, jit_result *r, ks_status *st);

/* Compiles req in a forked child, confined and under req's limits. */
int jit_compile_cuda_limited(const jit_request *req, const nvrtc_api *api, jit_result *r, ks_status *st);

#endif
