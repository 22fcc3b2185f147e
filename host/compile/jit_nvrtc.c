/*
 * jit_nvrtc.c: CUDA C++ through NVRTC, loaded at run time; candidate code
 * compiles in a forked child held to the toolkit's headers (the open
 * guard, Landlock, seccomp) and to the request's limits.
 */
#include "compile/jit_nvrtc.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "compile/jit_common.h"
#include "compile/jit_log.h"
#include "compile/jit_policy.h"
#include "compile/jit_result.h"
#include "compile/std_headers.h"
#include "driver/dynlib.h"
#include "proc/landlock.h"
#include "proc/open_guard.h"
#include "proc/seccomp.h"

/* ---- NVRTC -------------------------------------------------------------- */

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

int jit_nvrtc_load(const nvrtc_api **api, ks_status *st)
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
        const dynlib_symbol syms[] = {
            {"nvrtcVersion", (void **)&a.version, 0},
            {"nvrtcGetNumSupportedArchs", (void **)&a.num_archs, 0},
            {"nvrtcGetSupportedArchs", (void **)&a.archs, 0},
            {"nvrtcGetErrorString", (void **)&a.error_string, 0},
            {"nvrtcCreateProgram", (void **)&a.create, 0},
            {"nvrtcDestroyProgram", (void **)&a.destroy, 0},
            {"nvrtcCompileProgram", (void **)&a.compile, 0},
            {"nvrtcGetProgramLogSize", (void **)&a.log_size, 0},
            {"nvrtcGetProgramLog", (void **)&a.log, 0},
            {"nvrtcGetPTXSize", (void **)&a.ptx_size, 0},
            {"nvrtcGetPTX", (void **)&a.ptx, 0},
            {"nvrtcGetCUBINSize", (void **)&a.cubin_size, 0},
            {"nvrtcGetCUBIN", (void **)&a.cubin, 0},
        };
        if ((rc = dynlib_bind(lib, syms, DYNLIB_COUNT(syms), st)))
            goto out;
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

/* ---- a candidate's program ----------------------------------------------- */

/* NVRTC's program name, which its messages (and the include check's) use. */
static const char *cuda_name(const jit_request *req)
{
    return req->name && *req->name ? req->name : "kernel.cu";
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
    jit_first_error(log, first, sizeof first);
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
    const char *whose = req->include_dir ? "the CUDA toolkit's and CUTLASS's" : "the CUDA toolkit's";
    if (written)
        return ks_fail(st, KS_ECOMPILE, 0, "%s:%ld: %.*s is not allowed: candidates may include only %s headers",
                       name, line, (int)(len > 200 ? 200 : len), p, whose);
    return ks_fail(st, KS_ECOMPILE, 0,
                   "%s:%ld: #include \"%.*s\" is not allowed: candidates may include only %s headers", name, line,
                   (int)(fl > 200 ? 200 : fl), file, whose);
}

int jit_compile_cuda(const jit_request *req, const nvrtc_api *api, jit_result *r, ks_status *st)
{
    char archopt[64], inc[JIT_MAX_ROOTS][4100];
    snprintf(archopt, sizeof archopt, "-arch=%s", req->arch);
    /* The folders the include check allows, and no other. */
    char roots[JIT_MAX_ROOTS][4096];
    int nroots;
    jit_include_roots(req, roots, &nroots);
    if (nroots == 0) {
        snprintf(roots[0], sizeof roots[0], "%s/include", dynlib_cuda_home());
        nroots = 1;
    }
    const char **opts = calloc((size_t)req->noptions + 8 + JIT_MAX_ROOTS, sizeof *opts);
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
            jit_set_log(r, log, strlen(log));
            name_locations(r, name);
        } else
            free(log);
    }
    if (cres != 0) {
        r->compile_ms = (clock_now() * 1e3) - t0;
        if (jit_nvrtc_reject_reason(r->log, req->arch, st))
            rc = st->code;
        else if (include_refusal(req, name, r->log, st))
            rc = st->code;
        else {
            char first[300];
            jit_first_error(r->log, first, sizeof first);
            rc = ks_fail(st, KS_ECOMPILE, cres, "%s: NVRTC failed for %s: %s", jit_display_name(req),
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
 * outcome to its standard output: "KJC2", rc, code, sub, compile_ms, then
 * the message, the confinement, log, PTX and cubin, each as a 64-bit length and bytes. */
#define JIT_CHILD_LOG_MAX ((size_t)4 << 20)

typedef struct cuda_child {
    const jit_request *req;
    const nvrtc_api *api;
} cuda_child;

static int put_blob(int fd, const void *p, size_t n)
{
    uint64_t len = n;
    return jit_write_all(fd, &len, sizeof len) || (n && jit_write_all(fd, p, n));
}

/* Holds this process (the NVRTC child) to reading the toolkit's include
 * folders, and to writing no file and running no program, before candidate
 * code reaches the compiler; says how in `how`. The open guard holds on
 * every kernel; Landlock holds the same folders a second time where the
 * kernel has it (NVRTC's own folder and ld.so's cache too: the loader may
 * look there, though jit_nvrtc_load has loaded NVRTC's builtins already). With
 * neither, candidate code compiles only when KLAB_ALLOW_UNCONFINED_COMPILER=1
 * says so. */
static int confine_compiler(const jit_request *req, char *how, size_t n, ks_status *st)
{
    char roots[JIT_MAX_ROOTS][4096], lib_dir[DYNLIB_PATH_MAX] = "";
    int nroots;
    jit_include_roots(req, roots, &nroots);
    if (nroots == 0)
        return ks_fail(st, KS_ENOTFOUND, 0, "the CUDA toolkit's include folder %s/include is missing",
                       dynlib_cuda_home());
    /* Relative names then resolve inside the toolkit. */
    if (chdir(roots[0]) != 0)
        return ks_fail(st, KS_EIO, errno, "chdir %s: %s", roots[0], strerror(errno));
    const char *paths[JIT_MAX_ROOTS + 4];
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
    jit_result *r = jit_result_new(c->req, JIT_LANG_CUDA);
    if (!r)
        return 3;
    int32_t head[3];
    head[0] = confine_compiler(c->req, r->confinement, sizeof r->confinement, &st);
    if (head[0] == KS_OK)
        head[0] = jit_compile_cuda(c->req, c->api, r, &st);
    head[1] = st.code;
    head[2] = st.sub;
    jit_bound_text(&r->log, &r->log_size, JIT_CHILD_LOG_MAX);
    int bad = jit_write_all(1, "KJC2", 4) || jit_write_all(1, head, sizeof head) ||
              jit_write_all(1, &r->compile_ms, sizeof r->compile_ms) || put_blob(1, st.msg, strlen(st.msg)) ||
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

int jit_compile_cuda_limited(const jit_request *req, const nvrtc_api *api, jit_result *r, ks_status *st)
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
                       jit_display_name(req), ms);
    }
    if ((rc = jit_limit_failure(req, &sr, st))) {
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
                         jit_display_name(req), lim);
        } else if (req->limit_memory > 0 && !sr.exited) {
            rc = ks_fail(st, KS_ECOMPILE, sr.signal,
                         "%s: the compiler %s (it may have exceeded its %s memory limit)", jit_display_name(req), died,
                         lim);
        } else {
            rc = ks_fail(st, KS_ECHILD, sr.signal, "%s: the compiler process %s without a result",
                         jit_display_name(req), died);
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
    jit_set_log(r, log, logl);
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
                         jit_display_name(req), lim);
        }
    }
    free(msg);
    return rc;
}
