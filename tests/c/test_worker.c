/*
 * test_worker.c: frame protocol and worker processes (host/proc/frame.c, host/proc/worker.c).
 *
 * Uses helper_child (built next to this program) as the worker. Around the
 * tests of group kill and parent death the test process is a child
 * subreaper, so that grandchildren and orphaned workers come back to it and
 * their fate can be checked. (Only there: a sanitizer's exit-time helper
 * process, killed along with a worker's group, would otherwise come back to
 * us as well and look like a zombie we left.)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "check.h"
#include "proc/frame.h"
#include "proc/worker.h"

static char helper[PATH_MAX];

static void find_helper(const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    if (slash)
        snprintf(helper, sizeof helper, "%.*s/helper_child", (int)(slash - argv0), argv0);
    else
        snprintf(helper, sizeof helper, "./helper_child");
}

static worker *spawn_helper(const worker_opts *o)
{
    const char *argv[] = {helper, NULL};
    worker *w = NULL;
    ks_status st;
    int rc = worker_spawn(argv, o, &w, &st);
    CHECKF(rc == KS_OK && w != NULL, "spawn: %s", st.msg);
    return rc == KS_OK ? w : NULL;
}

/* One call with a NUL-terminated job; the reply is left in r. */
static int call(worker *w, const char *job, double deadline, worker_reply *r, ks_status *st)
{
    return worker_call(w, job, strlen(job), deadline, r, st);
}

/* call, and the wall time it took in *dt. */
static int timed_call(worker *w, const char *job, double deadline, worker_reply *r, ks_status *st, double *dt)
{
    double t0 = clock_now();
    int rc = call(w, job, deadline, r, st);
    *dt = clock_now() - t0;
    return rc;
}

/* Calls and expects FINISHED with the given reply text. */
static void expect_reply(worker *w, const char *job, const char *want)
{
    worker_reply r;
    ks_status st;
    int rc = call(w, job, 10, &r, &st);
    CHECKF(rc == KS_OK && r.outcome == WORKER_FINISHED, "%s: rc %d outcome %d: %s", job, rc,
           (int)r.outcome, rc ? st.msg : "");
    CHECKF(rc == KS_OK && r.payload_len == strlen(want) && memcmp(r.payload, want, r.payload_len) == 0,
           "%s: got '%s', want '%s'", job, r.payload ? (char *)r.payload : "(null)", want);
    worker_reply_clear(&r);
}

static void test_frames(void)
{
    int p[2];
    ks_status st;
    void *buf;
    size_t n;
    int eof;
    CHECK(pipe(p) == 0);

    /* Round trip, a zero-length frame, then end of stream. */
    CHECK(frame_write(p[1], "hello", 5, &st) == KS_OK);
    CHECK(frame_write(p[1], NULL, 0, &st) == KS_OK);
    close(p[1]);
    CHECK(frame_read(p[0], -1, &buf, &n, &eof, &st) == KS_OK && !eof && n == 5 &&
          memcmp(buf, "hello", 5) == 0);
    free(buf);
    CHECK(frame_read(p[0], -1, &buf, &n, &eof, &st) == KS_OK && !eof && n == 0 && buf != NULL);
    free(buf);
    CHECK(frame_read(p[0], -1, &buf, &n, &eof, &st) == KS_OK && eof && buf == NULL);
    close(p[0]);

    /* Truncated frame: end of stream inside the payload. */
    CHECK(pipe(p) == 0);
    unsigned char hdr[4];
    frame_put_len(hdr, 10);
    CHECK(write(p[1], hdr, 4) == 4 && write(p[1], "abc", 3) == 3);
    close(p[1]);
    CHECK(frame_read(p[0], -1, &buf, &n, &eof, &st) == KS_EPROTO);
    close(p[0]);

    /* Oversized length is refused before any allocation. */
    CHECK(pipe(p) == 0);
    frame_put_len(hdr, (uint32_t)FRAME_MAX + 1);
    CHECK(write(p[1], hdr, 4) == 4);
    CHECK(frame_read(p[0], -1, &buf, &n, &eof, &st) == KS_EPROTO);
    CHECK(frame_write(p[1], "x", FRAME_MAX + 1, &st) == KS_EINVAL);
    close(p[0]);
    close(p[1]);

    /* A deadline on a silent pipe. */
    CHECK(pipe(p) == 0);
    double t0 = clock_now();
    CHECK(frame_read(p[0], t0 + 0.1, &buf, &n, &eof, &st) == KS_ETIMEOUT);
    double dt = clock_now() - t0;
    CHECKF(dt >= 0.099 && dt < 0.5, "timeout after %.3f s", dt);

    /* Little-endian header on the wire. */
    frame_put_len(hdr, 0x01020304);
    CHECK(hdr[0] == 4 && hdr[1] == 3 && hdr[2] == 2 && hdr[3] == 1);
    CHECK(frame_get_len(hdr) == 0x01020304);
    close(p[0]);
    close(p[1]);
}

