/* pychild.c: a Python language's candidate to PTX in a confined child (see pychild.h). */
#include "lang/pychild.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fs.h"
#include "proc/landlock.h"
#include "proc/seccomp.h"
#include "proc/spawn.h"

extern const char klab_py_pychild[];
extern const char klab_py_triton_child[];
extern const char klab_py_cute_dsl_child[];

static const pychild_lang LANGS[] = {
    {"triton", "Triton", klab_py_triton_child},
    {"cute_dsl", "CuTe DSL", klab_py_cute_dsl_child},
};

#if defined(__x86_64__)
#define SYSTEM_LOADER "/lib64/ld-linux-x86-64.so.2"
#elif defined(__aarch64__)
#define SYSTEM_LOADER "/lib/ld-linux-aarch64.so.1"
#else
#error "pychild.c: name this architecture's program loader"
#endif

#define OPT_IN "KLAB_ALLOW_UNCONFINED_COMPILER"
/* Exit status of a child that could not be confined or started: its
 * stderr holds the reason, from klab, not from the candidate. */
#define CHILD_NOT_STARTED 126
#define MAX_ANSWER ((size_t)64 << 20)

/* Everything the forked child needs, made before fork. */
typedef struct child_plan {
    char python[PATH_MAX];      /* the interpreter, resolved */
    char venv_python[PATH_MAX]; /* its name in the environment (argv[0]) */
    char scratch[PATH_MAX];
    landlock_path paths[8];
    int npaths;
    int landlock;               /* apply Landlock (else opted out) */
    long long limit_memory;
    const char *argv[10];
    const char *envp[4];
} child_plan;

/* Writes "klab: MSG" to stderr and exits with CHILD_NOT_STARTED. */
static void child_fail(const char *what, int err) __attribute__((noreturn));
static void child_fail(const char *what, int err)
{
    char buf[400];
    int n = snprintf(buf, sizeof buf, "klab: %s%s%s\n", what, err ? ": " : "", err ? strerror(err) : "");
    if (n > 0 && write(2, buf, (size_t)n) < 0) {
        /* nothing more to say */
    }
    _exit(CHILD_NOT_STARTED);
}

/* The seccomp rules of the child before exec (see pychild.h); fills out
 * (room for 48) and returns how many. exec_fd: the one descriptor execveat
 * may run; pid: this process, the only one it may signal. */
static int child_rules(seccomp_rule *out, int exec_fd, pid_t pid)
{
    const long refused[] = {
        __NR_execve, __NR_socket, __NR_socketpair, __NR_clone3, __NR_tkill, __NR_ptrace,
        __NR_process_vm_readv, __NR_process_vm_writev, __NR_unshare, __NR_setns, __NR_mount, __NR_umount2,
        __NR_pivot_root, __NR_chroot, __NR_bpf, __NR_perf_event_open, __NR_userfaultfd, __NR_keyctl,
        __NR_add_key, __NR_request_key, __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
        __NR_pidfd_open, __NR_pidfd_getfd, __NR_pidfd_send_signal, __NR_kcmp, __NR_rt_sigqueueinfo,
        __NR_rt_tgsigqueueinfo, __NR_process_madvise,
#ifdef __NR_fork
        __NR_fork,
#endif
#ifdef __NR_vfork
        __NR_vfork,
#endif
    };
    int n = 0;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        /* clone3's arguments live in a structure a filter cannot read:
         * ENOSYS makes the C library fall back to clone, which it can. */
        out[n++] = (seccomp_rule){refused[i], refused[i] == __NR_clone3 ? ENOSYS : EPERM, -1, 0,
                                  SECCOMP_IF_ANY_BIT};
    /* Threads, not processes. */
    out[n++] = (seccomp_rule){__NR_clone, EPERM, 0, CLONE_THREAD, SECCOMP_IF_NO_BIT};
    out[n++] = (seccomp_rule){__NR_kill, EPERM, 0, (unsigned)pid, SECCOMP_IF_NOT_EQUAL};
    out[n++] = (seccomp_rule){__NR_tgkill, EPERM, 0, (unsigned)pid, SECCOMP_IF_NOT_EQUAL};
    out[n++] = (seccomp_rule){__NR_execveat, EPERM, 0, (unsigned)exec_fd, SECCOMP_IF_NOT_EQUAL};
    out[n++] = (seccomp_rule){__NR_execveat, EPERM, 4, AT_EMPTY_PATH, SECCOMP_IF_NO_BIT};
    return n;
}

