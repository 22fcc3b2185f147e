/*
 * jit.c: kernel compilation without a GPU (see jit.h).
 *
 * Order of work in jit_compile:
 *   1. validate the request and the text (empty, binary, too large);
 *   2. pick the language; for PTX reject device launches and unresolved
 *      externs before compiling;
 *   3. check the target by asking the compiler;
 *   4. hash language + source + options + arch + compiler version and look
 *      in the disk cache;
 *   5. compile (ptxas subprocess, or NVRTC), keep the log;
 *   6. read the cubin (kernels, resources, symbols) and the PTX census,
 *      reject what klab refuses, store in the cache.
 */
#include "base/clock.h"
#include "compile/jit.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "compile/cubin.h"
#include "compile/std_headers.h"
#include "driver/dynlib.h"
#include "proc/landlock.h"
#include "proc/open_guard.h"
#include "proc/seccomp.h"
#include "proc/spawn.h"

#define JIT_MAX_SOURCE (64u << 20)      /* larger inputs are refused */
#define JIT_MAX_OUTPUT (16u << 20)      /* subprocess output kept */
#define JIT_MAX_ENTRY (512u << 20)      /* cache entries larger than this are ignored */
#define JIT_DEFAULT_TIMEOUT_MS 120000
#define JIT_CACHE_MAGIC "KLABJIT 2\n"

/* ---- small helpers ------------------------------------------------------ */

/* The folders a candidate's compiler may read: $CUDA_HOME/include and,
 * when present, its cccl/ subtree, resolved. */
#define TOOLKIT_MAX_ROOTS 2
static void toolkit_roots(char roots[][4096], int *n)
{
    *n = 0;
    char p[4096];
    snprintf(p, sizeof p, "%s/include", dynlib_cuda_home());
    if (realpath(p, roots[*n]))
        (*n)++;
    snprintf(p, sizeof p, "%s/include/cccl", dynlib_cuda_home());
    if (*n < TOOLKIT_MAX_ROOTS && realpath(p, roots[*n]))
        (*n)++;
}

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static const char *display_name(const jit_request *req)
{
    return req->name && *req->name ? req->name : "<source>";
}

/* NVRTC's program name, which its messages (and the include check's) use. */
static const char *cuda_name(const jit_request *req)
{
    return req->name && *req->name ? req->name : "kernel.cu";
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Copies the first line of log containing "error" (else the first
 * non-empty line) into buf, trimmed. */
static void first_error(const char *log, char *buf, size_t n)
{
    const char *best = NULL, *first = NULL;
    for (const char *p = log; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int blank = 1;
        for (size_t i = 0; i < len; i++)
            if (!isspace((unsigned char)p[i]))
                blank = 0;
        /* ptxas ends every failure with this summary; the cause is above. */
        if (!blank && len >= 34 && memmem(p, len, "Ptx assembly aborted due to errors", 34))
            blank = 1;
        if (!blank && !first)
            first = p;
        if (!blank && !best) {
            for (size_t i = 0; i + 5 <= len; i++)
                if (strncmp(p + i, "error", 5) == 0 || strncmp(p + i, "fatal", 5) == 0) {
                    best = p;
                    break;
                }
        }
        p = e ? e + 1 : NULL;
    }
    const char *s = best ? best : first;
    if (!s) {
        snprintf(buf, n, "(no compiler output)");
        return;
    }
    while (isspace((unsigned char)*s))
        s++;
    size_t len = strcspn(s, "\n");
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (len >= n)
        len = n - 1;
    memcpy(buf, s, len);
    buf[len] = '\0';
}

const char *jit_lang_name(jit_lang lang)
{
    switch (lang) {
    case JIT_LANG_PTX: return "ptx";
    case JIT_LANG_CUDA: return "cuda";
    default: return "auto";
    }
}

void jit_request_init(jit_request *req)
{
    memset(req, 0, sizeof *req);
    req->lineinfo = 1;
    req->use_cache = 1;
}

/* ---- text checks -------------------------------------------------------- */

/* KS_EREJECT when src is empty or not text. */
static int check_text(const jit_request *req, ks_status *st)
{
    const unsigned char *s = (const unsigned char *)req->source;
    size_t n = req->source_len;
    const char *name = display_name(req);
    if (n > JIT_MAX_SOURCE)
        return ks_fail(st, KS_EREJECT, 0, "%s is too large (%zu bytes, limit %u)", name, n,
                       JIT_MAX_SOURCE);
    size_t k = 0;
    while (k < n && isspace(s[k]))
        k++;
    if (k == n)
        return ks_fail(st, KS_EREJECT, 0, "%s is empty: no PTX or CUDA source to compile", name);
    if (n >= 4 && memcmp(s, "\177ELF", 4) == 0)
        return ks_fail(st, KS_EREJECT, 0,
                       "%s is an ELF binary, not PTX or CUDA source text (klab compiles source only)",
                       name);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v')
            return ks_fail(st, KS_EREJECT, 0,
                           "%s is a binary file, not PTX or CUDA source text (byte 0x%02x at offset %zu)",
                           name, c, i);
    }
    return KS_OK;
}

jit_lang jit_detect_lang(const char *name, const char *src, size_t len)
{
    if (name) {
        if (ends_with(name, ".ptx"))
            return JIT_LANG_PTX;
        if (ends_with(name, ".cu") || ends_with(name, ".cuh"))
            return JIT_LANG_CUDA;
    }
    /* PTX has .version and .target directives at the start of a line; CUDA
     * C++ cannot (a line starting with '.' is not C++). */
    char *s = src ? ptx_strip(src, len) : NULL;
    if (!s)
        return JIT_LANG_CUDA;
    jit_lang found = JIT_LANG_CUDA;
    for (const char *p = s; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (strncmp(p, ".version", 8) == 0 || strncmp(p, ".target", 7) == 0) {
            found = JIT_LANG_PTX;
            break;
        }
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    free(s);
    return found;
}

/* ---- forbidden constructs ----------------------------------------------- */

/* Names that mean device-side launches (dynamic parallelism) or the CUDA
 * device runtime behind them. */
static int device_launch_name(const char *s, size_t n)
{
    static const char *const prefixes[] = {
        "cudaLaunchDevice", "cudaGetParameterBuffer", "cudaCGGetIntrinsicHandle",
        "cudaCGSynchronize", "cudaCGScheduleGrid", "cudaDeviceSynchronizeDeprecationAvoidance",
        "__cudaCDP", "cudaCDP", "__cudaPushCallConfiguration", "__cnp", "cnp_", NULL,
    };
    for (int i = 0; prefixes[i]; i++) {
        size_t k = strlen(prefixes[i]);
        if (n >= k && memcmp(s, prefixes[i], k) == 0)
            return 1;
    }
    /* The device runtime's CDP entry points carry "CDP" or "cnp" as a word
     * part: __cudaCDP2Launch, cudaCDPGetParameterBuffer, __cnpLaunch... */
    for (size_t i = 0; i + 3 <= n; i++) {
        int word_start = i == 0 || s[i - 1] == '_';
        if (memcmp(s + i, "CDP", 3) == 0 && (word_start || islower((unsigned char)s[i - 1])))
            return 1;
        if (memcmp(s + i, "cnp", 3) == 0 && word_start)
            return 1;
    }
    return 0;
}

/* External functions the driver provides to whole-program code: device
 * printf and assert, which honest kernels use and nvcc builds. */
static int system_call_name(const char *s, size_t n)
{
    static const char *const names[] = {"vprintf", "__assertfail", NULL};
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && memcmp(s, names[i], n) == 0)
            return 1;
    return 0;
}

/* Device-side malloc and free: refused, because the device heap outlives a
 * launch, so a kernel could keep results there from one run to the next,
 * out of reach of the globals klab restores before every run. */
static int device_heap_name(const char *s, size_t n)
{
    return (n == 6 && memcmp(s, "malloc", 6) == 0) || (n == 4 && memcmp(s, "free", 4) == 0);
}

#define HEAP_REASON "device-side malloc/free is not allowed (the device heap outlives a launch, so state could " \
                    "carry from one run to the next): the code calls %.*s"

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$';
}