static void test_spawn_errors(void)
{
    worker *w = (worker *)1;
    ks_status st;
    const char *missing[] = {"/nonexistent/klab-worker", NULL};
    CHECK(worker_spawn(missing, NULL, &w, &st) == KS_ENOTFOUND && w == NULL);
    /* A file that exists but is not executable: exec fails in the child. */
    char tmp[] = "/tmp/klab-test-worker-XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(fd >= 0);
    if (fd >= 0) {
        close(fd);
        chmod(tmp, 0644);
        const char *noexec[] = {tmp, NULL};
        CHECKF(worker_spawn(noexec, NULL, &w, &st) == KS_EIO && st.sub == EACCES, "%s", st.msg);
        CHECK(w == NULL);
        unlink(tmp);
    }
    const char *none[] = {NULL};
    CHECK(worker_spawn(none, NULL, &w, &st) == KS_EINVAL);
    worker_free(NULL);
}

static void test_echo_and_environment(void)
{
    worker *w = spawn_helper(NULL);
    if (!w)
        return;
    pid_t pid = worker_pid(w);
    CHECK(pid > 0 && worker_alive(w));
    expect_reply(w, "echo:one", "one");
    expect_reply(w, "echo:", "");
    expect_reply(w, "echo:two", "two");
    expect_reply(w, "fds", "0 1 2 3");
    char ids[64];
    snprintf(ids, sizeof ids, "%d %d", (int)pid, (int)pid);
    expect_reply(w, "ids", ids); /* its own process group */
    CHECK(worker_pid(w) == pid && worker_alive(w));

    /* Stray prints go to the output ring, not into the protocol. */
    worker_reply r;
    ks_status st;
    CHECK(call(w, "stdout", 5, &r, &st) == KS_OK && r.payload_len == 2);
    CHECKF(r.output && strstr(r.output, "stray print on stdout"), "output '%s'",
           r.output ? r.output : "(null)");
    worker_reply_clear(&r);
    CHECK(call(w, "echo:quiet", 5, &r, &st) == KS_OK && r.output_len == 0); /* per call */
    worker_reply_clear(&r);
    size_t olen;
    CHECK(strstr(worker_output(w, &olen), "stray print") != NULL && olen > 0);
    worker_free(w);

    /* A given environment and rlimits. */
    const char *envp[] = {"KLAB_TEST_VAR=forty-two", "PATH=/usr/bin:/bin", NULL};
    worker_opts o = {.envp = envp, .rlimit_nofile = 64};
    w = spawn_helper(&o);
    if (!w)
        return;
    expect_reply(w, "env:KLAB_TEST_VAR", "forty-two");
    expect_reply(w, "env:HOME", "(unset)");
    expect_reply(w, "nofile", "64");
    worker_free(w);

    /* opts.path runs a program other than argv[0]. */
    const char *named[] = {"not-a-real-program", NULL};
    worker_opts op = {.path = helper};
    ks_status st2;
    w = NULL;
    CHECKF(worker_spawn(named, &op, &w, &st2) == KS_OK, "%s", st2.msg);
    if (w) {
        expect_reply(w, "echo:by path", "by path");
        worker_free(w);
    }
}

