/* spawn.c: running another program without a shell (see spawn.h). */
#include "base/clock.h"
#include "proc/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/signals.h"

extern char **environ;

/* How often the memory watch looks, and how long a wait without a pidfd
 * sleeps between looks at the child. */
#define WATCH_PERIOD_MS 10
#define DRAIN_BUDGET ((size_t)1 << 20)

typedef struct capture {
    int fd;               /* parent's read end; -1 when not captured or at EOF */
    char *buf;
    size_t len, cap, max;
    unsigned long long dropped;
} capture;

struct spawn_proc {
    pid_t pid;
    int reaped;
    int wstatus;
    int pidfd;
    capture out, err;
    double t_start;
    long long watch_rss;
    long long base_rss;
    long long peak;
};

/* ---- helpers shared with worker.c ---- */

int spawn_resolve(const char *name, char *buf, size_t size)
{
    if (strchr(name, '/')) {
        if (strlen(name) >= size)
            return ENAMETOOLONG;
        strcpy(buf, name);
        return 0;
    }
    const char *path = getenv("PATH");
    if (path == NULL || *path == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    int err = ENOENT;
    while (*path) {
        const char *end = strchr(path, ':');
        size_t dlen = end ? (size_t)(end - path) : strlen(path);
        const char *dir = dlen ? path : ".";
        size_t dl = dlen ? dlen : 1;
        if (dl + 1 + strlen(name) < size) {
            memcpy(buf, dir, dl);
            buf[dl] = '/';
            strcpy(buf + dl + 1, name);
            if (access(buf, X_OK) == 0)
                return 0;
            if (errno == EACCES)
                err = EACCES;
        }
        path = end ? end + 1 : path + dlen;
    }
    return err;
}

int spawn_max_fd(void)
{
    struct rlimit nof;
    return getrlimit(RLIMIT_NOFILE, &nof) == 0 && nof.rlim_cur != RLIM_INFINITY && nof.rlim_cur < 65536
               ? (int)nof.rlim_cur
               : 65536;
}

void spawn_child_signals(void)
{
    /* Dispositions set to ignore survive exec, and a child that runs a
     * function instead keeps caught ones too: give it defaults. */
    for (int s = 1; s < NSIG; s++) {
        struct sigaction old;
        if (s == SIGKILL || s == SIGSTOP || sigaction(s, NULL, &old) != 0)
            continue;
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
            struct sigaction dfl;
            memset(&dfl, 0, sizeof dfl);
            dfl.sa_handler = SIG_DFL;
            sigaction(s, &dfl, NULL);
        }
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

void spawn_child_close_from(int from, int keep, int max_fd, int exec_follows)
{
#ifdef SYS_close_range
    /* CLOSE_RANGE_CLOEXEC: marks them, so that keep (close-on-exec itself)
     * stays usable until exec. */
    if (exec_follows && syscall(SYS_close_range, (unsigned)from, ~0u, 4u) == 0)
        return;
    if (!exec_follows && keep >= from &&
        (keep == from || syscall(SYS_close_range, (unsigned)from, (unsigned)keep - 1, 0u) == 0) &&
        syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
        return;
#endif
    for (int fd = from; fd < max_fd; fd++)
        if (fd != keep)
            close(fd);
}

int spawn_child_begin(pid_t parent, int check_fd)
{
    spawn_child_signals();
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127); /* the parent died before PDEATHSIG was armed */
    int check = fcntl(check_fd, F_DUPFD_CLOEXEC, 10);
    if (check < 0)
        _exit(127);
    return check;
}

int spawn_child_fds(const int *from, int n)
{
    int tmp[16];
    if (n > 16)
        return EINVAL;
    /* Every end above the targets first, so no dup2 clobbers another. */
    for (int i = 0; i < n; i++)
        if (from[i] >= 0 && (tmp[i] = fcntl(from[i], F_DUPFD_CLOEXEC, 10)) < 0)
            return errno;
    for (int i = 0; i < n; i++)
        if (from[i] >= 0 && dup2(tmp[i], i) < 0)
            return errno;
    return 0;
}

int spawn_child_limit(int resource, long long v)
{
    if (v <= 0)
        return 0;
    struct rlimit rl = {.rlim_cur = (rlim_t)v, .rlim_max = (rlim_t)v};
    /* CPU: SIGXCPU at the soft limit says which limit it was; SIGKILL a
     * second later if the child ignores it. */
    if (resource == RLIMIT_CPU)
        rl.rlim_max = (rlim_t)v + 1;
    struct rlimit cur;
    /* Never try to raise the hard limit (that needs privilege): cap at it. */
    if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY) {
        if (rl.rlim_max > cur.rlim_max)
            rl.rlim_max = cur.rlim_max;
        if (rl.rlim_cur > rl.rlim_max)
            rl.rlim_cur = rl.rlim_max;
    }
    return setrlimit(resource, &rl) != 0 ? errno : 0;
}

void spawn_child_fail(int err_fd, int err)
{
    ssize_t k;
    do
        k = write(err_fd, &err, sizeof err);
    while (k < 0 && errno == EINTR);
    _exit(127);
}

/* ---- sizes and descriptions ---- */

void spawn_format_bytes(long long bytes, char *buf, size_t n)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    long long v = bytes;
    while (u < 4 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    snprintf(buf, n, "%lld %s", v, units[u]);
}

void spawn_describe(const spawn_result *r, double timeout_s, char *buf, size_t n)
{
    if (r->end == SPAWN_TIMED_OUT)
        snprintf(buf, n, "ran past its %g s deadline and was killed", timeout_s);
    else if (r->end == SPAWN_OVER_MEMORY)
        snprintf(buf, n, "grew past its memory limit and was killed");
    else if (r->exited)
        snprintf(buf, n, "exited with status %d", r->exit_code);
    else {
        const char *name = signals_name(r->signal);
        if (name)
            snprintf(buf, n, "was killed by signal %s", name);
        else
            snprintf(buf, n, "was killed by signal %d", r->signal);
    }
}

/* ---- start ---- */

/* Everything the child needs, prepared before fork. */
typedef struct child_plan {
    const char *path;
    char *const *argv;
    char *const *envp;
    const spawn_opts *o;
    pid_t parent;
    int in_fd, out_fd, err_fd; /* become 0, 1, 2 (err_fd == out_fd when joined) */
    int check_fd;              /* exec check: errno goes here; close-on-exec */
    int max_fd;
} child_plan;

static void child_run(const child_plan *p) __attribute__((noreturn));
static void child_run(const child_plan *p)
{
    int check = spawn_child_begin(p->parent, p->check_fd);
    int fds[3] = {p->in_fd, p->out_fd, p->err_fd};
    int e = spawn_child_fds(fds, 3);
    if (e)
        spawn_child_fail(check, e);
    if (p->o->cwd && chdir(p->o->cwd) != 0)
        spawn_child_fail(check, errno);
    spawn_child_close_from(3, check, p->max_fd, p->o->fn == NULL);
    if ((e = spawn_child_limit(RLIMIT_AS, p->o->limit_as)) ||
        (e = spawn_child_limit(RLIMIT_CPU, p->o->limit_cpu)) ||
        (e = spawn_child_limit(RLIMIT_FSIZE, p->o->limit_fsize)))
        spawn_child_fail(check, e);
    if (p->o->fn) {
        /* No exec follows: say "started" by closing the check channel. */
        close(check);
        _exit(p->o->fn(p->o->fn_arg) & 0xff);
    }
    execve(p->path, p->argv, p->envp);
    spawn_child_fail(check, errno);
}

/* Resident bytes of pid (from /proc/PID/statm), or -1. */
static long long resident_bytes(pid_t pid)
{
    char path[64], buf[128];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/statm");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0)
        return -1;
    buf[k] = '\0';
    unsigned long long size = 0, res = 0;
    if (sscanf(buf, "%llu %llu", &size, &res) != 2)
        return -1;
    return (long long)res * (long long)sysconf(_SC_PAGESIZE);
}

static void close_quiet(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static int open_output(spawn_io how, const char *path, int capture_pipe[2], int *child_end, int *parent_end,
                       const char *which, ks_status *st)
{
    *child_end = -1;
    *parent_end = -1;
    switch (how) {
    case SPAWN_CAPTURE:
        if (pipe2(capture_pipe, O_CLOEXEC) != 0)
            return ks_fail(st, KS_EIO, errno, "cannot create a pipe for %s: %s", which, strerror(errno));
        *parent_end = capture_pipe[0];
        *child_end = capture_pipe[1];
        fcntl(*parent_end, F_SETFL, fcntl(*parent_end, F_GETFL) | O_NONBLOCK);
        return KS_OK;
    case SPAWN_NULL:
        *child_end = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (*child_end < 0)
            return ks_fail(st, KS_EIO, errno, "/dev/null: %s", strerror(errno));
        return KS_OK;
    case SPAWN_FILE:
        if (!path || !*path)
            return ks_fail(st, KS_EINVAL, 0, "spawn: %s goes to a file, but no file was named", which);
        *child_end = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (*child_end < 0)
            return ks_fail(st, KS_EIO, errno, "cannot open %s for the %s: %s", path, which, strerror(errno));
        return KS_OK;
    case SPAWN_INHERIT:
        return KS_OK;
    default:
        return ks_fail(st, KS_EINVAL, 0, "spawn: bad destination for %s", which);
    }
}

int spawn_start(const spawn_opts *o, spawn_proc **out, ks_status *st)
{
    *out = NULL;
    if (!o || (!o->fn && (!o->argv || !o->argv[0] || !o->argv[0][0])))
        return ks_fail(st, KS_EINVAL, 0, "spawn: no program given");
    if (o->out == SPAWN_TO_STDOUT)
        return ks_fail(st, KS_EINVAL, 0, "spawn: only stderr can join stdout");
    char path[PATH_MAX] = "";
    if (!o->fn) {
        int err = spawn_resolve(o->argv[0], path, sizeof path);
        if (err)
            return ks_fail(st, err == ENOENT ? KS_ENOTFOUND : KS_EIO, err, "cannot run %s: %s", o->argv[0],
                           err == ENOENT ? "not found" : strerror(err));
    }
    spawn_proc *p = calloc(1, sizeof *p);
    if (!p)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory");
    p->pid = -1;
    p->pidfd = -1;
    p->out.fd = p->err.fd = -1;
    p->out.max = p->err.max = o->capture_max ? o->capture_max : SPAWN_CAPTURE_DEFAULT;
    p->watch_rss = o->watch_rss;

    int rc = KS_OK;
    int in_fd = -1, out_child = -1, err_child = -1, check[2] = {-1, -1};
    int opipe[2] = {-1, -1}, epipe[2] = {-1, -1};
    in_fd = open(o->stdin_path ? o->stdin_path : "/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (in_fd < 0) {
        rc = ks_fail(st, KS_EIO, errno, "cannot open %s for the standard input: %s",
                     o->stdin_path ? o->stdin_path : "/dev/null", strerror(errno));
        goto fail;
    }
    if ((rc = open_output(o->out, o->out_path, opipe, &out_child, &p->out.fd, "standard output", st)))
        goto fail;
    if (o->err == SPAWN_TO_STDOUT) {
        err_child = out_child;
    } else if ((rc = open_output(o->err, o->err_path, epipe, &err_child, &p->err.fd, "standard error", st))) {
        goto fail;
    }
    if (pipe2(check, O_CLOEXEC) != 0) {
        rc = ks_fail(st, KS_EIO, errno, "cannot create a pipe: %s", strerror(errno));
        goto fail;
    }

    child_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.path = path;
    plan.argv = (char *const *)o->argv;
    plan.envp = o->envp ? (char *const *)o->envp : environ;
    plan.o = o;
    plan.parent = getpid();
    plan.in_fd = in_fd;
    plan.out_fd = out_child;
    plan.err_fd = err_child;
    plan.check_fd = check[1];
    plan.max_fd = spawn_max_fd();
    /* A forked child starts as big as this process: the watch counts growth. */
    p->base_rss = o->fn && o->watch_rss > 0 ? resident_bytes(0) : 0;
    if (p->base_rss < 0)
        p->base_rss = 0;

    p->t_start = clock_now();
    pid_t pid = fork();
    if (pid == 0)
        child_run(&plan);
    int ferr = errno;
    close_quiet(&check[1]);
    close_quiet(&in_fd);
    if (err_child != out_child)
        close_quiet(&err_child);
    close_quiet(&out_child);
    if (pid < 0) {
        rc = ks_fail(st, KS_EIO, ferr, "fork: %s", strerror(ferr));
        goto fail;
    }
    setpgid(pid, pid); /* also here: whichever of the two runs first wins */
    p->pid = pid;
#ifdef SYS_pidfd_open
    p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (p->pidfd >= 0)
        fcntl(p->pidfd, F_SETFD, FD_CLOEXEC);
    else
        p->pidfd = -1;
#endif
    /* The exec check: end of stream means exec succeeded (close-on-exec). */
    int child_err = 0;
    ssize_t k;
    do
        k = read(check[0], &child_err, sizeof child_err);
    while (k < 0 && errno == EINTR);
    close_quiet(&check[0]);
    if (k == (ssize_t)sizeof child_err) {
        spawn_free(p);
        return ks_fail(st, child_err == ENOENT || child_err == EACCES ? KS_ENOTFOUND : KS_EIO, child_err,
                       "cannot run %s: %s", path[0] ? path : "the child", strerror(child_err));
    }
    *out = p;
    return KS_OK;
fail:
    close_quiet(&in_fd);
    if (err_child != out_child)
        close_quiet(&err_child);
    close_quiet(&out_child);
    close_quiet(&check[0]);
    close_quiet(&check[1]);
    spawn_free(p);
    return rc;
}

pid_t spawn_pid(const spawn_proc *p) { return p ? p->pid : -1; }

/* ---- wait ---- */

/* Reads what is there now (at most DRAIN_BUDGET bytes). Returns 1 at EOF
 * (the descriptor is closed then). */
static int pump(capture *c)
{
    size_t budget = DRAIN_BUDGET;
    while (c->fd >= 0 && budget > 0) {
        char sink[8192];
        char *dst = sink;
        size_t want = sizeof sink;
        if (c->len < c->max) {
            if (c->len + 1 >= c->cap) {
                size_t nc = c->cap ? c->cap * 2 : 8192;
                if (nc > c->max + 1)
                    nc = c->max + 1;
                char *q = realloc(c->buf, nc);
                if (q) {
                    c->buf = q;
                    c->cap = nc;
                }
            }
            if (c->len + 1 < c->cap) {
                dst = c->buf + c->len;
                want = c->cap - 1 - c->len;
                if (want > c->max - c->len)
                    want = c->max - c->len;
            }
        }
        ssize_t k = read(c->fd, dst, want);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            close_quiet(&c->fd);
            return 1;
        }
        if (k == 0) {
            close_quiet(&c->fd);
            return 1;
        }
        if (dst == sink)
            c->dropped += (unsigned long long)k;
        else
            c->len += (size_t)k;
        budget -= (size_t)k < budget ? (size_t)k : budget;
    }
    return c->fd < 0;
}

static void kill_group(spawn_proc *p)
{
    if (p->pid > 0 && !p->reaped) {
        kill(-p->pid, SIGKILL);
        kill(p->pid, SIGKILL); /* in case it never became a group leader */
    }
}

static void reap(spawn_proc *p, int block)
{
    if (p->reaped || p->pid <= 0)
        return;
    int s = 0;
    pid_t k;
    do
        k = waitpid(p->pid, &s, block ? 0 : WNOHANG);
    while (k < 0 && errno == EINTR);
    if (k == p->pid) {
        p->reaped = 1;
        p->wstatus = s;
    } else if (k < 0) {
        /* Someone else reaped it: nothing more to learn. */
        p->reaped = 1;
        p->wstatus = -1;
    }
}

static void take(capture *c, char **buf, size_t *len, unsigned long long *dropped)
{
    *dropped = c->dropped;
    if (!c->buf)
        c->buf = malloc(1);
    if (c->buf)
        c->buf[c->len] = '\0';
    *buf = c->buf;
    *len = c->buf ? c->len : 0;
    c->buf = NULL;
    c->len = c->cap = 0;
}

int spawn_wait(spawn_proc *p, double timeout_s, spawn_result *r, ks_status *st)
{
    memset(r, 0, sizeof *r);
    if (!p || p->pid <= 0)
        return ks_fail(st, KS_EINVAL, 0, "spawn_wait: no process");
    int captured_out = p->out.fd >= 0, captured_err = p->err.fd >= 0;
    double deadline = timeout_s > 0 ? clock_now() + timeout_s : 0;
    spawn_end end = SPAWN_ENDED;
    while (!p->reaped) {
        struct pollfd fds[3];
        int nf = 0;
        if (p->out.fd >= 0)
            fds[nf++] = (struct pollfd){p->out.fd, POLLIN, 0};
        if (p->err.fd >= 0)
            fds[nf++] = (struct pollfd){p->err.fd, POLLIN, 0};
        if (p->pidfd >= 0)
            fds[nf++] = (struct pollfd){p->pidfd, POLLIN, 0};
        int wait_ms = p->pidfd >= 0 && p->watch_rss <= 0 ? 1000 : WATCH_PERIOD_MS;
        if (deadline > 0) {
            double left = deadline - clock_now();
            int lm = left <= 0 ? 0 : (int)(left * 1000.0) + 1;
            if (lm < wait_ms)
                wait_ms = lm;
        }
        if (nf > 0) {
            if (poll(fds, (nfds_t)nf, wait_ms) < 0 && errno != EINTR)
                return ks_fail(st, KS_EIO, errno, "poll: %s", strerror(errno));
        } else {
            struct timespec ts = {0, (long)wait_ms * 1000000L};
            nanosleep(&ts, NULL);
        }
        pump(&p->out);
        pump(&p->err);
        reap(p, 0);
        if (p->reaped)
            break;
        if (p->watch_rss > 0) {
            long long rss = resident_bytes(p->pid);
            long long grown = rss >= 0 ? rss - p->base_rss : 0;
            if (grown > p->peak)
                p->peak = grown;
            if (grown > p->watch_rss) {
                end = SPAWN_OVER_MEMORY;
                kill_group(p);
                reap(p, 1);
                break;
            }
        }
        if (deadline > 0 && clock_now() >= deadline) {
            end = SPAWN_TIMED_OUT;
            kill_group(p);
            reap(p, 1);
            break;
        }
    }
    r->seconds = clock_now() - p->t_start;
    /* What is left in the pipes now; a grandchild may keep them open, so
     * never wait for their end. */
    pump(&p->out);
    pump(&p->err);
    close_quiet(&p->out.fd);
    close_quiet(&p->err.fd);
    r->end = end;
    r->peak_rss_growth = p->peak;
    if (p->wstatus != -1 && WIFEXITED(p->wstatus)) {
        r->exited = 1;
        r->exit_code = WEXITSTATUS(p->wstatus);
    } else if (p->wstatus != -1 && WIFSIGNALED(p->wstatus)) {
        r->signal = WTERMSIG(p->wstatus);
    }
    if (captured_out)
        take(&p->out, &r->out, &r->out_len, &r->out_dropped);
    if (captured_err)
        take(&p->err, &r->err, &r->err_len, &r->err_dropped);
    return KS_OK;
}

void spawn_free(spawn_proc *p)
{
    if (!p)
        return;
    kill_group(p);
    reap(p, 1);
    close_quiet(&p->out.fd);
    close_quiet(&p->err.fd);
    close_quiet(&p->pidfd);
    free(p->out.buf);
    free(p->err.buf);
    free(p);
}

int spawn_run(const spawn_opts *o, spawn_result *r, ks_status *st)
{
    memset(r, 0, sizeof *r);
    spawn_proc *p;
    int rc = spawn_start(o, &p, st);
    if (rc)
        return rc;
    rc = spawn_wait(p, o->timeout_s, r, st);
    spawn_free(p);
    return rc;
}

void spawn_result_free(spawn_result *r)
{
    if (!r)
        return;
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
    r->out_len = r->err_len = 0;
}