int jit_check_ptx(const char *ptx, size_t len, ks_status *st)
{
    char *s = ptx_strip(ptx, len);
    if (!s)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory checking PTX");
    int rc = KS_OK;
    for (size_t i = 0; i < len && rc == KS_OK;) {
        if (!ident_char(s[i]) || (i > 0 && (ident_char(s[i - 1]) || s[i - 1] == '%' || s[i - 1] == '.'))) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && ident_char(s[j]))
            j++;
        if (device_launch_name(s + i, j - i))
            rc = ks_fail(st, KS_EREJECT, 0,
                         "device-side kernel launch (dynamic parallelism) is not allowed: the PTX uses %.*s",
                         (int)(j - i > 80 ? 80 : j - i), s + i);
        i = j;
    }
    /* .extern .func declarations: code that expects a link step. */
    for (const char *p = s; rc == KS_OK && (p = strstr(p, ".extern")) != NULL; p += 7) {
        if (p > s && ident_char(p[-1]))
            continue;
        const char *q = p + 7;
        const char *end = q + strcspn(q, ";{");
        const char *f = strstr(q, ".func");
        if (!f || f >= end)
            continue;       /* .extern .shared and friends: not a function */
        q = f + 5;
        while (q < end && isspace((unsigned char)*q))
            q++;
        if (q < end && *q == '(') {     /* return parameter */
            int depth = 0;
            for (; q < end; q++) {
                if (*q == '(')
                    depth++;
                else if (*q == ')' && --depth == 0) {
                    q++;
                    break;
                }
            }
            while (q < end && isspace((unsigned char)*q))
                q++;
        }
        const char *nb = q;
        while (q < end && ident_char(*q))
            q++;
        size_t nlen = (size_t)(q - nb);
        if (nlen && system_call_name(nb, nlen))
            continue;
        if (nlen && device_heap_name(nb, nlen)) {
            rc = ks_fail(st, KS_EREJECT, 0, HEAP_REASON, (int)nlen, nb);
            break;
        }
        rc = ks_fail(st, KS_EREJECT, 0,
                     "unresolved external function %.*s: relocatable code is not allowed "
                     "(whole-program kernels only, every function must have a body)",
                     (int)(nlen > 80 ? 80 : nlen), nlen ? nb : "?");
    }
    free(s);
    return rc;
}

/* Checks the cubin klab would load. */
static int check_cubin(const cubin_info *ci, ks_status *st)
{
    if (ci->elf_type != 2 /* ET_EXEC */)
        return ks_fail(st, KS_EREJECT, 0,
                       "the cubin is relocatable (ELF type %d, not ET_EXEC): whole-program code only",
                       ci->elf_type);
    for (int i = 0; i < ci->nsymbols; i++) {
        const cubin_symbol *s = &ci->symbols[i];
        size_t n = strlen(s->name);
        if (device_launch_name(s->name, n))
            return ks_fail(st, KS_EREJECT, 0,
                           "device-side kernel launch (dynamic parallelism) is not allowed: the cubin has symbol %s",
                           s->name);
        if (s->undefined && device_heap_name(s->name, n))
            return ks_fail(st, KS_EREJECT, 0, HEAP_REASON, (int)n, s->name);
        /* Weak undefined .nv.reservedSmem.* symbols and the driver's own
         * system calls (printf, assert) are resolved at load; any other
         * global undefined symbol needs a link step. */
        if (s->undefined && n && s->bind == 1 /* STB_GLOBAL */ && strncmp(s->name, ".nv.", 4) != 0 &&
            !system_call_name(s->name, n))
            return ks_fail(st, KS_EREJECT, 0,
                           "the cubin has an unresolved symbol %s: relocatable code is not allowed",
                           s->name);
    }
    if (ci->nkernels == 0)
        return ks_fail(st, KS_EREJECT, 0, "no kernel entry point (.entry / __global__) in the code");
    return KS_OK;
}

/* ---- subprocesses ------------------------------------------------------- */

/* Runs argv[0] (a path) with argv in directory cwd (NULL: unchanged),
 * stdin from /dev/null, stdout and stderr captured together into r->out,
 * under req's limits when req is not NULL. KS_ETIMEOUT after timeout_ms
 * (the child's group is killed). Free r with spawn_result_free. */
static int run_capture(const char *const argv[], const char *cwd, int timeout_ms, const jit_request *req,
                       spawn_result *r, ks_status *st)
{
    spawn_opts o;
    memset(&o, 0, sizeof o);
    o.argv = argv;
    o.cwd = cwd;
    o.out = SPAWN_CAPTURE;
    o.err = SPAWN_TO_STDOUT;
    o.capture_max = JIT_MAX_OUTPUT;
    int ms = timeout_ms > 0 ? timeout_ms : JIT_DEFAULT_TIMEOUT_MS;
    o.timeout_s = ms / 1000.0;
    if (req) {
        /* An exec'd tool's address space is limited by the kernel: no watch
         * (and no polling of its memory while it runs). */
        o.limit_as = req->limit_memory;
        o.limit_cpu = req->limit_cpu_s;
    }
    int rc = spawn_run(&o, r, st);
    if (rc)
        return rc;
    if (r->end == SPAWN_TIMED_OUT) {
        spawn_result_free(r);
        return ks_fail(st, KS_ETIMEOUT, 0, "%s took longer than %d ms and was killed", argv[0], ms);
    }
    return KS_OK;
}

/* When the compiler's child ended by one of req's limits: KS_ECOMPILE
 * naming that limit. KS_OK otherwise. */
static int limit_failure(const jit_request *req, const spawn_result *r, ks_status *st)
{
    char lim[64];
    if (req->limit_memory > 0) {
        spawn_format_bytes(req->limit_memory, lim, sizeof lim);
        if (r->end == SPAWN_OVER_MEMORY)
            return ks_fail(st, KS_ECOMPILE, 0, "%s: the compiler exceeded its %s memory limit",
                           display_name(req), lim);
    }
    if (req->limit_cpu_s > 0 && r->signal == SIGXCPU)
        return ks_fail(st, KS_ECOMPILE, 0, "%s: the compiler exceeded its %d s CPU limit", display_name(req),
                       req->limit_cpu_s);
    return KS_OK;
}

void jit_ptxas_path(char *buf, size_t n)
{
    const char *env = getenv("KLAB_PTXAS");
    if (env && *env)
        snprintf(buf, n, "%s", env);
    else
        snprintf(buf, n, "%s/bin/ptxas", dynlib_cuda_home());
}

/* Facts about one ptxas binary, asked once per process and path. */
typedef struct ptxas_facts {
    char path[1024];
    char version[64];
    char *targets;      /* " sm_75 sm_80 ... " (space-delimited, padded) */
} ptxas_facts;

static pthread_mutex_t facts_mu = PTHREAD_MUTEX_INITIALIZER;
static ptxas_facts facts;

/* Parses "Allowed values for this option:  'compute_100', ..." after
 * --gpu-name in ptxas --help: keeps the real targets (sm_*). */
static char *parse_targets(const char *help)
{
    const char *p = strstr(help, "--gpu-name");
    if (!p)
        return NULL;
    p = strstr(p, "Allowed values");
    if (!p)
        return NULL;
    const char *end = strstr(p, "Default value");
    if (!end)
        end = p + strlen(p);
    size_t cap = (size_t)(end - p) + 3;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    size_t len = 0;
    t[len++] = ' ';
    for (const char *q = p; q < end; q++) {
        if (*q != '\'')
            continue;
        const char *e = memchr(q + 1, '\'', (size_t)(end - q - 1));
        if (!e)
            break;
        if (e - q - 1 > 3 && strncmp(q + 1, "sm_", 3) == 0) {
            memcpy(t + len, q + 1, (size_t)(e - q - 1));
            len += (size_t)(e - q - 1);
            t[len++] = ' ';
        }
        q = e;
    }
    t[len] = '\0';
    return t;
}

/* Fills *f for the current ptxas path (running --version and --help once). */
static int ptxas_get_facts(ptxas_facts *f, ks_status *st)
{
    char path[1024];
    jit_ptxas_path(path, sizeof path);
    pthread_mutex_lock(&facts_mu);
    int rc = KS_OK;
    if (strcmp(facts.path, path) != 0 || !facts.version[0]) {
        free(facts.targets);
        memset(&facts, 0, sizeof facts);
        if (access(path, X_OK) != 0) {
            rc = ks_fail(st, KS_ENOTFOUND, errno,
                         "ptxas not found at %s (set CUDA_HOME to the CUDA toolkit, or KLAB_PTXAS)",
                         path);
            goto out;
        }
        const char *argv[] = {path, "--version", NULL};
        spawn_result sr;
        rc = run_capture(argv, NULL, 30000, NULL, &sr, st);
        if (rc)
            goto out;
        /* "Cuda compilation tools, release 13.0, V13.0.88" */
        const char *v = strstr(sr.out, ", V");
        if (!sr.exited || sr.exit_code != 0 || !v) {
            rc = ks_fail(st, KS_ENOTFOUND, 0, "%s --version gave no version (is it ptxas?)", path);
            spawn_result_free(&sr);
            goto out;
        }
        size_t vl = strcspn(v + 3, " \r\n");
        snprintf(facts.version, sizeof facts.version, "%.*s", (int)(vl < 60 ? vl : 60), v + 3);
        spawn_result_free(&sr);
        const char *hargv[] = {path, "--help", NULL};
        if (run_capture(hargv, NULL, 30000, NULL, &sr, st) == KS_OK) {
            facts.targets = parse_targets(sr.out);
            spawn_result_free(&sr);
        }
        ks_clear(st);
        snprintf(facts.path, sizeof facts.path, "%s", path);
    }
    *f = facts;
    if (facts.targets)
        f->targets = strdup(facts.targets);
out:
    pthread_mutex_unlock(&facts_mu);
    return rc;
}

int jit_ptxas_version(char *buf, size_t n, ks_status *st)
{
    ptxas_facts f;
    if (n)
        buf[0] = '\0';
    int rc = ptxas_get_facts(&f, st);
    if (rc)
        return rc;
    snprintf(buf, n, "%s", f.version);
    free(f.targets);
    return KS_OK;
}

/* ---- NVRTC -------------------------------------------------------------- */

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

