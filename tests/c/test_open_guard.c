/*
 * test_open_guard.c: host/proc/open_guard.c and host/proc/seccomp.c, what
 * holds klab's compiler child: once armed, only files beneath the roots
 * can be opened, stat'ed or listed (anything else is absent, present or
 * not, however the path is spelled: "..", links, relative names, a
 * descriptor's folder), and nothing can be written; the seccomp rules stop
 * writes and programs at the kernel. Each armed case runs in a forked
 * child (arming cannot be undone), which exits with its failure count.
 *
 * The static linker exports from an executable every function that a
 * shared library on its link line also defines (the C library here), so
 * even this program, linked without -rdynamic, binds a library it loads
 * to the guard: open_guard_bound says so.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "base/fs.h"
#include "proc/open_guard.h"
#include "proc/seccomp.h"

static int put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Runs fn in a child; its exit status is its failure count. */
static int in_child(void (*fn)(const char *), const char *dir)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        check_failed = 0;
        fn(dir);
        fflush(NULL);
        _exit(check_failed > 100 ? 100 : check_failed);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

static int absent(int rc) { return rc < 0 && errno == ENOENT; }

static void armed_reads(const char *dir)
{
    char root[4200], outside[4200], p[4400];
    snprintf(root, sizeof root, "%s/root", dir);
    snprintf(outside, sizeof outside, "%s/outside.txt", dir);
    ks_status st;
    const char *roots[] = {root, "/nonexistent-klab-root"};
    CHECK(open_guard_arm(roots, 2, &st) == KS_OK);

    snprintf(p, sizeof p, "%s/inc/a.h", root);
    int fd = open(p, O_RDONLY);
    CHECKF(fd >= 0, "%s: %s", p, strerror(errno));
    if (fd >= 0)
        close(fd);
    FILE *f = fopen(p, "r");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    struct stat sb;
    CHECK(stat(p, &sb) == 0);
    /* A missing file inside is missing, as it would be. */
    snprintf(p, sizeof p, "%s/inc/missing.h", root);
    CHECK(absent(open(p, O_RDONLY)));

    /* Outside: absent, present or not, however it is spelled. */
    CHECK(absent(open(outside, O_RDONLY)));
    CHECK(fopen(outside, "r") == NULL && errno == ENOENT);
    CHECK(absent(stat(outside, &sb)));
    CHECK(absent(lstat(outside, &sb)));
    CHECK(absent(access(outside, R_OK)));
    CHECK(realpath(outside, NULL) == NULL && errno == ENOENT);
    CHECK(opendir(dir) == NULL && errno == ENOENT);
    snprintf(p, sizeof p, "%s/inc/../../outside.txt", root);
    CHECK(absent(open(p, O_RDONLY)));
    snprintf(p, sizeof p, "%s/inc/nowhere/../../../outside.txt", root);
    CHECK(absent(open(p, O_RDONLY)));
    snprintf(p, sizeof p, "%s/inc/link", root);
    CHECK(absent(open(p, O_RDONLY)));              /* a link inside that points out */
    CHECK(absent(open("/etc/passwd", O_RDONLY)));
    CHECK(absent(open("/proc/self/environ", O_RDONLY)));
    CHECK(absent(stat("/nonexistent-klab", &sb)));
    char buf[64];
    CHECK(readlink(p, buf, sizeof buf) < 0 && errno == ENOENT);

    /* Relative names resolve from the working folder and from descriptors. */
    CHECK(chdir(dir) != 0 && errno == ENOENT);     /* outside: refused */
    snprintf(p, sizeof p, "%s/inc", root);
    CHECK(chdir(p) == 0);
    fd = open("a.h", O_RDONLY);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK(absent(open("../../outside.txt", O_RDONLY)));
    int dfd = open(".", O_RDONLY | O_DIRECTORY);
    CHECK(dfd >= 0);
    fd = openat(dfd, "a.h", O_RDONLY);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK(absent(openat(dfd, "../../outside.txt", O_RDONLY)));
    if (dfd >= 0)
        close(dfd);

    /* No writes anywhere, inside the roots too. */
    CHECK(open("a.h", O_RDWR) < 0 && errno == EACCES);
    CHECK(open("new.h", O_WRONLY | O_CREAT, 0600) < 0 && errno == EACCES);
    CHECK(fopen("a.h", "a") == NULL && errno == EACCES);
    CHECK(mkdir("d", 0700) < 0 && errno == EACCES);
    CHECK(unlink("a.h") < 0 && errno == EACCES);

    long checked = 0, refused = 0;
    char first[256];
    open_guard_counts(&checked, &refused, first, sizeof first);
    CHECKF(checked >= 25 && refused >= 18, "checked %ld, refused %ld", checked, refused);
    CHECKF(strcmp(first, outside) == 0, "first refused: %s", first);
}

static void read_only_rules(const char *dir)
{
    seccomp_rule rules[48];
    int n = seccomp_read_only_rules(rules);
    ks_status st;
    int rc = seccomp_refuse(rules, n, &st);
    if (rc == KS_EUNSUPPORTED) {
        fprintf(stderr, "skip: %s\n", st.msg);
        return;
    }
    CHECKF(rc == KS_OK, "%s", st.msg);
    char p[4200];
    snprintf(p, sizeof p, "%s/outside.txt", dir);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY);
    CHECK(fd >= 0);                                 /* reads pass (the guard judges them) */
    if (fd >= 0)
        close(fd);
    CHECK(syscall(SYS_openat, AT_FDCWD, p, O_WRONLY) < 0 && errno == EACCES);
    snprintf(p, sizeof p, "%s/created.txt", dir);
    CHECK(syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CREAT, 0600) < 0 && errno == EACCES);
    CHECK(syscall(SYS_mkdirat, AT_FDCWD, p, 0700) < 0 && errno == EACCES);
    char *argv[] = {"/bin/true", NULL};
    char *envp[] = {NULL};
    CHECK(syscall(SYS_execve, "/bin/true", argv, envp) < 0 && errno == EACCES);
    /* A program through the C library fails as well. */
    CHECK(system("/bin/true") != 0);
}

int main(void)
{
    check_prog = "test_open_guard";
    ks_status st;
    char dir[4096], p[4200], q[4200];
    CHECK(fs_mkdtemp("klab-test-guard-", dir, sizeof dir, &st) == KS_OK);
    snprintf(p, sizeof p, "%s/root/inc", dir);
    CHECK(fs_mkdirs(p, &st) == KS_OK);
    snprintf(p, sizeof p, "%s/root/inc/a.h", dir);
    CHECK(put(p, "int a;\n") == 0);
    snprintf(p, sizeof p, "%s/outside.txt", dir);
    CHECK(put(p, "host file\n") == 0);
    snprintf(q, sizeof q, "%s/root/inc/link", dir);
    CHECK(symlink(p, q) == 0);

    /* Unarmed, every call passes through. */
    int fd = open(p, O_RDONLY);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    FILE *f = fopen(p, "r");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    CHECK(open_guard_bound() == 1);
    const char *none[] = {"/nonexistent-klab-root"};
    CHECK(open_guard_arm(none, 1, &st) == KS_EINVAL);

    CHECK(in_child(armed_reads, dir) == 0);
    CHECK(in_child(read_only_rules, dir) == 0);

    CHECK(fs_remove_tree(dir, &st) == KS_OK);
    return check_done();
}
