/*
 * worker.h: worker processes, supervisor side (Lua-free, never calls CUDA).
 *
 * GPU work runs in a separate, killable process: a sticky CUDA error poisons
 * a process for good and a hung kernel cannot be stopped from inside it
 * (notes/cuda.md section 8). The supervisor fork()s and immediately exec()s
 * the worker program (never anything else after fork, no shell), sends it a
 * job frame and waits for one result frame under a deadline. Whatever goes
 * wrong, exactly one outcome is reported, and after any outcome but
 * WORKER_FINISHED the worker is dead (killed and reaped) and must be replaced.
 *
 * The child's file descriptors:
 *   0 (stdin)   job frames from the supervisor (a Unix stream socket);
 *   3           result frames to the supervisor (a pipe), so that stray prints
 *               on stdout cannot corrupt the protocol;
 *   1, 2        stdout and stderr, both to one pipe that the supervisor drains
 *               into a ring buffer (the last output_cap bytes, 64 KiB by
 *               default) while it waits, so a chatty child never blocks;
 *   nothing else: every other descriptor is closed in the child.
 * The child is the leader of its own process group (whole-group SIGKILL on
 * timeout or failure), gets SIGKILL when the supervisor thread that spawned
 * it dies (PR_SET_PDEATHSIG; so spawn from a long-lived thread), and starts
 * with an empty signal mask and default signal dispositions.
 *
 * Signals: no global signal disposition is changed. Jobs are sent with
 * send(MSG_NOSIGNAL) over the socket, so a worker that died never raises
 * SIGPIPE in the supervisor. Children are reaped with waitpid on their pid
 * only; a SIGCHLD handler that reaps every child (waitpid(-1)) would steal
 * the status and is not supported.
 *
 * A worker handle is used by one thread at a time.
 */
#ifndef KLAB_HOST_WORKER_H
#define KLAB_HOST_WORKER_H

#include <stddef.h>
#include <sys/types.h>

#include "base/status.h"

typedef struct worker worker;

#define WORKER_OUTPUT_CAP_DEFAULT ((size_t)64 << 10)

typedef struct worker_opts {
    /* Program to execute, when it differs from argv[0] (for example
     * "/proc/self/exe": this very program, even if its file was replaced or
     * deleted since it started); NULL runs argv[0]. */
    const char *path;
    /* Full environment of the child ("K=V", NULL-terminated); NULL inherits. */
    const char *const *envp;
    /* Resource limits applied in the child before exec; 0 leaves one as is.
     * RLIMIT_AS in bytes, RLIMIT_CPU in seconds, RLIMIT_NOFILE in descriptors.
     * A value above the current hard limit is lowered to it. Caution: the CUDA
     * driver reserves large virtual address ranges, so a small RLIMIT_AS is
     * likely to make cuInit fail in a GPU worker (not measured here). */
    long long rlimit_as;
    long long rlimit_cpu;
    long long rlimit_nofile;
    /* Size of the output ring buffer; 0 means WORKER_OUTPUT_CAP_DEFAULT. */
    size_t output_cap;
} worker_opts;

typedef enum {
    WORKER_FINISHED = 0, /* a reply frame arrived: payload holds it */
    WORKER_TIMEOUT,      /* the deadline passed: the process group was killed */
    WORKER_CRASHED,      /* killed by a signal before replying: signal says which */
    WORKER_EXITED,       /* exited before replying: exit_code says how */
    WORKER_PROTOCOL      /* a malformed or unsolicited frame: the group was killed */
} worker_outcome;

/* Stages. Before its reply a worker may send stage notices: frames whose
 * payload is WORKER_STAGE_TAG then "<seconds> <name>" (worker_send_stage
 * writes one). From a notice on, the call's deadline is the earlier of the
 * call's own and the notice's arrival + seconds (seconds <= 0: the call's
 * own alone), and the reply names the stage, so that a kernel hanging in
 * one stage is stopped by that stage's limit, not the whole job's. */
#define WORKER_STAGE_TAG "\001stage "
#define WORKER_STAGE_NAME_MAX 64

typedef struct worker_reply {
    worker_outcome outcome;
    void *payload;      /* FINISHED: malloc'd, NUL-terminated beyond len */
    size_t payload_len;
    int signal;         /* CRASHED: the signal number */
    int exit_code;      /* EXITED: the exit status */
    double elapsed;     /* seconds from the start of the call to the outcome */
    char *output;       /* what the child wrote to stdout/stderr during the call
                           (the last output_cap bytes); malloc'd, NUL-terminated */
    size_t output_len;
    char stage[WORKER_STAGE_NAME_MAX]; /* the last stage announced ("" if none) */
    double stage_seconds;              /* its limit (0: none of its own) */
    int stage_expired;                 /* TIMEOUT: 1 when the stage's limit, not the call's, ran out */
} worker_reply;