static pthread_mutex_t nvrtc_mu = PTHREAD_MUTEX_INITIALIZER;
static nvrtc_api nvrtc;
static int nvrtc_ready;

/* NVRTC loads its builtins library (and through it the C++ runtime) on
 * its first compile. Loaded here, in the parent, it is already there when a
 * confined child compiles, and the child need not read the system's
 * library folders. Best effort: NVRTC loads it itself otherwise. */
static void preload_builtins(const dynlib *lib, int major, int minor)
{
    char path[DYNLIB_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s", lib->path);
    char *slash = strrchr(path, '/');
    if (!slash)
        return;
    snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "libnvrtc-builtins.so.%d.%d", major, minor);
    (void)dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static int nvrtc_load(const nvrtc_api **api, ks_status *st)
{
    pthread_mutex_lock(&nvrtc_mu);
    int rc = KS_OK;
    if (!nvrtc_ready) {
        const dynlib *lib = dynlib_get(&dynlib_nvrtc, st);
        if (!lib) {
            rc = st->code;
            goto out;
        }
        nvrtc_api a;
        memset(&a, 0, sizeof a);
        struct {
            const char *name;
            void **slot;
        } syms[] = {
            {"nvrtcVersion", (void **)&a.version},
            {"nvrtcGetNumSupportedArchs", (void **)&a.num_archs},
            {"nvrtcGetSupportedArchs", (void **)&a.archs},
            {"nvrtcGetErrorString", (void **)&a.error_string},
            {"nvrtcCreateProgram", (void **)&a.create},
            {"nvrtcDestroyProgram", (void **)&a.destroy},
            {"nvrtcCompileProgram", (void **)&a.compile},
            {"nvrtcGetProgramLogSize", (void **)&a.log_size},
            {"nvrtcGetProgramLog", (void **)&a.log},
            {"nvrtcGetPTXSize", (void **)&a.ptx_size},
            {"nvrtcGetPTX", (void **)&a.ptx},
            {"nvrtcGetCUBINSize", (void **)&a.cubin_size},
            {"nvrtcGetCUBIN", (void **)&a.cubin},
        };
        for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
            rc = dynlib_sym(lib, syms[i].name, syms[i].slot, st);
            if (rc)
                goto out;
        }
        int major = 0, minor = 0;
        a.version(&major, &minor);
        snprintf(a.version_str, sizeof a.version_str, "%d.%d", major, minor);
        preload_builtins(lib, major, minor);
        nvrtc = a;
        nvrtc_ready = 1;
    }
    *api = &nvrtc;
out:
    pthread_mutex_unlock(&nvrtc_mu);
    return rc;
}

/* ---- targets ------------------------------------------------------------ */

/* "sm_" + 2 or 3 digits + optional 'a' or 'f'. */
static int arch_syntax(const char *arch, int *number)
{
    if (strncmp(arch, "sm_", 3) != 0)
        return 0;
    const char *p = arch + 3;
    int digits = 0, v = 0;
    while (isdigit((unsigned char)*p) && digits < 4) {
        v = v * 10 + (*p - '0');
        p++;
        digits++;
    }
    if (digits < 2 || digits > 3)
        return 0;
    if (*p == 'a' || *p == 'f')
        p++;
    if (*p)
        return 0;
    *number = v;
    return 1;
}

int jit_check_arch(const char *arch, jit_lang lang, ks_status *st)
{
    int number = 0;
    if (!arch || !*arch)
        return ks_fail(st, KS_EINVAL, 0, "no target arch given (for example sm_90a)");
    if (!arch_syntax(arch, &number))
        return ks_fail(st, KS_EREJECT, 0,
                       "'%.40s' is not a GPU target name (expected sm_XY with an optional a or f suffix, e.g. sm_90a)",
                       arch);
    ptxas_facts f;
    ks_status pst;
    ks_clear(&pst);
    int have_ptxas = ptxas_get_facts(&f, &pst) == KS_OK;
    if (lang == JIT_LANG_PTX && !have_ptxas) {
        *st = pst;
        return pst.code;
    }
    if (have_ptxas && f.targets) {
        char key[48];
        snprintf(key, sizeof key, " %s ", arch);
        int known = strstr(f.targets, key) != NULL;
        if (!known) {
            /* Trim the list for the message: it is long. */
            size_t tl = strlen(f.targets);
            int show = tl > 2 ? (int)(tl - 2 > 300 ? 300 : tl - 2) : 0;
            ks_fail(st, KS_EREJECT, 0, "ptxas %s does not know the target %s; it knows: %.*s",
                    f.version, arch, show, f.targets + 1);
            free(f.targets);
            return st->code;
        }
    }
    if (have_ptxas)
        free(f.targets);
    if (lang == JIT_LANG_CUDA) {
        const nvrtc_api *api;
        int rc = nvrtc_load(&api, st);
        if (rc)
            return rc;
        int n = 0;
        if (api->num_archs(&n) != 0 || n <= 0 || n > 256)
            return KS_OK;       /* cannot ask: let the compile decide */
        int list[256];
        if (api->archs(list) != 0)
            return KS_OK;
        char known[600];
        size_t kl = 0;
        known[0] = '\0';
        for (int i = 0; i < n; i++) {
            if (list[i] == number)
                return KS_OK;
            if (kl < sizeof known - 8)
                kl += (size_t)snprintf(known + kl, sizeof known - kl, " sm_%d", list[i]);
        }
        return ks_fail(st, KS_EREJECT, 0, "NVRTC %s does not know the target %s; it knows:%s",
                       api->version_str, arch, known);
    }
    return KS_OK;
}

/* ---- ptxas -v log ------------------------------------------------------- */

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

static log_fn *log_find(log_info *li, const char *name, size_t len, int create)
{
    for (int i = 0; i < li->n; i++)
        if (strlen(li->fn[i].name) == len && memcmp(li->fn[i].name, name, len) == 0)
            return &li->fn[i];
    if (!create || len >= sizeof li->fn[0].name)
        return NULL;
    if (li->n == li->cap) {
        int nc = li->cap ? li->cap * 2 : 8;
        log_fn *nf = realloc(li->fn, sizeof *nf * (size_t)nc);
        if (!nf)
            return NULL;
        li->fn = nf;
        li->cap = nc;
    }
    log_fn *f = &li->fn[li->n++];
    memset(f, 0, sizeof *f);
    memcpy(f->name, name, len);
    f->name[len] = '\0';
    return f;
}

/* The number right before the text at p (e.g. "4000" in "4000 bytes smem"). */
static long number_before(const char *line_start, const char *p)
{
    while (p > line_start && p[-1] == ' ')
        p--;
    const char *e = p;
    while (p > line_start && isdigit((unsigned char)p[-1]))
        p--;
    return p == e ? -1 : strtol(p, NULL, 10);
}

/* Reads the ptxas -v lines (also in NVRTC's log):
 *   ptxas info : Compiling entry function 'k' for 'sm_90a'
 *   ptxas info : Function properties for k
 *       416 bytes stack frame, 532 bytes spill stores, 532 bytes spill loads
 *   ptxas info : Used 24 registers, used 1 barriers, ..., 4000 bytes smem */
static void parse_log(const char *log, log_info *li)
{
    char entry[256] = "", props[256] = "";
    for (const char *p = log; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char line[1024];
        if (len >= sizeof line)
            len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = '\0';
        const char *q;
        if ((q = strstr(line, "Compiling entry function '")) != NULL) {
            q += strlen("Compiling entry function '");
            size_t n = strcspn(q, "'");
            snprintf(entry, sizeof entry, "%.*s", (int)(n < 255 ? n : 255), q);
        } else if ((q = strstr(line, "Function properties for ")) != NULL) {
            q += strlen("Function properties for ");
            size_t n = strcspn(q, " \r");
            snprintf(props, sizeof props, "%.*s", (int)(n < 255 ? n : 255), q);
        } else if ((q = strstr(line, "bytes stack frame")) != NULL && props[0]) {
            log_fn *f = log_find(li, props, strlen(props), 1);
            if (f) {
                const char *a = strstr(line, "bytes spill stores");
                const char *b = strstr(line, "bytes spill loads");
                f->frame = number_before(line, q);
                f->spill_st = a ? number_before(line, a) : -1;
                f->spill_ld = b ? number_before(line, b) : -1;
                f->has_spills = 1;
            }
        } else if ((q = strstr(line, "Used ")) != NULL && strstr(line, " registers") && entry[0]) {
            log_fn *f = log_find(li, entry, strlen(entry), 1);
            if (f) {
                f->registers = (int)strtol(q + 5, NULL, 10);
                f->has_regs = 1;
                const char *s = strstr(line, "bytes smem");
                f->smem = s ? number_before(line, s) : 0;
            }
        }
        p = e ? e + 1 : NULL;
    }
}

/* ---- results ------------------------------------------------------------ */

void jit_result_free(jit_result *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nkernels; i++)
        free(r->kernels[i].name);
    free(r->kernels);
    free(r->cubin);
    free(r->ptx);
    free(r->log);
    free(r);
}

static jit_result *result_new(const jit_request *req, jit_lang lang)
{
    jit_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->lang = lang;
    snprintf(r->arch, sizeof r->arch, "%s", req->arch);
    r->log = dupn("", 0);
    if (!r->log) {
        free(r);
        return NULL;
    }
    return r;
}

