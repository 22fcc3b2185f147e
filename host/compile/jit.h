/*
 * jit.h: kernel compilation without a GPU.
 *
 * PTX is assembled whole-program for the exact target by the toolkit's
 * ptxas binary run as a subprocess ($CUDA_HOME/bin/ptxas, or $KLAB_PTXAS);
 * never in relocatable mode, which adds guard code on sm_100a (cuda.md
 * 5.2). CUDA C++ device code is compiled by NVRTC (loaded at run time
 * through dynlib), without -rdc, keeping both the PTX and the cubin.
 *
 * A result carries the cubin, the PTX, the compiler log (at most
 * JIT_LOG_MAX bytes: a longer one keeps its head and tail around a line
 * "[... N bytes cut]"), per-kernel
 * resource figures (from the cubin's EIATTR records, cross-checked with
 * the ptxas -v log), a census of PTX instruction families, the compile
 * time and two SHA-256 hashes: the content hash (the cache key: language,
 * source, options, arch and compiler version) and the cubin's hash.
 *
 * CUDA sources that are not trusted compile in a child process that reads
 * only the toolkit's include folders (proc/open_guard.h on every kernel,
 * Landlock as well where the kernel has it) and can neither write a file
 * nor run a program (proc/seccomp.h): whatever the preprocessor is made to
 * include, any other file is absent. An include the compiler could not
 * open is KS_ECOMPILE with "NAME:LINE: #include ... is not allowed: ..."
 * as message. Where no confinement is possible the compile is refused
 * (KS_EUNSUPPORTED) unless KLAB_ALLOW_UNCONFINED_COMPILER=1 is set; the
 * result says how the compiler was held (confinement). NVRTC never
 * searches the source's own folder, and names the program by req->name,
 * its messages reading "NAME:LINE: error: ...".
 *
 * Refused with KS_EREJECT and a reason: empty or binary input, device-side
 * launches (dynamic parallelism), relocatable or unresolved code, targets
 * the compiler does not know, code without a kernel entry. A compile error
 * is KS_ECOMPILE with the log in the result, never a crash.
 *
 * Successful results are cached on disk by content hash (see
 * jit_cache_dir); entries are written to a temporary file and renamed, so
 * concurrent compiles of the same source are safe, and a corrupt entry is
 * ignored and rewritten.
 */
#ifndef KLAB_HOST_JIT_H
#define KLAB_HOST_JIT_H

#include <stddef.h>

#include "compile/ptx_census.h"
#include "base/sha256.h"
#include "base/status.h"

typedef enum { JIT_LANG_AUTO = 0, JIT_LANG_PTX = 1, JIT_LANG_CUDA = 2 } jit_lang;

#define JIT_LOG_MAX ((size_t)64 << 10)

typedef struct jit_request {
    const char *source;         /* the text; need not be NUL-terminated */
    size_t source_len;
    jit_lang lang;              /* JIT_LANG_AUTO: from name, else from content */
    const char *arch;           /* exact target: "sm_90a", "sm_100a", "sm_120", ... */
    const char *name;           /* file name for messages and language detection; may be NULL */
    int lineinfo;               /* -lineinfo (default 1) */
    int use_cache;              /* read and write the disk cache (default 1) */
    const char *const *options; /* extra ptxas or NVRTC options; may be NULL */
    int noptions;
    const char *cache_dir;      /* NULL: jit_cache_dir() */
    int timeout_ms;             /* compiler deadline; 0: 120000 */
    /* Candidate code: the compiler runs in a child process under these
     * limits (ptxas is always a child; NVRTC then runs in a forked child of
     * its own instead of in this process). Exceeding one is KS_ECOMPILE
     * naming it. 0: no limit; both 0: NVRTC runs in this process. */
    long long limit_memory;     /* bytes */
    int limit_cpu_s;            /* CPU seconds */
    /* klab's own source: compiled in this process, unconfined. Everything
     * else compiles confined (above) and sees only the CUDA toolkit's
     * headers and klab's standard ones (compile/std_headers.h). */
    int trusted;
    /* One more folder of headers (CUTLASS's and CuTe's, klab.lang.cutlass):
     * searched (-I) and held like the toolkit's, in the hash; NULL: none. */
    const char *include_dir;
} jit_request;

/* A kernel parameter's place in the parameter space, from the cubin. */
typedef struct jit_param {
    long offset;                /* bytes */
    long size;                  /* bytes */
} jit_param;

typedef struct jit_kernel {
    char *name;
    int registers;              /* per thread; -1 unknown */
    long spill_stores;          /* bytes, from the ptxas log; -1 unknown */
    long spill_loads;           /* bytes, from the ptxas log; -1 unknown */
    long shared_static;         /* bytes of static shared memory the kernel declares */
    long shared_cubin;          /* .nv.shared.<k> size: on sm_90+ includes the
                                   system's 1 KiB reservation */
    long local_bytes;           /* stack frame per thread (local memory) */
    long sass_instructions;     /* .text size / 16 */
    long param_bytes;           /* kernel parameter bytes; -1 unknown */
    jit_param *params;          /* each parameter, in order; NULL when the
                                   cubin does not say them all */
    int nparams;                /* entries of params */
    int tcgen05;                /* EIATTR: 0, 1 (1-CTA) or 2 (2-CTA) tcgen05 use */
    int setmaxnreg;             /* EIATTR_REG_RECONFIG present */
    int mbarriers;              /* EIATTR_NUM_MBARRIERS */
} jit_kernel;