static void test_large_frames_and_output(void)
{
    worker *w = spawn_helper(NULL);
    if (!w)
        return;
    /* 10 MiB each way, over pipes of 64 KiB: needs writing and reading at once. */
    size_t big = (size_t)10 << 20;
    char *job = malloc(5 + big);
    memcpy(job, "echo:", 5);
    for (size_t i = 0; i < big; i++)
        job[5 + i] = (char)('a' + (i * 7919) % 26);
    worker_reply r;
    ks_status st;
    int rc = worker_call(w, job, 5 + big, 30, &r, &st);
    CHECKF(rc == KS_OK && r.payload_len == big && memcmp(r.payload, job + 5, big) == 0,
           "10 MiB echo: rc %d len %zu: %s", rc, r.payload_len, rc ? st.msg : "");
    worker_reply_clear(&r);
    free(job);

    /* 4 MiB on stderr before the reply: drained while waiting, last 64 KiB kept. */
    rc = call(w, "spew:4194304", 30, &r, &st);
    CHECKF(rc == KS_OK && r.payload_len == 6 && memcmp(r.payload, "spewed", 6) == 0, "spew: %s",
           st.msg);
    CHECKF(r.output_len == WORKER_OUTPUT_CAP_DEFAULT, "output tail %zu bytes", r.output_len);
    CHECK(r.output_len >= 12 && strcmp(r.output + r.output_len - 12, "END-OF-SPEW\n") == 0);
    worker_reply_clear(&r);
    expect_reply(w, "echo:still here", "still here");
    worker_free(w);
}

/* Each failure: one outcome, the worker is dead, and a new one works. */
static void test_outcomes(void)
{
    worker_reply r;
    ks_status st;
    int rc;

    /* Timeout of a blocked child, timed. */
    worker *w = spawn_helper(NULL);
    if (!w)
        return;
    pid_t pid = worker_pid(w);
    double dt;
    rc = timed_call(w, "hang", 0.3, &r, &st, &dt);
    CHECKF(rc == KS_ETIMEOUT && r.outcome == WORKER_TIMEOUT, "rc %d outcome %d", rc,
           (int)r.outcome);
    CHECKF(dt >= 0.3 && dt < 0.3 + 1.0, "hang reported after %.3f s", dt);
    CHECKF(dt < 0.3 + 0.5, "hang reported %.3f s after the deadline (want well under 1 s)",
           dt - 0.3);
    CHECK(r.elapsed >= 0.3 && r.elapsed <= dt);
    CHECK(!worker_alive(w));
    CHECK(kill(pid, 0) != 0 && errno == ESRCH); /* killed and reaped */
    worker_reply_clear(&r);
    CHECK(call(w, "echo:x", 1, &r, &st) == KS_EINVAL); /* dead: must be replaced */
    worker_reply_clear(&r);
    worker_free(w);

    /* Timeout of a spinning child. */
    w = spawn_helper(NULL);
    if (!w)
        return;
    rc = timed_call(w, "spin", 0.3, &r, &st, &dt);
    CHECK(rc == KS_ETIMEOUT && r.outcome == WORKER_TIMEOUT);
    CHECKF(dt >= 0.3 && dt < 1.3, "spin reported after %.3f s", dt);
    worker_reply_clear(&r);
    worker_free(w);

    /* Crash by SIGSEGV. */
    w = spawn_helper(NULL);
    if (!w)
        return;
    expect_reply(w, "echo:before", "before");
    rc = call(w, "segv", 10, &r, &st);
    CHECKF(rc == KS_ECHILD && r.outcome == WORKER_CRASHED && r.signal == SIGSEGV,
           "rc %d outcome %d signal %d: %s", rc, (int)r.outcome, r.signal, st.msg);
    CHECK(strstr(st.msg, "SIGSEGV") != NULL);
    CHECK(r.elapsed < 5);
    CHECK(!worker_alive(w));
    worker_reply_clear(&r);
    worker_free(w);

    /* Exit with a status before replying. */
    w = spawn_helper(NULL);
    if (!w)
        return;
    rc = call(w, "exit:3", 10, &r, &st);
    CHECKF(rc == KS_ECHILD && r.outcome == WORKER_EXITED && r.exit_code == 3, "rc %d: %s", rc,
           st.msg);
    worker_reply_clear(&r);
    worker_free(w);

    /* A garbage frame is reported at once, not at the deadline. */
    w = spawn_helper(NULL);
    if (!w)
        return;
    pid = worker_pid(w);
    rc = call(w, "garbage", 10, &r, &st);
    CHECKF(rc == KS_EPROTO && r.outcome == WORKER_PROTOCOL, "rc %d: %s", rc, st.msg);
    CHECK(r.elapsed < 2);
    CHECK(!worker_alive(w) && kill(pid, 0) != 0);
    worker_reply_clear(&r);
    worker_free(w);

    /* Replies, then exits: the next call reports the exit. */
    w = spawn_helper(NULL);
    if (!w)
        return;
    expect_reply(w, "reply-exit:5", "bye");
    for (int i = 0; i < 100 && worker_alive(w); i++)
        usleep(10000);
    CHECK(!worker_alive(w));
    rc = call(w, "echo:x", 10, &r, &st);
    CHECKF(rc == KS_ECHILD && r.outcome == WORKER_EXITED && r.exit_code == 5, "rc %d: %s", rc,
           st.msg);
    worker_reply_clear(&r);
    worker_free(w);

    /* A second, unrequested frame makes the next call a protocol failure. */
    w = spawn_helper(NULL);
    if (!w)
        return;
    expect_reply(w, "unsolicited", "a");
    usleep(50000);
    rc = call(w, "echo:x", 10, &r, &st);
    CHECKF(rc == KS_EPROTO && r.outcome == WORKER_PROTOCOL, "rc %d: %s", rc, st.msg);
    worker_reply_clear(&r);
    worker_free(w);

    /* The supervisor carries on: a fresh worker after all of that. */
    w = spawn_helper(NULL);
    if (!w)
        return;
    expect_reply(w, "echo:carry on", "carry on");
    worker_free(w);
}