static void set_log(jit_result *r, char *log, size_t len)
{
    free(r->log);
    r->log = log;
    r->log_size = len;
}

/* Fills kernels, census and cubin hash from r->cubin, r->ptx and r->log,
 * and applies the cubin checks. */
static int finish_result(jit_result *r, ks_status *st)
{
    cubin_info ci;
    int rc = cubin_parse(r->cubin, r->cubin_size, &ci, st);
    if (rc)
        return rc;
    rc = check_cubin(&ci, st);
    if (rc) {
        cubin_free(&ci);
        return rc;
    }
    log_info li = {0};
    parse_log(r->log, &li);
    r->kernels = calloc((size_t)ci.nkernels, sizeof *r->kernels);
    if (!r->kernels) {
        cubin_free(&ci);
        free(li.fn);
        return ks_fail(st, KS_ENOMEM, 0, "out of memory");
    }
    for (int i = 0; i < ci.nkernels; i++) {
        const cubin_kernel *ck = &ci.kernels[i];
        jit_kernel *k = &r->kernels[r->nkernels];
        log_fn *lf = log_find(&li, ck->name, strlen(ck->name), 0);
        if (!(k->name = strdup(ck->name))) {
            rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
            break;
        }
        r->nkernels++;
        /* The cubin is authoritative; the log fills what it lacks. */
        k->registers = ck->registers >= 0 ? ck->registers : (lf && lf->has_regs ? lf->registers : -1);
        k->spill_stores = lf && lf->has_spills ? lf->spill_st : -1;
        k->spill_loads = lf && lf->has_spills ? lf->spill_ld : -1;
        k->local_bytes = ck->frame_bytes ? ck->frame_bytes : (lf && lf->has_spills ? lf->frame : 0);
        k->shared_cubin = ck->shared_section;
        /* The section includes the system's 1 KiB reservation on sm_90+;
         * the kernel's own figure is what ptxas reports. Without a log
         * line, subtract the reservation when the cubin declares it. */
        if (lf && lf->has_regs)
            k->shared_static = lf->smem;
        else if (ci.reserved_smem && ck->shared_section >= 1024)
            k->shared_static = ck->shared_section - 1024;
        else
            k->shared_static = ck->shared_section;
        k->sass_instructions = ck->text_bytes / 16;
        k->param_bytes = ck->param_bytes;
        k->tcgen05 = ck->tcgen05;
        k->setmaxnreg = ck->reg_reconfig;
        k->mbarriers = ck->mbarriers;
    }
    free(li.fn);
    cubin_free(&ci);
    if (rc)
        return rc;
    if (r->ptx)
        ptx_census_count(r->ptx, r->ptx_size, &r->census);
    sha256_hex(r->cubin, r->cubin_size, r->cubin_hash);
    return KS_OK;
}

/* ---- content hash ------------------------------------------------------- */

static void hash_field(sha256_ctx *c, const void *p, size_t n)
{
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)((uint64_t)n >> (8 * i));
    sha256_update(c, len, 8);
    sha256_update(c, p, n);
}

static void hash_str(sha256_ctx *c, const char *s) { hash_field(c, s, strlen(s)); }

static void content_hash(const jit_request *req, jit_lang lang, const char *compiler,
                         char out[SHA256_HEX_LEN + 1])
{
    sha256_ctx c;
    unsigned char d[SHA256_DIGEST_LEN];
    sha256_init(&c);
    /* 2: CUDA programs named under /proc/klab-candidate with a #line, and
     * klab's standard headers, whose texts are part of what compiles. */
    hash_str(&c, "klab-jit 2");
    hash_str(&c, jit_lang_name(lang));
    if (lang == JIT_LANG_CUDA) {
        const char *const *names, *const *texts;
        int n;
        std_headers(&names, &texts, &n);
        for (int i = 0; i < n; i++) {
            hash_str(&c, names[i]);
            hash_str(&c, texts[i]);
        }
    }
    hash_str(&c, req->arch);
    hash_str(&c, compiler);
    hash_str(&c, req->lineinfo ? "lineinfo" : "no-lineinfo");
    for (int i = 0; i < req->noptions; i++)
        hash_str(&c, req->options[i]);
    hash_str(&c, "source");
    hash_field(&c, req->source, req->source_len);
    sha256_final(&c, d);
    sha256_tohex(d, out);
}

/* ---- disk cache --------------------------------------------------------- */

int jit_cache_dir(char *buf, size_t n, ks_status *st)
{
    const char *d = getenv("KLAB_CACHE_DIR");
    if (d && *d) {
        snprintf(buf, n, "%s", d);
        return KS_OK;
    }
    d = getenv("XDG_CACHE_HOME");
    if (d && *d) {
        snprintf(buf, n, "%s/klab/jit", d);
        return KS_OK;
    }
    d = getenv("HOME");
    if (d && *d) {
        snprintf(buf, n, "%s/.cache/klab/jit", d);
        return KS_OK;
    }
    if (n)
        buf[0] = '\0';
    return ks_fail(st, KS_ENOTFOUND, 0, "no cache directory: set KLAB_CACHE_DIR, XDG_CACHE_HOME or HOME");
}

static int entry_path(const char *dir, const char *hash, char *buf, size_t n)
{
    return snprintf(buf, n, "%s/%s.kjit", dir, hash) < (int)n ? 0 : -1;
}

/* Reads a whole regular file (up to limit bytes). NULL on any failure. */
static unsigned char *read_file(const char *path, size_t limit, size_t *len)
{
    char *b = NULL;
    ks_status ignored;
    if (fs_read(path, limit, 0, &b, len, &ignored) != KS_OK)
        return NULL;
    return (unsigned char *)b;
}

/* Entry layout: a text header, the blobs, then the SHA-256 (hex + '\n') of
 * everything before it, so that a truncated or damaged file is detected:
 *   KLABJIT 1\n lang L\n arch A\n compiler C\n compile_ms M\n
 *   cubin N <sha>\n ptx N\n log N\n \n <cubin><ptx><log> <sha256>\n */
