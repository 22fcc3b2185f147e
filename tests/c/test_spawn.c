/*
 * test_spawn.c: host/proc/spawn.c, programs started from an argument
 * vector: captured streams (bounded), files, exit status and signals, the
 * wall-clock deadline (the whole group is killed), CPU and memory limits, a
 * function run in a forked child, and start-then-wait.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "base/fs.h"
#include "proc/spawn.h"

static int child_fn(void *arg)
{
    const char *text = arg;
    ssize_t n = write(1, text, strlen(text));
    return n == (ssize_t)strlen(text) ? 7 : 1;
}

static int child_hog(void *arg)
{
    size_t n = *(size_t *)arg;
    char *volatile p = malloc(n);
    if (!p)
        return 9;
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
    sleep(5);
    return 0;
}

int main(void)
{
    check_prog = "test_spawn";
    ks_status st;
    spawn_result r;
    spawn_opts o;

    memset(&o, 0, sizeof o);
    const char *a1[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    o.argv = a1;
    CHECK(spawn_run(&o, &r, &st) == KS_OK);
    CHECK(r.end == SPAWN_ENDED && r.exited && r.exit_code == 3);
    CHECK(r.out && strcmp(r.out, "out\n") == 0 && r.err && strcmp(r.err, "err\n") == 0);
    spawn_result_free(&r);

    /* No shell: the argument is one word, whatever it holds. */
    char dir[4096];
    CHECK(fs_mkdtemp("klab-test-spawn-", dir, sizeof dir, &st) == KS_OK);
    const char *a2[] = {"/bin/echo", "x$(touch PWNED)", NULL};
    o.argv = a2;
    o.cwd = dir;
    CHECK(spawn_run(&o, &r, &st) == KS_OK && r.out && strcmp(r.out, "x$(touch PWNED)\n") == 0);
    spawn_result_free(&r);
    char pw[4200];
    snprintf(pw, sizeof pw, "%s/PWNED", dir);
    CHECK(access(pw, F_OK) != 0);
    o.cwd = NULL;

    /* Joined streams, a bounded capture. */
    const char *a3[] = {"sh", "-c", "echo 0123456789; echo abc >&2", NULL};
    o.argv = a3;
    o.err = SPAWN_TO_STDOUT;
    o.capture_max = 4;
    CHECK(spawn_run(&o, &r, &st) == KS_OK && r.out_len == 4 && memcmp(r.out, "0123", 4) == 0 &&
          r.out_dropped == 15 - 4 && r.err == NULL);
    spawn_result_free(&r);
    o.err = SPAWN_CAPTURE;
    o.capture_max = 0;

    /* Files and stdin. */
    char in[4200], outp[4200];
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(outp, sizeof outp, "%s/out", dir);
    FILE *f = fopen(in, "w");
    if (f) {
        fputs("from a file\n", f);
        fclose(f);
    }
    const char *a4[] = {"cat", NULL};
    o.argv = a4;
    o.stdin_path = in;
    o.out = SPAWN_FILE;
    o.out_path = outp;
    CHECK(spawn_run(&o, &r, &st) == KS_OK && r.exited && r.exit_code == 0 && r.out == NULL);
    spawn_result_free(&r);
    char *buf = NULL;
    size_t len = 0;
    CHECK(fs_read(outp, 0, 0, &buf, &len, &st) == KS_OK && strcmp(buf, "from a file\n") == 0);
    free(buf);
    o.stdin_path = NULL;
    o.out = SPAWN_CAPTURE;
    o.out_path = NULL;

    /* Signals, a missing program. */
    const char *a5[] = {"sh", "-c", "kill -SEGV $$", NULL};
    o.argv = a5;
    CHECK(spawn_run(&o, &r, &st) == KS_OK && !r.exited && r.signal == SIGSEGV);
    char how[128];
    spawn_describe(&r, 0, how, sizeof how);
    CHECKF(strcmp(how, "was killed by signal SEGV") == 0, "%s", how);
    spawn_result_free(&r);
    const char *a6[] = {"/nonexistent/klab-prog", NULL};
    o.argv = a6;
    CHECKF(spawn_run(&o, &r, &st) == KS_ENOTFOUND && strstr(st.msg, "/nonexistent/klab-prog"), "%s", st.msg);
    const char *a7[] = {"klab-no-such-program", NULL};
    o.argv = a7;
    CHECK(spawn_run(&o, &r, &st) == KS_ENOTFOUND);

    /* The deadline kills the whole group: a grandchild holding the pipe
     * does not keep the wait going. */
    const char *a8[] = {"sh", "-c", "sleep 30 & sleep 30", NULL};
    o.argv = a8;
    o.timeout_s = 0.3;
    CHECK(spawn_run(&o, &r, &st) == KS_OK && r.end == SPAWN_TIMED_OUT && r.seconds < 5);
    spawn_result_free(&r);
    o.timeout_s = 0;

    /* CPU limit: SIGXCPU. */
    const char *a9[] = {"sh", "-c", "while :; do :; done", NULL};
    o.argv = a9;
    o.limit_cpu = 1;
    o.timeout_s = 20;
    CHECK(spawn_run(&o, &r, &st) == KS_OK && r.signal == SIGXCPU && r.seconds < 10);
    spawn_result_free(&r);
    o.limit_cpu = 0;
    o.timeout_s = 0;

    /* A function in a forked child: its stdout is the result. */
    memset(&o, 0, sizeof o);
    o.fn = child_fn;
    o.fn_arg = "result bytes";
    CHECK(spawn_run(&o, &r, &st) == KS_OK && r.exited && r.exit_code == 7 && r.out &&
          strcmp(r.out, "result bytes") == 0);
    spawn_result_free(&r);

    /* The memory watch: a child that grows past it is killed. */
    size_t hog = (size_t)256 << 20;
    o.fn = child_hog;
    o.fn_arg = &hog;
    o.watch_rss = (long long)64 << 20;
    o.timeout_s = 30;
    CHECK(spawn_run(&o, &r, &st) == KS_OK && r.end == SPAWN_OVER_MEMORY && r.peak_rss_growth > (64 << 20));
    spawn_result_free(&r);

    /* Start now, collect later; freeing a running one kills it. */
    memset(&o, 0, sizeof o);
    const char *a10[] = {"sh", "-c", "sleep 0.2; echo late", NULL};
    o.argv = a10;
    spawn_proc *p = NULL;
    CHECK(spawn_start(&o, &p, &st) == KS_OK && spawn_pid(p) > 0);
    CHECK(spawn_wait(p, 10, &r, &st) == KS_OK && r.exited && r.out && strcmp(r.out, "late\n") == 0);
    spawn_result_free(&r);
    spawn_free(p);
    const char *a11[] = {"sleep", "30", NULL};
    o.argv = a11;
    CHECK(spawn_start(&o, &p, &st) == KS_OK);
    pid_t pid = spawn_pid(p);
    spawn_free(p);
    CHECK(kill(pid, 0) != 0);

    char b[64];
    spawn_format_bytes((long long)4 << 30, b, sizeof b);
    CHECK(strcmp(b, "4 GiB") == 0);
    spawn_format_bytes(1536, b, sizeof b);
    CHECK(strcmp(b, "3 bytes") != 0 && strcmp(b, "1536 bytes") == 0);
    CHECK(fs_remove_tree(dir, &st) == KS_OK);
    return check_done();
}
