/*
 * test_confine.c: the walls the Triton child is built from, each in a
 * forked child: seccomp rules that test an argument (a clone that is not
 * a thread, a signal to another process, execveat on another descriptor),
 * a filter handed over as bytes and installed later, and Landlock with
 * read, write and execute rights.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"
#include "check.h"
#include "proc/landlock.h"
#include "proc/seccomp.h"

/* Runs fn in a forked child; returns the number of failed checks there
 * (its exit status), or 100 when it died. */
static int in_child(void (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        check_passed = check_failed = 0;
        fn(arg);
        fflush(NULL);
        _exit(check_failed > 99 ? 99 : check_failed);
    }
    int s = 0;
    pid_t k;
    do
        k = waitpid(pid, &s, 0);
    while (k < 0 && errno == EINTR);
    if (k != pid)
        fprintf(stderr, "waitpid: %s\n", strerror(errno));
    return k == pid && WIFEXITED(s) ? WEXITSTATUS(s) : 100;
}

static void *nothing(void *arg) { return arg; }

static void argument_rules(void *arg)
{
    (void)arg;
    pid_t self = getpid();
    const seccomp_rule rules[] = {
        {__NR_clone, EPERM, 0, CLONE_THREAD, SECCOMP_IF_NO_BIT},
        {__NR_clone3, ENOSYS, -1, 0, SECCOMP_IF_ANY_BIT},
        {__NR_kill, EPERM, 0, (unsigned)self, SECCOMP_IF_NOT_EQUAL},
        {__NR_execveat, EPERM, 0, 77, SECCOMP_IF_NOT_EQUAL},
    };
    ks_status st;
    CHECKF(seccomp_refuse(rules, 4, &st) == KS_OK, "%s", st.msg);
    /* A thread starts, a process does not. */
    pthread_t th;
    CHECK(pthread_create(&th, NULL, nothing, NULL) == 0 && pthread_join(th, NULL) == 0);
    CHECK(fork() < 0 && errno == EPERM);
    /* Signals to itself only. */
    CHECK(kill(self, 0) == 0);
    CHECK(kill(getppid(), 0) < 0 && errno == EPERM);
    CHECK(kill(-1, 0) < 0 && errno == EPERM);
    /* execveat on descriptor 77 only (here it is not open: EBADF). */
    char *argv[] = {"true", NULL};
    CHECK(syscall(__NR_execveat, 76, "/nonexistent/true", argv, NULL, 0) < 0 && errno == EPERM);
    CHECK(syscall(__NR_execveat, 77, "", argv, NULL, AT_EMPTY_PATH) < 0 && errno == EBADF);
}

static void program_installed_later(void *arg)
{
    (void)arg;
    const seccomp_rule rules[] = {{__NR_execve, EPERM, -1, 0, SECCOMP_IF_ANY_BIT}};
    unsigned char *prog = NULL;
    size_t len = 0;
    ks_status st;
    CHECK(seccomp_program(rules, 1, &prog, &len, &st) == KS_OK);
    CHECK(len > 0 && len % sizeof(struct sock_filter) == 0);
    struct sock_fprog fp = {(unsigned short)(len / sizeof(struct sock_filter)), (struct sock_filter *)prog};
    CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
    CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp, 0, 0) == 0);
    free(prog);
    char *argv[] = {"/bin/true", NULL};
    CHECK(syscall(__NR_execve, "/bin/true", argv, NULL) < 0 && errno == EPERM);
}

static void landlock_rights(void *arg)
{
    const char *dir = arg;
    char rw[4200], ro[4200], file[4300];
    snprintf(rw, sizeof rw, "%s/rw", dir);
    snprintf(ro, sizeof ro, "%s/ro", dir);
    const landlock_path paths[] = {
        {rw, LANDLOCK_READ | LANDLOCK_WRITE},
        {ro, LANDLOCK_READ},
    };
    ks_status st;
    CHECKF(landlock_restrict(paths, 2, &st) == KS_OK, "%s", st.msg);
    snprintf(file, sizeof file, "%s/new.txt", rw);
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK(unlink(file) == 0);
    snprintf(file, sizeof file, "%s/in.txt", ro);
    fd = open(file, O_RDONLY);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK(open(file, O_WRONLY) < 0 && errno == EACCES);
    snprintf(file, sizeof file, "%s/new.txt", ro);
    CHECK(open(file, O_WRONLY | O_CREAT, 0600) < 0 && errno == EACCES);
    CHECK(open("/etc/hostname", O_RDONLY) < 0 && errno == EACCES);
    /* No execute right anywhere: no program runs. */
    char *argv[] = {"/bin/true", NULL};
    CHECK(execve("/bin/true", argv, NULL) < 0 && errno == EACCES);
}

int main(void)
{
    check_prog = "test_confine";
    CHECK(in_child(argument_rules, NULL) == 0);
    CHECK(in_child(program_installed_later, NULL) == 0);
    if (landlock_abi() < 1) {
        SKIP("this kernel has no Landlock");
        return check_done();
    }
    ks_status st;
    char dir[4096], p[4200];
    CHECK(fs_mkdtemp("klab-test-confine-", dir, sizeof dir, &st) == KS_OK);
    snprintf(p, sizeof p, "%s/rw", dir);
    CHECK(fs_mkdirs(p, &st) == KS_OK);
    snprintf(p, sizeof p, "%s/ro", dir);
    CHECK(fs_mkdirs(p, &st) == KS_OK);
    snprintf(p, sizeof p, "%s/ro/in.txt", dir);
    CHECK(fs_write(p, "x", 1, &st) == KS_OK);
    CHECK(in_child(landlock_rights, dir) == 0);
    fs_remove_tree(dir, &st);
    return check_done();
}