static int cache_load(const char *path, const jit_request *req, jit_lang lang,
                      const char *compiler, jit_result **out)
{
    size_t n = 0;
    unsigned char *b = read_file(path, JIT_MAX_ENTRY, &n);
    if (!b)
        return -1;
    jit_result *r = NULL;
    int ok = 0;
    size_t ml = strlen(JIT_CACHE_MAGIC);
    if (n < ml + SHA256_HEX_LEN + 1 || memcmp(b, JIT_CACHE_MAGIC, ml) != 0)
        goto done;
    char want[SHA256_HEX_LEN + 1];
    sha256_hex(b, n - SHA256_HEX_LEN - 1, want);
    if (memcmp(b + n - SHA256_HEX_LEN - 1, want, SHA256_HEX_LEN) != 0 || b[n - 1] != '\n')
        goto done;
    char *hdr_end = strstr((char *)b, "\n\n");
    if (!hdr_end)
        goto done;
    *hdr_end = '\0';
    char l[16] = "", a[32] = "", comp[96] = "", how[96] = "", chash[SHA256_HEX_LEN + 1] = "";
    double ms = 0;
    size_t ncubin = 0, nptx = 0, nlog = 0;
    if (sscanf((char *)b + ml,
               "lang %15s\narch %31s\ncompiler %95[^\n]\nconfinement %95[^\n]\ncompile_ms %lf\ncubin %zu %64s\n"
               "ptx %zu\nlog %zu",
               l, a, comp, how, &ms, &ncubin, chash, &nptx, &nlog) != 9)
        goto done;
    if (strcmp(l, jit_lang_name(lang)) != 0 || strcmp(a, req->arch) != 0 || strcmp(comp, compiler) != 0)
        goto done;
    size_t body = (size_t)(hdr_end + 2 - (char *)b);
    size_t avail = n - SHA256_HEX_LEN - 1 - body;
    if (ncubin > avail || nptx > avail - ncubin || nlog != avail - ncubin - nptx || ncubin == 0)
        goto done;
    r = result_new(req, lang);
    if (!r)
        goto done;
    const unsigned char *p = b + body;
    r->cubin = malloc(ncubin);
    r->ptx = nptx ? dupn((const char *)p + ncubin, nptx) : NULL;
    char *log = dupn((const char *)p + ncubin + nptx, nlog);
    if (!r->cubin || (nptx && !r->ptx) || !log) {
        free(log);
        goto done;
    }
    memcpy(r->cubin, p, ncubin);
    r->cubin_size = ncubin;
    r->ptx_size = nptx;
    set_log(r, log, nlog);
    r->compile_ms = ms;
    snprintf(r->compiler, sizeof r->compiler, "%s", compiler);
    snprintf(r->confinement, sizeof r->confinement, "%s", how);
    ks_status st;
    ks_clear(&st);
    if (finish_result(r, &st) != KS_OK || strcmp(r->cubin_hash, chash) != 0)
        goto done;
    r->cached = 1;
    ok = 1;
done:
    free(b);
    if (!ok) {
        jit_result_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes r under its hash; failures are reported in r->cache_note only. */
static void cache_store(const char *dir, jit_result *r)
{
    char path[1100], tmp[1100];
    ks_status mst;
    if (fs_mkdirs(dir, &mst) != KS_OK) {
        snprintf(r->cache_note, sizeof r->cache_note, "%.190s", mst.msg);
        return;
    }
    if (entry_path(dir, r->hash, path, sizeof path) != 0 ||
        snprintf(tmp, sizeof tmp, "%s/.%.16s.XXXXXX", dir, r->hash) >= (int)sizeof tmp) {
        snprintf(r->cache_note, sizeof r->cache_note, "cache path too long");
        return;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(r->cache_note, sizeof r->cache_note, "cannot write cache entry: %s", strerror(errno));
        return;
    }
    char hdr[512];
    int hl = snprintf(hdr, sizeof hdr,
                      JIT_CACHE_MAGIC "lang %s\narch %s\ncompiler %s\nconfinement %s\ncompile_ms %.3f\n"
                      "cubin %zu %s\nptx %zu\nlog %zu\n\n",
                      jit_lang_name(r->lang), r->arch, r->compiler, r->confinement[0] ? r->confinement : "-",
                      r->compile_ms, r->cubin_size,
                      r->cubin_hash, r->ptx ? r->ptx_size : 0, r->log_size);
    sha256_ctx c;
    unsigned char d[SHA256_DIGEST_LEN];
    char hex[SHA256_HEX_LEN + 2];
    sha256_init(&c);
    sha256_update(&c, hdr, (size_t)hl);
    sha256_update(&c, r->cubin, r->cubin_size);
    if (r->ptx)
        sha256_update(&c, r->ptx, r->ptx_size);
    sha256_update(&c, r->log, r->log_size);
    sha256_final(&c, d);
    sha256_tohex(d, hex);
    hex[SHA256_HEX_LEN] = '\n';
    int bad = write_all(fd, hdr, (size_t)hl) || write_all(fd, r->cubin, r->cubin_size) ||
              (r->ptx && write_all(fd, r->ptx, r->ptx_size)) || write_all(fd, r->log, r->log_size) ||
              write_all(fd, hex, SHA256_HEX_LEN + 1);
    if (close(fd) != 0)
        bad = 1;
    /* rename() is atomic: a reader sees the old entry, no entry, or the
     * complete new one, even when two processes store the same hash. */
    if (bad || rename(tmp, path) != 0) {
        snprintf(r->cache_note, sizeof r->cache_note, "cannot write cache entry: %s", strerror(errno));
        unlink(tmp);
    }
}

/* ---- compilers ---------------------------------------------------------- */

/* Options the caller may not pass: they would change the target, the
 * output, or make the code relocatable. */
static int check_options(const jit_request *req, jit_lang lang, ks_status *st)
{
    static const char *const ptxas_bad[] = {"-c", "--compile-only", "-o", "--output-file", "-arch",
                                            "--gpu-name", "-e", "--entry", "--input-as-string", NULL};
    static const char *const nvrtc_bad[] = {"-arch", "--gpu-architecture", "-rdc",
                                            "--relocatable-device-code", "-dc", "--device-c",
                                            "-dlto", "--dlink-time-opt", "-ewp",
                                            "--extensible-whole-program", NULL};
    const char *const *bad = lang == JIT_LANG_PTX ? ptxas_bad : nvrtc_bad;
    for (int i = 0; i < req->noptions; i++) {
        const char *o = req->options[i];
        if (!o)
            return ks_fail(st, KS_EINVAL, 0, "option %d is NULL", i + 1);
        for (int k = 0; bad[k]; k++) {
            size_t n = strlen(bad[k]);
            if (strncmp(o, bad[k], n) == 0 && (o[n] == '\0' || o[n] == '=' || !strcmp(bad[k], "-arch")))
                return ks_fail(st, KS_EINVAL, 0,
                               "compiler option %.60s is not allowed (klab sets the target and compiles whole-program)",
                               o);
        }
    }
    return KS_OK;
}

/* A file name for ptxas messages: the basename of req->name made safe. */
static void input_name(const jit_request *req, char *buf, size_t n)
{
    const char *s = req->name && *req->name ? req->name : "kernel.ptx";
    const char *slash = strrchr(s, '/');
    if (slash)
        s = slash + 1;
    size_t k = 0;
    for (; *s && k + 5 < n && k < 64; s++)
        buf[k++] = (isalnum((unsigned char)*s) || *s == '.' || *s == '_' || *s == '-') ? *s : '_';
    buf[k] = '\0';
    if (k == 0 || buf[0] == '.')
        snprintf(buf, n, "kernel.ptx");
    else if (!ends_with(buf, ".ptx"))
        snprintf(buf + k, n - k, ".ptx");
}

static int write_file(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int bad = write_all(fd, p, n);
    if (close(fd) != 0)
        bad = -1;
    return bad;
}

/* ptxas names its input by the file it was given, a copy in a temporary
 * folder: "ptxas kernel.ptx, line 5; error : ...". Names the user's file
 * instead, in r->log. */
static void ptxas_names_file(jit_result *r, const char *in, const char *name)
{
    char from[200], to[1200];
    snprintf(from, sizeof from, "ptxas %s, line ", in);
    snprintf(to, sizeof to, "ptxas %s, line ", name);
    size_t fl = strlen(from), tl = strlen(to), count = 0;
    if (!strcmp(from, to) || !r->log)
        return;
    for (const char *p = r->log; (p = strstr(p, from)) != NULL; p += fl)
        count++;
    if (!count)
        return;
    size_t nlen = r->log_size + count * tl - count * fl;
    char *b = malloc(nlen + 1), *w = b;
    if (!b)
        return;
    const char *p = r->log, *q;
    while ((q = strstr(p, from)) != NULL) {
        memcpy(w, p, (size_t)(q - p));
        w += q - p;
        memcpy(w, to, tl);
        w += tl;
        p = q + fl;
    }
    size_t rest = r->log_size - (size_t)(p - r->log);
    memcpy(w, p, rest);
    w[rest] = '\0';
    set_log(r, b, (size_t)(w + rest - b));
}

/* ptxas -arch=<arch> -v [-lineinfo] [options] in.ptx -o out.cubin, whole
 * program, in a private temporary directory. */
static int compile_ptx(const jit_request *req, jit_result *r, ks_status *st)
{
    char ptxas[1024], dir[1024], in[128], cubin_path[1200], archopt[64];
    jit_ptxas_path(ptxas, sizeof ptxas);
    if (fs_mkdtemp("klab-ptxas-", dir, sizeof dir, st))
        return st->code;
    input_name(req, in, sizeof in);
    char inpath[1200];
    snprintf(inpath, sizeof inpath, "%s/%s", dir, in);
    snprintf(cubin_path, sizeof cubin_path, "%s/out.cubin", dir);
    int rc = KS_OK;
    if (write_file(inpath, req->source, req->source_len) != 0) {
        rc = ks_fail(st, KS_EIO, errno, "cannot write %s: %s", inpath, strerror(errno));
        goto out;
    }
    snprintf(archopt, sizeof archopt, "-arch=%s", req->arch);
    const char **argv = calloc((size_t)req->noptions + 10, sizeof *argv);
    if (!argv) {
        rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
        goto out;
    }
    int a = 0;
    argv[a++] = ptxas;
    argv[a++] = archopt;
    argv[a++] = "-v";
    if (req->lineinfo)
        argv[a++] = "-lineinfo";
    for (int i = 0; i < req->noptions; i++)
        argv[a++] = req->options[i];
    argv[a++] = in;             /* relative: messages name the file, not our temp dir */
    argv[a++] = "-o";
    argv[a++] = "out.cubin";
    argv[a] = NULL;
    spawn_result sr;
    double t0 = (clock_now() * 1e3);
    rc = run_capture(argv, dir, req->timeout_ms, req, &sr, st);
    r->compile_ms = (clock_now() * 1e3) - t0;
    free(argv);
    if (rc)
        goto out;
    set_log(r, sr.out, sr.out_len);
    sr.out = NULL;
    ptxas_names_file(r, in, display_name(req));
    if (!sr.exited || sr.exit_code != 0) {
        char first[300];
        first_error(r->log, first, sizeof first);
        if ((rc = limit_failure(req, &sr, st)))
            ;
        else if (!sr.exited)
            rc = ks_fail(st, KS_ECHILD, sr.signal, "ptxas was killed by signal %d: %s", sr.signal, first);
        else if (strstr(r->log, "is not defined for option 'gpu-name'"))
            rc = ks_fail(st, KS_EREJECT, 0, "ptxas does not know the target %s: %s", req->arch, first);
        else
            rc = ks_fail(st, KS_ECOMPILE, sr.exit_code, "%s: ptxas failed for %s: %s", display_name(req),
                         req->arch, first);
        spawn_result_free(&sr);
        goto out;
    }
    spawn_result_free(&sr);
    size_t n = 0;
    r->cubin = read_file(cubin_path, JIT_MAX_ENTRY, &n);
    if (!r->cubin) {
        rc = ks_fail(st, KS_EIO, errno, "ptxas succeeded but wrote no cubin");
        goto out;
    }
    r->cubin_size = n;
    r->ptx = dupn(req->source, req->source_len);
    r->ptx_size = req->source_len;
    if (!r->ptx)
        rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
out:
    {
        ks_status ignored;
        (void)fs_remove_tree(dir, &ignored);
    }
    return rc;
}

/* Maps NVRTC log text that means "klab refuses this" to a rejection. */
static int nvrtc_reject_reason(const char *log, const char *arch, ks_status *st)
{
    char first[300];
    first_error(log, first, sizeof first);
    if (strstr(log, "invalid value for --gpu-architecture") || strstr(log, "invalid value for -arch"))
        return ks_fail(st, KS_EREJECT, 0, "NVRTC does not know the target %s: %s", arch, first);
    /* A device-side launch however it is spelled: the device runtime's
     * entry points (cudaGetParameterBuffer, __cudaCDP2*, cudaLaunchDevice)
     * appear in the log as the names ptxas could not resolve. */
    for (const char *p = log; *p;) {
        if (!ident_char(*p)) {
            p++;
            continue;
        }
        const char *q = p;
        while (*q && ident_char(*q))
            q++;
        if (device_launch_name(p, (size_t)(q - p)))
            return ks_fail(st, KS_EREJECT, 0,
                           "device-side kernel launch (dynamic parallelism) is not allowed: the code uses %.*s",
                           (int)(q - p > 80 ? 80 : q - p), p);
        if (device_heap_name(p, (size_t)(q - p)) && strstr(log, "nresolved"))
            return ks_fail(st, KS_EREJECT, 0, HEAP_REASON, (int)(q - p), p);
        p = q;
    }
    if (strstr(log, "relocatable device code") || strstr(log, "-rdc=true") ||
        strstr(log, "dynamic parallelism") || strstr(log, "device-side kernel launch"))
        return ks_fail(st, KS_EREJECT, 0,
                       "device-side kernel launch (dynamic parallelism) or relocatable code is not allowed: %s",
                       first);
    return KS_OK;
}

/* NVRTC writes locations as "NAME(LINE): "; klab's messages, like every
 * compiler's, read "NAME:LINE: ". Rewrites them in r->log in place (the
 * text only gets shorter). */
static void name_locations(jit_result *r, const char *name)
{
    size_t nl = strlen(name);
    if (!nl || !r->log)
        return;
    char *w = r->log;
    const char *p = r->log, *end = r->log + r->log_size;
    while (p < end) {
        if ((size_t)(end - p) > nl + 2 && memcmp(p, name, nl) == 0 && p[nl] == '(' &&
            isdigit((unsigned char)p[nl + 1])) {
            const char *q = p + nl + 1;
            while (q < end && isdigit((unsigned char)*q))
                q++;
            if (q < end && *q == ')') {
                memmove(w, p, nl);
                w += nl;
                *w++ = ':';
                size_t dl = (size_t)(q - (p + nl + 1));
                memmove(w, p + nl + 1, dl);
                w += dl;
                p = q + 1;
                continue;
            }
        }
        *w++ = *p++;
    }
    *w = '\0';
    r->log_size = (size_t)(w - r->log);
}

/* Keeps at most max bytes of *text: its head and tail around a line
 * "[... N bytes cut]", cut at line ends where there are some. */
static void bound_text(char **text, size_t *len, size_t max)
{
    if (!*text || *len <= max)
        return;
    size_t head = max / 2, tail = max / 2 - 64;
    const char *s = *text;
    for (size_t k = head; k > head / 2; k--)
        if (s[k - 1] == '\n') {
            head = k;
            break;
        }
    size_t tstart = *len - tail;
    for (size_t k = tstart; k < *len && k < tstart + tail / 2; k++)
        if (s[k] == '\n') {
            tstart = k + 1;
            break;
        }
    char mark[64];
    int ml = snprintf(mark, sizeof mark, "[... %zu bytes cut]\n", tstart - head);
    size_t nlen = head + (size_t)ml + (*len - tstart);
    char *b = malloc(nlen + 1);
    if (!b)
        return;
    memcpy(b, s, head);
    memcpy(b + head, mark, (size_t)ml);
    memcpy(b + head + (size_t)ml, s + tstart, *len - tstart);
    b[nlen] = '\0';
    free(*text);
    *text = b;
    *len = nlen;
}

/* NVRTC searches the folder of the program's name for includes, and each
 * header's own folder for that header's quoted includes (the toolkit's
 * crt/mma.h includes "mma.hpp"). The program is therefore named inside a
 * folder that cannot exist, procfs allowing no new entries, so nothing
 * beside a candidate is ever read in place of a toolkit header, while the
 * toolkit's headers find their neighbours; a #line directive makes
 * messages and line info name the user's file. ("-no-source-include"
 * would keep both folders out, and mma.h and cooperative_groups.h with
 * them.) */
#define CUDA_PROGRAM_NAME "/proc/klab-candidate/kernel.cu"

/* The user's file name as a #line directive can carry it: quotes,
 * backslashes and control characters become '?'. */
static void line_name(const char *name, char *out, size_t n)
{
    size_t k = 0;
    for (const char *p = name; *p && k + 1 < n; p++) {
        unsigned char c = (unsigned char)*p;
        out[k++] = (c < 0x20 || c == 0x7f || c == '"' || c == '\\') ? '?' : (char)c;
    }
    out[k] = '\0';
}

/* A new copy of log with every `from` replaced by `to`; NULL when out of
 * memory. */
static char *replace_all(const char *log, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), count = 0;
    for (const char *p = strstr(log, from); p; p = strstr(p + fl, from))
        count++;
    char *out = malloc(strlen(log) + count * (tl > fl ? tl - fl : 0) + 1);
    if (!out)
        return NULL;
    char *w = out;
    for (const char *p = log, *q; *p; p = q + fl) {
        q = strstr(p, from);
        if (!q) {
            strcpy(w, p);
            return out;
        }
        memcpy(w, p, (size_t)(q - p));
        w += q - p;
        memcpy(w, to, tl);
        w += tl;
    }
    *w = '\0';
    return out;
}

/* A candidate's #include of anything but a toolkit header fails to open (the
 * compiler reads only the toolkit): said as klab's rule, with the
 * directive as the user wrote it, when the first error is such an include
 * in the user's own file. 1 when st was filled. */
static int include_refusal(const jit_request *req, const char *name, const char *log, ks_status *st)
{
    char first[600];
    first_error(log, first, sizeof first);
    size_t nl = strlen(name);
    const char *what = strstr(first, ": catastrophic error: cannot open source file \"");
    if (!what || strncmp(first, name, nl) != 0 || first[nl] != ':')
        return 0;
    long line = strtol(first + nl + 1, NULL, 10);
    const char *file = what + strlen(": catastrophic error: cannot open source file \"");
    size_t fl = strcspn(file, "\"");
    /* The directive on that line of the user's source (#line 1 maps it). */
    const char *p = req->source, *end = req->source + req->source_len;
    for (long k = 1; k < line && p < end; k++) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        p = e ? e + 1 : end;
    }
    const char *e = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
    size_t len = (size_t)((e ? e : end) - p);
    while (len && isspace((unsigned char)*p)) {
        p++;
        len--;
    }
    while (len && isspace((unsigned char)p[len - 1]))
        len--;
    int written = line > 0 && len > 1 && (p[0] == '#' || p[0] == '%') && memmem(p, len, file, fl) != NULL;
    if (written)
        return ks_fail(st, KS_ECOMPILE, 0,
                       "%s:%ld: %.*s is not allowed: candidates may include only the CUDA toolkit's headers", name,
                       line, (int)(len > 200 ? 200 : len), p);
    return ks_fail(st, KS_ECOMPILE, 0,
                   "%s:%ld: #include \"%.*s\" is not allowed: candidates may include only the CUDA toolkit's headers",
                   name, line, (int)(fl > 200 ? 200 : fl), file);
}