static int child_main(void *arg)
{
    child_plan *p = arg;
    if (chdir(p->scratch) != 0)
        child_fail("cannot enter the scratch folder", errno);
    /* The interpreter at a descriptor number that the limit set below puts
     * out of reach: once exec closes it, execveat has nothing to run. */
    int fd = open(p->python, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        child_fail("cannot open the interpreter", errno);
    struct rlimit nof;
    if (getrlimit(RLIMIT_NOFILE, &nof) != 0)
        child_fail("getrlimit", errno);
    rlim_t top = nof.rlim_cur > 1024 ? 1024 : nof.rlim_cur;
    if (top < 65)
        child_fail("the descriptor limit is too low for the Python child (at least 65)", 0);
    int exec_fd = fcntl(fd, F_DUPFD_CLOEXEC, (int)top - 1);
    if (exec_fd != (int)top - 1)
        child_fail("cannot place the interpreter's descriptor", errno);
    close(fd);
    struct rlimit fewer = {(rlim_t)exec_fd, (rlim_t)exec_fd};
    if (setrlimit(RLIMIT_NOFILE, &fewer) != 0)
        child_fail("setrlimit(RLIMIT_NOFILE)", errno);
    ks_status st;
    if (p->landlock && landlock_restrict(p->paths, p->npaths, &st) != KS_OK)
        child_fail(st.msg, 0);
    seccomp_rule rules[48];
    if (seccomp_refuse(rules, child_rules(rules, exec_fd, getpid()), &st) != KS_OK)
        child_fail(st.msg, 0);
    /* Set here rather than by spawn: a sanitizer build's allocator, which
     * reserves terabytes, runs up to this point. */
    if (p->limit_memory > 0 && spawn_child_limit(RLIMIT_AS, p->limit_memory) != 0)
        child_fail("setrlimit(RLIMIT_AS)", errno);
    syscall(__NR_execveat, exec_fd, "", (char *const *)p->argv, (char *const *)p->envp, AT_EMPTY_PATH);
    child_fail("cannot run the interpreter", errno);
}

/* The environment's site-packages folder (VENV/lib/pythonX.Y/site-packages). */
static int find_site(const char *venv, char *out, size_t n)
{
    char lib[PATH_MAX];
    snprintf(lib, sizeof lib, "%s/lib", venv);
    DIR *d = opendir(lib);
    if (!d)
        return -1;
    int found = -1;
    struct dirent *e;
    while (found != 0 && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "python3", 7) != 0)
            continue;
        if (snprintf(out, n, "%s/%.64s/site-packages", lib, e->d_name) < (int)n && access(out, R_OK) == 0)
            found = 0;
    }
    closedir(d);
    return found;
}

/* Cuts s at its last '/' (s stays "/" for the root). */
static void cut_last(char *s)
{
    char *slash = strrchr(s, '/');
    if (slash && slash != s)
        *slash = '\0';
    else if (slash)
        slash[1] = '\0';
}

static void hex(const unsigned char *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

const pychild_lang *pychild_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof LANGS / sizeof LANGS[0]; i++)
        if (!strcmp(LANGS[i].name, name))
            return &LANGS[i];
    return NULL;
}

void pychild_outcome_free(pychild_outcome *o)
{
    if (!o)
        return;
    free(o->answer);
    free(o->log);
    o->answer = o->log = NULL;
}