/* Stage notices: a stage's own limit stops a hang sooner than the call's
 * deadline, and every outcome names the last stage announced. */
static void test_stages(void)
{
    worker_reply r;
    ks_status st;
    int rc;

    worker *w = spawn_helper(NULL);
    if (!w)
        return;
    double dt;
    rc = timed_call(w, "stage-hang:0.3", 30, &r, &st, &dt);
    CHECKF(rc == KS_ETIMEOUT && r.outcome == WORKER_TIMEOUT && r.stage_expired, "rc %d: %s", rc, st.msg);
    CHECKF(dt >= 0.3 && dt < 5, "stopped after %.3f s by a 0.3 s stage limit (call deadline 30 s)", dt);
    CHECK(strcmp(r.stage, "correctness") == 0 && r.stage_seconds == 0.3);
    CHECKF(strstr(st.msg, "stage 'correctness' within its 0.300 s"), "%s", st.msg);
    worker_reply_clear(&r);
    worker_free(w);

    /* The call's deadline still holds when it comes first. */
    w = spawn_helper(NULL);
    if (!w)
        return;
    rc = call(w, "stage-hang:30", 0.3, &r, &st);
    CHECKF(rc == KS_ETIMEOUT && !r.stage_expired && strcmp(r.stage, "correctness") == 0, "rc %d: %s", rc, st.msg);
    CHECKF(strstr(st.msg, "within 0.300 s (in stage 'correctness')"), "%s", st.msg);
    worker_reply_clear(&r);
    worker_free(w);

    /* Notices, then the reply; the worker carries on. */
    w = spawn_helper(NULL);
    if (!w)
        return;
    rc = call(w, "stage-reply", 10, &r, &st);
    CHECKF(rc == KS_OK && r.outcome == WORKER_FINISHED && r.payload_len == 6 && memcmp(r.payload, "staged", 6) == 0,
           "rc %d: %s", rc, st.msg);
    CHECK(strcmp(r.stage, "correctness") == 0 && r.stage_seconds == 5);
    worker_reply_clear(&r);
    expect_reply(w, "echo:next", "next");
    /* A death names its stage too. */
    rc = call(w, "stage-exit", 10, &r, &st);
    CHECKF(rc == KS_ECHILD && r.outcome == WORKER_EXITED && r.exit_code == 4 && strcmp(r.stage, "timing") == 0,
           "rc %d stage '%s': %s", rc, r.stage, st.msg);
    worker_reply_clear(&r);
    worker_free(w);

    /* A malformed notice is a protocol failure at once. */
    w = spawn_helper(NULL);
    if (!w)
        return;
    rc = call(w, "stage-bad", 10, &r, &st);
    CHECKF(rc == KS_EPROTO && r.outcome == WORKER_PROTOCOL && r.elapsed < 5, "rc %d: %s", rc, st.msg);
    CHECK(strstr(st.msg, "stage notice") != NULL);
    worker_reply_clear(&r);
    worker_free(w);

    /* Names a notice cannot carry. */
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(worker_send_stage(p[1], "", 1, &st) == KS_EINVAL);
    CHECK(worker_send_stage(p[1], "two\nlines", 1, &st) == KS_EINVAL);
    CHECK(worker_send_stage(p[1], NULL, 1, &st) == KS_EINVAL);
    char longname[WORKER_STAGE_NAME_MAX + 1];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK(worker_send_stage(p[1], longname, 1, &st) == KS_EINVAL);
    CHECK(worker_send_stage(p[1], "ok", -1, &st) == KS_OK); /* no limit of its own */
    CHECK(worker_send_stage(p[1], "nan", NAN, &st) == KS_EINVAL);
    /* An infinite limit is sent as none (0), which a supervisor can parse. */
    void *fr = NULL;
    size_t fn = 0;
    int eof = 0;
    CHECK(worker_send_stage(p[1], "inf", INFINITY, &st) == KS_OK);
    CHECK(frame_read(p[0], clock_now() + 1, &fr, &fn, &eof, &st) == KS_OK); /* the "ok" notice */
    free(fr);
    fr = NULL;
    CHECK(frame_read(p[0], clock_now() + 1, &fr, &fn, &eof, &st) == KS_OK && fr);
    CHECK(fr && fn == strlen(WORKER_STAGE_TAG "0 inf") && memcmp(fr, WORKER_STAGE_TAG "0 inf", fn) == 0);
    free(fr);
    close(p[0]);
    close(p[1]);
}