static int compile_cuda(const jit_request *req, const nvrtc_api *api, jit_result *r, ks_status *st)
{
    char archopt[64], inc[TOOLKIT_MAX_ROOTS][4100];
    snprintf(archopt, sizeof archopt, "-arch=%s", req->arch);
    /* The folders the include check allows, and no other. */
    char roots[TOOLKIT_MAX_ROOTS][4096];
    int nroots;
    toolkit_roots(roots, &nroots);
    if (nroots == 0) {
        snprintf(roots[0], sizeof roots[0], "%s/include", dynlib_cuda_home());
        nroots = 1;
    }
    const char **opts = calloc((size_t)req->noptions + 8 + TOOLKIT_MAX_ROOTS, sizeof *opts);
    char name[1024];
    line_name(cuda_name(req), name, sizeof name);
    size_t head = strlen(name) + 16;
    char *src = malloc(head + req->source_len + 1);
    if (src) {
        int hl = snprintf(src, head, "#line 1 \"%s\"\n", name);
        memcpy(src + hl, req->source, req->source_len);
        src[hl + req->source_len] = '\0';
    }
    int rc = KS_OK;
    void *prog = NULL;
    if (!opts || !src) {
        rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
        goto out;
    }
    int n = 0;
    opts[n++] = archopt;
    if (req->lineinfo)
        opts[n++] = "-lineinfo";
    opts[n++] = "--ptxas-options=-v";
    opts[n++] = "-std=c++17";
    opts[n++] = "-default-device";
    for (int i = 0; i < nroots; i++) {
        snprintf(inc[i], sizeof inc[i], "-I%.4090s", roots[i]);
        opts[n++] = inc[i];
    }
    for (int i = 0; i < req->noptions; i++)
        opts[n++] = req->options[i];
    double t0 = (clock_now() * 1e3);
    const char *const *hnames, *const *htexts;
    int nh;
    std_headers(&hnames, &htexts, &nh);
    int res = api->create(&prog, src, CUDA_PROGRAM_NAME, nh, htexts, hnames);
    if (res != 0) {
        rc = ks_fail(st, KS_ECOMPILE, res, "nvrtcCreateProgram: %s", api->error_string(res));
        goto out;
    }
    int cres = api->compile(prog, n, opts);
    size_t ls = 0;
    if (api->log_size(prog, &ls) == 0 && ls > 0) {
        char *log = malloc(ls + 1);
        if (log && api->log(prog, log) == 0) {
            log[ls] = '\0';
            /* Its summary line names the program: the user's file instead. */
            char *named = replace_all(log, CUDA_PROGRAM_NAME, name);
            if (named) {
                free(log);
                log = named;
            }
            set_log(r, log, strlen(log));
            name_locations(r, name);
        } else
            free(log);
    }
    if (cres != 0) {
        r->compile_ms = (clock_now() * 1e3) - t0;
        if (nvrtc_reject_reason(r->log, req->arch, st))
            rc = st->code;
        else if (include_refusal(req, name, r->log, st))
            rc = st->code;
        else {
            char first[300];
            first_error(r->log, first, sizeof first);
            rc = ks_fail(st, KS_ECOMPILE, cres, "%s: NVRTC failed for %s: %s", display_name(req),
                         req->arch, first);
        }
        goto out;
    }
    size_t ps = 0, cs = 0;
    if (api->ptx_size(prog, &ps) != 0 || ps == 0 || !(r->ptx = malloc(ps + 1)) ||
        api->ptx(prog, r->ptx) != 0) {
        rc = ks_fail(st, KS_ECOMPILE, 0, "NVRTC produced no PTX");
        goto out;
    }
    r->ptx[ps] = '\0';
    r->ptx_size = strlen(r->ptx);
    if (api->cubin_size(prog, &cs) != 0 || cs == 0 || !(r->cubin = malloc(cs)) ||
        api->cubin(prog, (char *)r->cubin) != 0) {
        rc = ks_fail(st, KS_ECOMPILE, 0, "NVRTC produced no cubin for %s", req->arch);
        goto out;
    }
    r->cubin_size = cs;
    r->compile_ms = (clock_now() * 1e3) - t0;
out:
    if (prog)
        api->destroy(&prog);
    free(opts);
    free(src);
    return rc;
}

