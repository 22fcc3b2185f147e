/*
 * status.h: result codes and the status object every host/ function fills.
 *
 * host/ never raises and never exits. A function returns one of the KS_*
 * codes below and, when it fails, writes a one-line message (and where it
 * helps, the library's own sub-code) into a caller-provided ks_status. The
 * bindings decide whether a failure is misuse (a Lua error) or an ordinary
 * outcome (nil, message, code).
 */
#ifndef KLAB_HOST_STATUS_H
#define KLAB_HOST_STATUS_H

#include <stddef.h>

typedef enum {
    KS_OK = 0,
    KS_EINVAL = -1,     /* bad argument from the caller: misuse */
    KS_ENOMEM = -2,     /* host or device memory exhausted */
    KS_EIO = -3,        /* file or pipe error */
    KS_ENODRIVER = -4,  /* no CUDA driver or no GPU */
    KS_ENOLIB = -5,     /* a shared library could not be loaded */
    KS_ECUDA = -6,      /* a CUDA driver call failed (sub = CUresult) */
    KS_ECOMPILE = -7,   /* the compiler rejected the source; log attached */
    KS_EREJECT = -8,    /* compiled, but klab refuses it (e.g. device launches) */
    KS_ETIMEOUT = -9,   /* a deadline passed */
    KS_ECHILD = -10,    /* a child process crashed or exited badly */
    KS_EPROTO = -11,    /* malformed frame or reply */
    KS_ENOTFOUND = -12, /* a named thing does not exist */
    KS_EUNSUPPORTED = -13, /* the machine cannot do this (no profiling rights, ...) */
    KS_EAGAIN = -14     /* not finished yet: ask again (a job still running) */
} ks_code;

#define KS_MSG_MAX 512

typedef struct ks_status {
    int code;               /* ks_code */
    int sub;                /* library sub-code (CUresult, nvrtcResult, errno, ...) */
    char msg[KS_MSG_MAX];   /* one line, suitable for a person or a model */
} ks_status;

/* Clears a status to KS_OK. */
void ks_clear(ks_status *st);

/* Fills st and returns code, so failures read: return ks_fail(st, KS_EIO, errno, "..."). */
int ks_fail(ks_status *st, int code, int sub, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Short stable name of a code, for Lua ("EIO", "ECOMPILE", ...). */
const char *ks_code_name(int code);

#endif
