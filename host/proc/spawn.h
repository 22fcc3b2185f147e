/*
 * spawn.h: running another program, never through a shell.
 *
 * A program is started from an argument vector (argv[0] a path, or a name
 * looked up in PATH by the parent before fork) with:
 *   - stdin from a file or /dev/null;
 *   - stdout and stderr each captured in memory (the first capture_max bytes
 *     kept, the rest read and counted so the child never blocks), written to
 *     a file, sent to /dev/null, inherited, or stderr joined to stdout;
 *   - resource limits set in the child before exec: address space, CPU
 *     seconds (soft limit: SIGXCPU; the hard limit one second later), file
 *     size; a value above the hard limit is lowered to it;
 *   - a memory watch by the parent: the child's group is killed when its
 *     resident memory grows by more than watch_rss bytes over what it had
 *     when started (for children where an address-space limit cannot work,
 *     such as a fork of a sanitizer build);
 *   - a wall-clock deadline, after which the child's whole process group is
 *     killed (the child leads a group of its own).
 * The child starts with an empty signal mask and default dispositions, gets
 * SIGKILL when the thread that started it dies (PR_SET_PDEATHSIG), and has
 * only descriptors 0, 1 and 2 open.
 *
 * Instead of a program, spawn_opts.fn may name a function that runs in the
 * forked child (no exec), for work that must be bounded by limits but is a
 * library call, not a program (NVRTC); what it writes to descriptor 1 is the
 * result. The parent should be single-threaded when it forks that way.
 *
 * Two shapes: spawn_run starts and waits; spawn_start returns at once and
 * spawn_wait collects later (give captured streams a file then, since a
 * child that fills a pipe waits for the reader).
 *
 * worker.c starts its workers with channels of its own (frame pipes on
 * descriptors 0 and 3) and uses the child-side helpers at the end of this
 * file; everything else that starts a program goes through spawn_run or
 * spawn_start.
 */
#ifndef KLAB_HOST_SPAWN_H
#define KLAB_HOST_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

#include "base/status.h"

typedef enum {
    SPAWN_CAPTURE = 0, /* into memory (spawn_result.out / .err) */
    SPAWN_NULL,        /* /dev/null */
    SPAWN_INHERIT,     /* this process's own descriptor */
    SPAWN_FILE,        /* created or truncated, mode 0600 (out_path / err_path) */
    SPAWN_TO_STDOUT    /* stderr only: joined to stdout */
} spawn_io;

#define SPAWN_CAPTURE_DEFAULT ((size_t)16 << 20)

typedef struct spawn_opts {
    const char *const *argv;  /* argv[0]: a path, or a name looked up in PATH */
    const char *const *envp;  /* "K=V" list; NULL inherits this environment */
    const char *cwd;          /* NULL: unchanged */
    const char *stdin_path;   /* NULL: /dev/null */
    spawn_io out, err;
    const char *out_path, *err_path;
    size_t capture_max;       /* bytes kept of each captured stream; 0: 16 MiB */
    long long limit_as;       /* RLIMIT_AS, bytes; <= 0: unchanged */
    long long limit_cpu;      /* RLIMIT_CPU, seconds; <= 0: unchanged */
    long long limit_fsize;    /* RLIMIT_FSIZE, bytes; <= 0: unchanged */
    long long watch_rss;      /* bytes of resident growth; <= 0: no watch */
    double timeout_s;         /* spawn_run's deadline; <= 0: none */
    /* Run this in the forked child instead of exec (argv is then unused):
     * its return value is the exit status. */
    int (*fn)(void *arg);
    void *fn_arg;
} spawn_opts;

typedef enum {
    SPAWN_ENDED = 0,    /* exited or died of a signal by itself */
    SPAWN_TIMED_OUT,    /* killed at the deadline */
    SPAWN_OVER_MEMORY   /* killed by the memory watch */
} spawn_end;

typedef struct spawn_result {
    spawn_end end;
    int exited;            /* 1: exit_code holds its status */
    int exit_code;
    int signal;            /* the signal that ended it, else 0 */
    double seconds;        /* wall time from start to end */
    long long peak_rss_growth; /* the most resident growth the watch saw (bytes) */
    char *out, *err;       /* captured streams, NUL-terminated; NULL when not captured */
    size_t out_len, err_len;
    unsigned long long out_dropped, err_dropped; /* bytes read past capture_max */
} spawn_result;

typedef struct spawn_proc spawn_proc;

/* Starts the program. KS_ENOTFOUND when it cannot be found or executed
 * (the message names it), KS_EIO for other failures. */
int spawn_start(const spawn_opts *o, spawn_proc **out, ks_status *st);

pid_t spawn_pid(const spawn_proc *p);

/* Waits at most timeout_s (<= 0: without limit) for p to end, reading its
 * captured streams meanwhile. KS_OK whenever it ended, however (r says how;
 * free r with spawn_result_free); on the deadline the group is killed and
 * r->end is SPAWN_TIMED_OUT. Call once. */
int spawn_wait(spawn_proc *p, double timeout_s, spawn_result *r, ks_status *st);

/* Kills the group if it still runs, reaps it, and frees p. */
void spawn_free(spawn_proc *p);

/* spawn_start, then spawn_wait with o->timeout_s. */
int spawn_run(const spawn_opts *o, spawn_result *r, ks_status *st);

void spawn_result_free(spawn_result *r);

/* One line on how r ended, for messages: "exited with status 2", "was
 * killed by signal SEGV", "ran past its 5 s deadline and was killed",
 * "grew past its memory watch and was killed". */
void spawn_describe(const spawn_result *r, double timeout_s, char *buf, size_t n);

/* A size in the largest binary unit that divides it: "4 GiB", "512 MiB",
 * "1536 bytes". */
void spawn_format_bytes(long long bytes, char *buf, size_t n);

/* ---- helpers shared with worker.c ---- */

/* Resolves a program name without '/' through PATH (in the parent: execvp
 * is not async-signal-safe). Returns 0, or an errno value. */
int spawn_resolve(const char *name, char *buf, size_t size);

/* The highest descriptor number worth closing in a child. */
int spawn_max_fd(void);

/* In a child between fork and exec (async-signal-safe calls only): */
/* default dispositions for ignored signals and an empty signal mask; */
void spawn_child_signals(void);
/* closes every descriptor from `from` up except `keep` (when an exec
 * follows, marks them close-on-exec instead where close_range can); */
void spawn_child_close_from(int from, int keep, int max_fd, int exec_follows);
/* the start of every child: default signals, a process group of its own,
 * SIGKILL when the parent thread dies (exit now if it already did); returns
 * check_fd moved above the standard descriptors; */
int spawn_child_begin(pid_t parent, int check_fd);
/* makes from[i] the descriptor i, for i < n (n <= 16; -1 leaves i alone);
 * 0 or an errno value; */
int spawn_child_fds(const int *from, int n);
/* sets a resource limit (lowered to the hard limit); 0 or an errno value; */
int spawn_child_limit(int resource, long long v);
/* writes err to err_fd (the parent's exec check) and exits with 127. */
void spawn_child_fail(int err_fd, int err) __attribute__((noreturn));

#endif