/* ---- NVRTC under limits ------------------------------------------------- */

/* NVRTC is a library: to hold it to memory and CPU limits, candidate code
 * is compiled in a forked child (spawn_opts.fn) rather than by exec'ing a
 * compile mode of klab, so that the C library needs no program of its own
 * and the child inherits the NVRTC already loaded. The child writes its
 * outcome to its standard output: "KJC1", rc, code, sub, compile_ms, then
 * the message, log, PTX and cubin, each as a 64-bit length and bytes. */
#define JIT_CHILD_LOG_MAX ((size_t)4 << 20)

typedef struct cuda_child {
    const jit_request *req;
    const nvrtc_api *api;
} cuda_child;

static int put_blob(int fd, const void *p, size_t n)
{
    uint64_t len = n;
    return write_all(fd, &len, sizeof len) || (n && write_all(fd, p, n));
}

/* Holds this process (the NVRTC child) to reading the toolkit's include
 * folders, and to writing no file and running no program, before candidate
 * code reaches the compiler; says how in `how`. The open guard holds on
 * every kernel; Landlock holds the same folders a second time where the
 * kernel has it (NVRTC's own folder and ld.so's cache too: the loader may
 * look there, though nvrtc_load has loaded NVRTC's builtins already). With
 * neither, candidate code compiles only when KLAB_ALLOW_UNCONFINED_COMPILER=1
 * says so. */
static int confine_compiler(char *how, size_t n, ks_status *st)
{
    char roots[TOOLKIT_MAX_ROOTS][4096], lib_dir[DYNLIB_PATH_MAX] = "";
    int nroots;
    toolkit_roots(roots, &nroots);
    if (nroots == 0)
        return ks_fail(st, KS_ENOTFOUND, 0, "the CUDA toolkit's include folder %s/include is missing",
                       dynlib_cuda_home());
    /* Relative names then resolve inside the toolkit. */
    if (chdir(roots[0]) != 0)
        return ks_fail(st, KS_EIO, errno, "chdir %s: %s", roots[0], strerror(errno));
    const char *paths[TOOLKIT_MAX_ROOTS + 4];
    int np = 0;
    for (int i = 0; i < nroots; i++)
        paths[np++] = roots[i];
    ks_status ignored;
    ks_clear(&ignored);
    const dynlib *lib = dynlib_get(&dynlib_nvrtc, &ignored);
    if (lib && lib->path[0]) {
        snprintf(lib_dir, sizeof lib_dir, "%s", lib->path);
        char *slash = strrchr(lib_dir, '/');
        if (slash && slash != lib_dir) {
            *slash = '\0';
            paths[np++] = lib_dir;
        }
    }
    paths[np++] = "/etc/ld.so.cache";
    ks_status ll;
    ks_clear(&ll);
    int landlock = landlock_read_beneath(paths, np, &ll) == KS_OK;
    seccomp_rule rules[48];
    ks_status sc;
    ks_clear(&sc);
    int filtered = seccomp_refuse(rules, seccomp_read_only_rules(rules), &sc) == KS_OK;
    ks_status og;
    ks_clear(&og);
    int guarded = open_guard_bound() && open_guard_arm((const char *const *)paths, nroots, &og) == KS_OK;
    if (!guarded && !og.msg[0])
        snprintf(og.msg, sizeof og.msg, "the executable does not export the guard's functions");
    char why[300];
    snprintf(why, sizeof why, "open guard: %.130s; Landlock: %.130s", og.msg, ll.msg);
    return jit_confinement(guarded, landlock, filtered, why, how, n, st);
}

int jit_confinement(int guard, int landlock, int seccomp, const char *why, char *how, size_t n, ks_status *st)
{
    how[0] = '\0';
    if (guard)
        snprintf(how + strlen(how), n - strlen(how), "open guard");
    if (landlock)
        snprintf(how + strlen(how), n - strlen(how), "%sLandlock", how[0] ? ", " : "");
    if (seccomp)
        snprintf(how + strlen(how), n - strlen(how), "%sseccomp", how[0] ? ", " : "");
    if (guard || landlock)
        return KS_OK;
    const char *opt = getenv("KLAB_ALLOW_UNCONFINED_COMPILER");
    if (opt && !strcmp(opt, "1")) {
        snprintf(how, n, "unconfined (KLAB_ALLOW_UNCONFINED_COMPILER=1)");
        return KS_OK;
    }
    return ks_fail(st, KS_EUNSUPPORTED, 0,
                   "the compiler cannot be held to the toolkit here (%s): set KLAB_ALLOW_UNCONFINED_COMPILER=1 to "
                   "compile candidate CUDA C++ unconfined, which each result records", why ? why : "");
}

static int cuda_child_main(void *arg)
{
    const cuda_child *c = arg;
    ks_status st;
    ks_clear(&st);
    jit_result *r = result_new(c->req, JIT_LANG_CUDA);
    if (!r)
        return 3;
    int32_t head[3];
    head[0] = confine_compiler(r->confinement, sizeof r->confinement, &st);
    if (head[0] == KS_OK)
        head[0] = compile_cuda(c->req, c->api, r, &st);
    head[1] = st.code;
    head[2] = st.sub;
    bound_text(&r->log, &r->log_size, JIT_CHILD_LOG_MAX);
    int bad = write_all(1, "KJC2", 4) || write_all(1, head, sizeof head) ||
              write_all(1, &r->compile_ms, sizeof r->compile_ms) || put_blob(1, st.msg, strlen(st.msg)) ||
              put_blob(1, r->confinement, strlen(r->confinement)) || put_blob(1, r->log, r->log_size) ||
              put_blob(1, r->ptx, r->ptx ? r->ptx_size : 0) ||
              put_blob(1, r->cubin, r->cubin ? r->cubin_size : 0);
    return bad ? 2 : 0;
}

/* Reads one blob of the child's answer into a new NUL-terminated buffer. */
static int get_blob(const char **p, const char *end, char **out, size_t *len)
{
    uint64_t n;
    if ((size_t)(end - *p) < sizeof n)
        return -1;
    memcpy(&n, *p, sizeof n);
    *p += sizeof n;
    if (n > (uint64_t)(end - *p))
        return -1;
    *out = malloc((size_t)n + 1);
    if (!*out)
        return -1;
    memcpy(*out, *p, (size_t)n);
    (*out)[n] = '\0';
    *len = (size_t)n;
    *p += n;
    return 0;
}

