/* worker.c: spawning, feeding and burying worker processes (see worker.h). */
#include "base/clock.h"
#include "proc/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/frame.h"
#include "proc/signals.h"
#include "proc/spawn.h"

extern char **environ;

enum {
    W_RUNNING, /* not known to have exited */
    W_EXITED,  /* reaped; its status not yet reported by a call */
    W_DEAD     /* reported dead (or killed by a call): only worker_free is left */
};

struct worker {
    pid_t pid;
    int job_fd; /* our end of the child's stdin socket (non-blocking) */
    int res_fd; /* read end of the child's fd 3 (non-blocking) */
    int out_fd; /* read end of the child's stdout+stderr (non-blocking), -1 at EOF */
    int pid_fd; /* pidfd of the child, or -1 where the kernel has none */
    int state;
    int wstatus; /* waitpid status once reaped; -1 if someone else reaped it */
    char *ring;  /* output ring of cap bytes; total counts every byte ever put */
    char *flat;  /* cap + 1 bytes: the ring made contiguous for worker_output */
    size_t cap;
    unsigned long long total;
    struct worker_callstate *call; /* the job in progress (worker_start .. worker_step), or NULL */
};

/* The most output drained in one go, so that a child that writes without end
 * cannot keep the supervisor from noticing its deadline. */
#define DRAIN_BUDGET ((size_t)1 << 20)

/* ---- output ring ---- */

static void ring_put(worker *w, const char *p, size_t n)
{
    if (n > w->cap) { /* only the last cap bytes can survive */
        w->total += n - w->cap;
        p += n - w->cap;
        n = w->cap;
    }
    while (n > 0) {
        size_t pos = (size_t)(w->total % w->cap);
        size_t k = w->cap - pos < n ? w->cap - pos : n;
        memcpy(w->ring + pos, p, k);
        w->total += k;
        p += k;
        n -= k;
    }
}

/* Copies the ring's bytes written since mark (at most cap) into dst, which
 * has room for cap + 1; returns the length and NUL-terminates. */
static size_t ring_copy(const worker *w, unsigned long long mark, char *dst)
{
    unsigned long long avail = w->total - mark;
    size_t n = avail < w->cap ? (size_t)avail : w->cap;
    unsigned long long start = w->total - n;
    size_t pos = (size_t)(start % w->cap);
    size_t first = w->cap - pos < n ? w->cap - pos : n;
    memcpy(dst, w->ring + pos, first);
    memcpy(dst + first, w->ring, n - first);
    dst[n] = '\0';
    return n;
}

/* Reads whatever the child has written to stdout/stderr, up to DRAIN_BUDGET,
 * without blocking. Closes the pipe at end of stream. */
static void drain_output(worker *w)
{
    char buf[16384];
    size_t budget = DRAIN_BUDGET;
    while (w->out_fd >= 0 && budget > 0) {
        ssize_t k = read(w->out_fd, buf, sizeof buf);
        if (k > 0) {
            ring_put(w, buf, (size_t)k);
            budget -= (size_t)k < budget ? (size_t)k : budget;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        close(w->out_fd); /* end of stream, or an error that will not go away */
        w->out_fd = -1;
    }
}

/* After the group is dead: collect the rest of its output, waiting at most
 * 100 ms for the end of stream (a process outside the group may hold it). */
static void drain_output_final(worker *w)
{
    double until = clock_now() + 0.1;
    while (w->out_fd >= 0) {
        drain_output(w);
        if (w->out_fd < 0)
            break;
        double left = until - clock_now();
        if (left <= 0)
            break;
        struct pollfd pf = {.fd = w->out_fd, .events = POLLIN};
        if (poll(&pf, 1, (int)ceil(left * 1000.0)) == 0)
            break;
    }
}

/* ---- process state ---- */

/* 1 when the child has terminated (it is not reaped here: while the zombie
 * exists its pid, and so its process group id, cannot be reused). */
static int child_exited(worker *w)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int k;
    do
        k = waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOHANG | WNOWAIT);
    while (k < 0 && errno == EINTR);
    if (k < 0)
        return 1; /* ECHILD: reaped by someone else; it is gone either way */
    return si.si_pid != 0;
}