typedef struct jit_result {
    jit_lang lang;
    char arch[32];
    unsigned char *cubin;       /* NULL after a compile error */
    size_t cubin_size;
    char *ptx;                  /* NUL-terminated; NULL when none */
    size_t ptx_size;
    char *log;                  /* NUL-terminated, never NULL */
    size_t log_size;
    jit_kernel *kernels;
    int nkernels;
    ptx_census census;
    double compile_ms;          /* compiler wall time (of the original compile when cached) */
    char hash[SHA256_HEX_LEN + 1];       /* content hash, the cache key */
    char cubin_hash[SHA256_HEX_LEN + 1]; /* "" when there is no cubin */
    int cached;                 /* 1 when read from the disk cache */
    char compiler[96];          /* "ptxas 13.0.88" or "nvrtc 13.0" */
    char cache_note[200];       /* why the cache was not used or written; "" otherwise */
    char confinement[96];       /* how the compiler was held (of the original compile when cached):
                                   "open guard, Landlock, seccomp", "klab's own source", ... */
} jit_result;

/* Sets the defaults: lineinfo and the cache on, everything else zero. */
void jit_request_init(jit_request *req);

/* A candidate's compiler limits unless the caller asks for others. */
#define JIT_CANDIDATE_MEMORY ((long long)4 << 30)
#define JIT_CANDIDATE_CPU_S 60

/* The limits a caller asks for; has_memory, has_cpu 0: the default. */
typedef struct jit_limits {
    int has_memory, has_cpu;
    long long memory;           /* bytes (0: none) */
    long long cpu_s;            /* CPU seconds, at most 86400 (0: none) */
} jit_limits;

/* Decides how req (its source set) compiles: whether it is klab's own
 * device code (the judge kernels as klab.judge.source() builds them:
 * trusted, compiled in this process, no limits) or a candidate's (anything
 * else: confined, under JIT_CANDIDATE_MEMORY and JIT_CANDIDATE_CPU_S), and
 * then the limits `asked` for (may be NULL). KS_EINVAL for a negative limit
 * or a CPU limit over a day. */
int jit_request_trust(jit_request *req, const jit_limits *asked, ks_status *st);

/* Compiles req. On KS_OK *out is a full result. On KS_ECOMPILE (and on a
 * KS_EREJECT found after compiling) *out holds what there is: at least the
 * log. On other failures *out is NULL. Free with jit_result_free. */
int jit_compile(const jit_request *req, jit_result **out, ks_status *st);

void jit_result_free(jit_result *r);

/* Language of a source: by name suffix (.ptx; .cu, .cuh), else by content
 * (a .version or .target directive means PTX). */
jit_lang jit_detect_lang(const char *name, const char *src, size_t len);
const char *jit_lang_name(jit_lang lang);   /* "ptx", "cuda", "auto" */

/* Checks that arch is a target the compiler for lang knows, by asking it
 * (ptxas --help lists its targets; NVRTC has nvrtcGetSupportedArchs).
 * KS_EREJECT with the known targets when it does not. */
int jit_check_arch(const char *arch, jit_lang lang, ks_status *st);

/* The cache directory: $KLAB_CACHE_DIR, else $XDG_CACHE_HOME/klab/jit,
 * else $HOME/.cache/klab/jit. KS_ENOTFOUND when none can be formed. The
 * directory is not created here. */
int jit_cache_dir(char *buf, size_t n, ks_status *st);

/* The ptxas binary: $KLAB_PTXAS, else $CUDA_HOME/bin/ptxas. */
void jit_ptxas_path(char *buf, size_t n);

/* ptxas's version ("13.0.88"); KS_ENOTFOUND when it is missing. */
int jit_ptxas_version(char *buf, size_t n, ks_status *st);

/* How a compiler child is held, from what it could put in place (the open
 * guard, Landlock, the seccomp rules), written into how ("open guard,
 * Landlock, seccomp"). Reads must be held by the guard or Landlock: with
 * neither, KS_EUNSUPPORTED saying why (why: what failed) and how to opt in,
 * unless KLAB_ALLOW_UNCONFINED_COMPILER=1, when how says "unconfined". */
int jit_confinement(int guard, int landlock, int seccomp, const char *why, char *how, size_t n, ks_status *st);

/* Rejects PTX that declares device-side launches or unresolved external
 * functions (KS_EREJECT with the reason); KS_OK otherwise. */
int jit_check_ptx(const char *ptx, size_t len, ks_status *st);

#endif
