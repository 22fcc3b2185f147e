/*
 * triton.h: a Triton candidate (kernel.py) turned into PTX in a confined
 * child; klab's own ptxas assembles the PTX (compile/jit.h), so the
 * Python child never runs a program.
 *
 * The child is the virtual environment's Python (installed by the deps
 * step with a pinned triton) running klab's own program
 * (host/lang/triton_child.py, embedded) on a copy of the candidate's file
 * in a new scratch folder. Before exec, in the forked child:
 *   - Landlock: it may read the environment, the Python install under it
 *     (PREFIX/lib) and the system's library folder, may run only the
 *     interpreter (and its loader), may read and write only the scratch
 *     folder; where the kernel has them, TCP, abstract sockets and signals
 *     to other processes are refused too;
 *   - a seccomp filter: no socket, no new process (a clone without
 *     CLONE_THREAD, fork, vfork), no ptrace or reading another process's
 *     memory, no signal to another process, no namespaces, mounts, bpf,
 *     io_uring or keys; execve is refused and execveat allowed only on
 *     one descriptor number (the interpreter, opened close-on-exec at a
 *     number the descriptor limit then puts out of reach);
 *   - the CUDA compiler child's limits (memory, CPU, wall clock) and an
 *     environment of only HOME, TMPDIR, TRITON_CACHE_DIR and LC_ALL.
 * After exec, the child's program installs a second filter that refuses
 * execve and execveat outright before it reads the candidate; until then
 * only the interpreter's own start-up runs (-I -S). So no program other
 * than the interpreter ever starts, and nothing the candidate runs leaves
 * the walls above, which hold whatever code runs inside (ctypes included).
 *
 * Without Landlock the child is refused (KS_EUNSUPPORTED, one line) unless
 * KLAB_ALLOW_UNCONFINED_COMPILER=1, the CUDA compiler's opt-in; the
 * confinement then says "unconfined (...)".
 */
#ifndef KLAB_HOST_TRITON_H
#define KLAB_HOST_TRITON_H

#include <stddef.h>

#include "base/status.h"

/* The CUDA compiler child's limits for candidate code (bindings/l_jit.c). */
#define TRITON_LIMIT_MEMORY ((long long)4 << 30)
#define TRITON_LIMIT_CPU_S 60
#define TRITON_TIMEOUT_MS 120000
/* Its scratch folder holds the candidate's copy and what Triton may write
 * there: no file in it may grow past this. */
#define TRITON_LIMIT_FILE ((long long)64 << 20)

typedef struct triton_request {
    const char *venv;           /* the virtual environment (folder) with triton */
    const char *source;         /* kernel.py's text */
    size_t source_len;
    const char *name;           /* the user's file, for messages */
    const char *request_json;   /* the child's REQUEST (host/lang/triton_child.py) */
    long long limit_memory;     /* bytes; <= 0: TRITON_LIMIT_MEMORY */
    int limit_cpu_s;            /* <= 0: TRITON_LIMIT_CPU_S */
    int timeout_ms;             /* <= 0: TRITON_TIMEOUT_MS */
} triton_request;

typedef struct triton_outcome {
    char *answer;               /* the child's JSON answer (NUL-terminated; may be empty) */
    size_t answer_len;
    char *log;                  /* what it wrote on stderr: the candidate's prints, a traceback */
    size_t log_len;
    int exit_code;              /* -1 when it did not exit by itself */
    double seconds;
    char confinement[96];       /* "Landlock, seccomp" or "unconfined (...), seccomp" */
} triton_outcome;

/* Runs the child. KS_OK when it ended by itself (*out filled; free with
 * triton_outcome_free), whatever it answered. KS_ECOMPILE naming the limit
 * when it went past one (memory, CPU, file size), KS_ETIMEOUT past the deadline,
 * KS_EUNSUPPORTED when it cannot be confined here (or the environment is
 * not a usable one), KS_EIO for other failures; the message is one line
 * naming req->name. */
int triton_compile_ptx(const triton_request *req, triton_outcome *out, ks_status *st);

void triton_outcome_free(triton_outcome *o);

#endif