/* SIGKILLs the child's whole process group (stragglers included), then reaps
 * the child. The status is the child's own exit status when it had already
 * terminated. Leaves the worker W_EXITED. */
static void kill_group_and_reap(worker *w)
{
    if (w->state != W_RUNNING)
        return;
    kill(-w->pid, SIGKILL);
    kill(w->pid, SIGKILL); /* in case it never became a group leader */
    int status = 0;
    pid_t k;
    do
        k = waitpid(w->pid, &status, 0);
    while (k < 0 && errno == EINTR);
    w->wstatus = k == w->pid ? status : -1;
    w->state = W_EXITED;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void close_channels(worker *w)
{
    close_fd(&w->job_fd);
    close_fd(&w->res_fd);
    close_fd(&w->pid_fd);
}

/* Turns the reaped status into a CRASHED or EXITED outcome; the worker is dead. */
static int report_death(worker *w, worker_reply *r, ks_status *st, const char *when)
{
    w->state = W_DEAD;
    close_channels(w);
    drain_output_final(w);
    if (w->wstatus != -1 && WIFSIGNALED(w->wstatus)) {
        int sig = WTERMSIG(w->wstatus);
        const char *name = signals_name(sig);
        r->outcome = WORKER_CRASHED;
        r->signal = sig;
        return ks_fail(st, KS_ECHILD, sig, "worker %d was killed by signal %d (SIG%s) %s",
                       (int)w->pid, sig, name ? name : "?", when);
    }
    r->outcome = WORKER_EXITED;
    if (w->wstatus == -1) {
        r->exit_code = -1;
        return ks_fail(st, KS_ECHILD, -1, "worker %d ended (status unknown) %s", (int)w->pid,
                       when);
    }
    r->exit_code = WEXITSTATUS(w->wstatus);
    return ks_fail(st, KS_ECHILD, r->exit_code, "worker %d exited with status %d %s",
                   (int)w->pid, r->exit_code, when);
}

/* Kills the worker for a reason of the supervisor's own (timeout, protocol). */
static void kill_worker(worker *w)
{
    kill_group_and_reap(w);
    w->state = W_DEAD;
    close_channels(w);
    drain_output_final(w);
}

/* ---- spawn ---- */

/* Workers are not started through spawn_start: they need channels of their
 * own (a job socket on 0, a result pipe on 3, stdout and stderr into one
 * ring) and a pidfd-driven call loop. The child-side steps they share with
 * every other program klab starts are spawn.h's helpers. */

/* Everything the child needs, prepared before fork so that the child only
 * makes async-signal-safe calls between fork and exec. */
typedef struct child_plan {
    const char *path;
    char *const *argv;
    char *const *envp;
    pid_t parent;
    int job_fd, res_fd, out_fd, err_fd; /* the child's ends */
    int maxfd;                          /* for the close loop without close_range */
    const worker_opts *o;
} child_plan;

static void set_limit(int err_fd, int resource, long long v)
{
    int e = spawn_child_limit(resource, v);
    if (e)
        spawn_child_fail(err_fd, e);
}

/* The child between fork and exec: only async-signal-safe calls. */
static void child_exec(const child_plan *p) __attribute__((noreturn));
static void child_exec(const child_plan *p)
{
    int err_fd = spawn_child_begin(p->parent, p->err_fd);
    int fds[4] = {p->job_fd, p->out_fd, p->out_fd, p->res_fd};
    int e = spawn_child_fds(fds, 4);
    if (e)
        spawn_child_fail(err_fd, e);

    /* Nothing but 0-3 crosses exec (err_fd is close-on-exec already). */
    spawn_child_close_from(4, err_fd, p->maxfd, 1);

    if (p->o) {
        set_limit(err_fd, RLIMIT_AS, p->o->rlimit_as);
        set_limit(err_fd, RLIMIT_CPU, p->o->rlimit_cpu);
        set_limit(err_fd, RLIMIT_NOFILE, p->o->rlimit_nofile);
    }
    execve(p->path, p->argv, p->envp);
    spawn_child_fail(err_fd, errno);
    _exit(127);
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int worker_spawn(const char *const argv[], const worker_opts *o, worker **out, ks_status *st)
{
    if (out)
        *out = NULL;
    if (out == NULL || argv == NULL || argv[0] == NULL || argv[0][0] == '\0')
        return ks_fail(st, KS_EINVAL, 0, "worker_spawn: no program given");

    char path[PATH_MAX];
    const char *prog = o && o->path ? o->path : argv[0];
    int err = spawn_resolve(prog, path, sizeof path);
    if (err)
        return ks_fail(st, err == ENOENT ? KS_ENOTFOUND : KS_EIO, err,
                       "worker program '%s' not found: %s", prog, strerror(err));

    worker *w = calloc(1, sizeof *w);
    if (w == NULL)
        return ks_fail(st, KS_ENOMEM, 0, "worker_spawn: out of memory");
    w->cap = o && o->output_cap ? o->output_cap : WORKER_OUTPUT_CAP_DEFAULT;
    w->ring = malloc(w->cap);
    w->flat = malloc(w->cap + 1);
    w->job_fd = w->res_fd = w->out_fd = w->pid_fd = -1;
    w->pid = -1;
    w->state = W_DEAD;
    if (w->ring == NULL || w->flat == NULL) {
        worker_free(w);
        return ks_fail(st, KS_ENOMEM, 0, "worker_spawn: out of memory");
    }

    int sv[2] = {-1, -1}, res[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
        pipe2(res, O_CLOEXEC) != 0 || pipe2(outp, O_CLOEXEC) != 0 ||
        pipe2(errp, O_CLOEXEC) != 0) {
        err = errno;
        int fds[] = {sv[0], sv[1], res[0], res[1], outp[0], outp[1], errp[0], errp[1]};
        for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        worker_free(w);
        return ks_fail(st, KS_EIO, err, "worker_spawn: cannot create pipes: %s", strerror(err));
    }

    child_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.path = path;
    plan.argv = (char *const *)argv;
    plan.envp = o && o->envp ? (char *const *)o->envp : environ;
    plan.parent = getpid();
    plan.job_fd = sv[1];
    plan.res_fd = res[1];
    plan.out_fd = outp[1];
    plan.err_fd = errp[1];
    plan.maxfd = spawn_max_fd();
    plan.o = o;

    pid_t pid = fork();
    if (pid == 0)
        child_exec(&plan);
    err = errno;
    close(sv[1]);
    close(res[1]);
    close(outp[1]);
    close(errp[1]);
    if (pid < 0) {
        close(sv[0]);
        close(res[0]);
        close(outp[0]);
        close(errp[0]);
        worker_free(w);
        return ks_fail(st, KS_EIO, err, "worker_spawn: fork: %s", strerror(err));
    }
    setpgid(pid, pid); /* also here: whichever of the two runs first wins */
    w->pid = pid;
    w->state = W_RUNNING;
    w->job_fd = sv[0];
    w->res_fd = res[0];
    w->out_fd = outp[0];

    /* The exec check: end of stream means exec succeeded (close-on-exec). */
    int child_err = 0;
    ssize_t k;
    do
        k = read(errp[0], &child_err, sizeof child_err);
    while (k < 0 && errno == EINTR);
    close(errp[0]);
    if (k == (ssize_t)sizeof child_err) {
        kill_group_and_reap(w);
        worker_free(w);
        return ks_fail(st, child_err == ENOENT ? KS_ENOTFOUND : KS_EIO, child_err,
                       "cannot start worker '%s': %s", path, strerror(child_err));
    }

    if (set_nonblock(w->job_fd) != 0 || set_nonblock(w->res_fd) != 0 ||
        set_nonblock(w->out_fd) != 0) {
        err = errno;
        worker_free(w);
        return ks_fail(st, KS_EIO, err, "worker_spawn: fcntl: %s", strerror(err));
    }
#ifdef SYS_pidfd_open
    w->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (w->pid_fd >= 0)
        fcntl(w->pid_fd, F_SETFD, FD_CLOEXEC);
    else
        w->pid_fd = -1; /* older kernel: poll with a short period instead */
#endif
    *out = w;
    return KS_OK;
}

/* ---- call ---- */

/* The state of one reply frame being read without blocking. */
typedef struct reply_reader {
    unsigned char hdr[FRAME_HDR];
    size_t hgot;
    int have_len;
    unsigned char *buf;
    size_t len, got;
    int eof;       /* the result channel reached end of stream */
    int too_long;  /* the header announced more than FRAME_MAX */
    int nomem;
} reply_reader;

static int reply_done(const reply_reader *rr)
{
    return rr->have_len && rr->got == rr->len;
}

/* Reads what is available of one frame, and never beyond its end. */
static void reply_pump(worker *w, reply_reader *rr)
{
    while (!rr->eof && !reply_done(rr) && !rr->too_long && !rr->nomem) {
        ssize_t k;
        if (!rr->have_len)
            k = read(w->res_fd, rr->hdr + rr->hgot, FRAME_HDR - rr->hgot);
        else
            k = read(w->res_fd, rr->buf + rr->got, rr->len - rr->got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (k <= 0) {
            rr->eof = 1;
            return;
        }
        if (rr->have_len) {
            rr->got += (size_t)k;
            continue;
        }
        rr->hgot += (size_t)k;
        if (rr->hgot < FRAME_HDR)
            continue;
        uint32_t n = frame_get_len(rr->hdr);
        if ((size_t)n > FRAME_MAX) {
            rr->too_long = 1;
            rr->len = n;
            return;
        }
        rr->buf = malloc((size_t)n + 1);
        if (rr->buf == NULL) {
            rr->nomem = 1;
            return;
        }
        rr->len = n;
        rr->have_len = 1;
    }
}

int worker_send_stage(int fd, const char *name, double seconds, ks_status *st)
{
    size_t k = name ? strlen(name) : 0;
    if (k == 0 || k >= WORKER_STAGE_NAME_MAX || strpbrk(name, "\n\r") || isnan(seconds))
        return ks_fail(st, KS_EINVAL, 0, "worker_send_stage: a stage needs a one-line name of 1 to %d bytes "
                       "and a number of seconds", WORKER_STAGE_NAME_MAX - 1);
    char buf[WORKER_STAGE_NAME_MAX + 64];
    /* No limit of its own: 0; an infinite one is the same thing. */
    double s = seconds > 0 && isfinite(seconds) ? seconds : 0.0;
    int len = snprintf(buf, sizeof buf, "%s%.17g %s", WORKER_STAGE_TAG, s, name);
    return frame_write(fd, buf, (size_t)len, st);
}

/* A stage notice in a complete frame: 1 and the fields filled, 0 when the
 * frame is not one, -1 when it is a malformed one. */
static int stage_notice(const unsigned char *p, size_t n, char *name, double *seconds)
{
    size_t tl = sizeof WORKER_STAGE_TAG - 1;
    if (n < tl || memcmp(p, WORKER_STAGE_TAG, tl) != 0)
        return 0;
    char buf[WORKER_STAGE_NAME_MAX + 64];
    if (n - tl >= sizeof buf)
        return -1;
    memcpy(buf, p + tl, n - tl);
    buf[n - tl] = '\0';
    char *end;
    double s = strtod(buf, &end);
    if (end == buf || *end != ' ' || !isfinite(s) || s < 0 || end[1] == '\0' ||
        strlen(end + 1) >= WORKER_STAGE_NAME_MAX)
        return -1;
    snprintf(name, WORKER_STAGE_NAME_MAX, "%s", end + 1);
    *seconds = s;
    return 1;
}

/* The call in progress on a worker (worker_start .. worker_step): what is
 * left to send, the reply being read, the deadlines. */
struct worker_callstate {
    unsigned char *job;   /* header and payload, sent as one stream */
    size_t to_send, sent;
    int send_broken;
    double t0, deadline, deadline_seconds, stage_deadline;
    unsigned long long mark;
    reply_reader rr;
    worker_reply r;       /* filled as the call goes (stage), handed over at the end */
};

static void call_free(worker *w)
{
    if (!w->call)
        return;
    free(w->call->job);
    free(w->call->rr.buf);
    worker_reply_clear(&w->call->r);
    free(w->call);
    w->call = NULL;
}

/* Ends the call: moves its reply (with the output of the call) to r. */
static int call_end(worker *w, int rc, worker_reply *r)
{
    struct worker_callstate *c = w->call;
    *r = c->r;
    memset(&c->r, 0, sizeof c->r);
    r->elapsed = clock_now() - c->t0;
    r->output = malloc(w->cap + 1);
    if (r->output)
        r->output_len = ring_copy(w, c->mark, r->output);
    call_free(w);
    return rc;
}

int worker_start(worker *w, const void *job, size_t n, double deadline_seconds, ks_status *st)
{
    if (w == NULL || (n > 0 && job == NULL))
        return ks_fail(st, KS_EINVAL, 0, "worker_start: bad arguments");
    if (n > FRAME_MAX)
        return ks_fail(st, KS_EINVAL, 0, "job of %zu bytes exceeds the %zu-byte frame limit", n,
                       FRAME_MAX);
    if (w->state == W_DEAD)
        return ks_fail(st, KS_EINVAL, 0, "worker %d is dead; spawn a new one", (int)w->pid);
    if (w->call)
        return ks_fail(st, KS_EINVAL, 0, "worker %d is busy with another job", (int)w->pid);
    struct worker_callstate *c = calloc(1, sizeof *c);
    unsigned char *buf = malloc(FRAME_HDR + n);
    if (!c || !buf) {
        free(c);
        free(buf);
        return ks_fail(st, KS_ENOMEM, 0, "worker_start: out of memory");
    }
    frame_put_len(buf, (uint32_t)n);
    if (n)
        memcpy(buf + FRAME_HDR, job, n);
    c->job = buf;
    c->to_send = FRAME_HDR + n;
    c->t0 = clock_now();
    c->deadline_seconds = deadline_seconds;
    c->deadline = deadline_seconds > 0 ? c->t0 + deadline_seconds : -1;
    c->stage_deadline = -1; /* set by a stage notice with a limit */
    drain_output(w); /* output from before this call is not this call's */
    c->mark = w->total;
    w->call = c;
    return KS_OK;
}

int worker_busy(const worker *w)
{
    return w && w->call;
}

/* Makes all the progress possible now. Returns 1 with *rc set when the call
 * ended (outcome in c->r), 0 while it goes on. */
static int call_progress(worker *w, int *rc, ks_status *st)
{
    struct worker_callstate *c = w->call;
    worker_reply *r = &c->r;
    reply_reader *rr = &c->rr;

    if (c->sent == 0) {
        if (w->state == W_RUNNING && child_exited(w))
            kill_group_and_reap(w);
        if (w->state == W_EXITED) {
            *rc = report_death(w, r, st, "before the job was sent");
            return 1;
        }
        /* A frame waiting before we asked for one would be taken as the reply. */
        struct pollfd pf = {.fd = w->res_fd, .events = POLLIN};
        if (!rr->eof && poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN) && !rr->hgot) {
            unsigned char ch;
            ssize_t k = read(w->res_fd, &ch, 1);
            if (k > 0) {
                kill_worker(w);
                r->outcome = WORKER_PROTOCOL;
                *rc = ks_fail(st, KS_EPROTO, 0, "worker %d wrote to its result channel before it was sent a job",
                              (int)w->pid);
                return 1;
            }
            if (k == 0)
                rr->eof = 1;
        }
    }
    for (;;) {
        while (c->sent < c->to_send && !c->send_broken) {
            ssize_t k = send(w->job_fd, c->job + c->sent, c->to_send - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (k > 0) {
                c->sent += (size_t)k;
                continue;
            }
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            c->send_broken = 1; /* the child closed its stdin or died: wait for its exit */
        }
        reply_pump(w, rr);
        drain_output(w);
        if (rr->too_long) {
            kill_worker(w);
            r->outcome = WORKER_PROTOCOL;
            *rc = ks_fail(st, KS_EPROTO, 0, "worker %d sent a frame of %zu bytes (limit %zu): malformed reply",
                          (int)w->pid, rr->len, FRAME_MAX);
            return 1;
        }
        if (rr->nomem) {
            kill_worker(w);
            r->outcome = WORKER_PROTOCOL;
            *rc = ks_fail(st, KS_ENOMEM, 0, "cannot allocate %zu bytes for the reply of worker %d", rr->len,
                          (int)w->pid);
            return 1;
        }
        int exited = child_exited(w);
        if (exited)
            reply_pump(w, rr); /* what it wrote before dying is all in the pipe now */
        if (reply_done(rr)) {
            if (c->sent < c->to_send) {
                kill_worker(w);
                r->outcome = WORKER_PROTOCOL;
                *rc = ks_fail(st, KS_EPROTO, 0, "worker %d replied before it had read the whole job", (int)w->pid);
                return 1;
            }
            int notice = stage_notice(rr->buf, rr->len, r->stage, &r->stage_seconds);
            if (notice < 0) {
                kill_worker(w);
                r->outcome = WORKER_PROTOCOL;
                *rc = ks_fail(st, KS_EPROTO, 0, "worker %d sent a malformed stage notice", (int)w->pid);
                return 1;
            }
            if (notice > 0) {
                c->stage_deadline = r->stage_seconds > 0 ? clock_now() + r->stage_seconds : -1;
                int eof = rr->eof;
                free(rr->buf);
                memset(rr, 0, sizeof *rr);
                rr->eof = eof;
                continue; /* the next frame is read at once: it may already be in the pipe */
            }
            r->outcome = WORKER_FINISHED;
            r->payload = rr->buf;
            r->payload_len = rr->len;
            rr->buf[rr->len] = '\0';
            rr->buf = NULL;
            if (exited)
                kill_group_and_reap(w); /* its death is reported by the next call */
            drain_output(w); /* what it wrote before replying belongs to this call */
            *rc = KS_OK;
            return 1;
        }
        if (exited) {
            kill_group_and_reap(w);
            *rc = report_death(w, r, st, "before replying");
            return 1;
        }
        int by_stage = c->stage_deadline >= 0 && (c->deadline < 0 || c->stage_deadline <= c->deadline);
        double until = by_stage ? c->stage_deadline : c->deadline;
        if (until >= 0 && until - clock_now() <= 0) {
            kill_worker(w);
            r->outcome = WORKER_TIMEOUT;
            r->stage_expired = by_stage;
            if (by_stage)
                *rc = ks_fail(st, KS_ETIMEOUT, 0,
                              "worker %d did not finish stage '%s' within its %.3f s; its process group was killed",
                              (int)w->pid, r->stage, r->stage_seconds);
            else
                *rc = ks_fail(st, KS_ETIMEOUT, 0,
                              "worker %d did not reply within %.3f s%s%s%s; its process group was killed",
                              (int)w->pid, c->deadline_seconds, r->stage[0] ? " (in stage '" : "", r->stage,
                              r->stage[0] ? "')" : "");
            return 1;
        }
        return 0;
    }
}

/* The descriptors a busy worker waits on, and how long until its deadline
 * (ms; -1: none). Returns the number of pollfds filled (at most 4). */
static nfds_t call_pollfds(worker *w, struct pollfd *pf, int *ms)
{
    struct worker_callstate *c = w->call;
    nfds_t nf = 0;
    *ms = -1;
    int by_stage = c->stage_deadline >= 0 && (c->deadline < 0 || c->stage_deadline <= c->deadline);
    double until = by_stage ? c->stage_deadline : c->deadline;
    if (until >= 0) {
        double left = until - clock_now();
        double msd = left <= 0 ? 0 : ceil(left * 1000.0);
        *ms = msd > 1e9 ? 1000000000 : (int)msd; /* poll again later rather than overflow */
    }
    if (w->pid_fd < 0 && (*ms < 0 || *ms > 20))
        *ms = 20; /* no pidfd: look for the child's exit periodically */
    if (c->sent < c->to_send && !c->send_broken)
        pf[nf++] = (struct pollfd){.fd = w->job_fd, .events = POLLOUT};
    if (!c->rr.eof)
        pf[nf++] = (struct pollfd){.fd = w->res_fd, .events = POLLIN};
    if (w->out_fd >= 0)
        pf[nf++] = (struct pollfd){.fd = w->out_fd, .events = POLLIN};
    if (w->pid_fd >= 0)
        pf[nf++] = (struct pollfd){.fd = w->pid_fd, .events = POLLIN};
    return nf;
}

int worker_step(worker *w, worker_reply *r, ks_status *st)
{
    if (r)
        memset(r, 0, sizeof *r);
    if (w == NULL || r == NULL || !w->call)
        return ks_fail(st, KS_EINVAL, 0, "worker_step: no call in progress");
    int rc = KS_OK;
    if (!call_progress(w, &rc, st))
        return KS_EAGAIN;
    return call_end(w, rc, r);
}

int worker_wait(worker *const *ws, size_t n, double timeout_seconds, ks_status *st)
{
    struct pollfd pf[4 * 64];
    if (n > 64)
        return ks_fail(st, KS_EINVAL, 0, "worker_wait: at most 64 workers at once, not %zu", n);
    nfds_t nf = 0;
    int ms = timeout_seconds < 0 ? -1 : (int)ceil(timeout_seconds * 1000.0);
    for (size_t i = 0; i < n; i++) {
        if (!ws[i] || !ws[i]->call)
            continue;
        int wms;
        nf += call_pollfds(ws[i], pf + nf, &wms);
        if (wms >= 0 && (ms < 0 || wms < ms))
            ms = wms;
    }
    if (nf == 0 && ms < 0)
        return ks_fail(st, KS_EINVAL, 0, "worker_wait: no call in progress and no timeout");
    if (poll(pf, nf, ms) < 0 && errno != EINTR)
        return ks_fail(st, KS_EIO, errno, "worker_wait: poll: %s", strerror(errno));
    return KS_OK;
}

int worker_call(worker *w, const void *job, size_t n, double deadline_seconds, worker_reply *r,
                ks_status *st)
{
    if (r)
        memset(r, 0, sizeof *r);
    if (w == NULL || r == NULL)
        return ks_fail(st, KS_EINVAL, 0, "worker_call: bad arguments");
    int rc = worker_start(w, job, n, deadline_seconds, st);
    if (rc)
        return rc;
    for (;;) {
        rc = worker_step(w, r, st);
        if (rc != KS_EAGAIN)
            return rc;
        worker *one[1] = {w};
        ks_status ws;
        if (worker_wait(one, 1, -1, &ws) && ws.code == KS_EIO) {
            kill_worker(w);
            w->call->r.outcome = WORKER_PROTOCOL;
            rc = ks_fail(st, KS_EIO, ws.sub, "worker_call: %s", ws.msg);
            return call_end(w, rc, r);
        }
    }
}

void worker_reply_clear(worker_reply *r)
{
    if (r == NULL)
        return;
    free(r->payload);
    free(r->output);
    memset(r, 0, sizeof *r);
}

int worker_alive(worker *w)
{
    if (w == NULL)
        return 0;
    if (w->state == W_RUNNING && child_exited(w))
        kill_group_and_reap(w);
    return w->state == W_RUNNING;
}

pid_t worker_pid(const worker *w)
{
    return w ? w->pid : -1;
}

const char *worker_output(const worker *w, size_t *len)
{
    size_t n = ring_copy(w, 0, w->flat);
    if (len)
        *len = n;
    return w->flat;
}

int worker_finish(worker *w, double timeout_s, int *exit_code, ks_status *st)
{
    *exit_code = -2;
    if (worker_busy(w))
        return ks_fail(st, KS_EINVAL, 0, "worker_finish: a job is still running");
    close_fd(&w->job_fd);
    double until = clock_now() + timeout_s;
    while (w->state == W_RUNNING && !child_exited(w)) {
        double left = until - clock_now();
        if (left <= 0)
            break;
        drain_output(w);
        struct pollfd pf = {.fd = w->out_fd, .events = POLLIN};
        int ms = (int)ceil((left < 0.05 ? left : 0.05) * 1000.0);
        if (w->out_fd < 0 || poll(&pf, 1, ms) < 0)
            usleep((useconds_t)ms * 1000u);
    }
    int exited = w->state == W_RUNNING && child_exited(w);
    if (w->state == W_RUNNING)
        kill_group_and_reap(w);
    w->state = W_DEAD;
    close_channels(w);
    drain_output_final(w);
    if (exited && w->wstatus != -1)
        *exit_code = WIFEXITED(w->wstatus) ? WEXITSTATUS(w->wstatus) : -1;
    return KS_OK;
}

void worker_free(worker *w)
{
    if (w == NULL)
        return;
    call_free(w);
    close_fd(&w->job_fd); /* end of its input first: a polite worker would stop */
    if (w->state == W_RUNNING)
        kill_group_and_reap(w);
    close_channels(w);
    close_fd(&w->out_fd);
    free(w->ring);
    free(w->flat);
    free(w);
}