/* A timeout kills the whole process group, grandchildren included. */
static void test_group_kill(void)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    worker *w = spawn_helper(NULL);
    if (!w)
        return;
    worker_reply r;
    ks_status st;
    CHECK(call(w, "fork", 10, &r, &st) == KS_OK);
    pid_t g = r.payload ? (pid_t)atoi(r.payload) : -1;
    worker_reply_clear(&r);
    CHECK(g > 0 && kill(g, 0) == 0);
    CHECK(call(w, "hang", 0.2, &r, &st) == KS_ETIMEOUT);
    worker_reply_clear(&r);
    worker_free(w);
    /* Orphaned, the grandchild came to us (subreaper): it must have been SIGKILLed. */
    int status = 0;
    pid_t k = g > 0 ? waitpid(g, &status, 0) : -1;
    CHECKF(k == g && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "grandchild %d: %d %x",
           (int)g, (int)k, status);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

/* The call in two halves: two workers busy at once, waited on together;
 * one replies, the other hangs until its own deadline, and a third call
 * while busy is refused. */
static void test_async(void)
{
    worker *a = spawn_helper(NULL), *b = spawn_helper(NULL);
    if (!a || !b) {
        worker_free(a);
        worker_free(b);
        return;
    }
    ks_status st;
    worker_reply r;
    CHECK(!worker_busy(a) && !worker_busy(b));
    CHECK(worker_start(a, "hang", 4, 0.4, &st) == KS_OK);
    CHECK(worker_start(b, "echo:hi", 7, 10, &st) == KS_OK);
    CHECK(worker_busy(a) && worker_busy(b));
    CHECK(worker_start(b, "echo:x", 6, 10, &st) == KS_EINVAL);
    int a_done = 0, b_done = 0, rounds = 0;
    double t0 = clock_now();
    while ((!a_done || !b_done) && rounds++ < 1000) {
        worker *ws[2];
        size_t n = 0;
        if (!a_done)
            ws[n++] = a;
        if (!b_done)
            ws[n++] = b;
        CHECK(worker_wait(ws, n, 5.0, &st) == KS_OK);
        if (!b_done) {
            int rc = worker_step(b, &r, &st);
            if (rc != KS_EAGAIN) {
                CHECKF(rc == KS_OK && r.payload_len == 2 && memcmp(r.payload, "hi", 2) == 0,
                       "b: rc %d", rc);
                /* b answered while a still hung. */
                CHECK(!a_done && clock_now() - t0 < 0.4);
                worker_reply_clear(&r);
                b_done = 1;
            }
        }
        if (!a_done) {
            int rc = worker_step(a, &r, &st);
            if (rc != KS_EAGAIN) {
                CHECKF(rc == KS_ETIMEOUT && r.outcome == WORKER_TIMEOUT, "a: rc %d", rc);
                worker_reply_clear(&r);
                a_done = 1;
            }
        }
    }
    CHECK(a_done && b_done);
    CHECK(!worker_busy(b) && worker_alive(b) && !worker_alive(a));
    expect_reply(b, "echo:again", "again");
    worker_free(a);
    worker_free(b);
}