int pychild_run(const pychild_request *req, pychild_outcome *out, ks_status *st)
{
    memset(out, 0, sizeof *out);
    const char *name = req->name && *req->name ? req->name : "kernel.py";
    const char *title = req->lang->title;
    child_plan *p = calloc(1, sizeof *p);
    if (!p)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory");
    int rc = KS_OK;
    char *site = malloc(PATH_MAX), *prefix_lib = malloc(PATH_MAX), *loader = malloc(PATH_MAX),
         *libdir = malloc(PATH_MAX), *filter_hex = NULL, *venv = malloc(PATH_MAX), *program = NULL;
    char home_env[PATH_MAX + 8], tmp_env[PATH_MAX + 8];
    unsigned char *filter = NULL;
    size_t filter_len = 0;
    if (!site || !prefix_lib || !loader || !libdir || !venv) {
        rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
        goto out;
    }
    /* The environment and the Python install it runs on. */
    ks_status ignored;
    if (!req->venv || fs_realpath(req->venv, venv, PATH_MAX, &ignored) != KS_OK ||
        snprintf(p->venv_python, sizeof p->venv_python, "%s/bin/python3", venv) >= (int)sizeof p->venv_python ||
        !realpath(p->venv_python, p->python) || find_site(venv, site, PATH_MAX) != 0) {
        rc = ks_fail(st, KS_EUNSUPPORTED, 0, "%s: no %s environment at %s (run make deps, which installs it)",
                     name, title, req->venv ? req->venv : "(none)");
        goto out;
    }
    snprintf(prefix_lib, PATH_MAX, "%s", p->python);
    cut_last(prefix_lib); /* PREFIX/bin */
    cut_last(prefix_lib); /* PREFIX */
    strncat(prefix_lib, "/lib", PATH_MAX - strlen(prefix_lib) - 1);
    if (!realpath(SYSTEM_LOADER, loader)) {
        rc = ks_fail(st, KS_EUNSUPPORTED, errno, "%s: no program loader at %s", name, SYSTEM_LOADER);
        goto out;
    }
    snprintf(libdir, PATH_MAX, "%s", loader);
    cut_last(libdir);
    /* Landlock, or the explicit opt-in. */
    p->landlock = landlock_abi() > 0;
    const char *opt = getenv(OPT_IN);
    if (!p->landlock && !(opt && !strcmp(opt, "1"))) {
        rc = ks_fail(st, KS_EUNSUPPORTED, 0,
                     "%s: the %s compiler cannot be confined here (this kernel has no Landlock): set "
                     OPT_IN "=1 to compile %s candidates unconfined, which each result records", name, title,
                     title);
        goto out;
    }
    snprintf(out->confinement, sizeof out->confinement, "%s, seccomp",
             p->landlock ? "Landlock" : "unconfined (" OPT_IN "=1)");
    if ((rc = fs_mkdtemp("klab-py-", p->scratch, sizeof p->scratch, st)))
        goto out;
    char file[PATH_MAX + 16];
    snprintf(file, sizeof file, "%s/kernel.py", p->scratch);
    if ((rc = fs_write(file, req->source, req->source_len, st)))
        goto out;
    /* What the child may reach (see pychild.h). */
    const landlock_path paths[] = {
        {venv, LANDLOCK_READ},
        {prefix_lib, LANDLOCK_READ},
        {libdir, LANDLOCK_READ},
        {"/etc/ld.so.cache", LANDLOCK_READ},
        {p->python, LANDLOCK_READ | LANDLOCK_EXEC},
        {loader, LANDLOCK_READ | LANDLOCK_EXEC},
        {p->scratch, LANDLOCK_READ | LANDLOCK_WRITE},
    };
    p->npaths = (int)(sizeof paths / sizeof paths[0]);
    memcpy(p->paths, paths, sizeof paths);
    /* The filter the child's program installs first: no exec at all. */
    const seccomp_rule no_exec[] = {
        {__NR_execve, EPERM, -1, 0, SECCOMP_IF_ANY_BIT},
        {__NR_execveat, EPERM, -1, 0, SECCOMP_IF_ANY_BIT},
    };
    if ((rc = seccomp_program(no_exec, 2, &filter, &filter_len, st)))
        goto out;
    if (!(filter_hex = malloc(2 * filter_len + 1))) {
        rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
        goto out;
    }
    hex(filter, filter_len, filter_hex);
    /* klab's program: what every language shares, then the language's driver. */
    size_t common_len = strlen(klab_py_pychild), driver_len = strlen(req->lang->driver);
    if (!(program = malloc(common_len + driver_len + 2))) {
        rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
        goto out;
    }
    memcpy(program, klab_py_pychild, common_len);
    program[common_len] = '\n';
    memcpy(program + common_len + 1, req->lang->driver, driver_len + 1);
    int k = 0;
    p->argv[k++] = p->venv_python;
    p->argv[k++] = "-I";
    p->argv[k++] = "-S";
    p->argv[k++] = "-B";
    p->argv[k++] = "-c";
    p->argv[k++] = program;
    p->argv[k++] = filter_hex;
    p->argv[k++] = site;
    p->argv[k++] = req->request_json ? req->request_json : "{}";
    p->argv[k] = NULL;
    snprintf(home_env, sizeof home_env, "HOME=%s", p->scratch);
    snprintf(tmp_env, sizeof tmp_env, "TMPDIR=%s", p->scratch);
    p->envp[0] = home_env;
    p->envp[1] = tmp_env;
    p->envp[2] = "LC_ALL=C.UTF-8";
    p->envp[3] = NULL;
    p->limit_memory = req->limit_memory > 0 ? req->limit_memory : PYCHILD_LIMIT_MEMORY;

    spawn_opts o;
    memset(&o, 0, sizeof o);
    o.fn = child_main;
    o.fn_arg = p;
    o.out = SPAWN_CAPTURE;
    o.err = SPAWN_CAPTURE;
    o.capture_max = MAX_ANSWER;
    int cpu = req->limit_cpu_s > 0 ? req->limit_cpu_s : PYCHILD_LIMIT_CPU_S;
    int ms = req->timeout_ms > 0 ? req->timeout_ms : PYCHILD_TIMEOUT_MS;
    o.limit_cpu = cpu;
    o.limit_fsize = PYCHILD_LIMIT_FILE;
    o.watch_rss = p->limit_memory;
    o.timeout_s = ms / 1000.0;
    spawn_result sr;
    if ((rc = spawn_run(&o, &sr, st)))
        goto out;
    out->seconds = sr.seconds;
    out->exit_code = sr.exited ? sr.exit_code : -1;
    out->answer = sr.out;
    out->answer_len = sr.out_len;
    out->log = sr.err;
    out->log_len = sr.err_len;
    sr.out = sr.err = NULL;
    char lim[64];
    spawn_format_bytes(p->limit_memory, lim, sizeof lim);
    if (sr.end == SPAWN_TIMED_OUT)
        rc = ks_fail(st, KS_ETIMEOUT, 0, "%s: the %s compiler took longer than %d s and was killed", name, title,
                     ms / 1000);
    else if (sr.end == SPAWN_OVER_MEMORY)
        rc = ks_fail(st, KS_ECOMPILE, 0, "%s: the %s compiler exceeded its %s memory limit", name, title, lim);
    else if (sr.signal == SIGXCPU || (sr.signal == SIGKILL && sr.seconds >= cpu))
        rc = ks_fail(st, KS_ECOMPILE, 0, "%s: the %s compiler exceeded its %d s CPU limit", name, title, cpu);
    else if (sr.signal == SIGXFSZ) {
        char fl[64];
        spawn_format_bytes(PYCHILD_LIMIT_FILE, fl, sizeof fl);
        rc = ks_fail(st, KS_ECOMPILE, 0, "%s: the %s compiler wrote a file past its %s limit", name, title, fl);
    } else if (sr.exited && sr.exit_code == CHILD_NOT_STARTED && out->log && !strncmp(out->log, "klab: ", 6)) {
        size_t l = strcspn(out->log + 6, "\n");
        rc = ks_fail(st, KS_EUNSUPPORTED, 0, "%s: the %s compiler could not be confined: %.*s", name, title,
                     (int)(l > 300 ? 300 : l), out->log + 6);
    }
    spawn_result_free(&sr);
    if (rc)
        pychild_outcome_free(out);
out:
    if (p->scratch[0]) {
        ks_status rst;
        fs_remove_tree(p->scratch, &rst);
    }
    free(filter);
    free(filter_hex);
    free(program);
    free(site);
    free(prefix_lib);
    free(loader);
    free(libdir);
    free(venv);
    free(p);
    return rc;
}
