/*
 * pychild.h: a candidate written in a Python language (a Triton or CuTe
 * DSL kernel.py) turned into PTX in a confined child; klab's own ptxas
 * assembles the PTX (compile/jit.h), so the Python child never runs a
 * program.
 *
 * The child is the language's virtual environment's Python (installed by
 * the deps step with the pinned package) running klab's own program on a
 * copy of the candidate's file in a new scratch folder. The program is
 * host/lang/pychild.py (what every language shares: the second filter, the
 * answer, the errors) followed by the language's driver
 * (host/lang/LANG_child.py), both embedded. Before exec, in the forked
 * child:
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
 *     environment of only HOME, TMPDIR and LC_ALL (a driver adds its
 *     language's own variables, all pointing into the scratch folder,
 *     before it loads the candidate).
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
#ifndef KLAB_HOST_PYCHILD_H
#define KLAB_HOST_PYCHILD_H

#include <stddef.h>

#include "base/status.h"

/* The CUDA compiler child's limits for candidate code (bindings/l_jit.c). */
#define PYCHILD_LIMIT_MEMORY ((long long)4 << 30)
#define PYCHILD_LIMIT_CPU_S 60
#define PYCHILD_TIMEOUT_MS 120000
/* Its scratch folder holds the candidate's copy and what the language's
 * compiler writes there: no file in it may grow past this. */
#define PYCHILD_LIMIT_FILE ((long long)64 << 20)

/* A language the child speaks: its name (the request's), its title (for
 * messages: "the Triton compiler ...") and its driver (embedded). */
typedef struct pychild_lang {
    const char *name;
    const char *title;
    const char *driver;
} pychild_lang;

/* The language called name ("triton", "cute_dsl"), or NULL. */
const pychild_lang *pychild_find(const char *name);

typedef struct pychild_request {
    const pychild_lang *lang;
    const char *venv;           /* the virtual environment (folder) with the language's package */
    const char *source;         /* kernel.py's text */
    size_t source_len;
    const char *name;           /* the user's file, for messages */
    const char *request_json;   /* the driver's REQUEST (host/lang/LANG_child.py) */
    long long limit_memory;     /* bytes; <= 0: PYCHILD_LIMIT_MEMORY */
    int limit_cpu_s;            /* <= 0: PYCHILD_LIMIT_CPU_S */
    int timeout_ms;             /* <= 0: PYCHILD_TIMEOUT_MS */
} pychild_request;

typedef struct pychild_outcome {
    char *answer;               /* the child's JSON answer (NUL-terminated; may be empty) */
    size_t answer_len;
    char *log;                  /* what it wrote on stderr: the candidate's prints, a traceback */
    size_t log_len;
    int exit_code;              /* -1 when it did not exit by itself */
    double seconds;
    char confinement[96];       /* "Landlock, seccomp" or "unconfined (...), seccomp" */
} pychild_outcome;

/* Runs the child. KS_OK when it ended by itself (*out filled; free with
 * pychild_outcome_free), whatever it answered. KS_ECOMPILE naming the limit
 * when it went past one (memory, CPU, file size), KS_ETIMEOUT past the deadline,
 * KS_EUNSUPPORTED when it cannot be confined here (or the environment is
 * not a usable one), KS_EIO for other failures; the message is one line
 * naming req->name. */
int pychild_run(const pychild_request *req, pychild_outcome *out, ks_status *st);

void pychild_outcome_free(pychild_outcome *o);

#endif