/* Starts o->path, or else argv[0] (a path; a name without '/' is looked up in
 * PATH), with arguments argv (NULL-terminated). opts may be NULL. On success *out is a
 * live worker. The exec itself is checked: a missing or non-executable
 * program is KS_ENOTFOUND or KS_EIO (sub = errno) here, not a later EXITED.
 * Other failures: KS_EINVAL (no argv), KS_EIO (pipe or fork failed). */
int worker_spawn(const char *const argv[], const worker_opts *o, worker **out, ks_status *st);

/* Sends one job frame of n bytes and waits for one result frame, draining the
 * child's output meanwhile. deadline_seconds counts from the call; <= 0 means
 * no deadline. r is always filled (free it with worker_reply_clear).
 * Returns KS_OK for FINISHED; otherwise r->outcome says what happened, the
 * worker is dead, and the return value is KS_ETIMEOUT (TIMEOUT), KS_ECHILD
 * (CRASHED, EXITED) or KS_EPROTO (PROTOCOL), with a one-line message in st.
 * A TIMEOUT is reported as soon as the killed group is reaped, normally a few
 * milliseconds after the deadline. A worker that died after its last reply
 * is reported as CRASHED or EXITED by the next call.
 * KS_EINVAL: misuse (NULL, n > FRAME_MAX, or a worker already reported dead);
 * KS_EIO/KS_ENOMEM: the supervisor's own failure (the worker is then killed,
 * outcome PROTOCOL). */
int worker_call(worker *w, const void *job, size_t n, double deadline_seconds, worker_reply *r,
                ks_status *st);

/* The same call in two halves, for a supervisor that runs many workers at
 * once. worker_start sends nothing yet; it records the job and its deadline
 * (KS_EINVAL when the worker is dead or already busy). worker_step makes all
 * the progress possible without blocking: KS_EAGAIN while the job runs; once
 * it ended, r and the return value are exactly worker_call's. worker_wait
 * blocks until one of the busy workers among ws has something to read or
 * write, or a deadline of theirs passes, or timeout_seconds (< 0: none)
 * runs out; then worker_step each busy worker. */
int worker_start(worker *w, const void *job, size_t n, double deadline_seconds, ks_status *st);
int worker_step(worker *w, worker_reply *r, ks_status *st);
int worker_wait(worker *const *ws, size_t n, double timeout_seconds, ks_status *st);

/* 1 while a job started with worker_start has not ended. */
int worker_busy(const worker *w);

/* Worker side: announces stage name (at most WORKER_STAGE_NAME_MAX - 1
 * bytes, no newline) with a limit of seconds (<= 0: none of its own) on
 * fd, the result channel (3 in a worker). KS_EINVAL for a bad name. */
int worker_send_stage(int fd, const char *name, double seconds, ks_status *st);

/* Frees what a reply holds and zeroes it; safe on a zeroed or cleared reply. */
void worker_reply_clear(worker_reply *r);

/* 1 while the worker can take a job; 0 once it has exited, was killed or was
 * reported dead. Checks the process without blocking (a worker found dead is
 * reaped here, and its status is reported by the next worker_call). */
int worker_alive(worker *w);

/* The child's pid (also after it died: useful in reports). */
pid_t worker_pid(const worker *w);

/* The whole output ring (the last output_cap bytes the child ever wrote):
 * points into the worker, valid until the next call on it. */
const char *worker_output(const worker *w, size_t *len);

/* Ends an idle worker the polite way: closes its job channel (a worker
 * stops at the end of its input) and waits up to timeout_s for it to exit,
 * collecting what it writes meanwhile (a tool wrapped around the worker,
 * such as compute-sanitizer, prints its summary then); a worker still there
 * at the timeout is killed. *exit_code is its exit status (-1 when it was
 * killed by a signal, -2 when it had to be killed). The output stays
 * readable with worker_output until worker_free. KS_EINVAL while a job runs. */
int worker_finish(worker *w, double timeout_s, int *exit_code, ks_status *st);

/* Closes the pipes, SIGKILLs the process group if it is still alive, reaps
 * the child and frees w. NULL is a no-op. Reaping a SIGKILLed process blocks
 * only until the kernel has torn it down. */
void worker_free(worker *w);

#endif
