/*
 * jit_ptxas.c: PTX through ptxas, a subprocess in a private temporary
 * folder under the request's limits; what this ptxas is and knows.
 */
#include "compile/jit_ptxas.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "compile/jit_common.h"
#include "compile/jit_log.h"
#include "compile/jit_result.h"
#include "driver/dynlib.h"
#include "proc/spawn.h"

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

void jit_ptxas_path(char *buf, size_t n)
{
    const char *env = getenv("KLAB_PTXAS");
    if (env && *env)
        snprintf(buf, n, "%s", env);
    else
        snprintf(buf, n, "%s/bin/ptxas", dynlib_cuda_home());
}

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
int jit_ptxas_facts(ptxas_facts *f, ks_status *st)
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
    int rc = jit_ptxas_facts(&f, st);
    if (rc)
        return rc;
    snprintf(buf, n, "%s", f.version);
    free(f.targets);
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
    else if (!jit_ends_with(buf, ".ptx"))
        snprintf(buf + k, n - k, ".ptx");
}

static int write_file(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int bad = jit_write_all(fd, p, n);
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
    jit_set_log(r, b, (size_t)(w + rest - b));
}

/* ptxas -arch=<arch> -v [-lineinfo] [options] in.ptx -o out.cubin, whole
 * program, in a private temporary directory. */
int jit_compile_ptx(const jit_request *req, jit_result *r, ks_status *st)
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
    jit_set_log(r, sr.out, sr.out_len);
    sr.out = NULL;
    ptxas_names_file(r, in, jit_display_name(req));
    if (!sr.exited || sr.exit_code != 0) {
        char first[300];
        jit_first_error(r->log, first, sizeof first);
        if ((rc = jit_limit_failure(req, &sr, st)))
            ;
        else if (!sr.exited)
            rc = ks_fail(st, KS_ECHILD, sr.signal, "ptxas was killed by signal %d: %s", sr.signal, first);
        else if (strstr(r->log, "is not defined for option 'gpu-name'"))
            rc = ks_fail(st, KS_EREJECT, 0, "ptxas does not know the target %s: %s", req->arch, first);
        else
            rc = ks_fail(st, KS_ECOMPILE, sr.exit_code, "%s: ptxas failed for %s: %s", jit_display_name(req),
                         req->arch, first);
        spawn_result_free(&sr);
        goto out;
    }
    spawn_result_free(&sr);
    size_t n = 0;
    r->cubin = jit_read_file(cubin_path, JIT_MAX_ENTRY, &n);
    if (!r->cubin) {
        rc = ks_fail(st, KS_EIO, errno, "ptxas succeeded but wrote no cubin");
        goto out;
    }
    r->cubin_size = n;
    r->ptx = jit_dupn(req->source, req->source_len);
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
