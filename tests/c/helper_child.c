/*
 * helper_child.c: a worker for tests/c/test_worker.c.
 *
 * Reads job frames on stdin and answers on fd 3, like a real worker. The job
 * text says what to do:
 *   echo:<bytes>      reply <bytes>
 *   hang              block forever without replying
 *   spin              busy-loop forever
 *   segv              die by SIGSEGV
 *   exit:<n>          exit with status n before replying
 *   garbage           write a frame header announcing 2 GiB, then hang
 *   spew:<n>          write n bytes to stderr (ending in "END-OF-SPEW\n"), then reply "spewed"
 *   stdout            print to stdout, then reply "ok"
 *   env:<NAME>        reply the variable's value, or "(unset)"
 *   nofile            reply the soft RLIMIT_NOFILE
 *   fds               reply the open descriptors, e.g. "0 1 2 3"
 *   ids               reply "<pid> <pgid>"
 *   fork              start a grandchild that sleeps forever; reply its pid
 *   reply-exit:<n>    reply "bye", then exit with status n
 *   unsolicited       reply "a", then write a second frame "b" at once
 *   stage-hang:<s>    announce stage "correctness" with a limit of s seconds, then hang
 *   stage-reply       announce "load" (no limit) and "correctness" (5 s), then reply "staged"
 *   stage-exit        announce "timing" (5 s), then exit with status 4
 *   stage-bad         send a malformed stage notice, then hang
 * End of stdin: exit 0.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proc/frame.h"
#include "proc/worker.h"

static void reply(const void *p, size_t n)
{
    ks_status st;
    if (frame_write(3, p, n, &st) != KS_OK) {
        fprintf(stderr, "helper: %s\n", st.msg);
        _exit(100);
    }
}

static void reply_str(const char *s)
{
    reply(s, strlen(s));
}

static void stage(const char *name, double seconds)
{
    ks_status st;
    if (worker_send_stage(3, name, seconds, &st) != KS_OK) {
        fprintf(stderr, "helper: %s\n", st.msg);
        _exit(104);
    }
}

static int starts(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(s, prefix, k) == 0;
}

int main(void)
{
    for (;;) {
        void *p;
        size_t n;
        int eof;
        ks_status st;
        if (frame_read(0, -1, &p, &n, &eof, &st) != KS_OK) {
            fprintf(stderr, "helper: %s\n", st.msg);
            return 101;
        }
        if (eof)
            return 0;
        const char *job = p;
        char buf[4096];
        if (starts(job, n, "echo:")) {
            reply(job + 5, n - 5);
        } else if (starts(job, n, "hang")) {
            for (;;)
                pause();
        } else if (starts(job, n, "spin")) {
            volatile unsigned long x = 0;
            for (;;)
                x++;
        } else if (starts(job, n, "segv")) {
            /* Default action even under a sanitizer's handler: a real signal death. */
            signal(SIGSEGV, SIG_DFL);
            kill(getpid(), SIGSEGV);
            pause();
        } else if (starts(job, n, "exit:")) {
            _exit(atoi(job + 5));
        } else if (starts(job, n, "garbage")) {
            const unsigned char bad[4] = {0x00, 0x00, 0x00, 0x80}; /* 2 GiB */
            if (write(3, bad, 4) != 4)
                _exit(102);
            for (;;)
                pause();
        } else if (starts(job, n, "spew:")) {
            size_t want = strtoul(job + 5, NULL, 10);
            const char *tail = "END-OF-SPEW\n";
            memset(buf, 'x', sizeof buf);
            size_t body = want > strlen(tail) ? want - strlen(tail) : 0;
            while (body > 0) {
                size_t k = body < sizeof buf ? body : sizeof buf;
                ssize_t w = write(2, buf, k);
                if (w <= 0)
                    _exit(103);
                body -= (size_t)w;
            }
            if (write(2, tail, strlen(tail)) < 0)
                _exit(103);
            reply_str("spewed");
        } else if (starts(job, n, "stdout")) {
            printf("stray print on stdout\n");
            fflush(stdout);
            reply_str("ok");
        } else if (starts(job, n, "env:")) {
            const char *v = getenv(job + 4);
            reply_str(v ? v : "(unset)");
        } else if (starts(job, n, "nofile")) {
            struct rlimit rl;
            getrlimit(RLIMIT_NOFILE, &rl);
            snprintf(buf, sizeof buf, "%llu", (unsigned long long)rl.rlim_cur);
            reply_str(buf);
        } else if (starts(job, n, "fds")) {
            DIR *d = opendir("/proc/self/fd");
            size_t len = 0;
            buf[0] = '\0';
            struct dirent *e;
            while (d && (e = readdir(d)) != NULL) {
                if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
                    continue;
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", len ? " " : "",
                                        e->d_name);
                if (len >= sizeof buf - 16)
                    break;
            }
            if (d)
                closedir(d);
            reply_str(buf);
        } else if (starts(job, n, "ids")) {
            snprintf(buf, sizeof buf, "%d %d", (int)getpid(), (int)getpgrp());
            reply_str(buf);
        } else if (starts(job, n, "fork")) {
            pid_t g = fork();
            if (g == 0) {
                for (;;)
                    pause();
            }
            snprintf(buf, sizeof buf, "%d", (int)g);
            reply_str(buf);
        } else if (starts(job, n, "reply-exit:")) {
            reply_str("bye");
            _exit(atoi(job + 11));
        } else if (starts(job, n, "stage-hang:")) {
            stage("correctness", atof(job + 11));
            for (;;)
                pause();
        } else if (starts(job, n, "stage-reply")) {
            stage("load", 0);
            stage("correctness", 5);
            reply_str("staged");
        } else if (starts(job, n, "stage-exit")) {
            stage("timing", 5);
            _exit(4);
        } else if (starts(job, n, "stage-bad")) {
            reply_str(WORKER_STAGE_TAG "soon correctness");
            for (;;)
                pause();
        } else if (starts(job, n, "unsolicited")) {
            reply_str("a");
            reply_str("b");
        } else {
            reply_str("unknown job");
        }
        free(p);
    }
}