#if !defined(__SANITIZE_ADDRESS__)
/* This process's virtual size in bytes (0 when unknown). */
static long long virtual_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    unsigned long long pages = 0;
    if (f) {
        if (fscanf(f, "%llu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return (long long)pages * (long long)sysconf(_SC_PAGESIZE);
}
#endif

static int compile_cuda_limited(const jit_request *req, const nvrtc_api *api, jit_result *r, ks_status *st)
{
    cuda_child c = {req, api};
    spawn_opts o;
    memset(&o, 0, sizeof o);
    o.fn = cuda_child_main;
    o.fn_arg = &c;
    o.out = SPAWN_CAPTURE;
    o.err = SPAWN_CAPTURE; /* how it died, when it did */
    o.capture_max = JIT_MAX_ENTRY;
    int ms = req->timeout_ms > 0 ? req->timeout_ms : JIT_DEFAULT_TIMEOUT_MS;
    o.timeout_s = ms / 1000.0;
    o.limit_cpu = req->limit_cpu_s;
    if (req->limit_memory > 0) {
        /* The child starts as a copy of this process: its address space may
         * grow by the limit. In a sanitizer build, whose allocator reserves
         * terabytes up front and fails its own way at such a limit, the
         * watch on resident growth alone holds it. */
        o.watch_rss = req->limit_memory;
#if !defined(__SANITIZE_ADDRESS__)
        long long vsz = virtual_bytes();
        o.limit_as = vsz > 0 ? vsz + req->limit_memory : 0;
#endif
    }
    spawn_result sr;
    double t0 = (clock_now() * 1e3);
    int rc = spawn_run(&o, &sr, st);
    if (rc)
        return rc;
    if (sr.end == SPAWN_TIMED_OUT) {
        spawn_result_free(&sr);
        return ks_fail(st, KS_ETIMEOUT, 0, "%s: the compiler took longer than %d ms and was killed",
                       display_name(req), ms);
    }
    if ((rc = limit_failure(req, &sr, st))) {
        spawn_result_free(&sr);
        return rc;
    }
    const char *p = sr.out, *end = sr.out + sr.out_len;
    int32_t head[3];
    char *msg = NULL, *how = NULL, *log = NULL, *ptx = NULL, *cubin = NULL;
    size_t msgl = 0, howl = 0, logl = 0, ptxl = 0, cubl = 0;
    int ok = sr.exited && sr.exit_code == 0 && sr.out_len >= 4 + sizeof head + sizeof r->compile_ms &&
             memcmp(p, "KJC2", 4) == 0;
    if (ok) {
        p += 4;
        memcpy(head, p, sizeof head);
        p += sizeof head;
        memcpy(&r->compile_ms, p, sizeof r->compile_ms);
        p += sizeof r->compile_ms;
        ok = get_blob(&p, end, &msg, &msgl) == 0 && get_blob(&p, end, &how, &howl) == 0 &&
             get_blob(&p, end, &log, &logl) == 0 && get_blob(&p, end, &ptx, &ptxl) == 0 &&
             get_blob(&p, end, &cubin, &cubl) == 0;
    }
    if (how) {
        snprintf(r->confinement, sizeof r->confinement, "%s", how);
        free(how);
    }
    if (!ok) {
        char died[128];
        spawn_describe(&sr, o.timeout_s, died, sizeof died);
        /* Out of address space, NVRTC cannot always say so: it may abort,
         * or its allocator may say so on stderr and exit. */
        int said_memory = sr.err && (strcasestr(sr.err, "memory") || strcasestr(sr.err, "allocat"));
        char lim[64];
        spawn_format_bytes(req->limit_memory, lim, sizeof lim);
        if (req->limit_memory > 0 && said_memory) {
            rc = ks_fail(st, KS_ECOMPILE, sr.signal, "%s: the compiler exceeded its %s memory limit",
                         display_name(req), lim);
        } else if (req->limit_memory > 0 && !sr.exited) {
            rc = ks_fail(st, KS_ECOMPILE, sr.signal,
                         "%s: the compiler %s (it may have exceeded its %s memory limit)", display_name(req), died,
                         lim);
        } else {
            rc = ks_fail(st, KS_ECHILD, sr.signal, "%s: the compiler process %s without a result",
                         display_name(req), died);
        }
        free(msg);
        free(log);
        free(ptx);
        free(cubin);
        spawn_result_free(&sr);
        if (r->compile_ms == 0)
            r->compile_ms = (clock_now() * 1e3) - t0;
        return rc;
    }
    spawn_result_free(&sr);
    set_log(r, log, logl);
    if (ptxl) {
        r->ptx = ptx;
        r->ptx_size = ptxl;
    } else
        free(ptx);
    if (cubl) {
        r->cubin = (unsigned char *)cubin;
        r->cubin_size = cubl;
    } else
        free(cubin);
    rc = head[0];
    if (rc) {
        st->code = head[1];
        st->sub = head[2];
        snprintf(st->msg, sizeof st->msg, "%s", msg);
        if (req->limit_memory > 0 && (strstr(st->msg, "OUT_OF_MEMORY") || strstr(st->msg, "out of memory"))) {
            char lim[64];
            spawn_format_bytes(req->limit_memory, lim, sizeof lim);
            rc = ks_fail(st, KS_ECOMPILE, head[2], "%s: the compiler exceeded its %s memory limit",
                         display_name(req), lim);
        }
    }
    free(msg);
    return rc;
}

/* ---- the entry point ---------------------------------------------------- */

int jit_compile(const jit_request *req, jit_result **out, ks_status *st)
{
    *out = NULL;
    ks_clear(st);
    if (!req || !req->source)
        return ks_fail(st, KS_EINVAL, 0, "jit_compile: no source");
    if (!req->arch || !*req->arch)
        return ks_fail(st, KS_EINVAL, 0, "jit_compile: no target arch (for example sm_90a)");
    if (req->noptions < 0 || (req->noptions > 0 && !req->options))
        return ks_fail(st, KS_EINVAL, 0, "jit_compile: bad option list");
    int rc = check_text(req, st);
    if (rc)
        return rc;
    jit_lang lang = req->lang;
    if (lang != JIT_LANG_PTX && lang != JIT_LANG_CUDA)
        lang = jit_detect_lang(req->name, req->source, req->source_len);
    if ((rc = check_options(req, lang, st)))
        return rc;
    if (lang == JIT_LANG_PTX && (rc = jit_check_ptx(req->source, req->source_len, st)))
        return rc;
    if ((rc = jit_check_arch(req->arch, lang, st)))
        return rc;

    /* Compiler identity for the hash. */
    char compiler[96];
    const nvrtc_api *api = NULL;
    if (lang == JIT_LANG_PTX) {
        char v[64];
        if ((rc = jit_ptxas_version(v, sizeof v, st)))
            return rc;
        snprintf(compiler, sizeof compiler, "ptxas %s", v);
    } else {
        if ((rc = nvrtc_load(&api, st)))
            return rc;
        snprintf(compiler, sizeof compiler, "nvrtc %s", api->version_str);
    }
    char hash[SHA256_HEX_LEN + 1];
    content_hash(req, lang, compiler, hash);

    char dir[1024] = "", path[1100];
    char note[200] = "";
    if (req->use_cache) {
        ks_status cst;
        if (req->cache_dir && *req->cache_dir)
            snprintf(dir, sizeof dir, "%s", req->cache_dir);
        else if (jit_cache_dir(dir, sizeof dir, &cst) != KS_OK)
            snprintf(note, sizeof note, "%.190s", cst.msg);
        if (dir[0] && entry_path(dir, hash, path, sizeof path) == 0) {
            jit_result *hit = NULL;
            if (cache_load(path, req, lang, compiler, &hit) == 0) {
                snprintf(hit->hash, sizeof hit->hash, "%s", hash);
                bound_text(&hit->log, &hit->log_size, JIT_LOG_MAX);
                *out = hit;
                return KS_OK;
            }
        }
    } else {
        snprintf(note, sizeof note, "cache bypassed");
    }

    jit_result *r = result_new(req, lang);
    if (!r)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory");
    snprintf(r->compiler, sizeof r->compiler, "%s", compiler);
    snprintf(r->hash, sizeof r->hash, "%s", hash);
    snprintf(r->cache_note, sizeof r->cache_note, "%s", note);
    if (lang == JIT_LANG_PTX)
        rc = compile_ptx(req, r, st);
    else if (!req->trusted || req->limit_memory > 0 || req->limit_cpu_s > 0)
        rc = compile_cuda_limited(req, api, r, st);
    else {
        snprintf(r->confinement, sizeof r->confinement, "klab's own source");
        rc = compile_cuda(req, api, r, st);
    }
    if (rc == KS_OK && lang == JIT_LANG_CUDA && r->ptx)
        rc = jit_check_ptx(r->ptx, r->ptx_size, st);
    if (rc == KS_OK)
        rc = finish_result(r, st);
    bound_text(&r->log, &r->log_size, JIT_LOG_MAX);
    if (rc == KS_ECOMPILE || rc == KS_EREJECT) {
        *out = r;           /* the caller wants the log */
        return rc;
    }
    if (rc) {
        jit_result_free(r);
        return rc;
    }
    /* What compiled unconfined is not kept: a later, confined run compiles
     * it again. */
    if (req->use_cache && dir[0] && strncmp(r->confinement, "unconfined", 10) != 0)
        cache_store(dir, r);
    *out = r;
    return KS_OK;
}