/* Freeing a live worker kills and reaps it. */
static void test_free_kills(void)
{
    worker *w = spawn_helper(NULL);
    if (!w)
        return;
    pid_t pid = worker_pid(w);
    expect_reply(w, "echo:x", "x");
    worker_free(w);
    CHECK(kill(pid, 0) != 0 && errno == ESRCH);
}

/* PR_SET_PDEATHSIG: a worker whose supervisor dies is SIGKILLed. */
static void test_parent_death(void)
{
    int p[2];
    CHECK(pipe(p) == 0);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t mid = fork();
    if (mid == 0) {
        const char *argv[] = {helper, NULL};
        worker *w = NULL;
        ks_status st;
        pid_t wp = worker_spawn(argv, NULL, &w, &st) == KS_OK ? worker_pid(w) : -1;
        if (write(p[1], &wp, sizeof wp) != (ssize_t)sizeof wp)
            _exit(2);
        _exit(0); /* without freeing: the worker must die with us */
    }
    close(p[1]);
    pid_t wp = -1;
    CHECK(read(p[0], &wp, sizeof wp) == (ssize_t)sizeof wp && wp > 0);
    close(p[0]);
    int status;
    CHECK(waitpid(mid, &status, 0) == mid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (wp > 0) {
        pid_t k = waitpid(wp, &status, 0); /* orphan reparented to us, the subreaper */
        CHECKF(k == wp && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
               "orphaned worker: %d %x", (int)k, status);
    }
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_prog = "test_worker";
    find_helper(argv[0]);
    if (access(helper, X_OK) != 0) {
        SKIP("helper_child not built next to the test");
        return check_done();
    }
    test_frames();
    test_spawn_errors();
    test_echo_and_environment();
    test_large_frames_and_output();
    test_outcomes();
    test_stages();
    test_async();
    test_group_kill();
    test_free_kills();
    test_parent_death();

    /* No zombies and no stray children: every child was reaped. */
    errno = 0;
    int zst = 0;
    pid_t z = waitpid(-1, &zst, WNOHANG);
    if (z > 0)
        fprintf(stderr, "stray child %d, status %#x\n", (int)z, zst);
    CHECKF(z == -1 && errno == ECHILD, "waitpid(-1) found %d (errno %d)", (int)z, errno);
    return check_done();
}
