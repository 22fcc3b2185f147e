/*
 * test_fs.c: host/base/fs.c, file operations without a shell: listing,
 * safe reads (links, FIFOs, devices, folders and files over the cap are
 * refused, naming the path and why), temporary folders, removing a tree
 * without following its links, slot locks, and writes that replace a
 * link at their target instead of following it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "base/fs.h"

static int put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* The whole content of path (at most n - 1 bytes) into buf; -1 when it
 * cannot be read. */
static int slurp(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    ssize_t k = read(fd, buf, n - 1);
    close(fd);
    if (k < 0)
        return -1;
    buf[k] = '\0';
    return 0;
}

/* How many entries folder dir holds ("." and ".." left out). */
static size_t count_entries(const char *dir)
{
    fs_entry *e;
    size_t n = 0;
    ks_status st;
    if (fs_list(dir, &e, &n, &st) != KS_OK)
        return (size_t)-1;
    fs_list_free(e, n);
    return n;
}

/* fs_write, fs_create and fs_append: a symbolic link planted where klab
 * writes (to a marker file, or dangling) is replaced or refused; what it
 * points to never changes and is never made. */
static void writes_never_follow_links(const char *top)
{
    ks_status st;
    char dir[4200], marker[4300], link[4300], missing[4300], buf[256];
    snprintf(dir, sizeof dir, "%s/w", top);
    CHECK(fs_mkdirs(dir, &st) == KS_OK);
    snprintf(marker, sizeof marker, "%s/marker", top);
    CHECK(put(marker, "marker: must stay\n") == 0);

    snprintf(link, sizeof link, "%s/out.jsonl", dir);
    CHECK(symlink(marker, link) == 0);
    CHECKF(fs_write(link, "new\n", 4, &st) == KS_OK, "%s", st.msg);
    CHECK(slurp(marker, buf, sizeof buf) == 0 && strcmp(buf, "marker: must stay\n") == 0);
    fs_type t = FS_MISSING;
    uint64_t size = 0;
    CHECK(fs_lstat(link, &t, &size, &st) == KS_OK && t == FS_FILE && size == 4);
    CHECK(slurp(link, buf, sizeof buf) == 0 && strcmp(buf, "new\n") == 0);
    struct stat sb;
    mode_t mask = umask(022);
    umask(mask);
    CHECK(stat(link, &sb) == 0 && (sb.st_mode & 0777) == (0666 & ~mask));
    CHECK(count_entries(dir) == 1); /* no new file left beside it */

    /* A dangling link: its target is not made. */
    snprintf(missing, sizeof missing, "%s/made-through-a-link", top);
    snprintf(link, sizeof link, "%s/dangling", dir);
    CHECK(symlink(missing, link) == 0);
    CHECK(fs_write(link, "x", 1, &st) == KS_OK);
    CHECK(access(missing, F_OK) != 0 && errno == ENOENT);

    /* Piece by piece: the target keeps its old content until the commit,
     * and an abort leaves it and the folder as they were. */
    snprintf(link, sizeof link, "%s/piece", dir);
    CHECK(put(link, "old") == 0);
    size_t before = count_entries(dir);
    fs_writer w;
    CHECK(fs_create(link, &w, &st) == KS_OK && w.fd >= 0);
    CHECK(fs_writer_write(&w, "ab", 2, &st) == KS_OK && fs_writer_write(&w, "cd", 2, &st) == KS_OK);
    CHECK(slurp(link, buf, sizeof buf) == 0 && strcmp(buf, "old") == 0);
    CHECK(count_entries(dir) == before + 1);
    fs_abort(&w);
    CHECK(count_entries(dir) == before);
    CHECK(slurp(link, buf, sizeof buf) == 0 && strcmp(buf, "old") == 0);
    CHECK(fs_create(link, &w, &st) == KS_OK && fs_writer_write(&w, "abcd", 4, &st) == KS_OK);
    CHECK(fs_commit(&w, &st) == KS_OK && w.fd == -1 && !w.tmp && !w.path);
    CHECK(slurp(link, buf, sizeof buf) == 0 && strcmp(buf, "abcd") == 0);
    CHECK(count_entries(dir) == before);
    fs_abort(&w); /* an ended writer: nothing happens */

    /* A folder is not a file; a folder that does not exist cannot hold one. */
    CHECK(fs_write(dir, "x", 1, &st) == KS_EINVAL && strstr(st.msg, "is a folder"));
    snprintf(link, sizeof link, "%s/no/such/folder/f", top);
    CHECK(fs_write(link, "x", 1, &st) == KS_EIO && strstr(st.msg, link));

    /* Appending: never through a link; a missing file is made. */
    snprintf(link, sizeof link, "%s/log", dir);
    CHECK(symlink(marker, link) == 0);
    CHECK(fs_append(link, "x\n", 2, &st) == KS_EINVAL && st.sub == FS_IS_LINK && strstr(st.msg, link));
    CHECK(slurp(marker, buf, sizeof buf) == 0 && strcmp(buf, "marker: must stay\n") == 0);
    CHECK(fs_refuse_link(link, &st) == KS_EINVAL && strstr(st.msg, "symbolic link"));
    snprintf(link, sizeof link, "%s/log2", dir);
    CHECK(fs_refuse_link(link, &st) == KS_OK);
    CHECK(fs_append(link, "a\n", 2, &st) == KS_OK && fs_append(link, "b\n", 2, &st) == KS_OK);
    CHECK(slurp(link, buf, sizeof buf) == 0 && strcmp(buf, "a\nb\n") == 0);
    CHECK(fs_refuse_link(link, &st) == KS_OK);
}

int main(void)
{
    check_prog = "test_fs";
    ks_status st;
    char dir[4096], p[4200], q[4200];
    CHECK(fs_mkdtemp("klab-test-fs-", dir, sizeof dir, &st) == KS_OK);
    struct stat sb;
    CHECK(stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700);
    CHECK(fs_mkdtemp("a/b", p, sizeof p, &st) == KS_EINVAL);

    /* A folder with one of each kind. */
    snprintf(p, sizeof p, "%s/b.txt", dir);
    CHECK(put(p, "hello\n") == 0);
    snprintf(p, sizeof p, "%s/a.link", dir);
    CHECK(symlink("/etc/passwd", p) == 0);
    snprintf(p, sizeof p, "%s/c.fifo", dir);
    CHECK(mkfifo(p, 0600) == 0);
    snprintf(p, sizeof p, "%s/d", dir);
    CHECK(mkdir(p, 0700) == 0);

    fs_entry *e = NULL;
    size_t n = 0;
    CHECK(fs_list(dir, &e, &n, &st) == KS_OK && n == 4);
    if (n == 4) {
        CHECK(strcmp(e[0].name, "a.link") == 0 && e[0].type == FS_LINK);
        CHECK(strcmp(e[1].name, "b.txt") == 0 && e[1].type == FS_FILE && e[1].size == 6);
        CHECK(strcmp(e[2].name, "c.fifo") == 0 && e[2].type == FS_OTHER);
        CHECK(strcmp(e[3].name, "d") == 0 && e[3].type == FS_DIR);
    }
    fs_list_free(e, n);
    CHECK(fs_list("/nonexistent-klab", &e, &n, &st) == KS_ENOTFOUND);
    snprintf(p, sizeof p, "%s/b.txt", dir);
    CHECK(fs_list(p, &e, &n, &st) == KS_EINVAL && strstr(st.msg, "not a directory"));

    /* Reads: only regular files, under the cap. */
    char *buf = NULL;
    size_t len = 0;
    CHECK(fs_read(p, 0, 0, &buf, &len, &st) == KS_OK && len == 6 && strcmp(buf, "hello\n") == 0);
    free(buf);
    CHECKF(fs_read(p, 5, 0, &buf, &len, &st) == KS_EINVAL && st.sub == FS_TOO_LARGE &&
               strstr(st.msg, "b.txt: too large (6 bytes; the limit is 5 bytes)"), "%s", st.msg);
    snprintf(q, sizeof q, "%s/a.link", dir);
    CHECKF(fs_read(q, 0, 0, &buf, &len, &st) == KS_EINVAL && st.sub == FS_IS_LINK &&
               strstr(st.msg, "a.link: is a symbolic link"), "%s", st.msg);
    snprintf(q, sizeof q, "%s/c.fifo", dir);
    /* A FIFO with no writer: opening it for reading would block forever. */
    CHECKF(fs_read(q, 0, 0, &buf, &len, &st) == KS_EINVAL && strstr(st.msg, "c.fifo: is a FIFO"), "%s", st.msg);
    snprintf(q, sizeof q, "%s/d", dir);
    CHECKF(fs_read(q, 0, 0, &buf, &len, &st) == KS_EINVAL && st.sub == FS_IS_DIR && strstr(st.msg, "is a directory"),
           "%s", st.msg);
    CHECKF(fs_read("/dev/zero", 0, 0, &buf, &len, &st) == KS_EINVAL && strstr(st.msg, "character device"), "%s",
           st.msg);
    CHECK(fs_read("/nonexistent-klab", 0, 0, &buf, &len, &st) == KS_ENOTFOUND);
    /* A second name of a file: read as a file, refused where a file must be
     * its folder's own. */
    snprintf(q, sizeof q, "%s/b.hardlink", dir);
    CHECK(link(p, q) == 0);
    CHECK(fs_read(q, 0, 0, &buf, &len, &st) == KS_OK && len == 6);
    free(buf);
    CHECKF(fs_read(q, 0, FS_ONE_NAME, &buf, &len, &st) == KS_EINVAL && st.sub == FS_HARD_LINK &&
               strstr(st.msg, "b.hardlink: has 2 names (hard links)"), "%s", st.msg);
    CHECK(unlink(q) == 0);
    CHECK(fs_read(p, 0, FS_ONE_NAME, &buf, &len, &st) == KS_OK && len == 6);
    free(buf);
    /* /proc files say they are empty; the cap still holds while reading. */
    CHECKF(fs_read("/proc/self/status", 16, 0, &buf, &len, &st) == KS_EINVAL && strstr(st.msg, "more than 16"),
           "%s", st.msg);

    fs_type t;
    uint64_t size;
    CHECK(fs_lstat(p, &t, &size, &st) == KS_OK && t == FS_FILE && size == 6);
    snprintf(q, sizeof q, "%s/a.link", dir);
    CHECK(fs_lstat(q, &t, &size, &st) == KS_OK && t == FS_LINK);
    CHECK(fs_lstat("/nonexistent-klab", &t, &size, &st) == KS_OK && t == FS_MISSING);

    char real[4096];
    CHECK(fs_realpath(q, real, sizeof real, &st) == KS_OK && strcmp(real, "/etc/passwd") == 0);
    CHECK(fs_realpath("/nonexistent-klab/x", real, sizeof real, &st) == KS_ENOTFOUND);

    /* mkdirs, then a tree with a link to a folder outside it: removing the
     * tree removes the link, not what it points to. */
    char outside[4096];
    CHECK(fs_mkdtemp("klab-test-fs-out-", outside, sizeof outside, &st) == KS_OK);
    snprintf(q, sizeof q, "%s/keep", outside);
    CHECK(put(q, "x") == 0);
    snprintf(p, sizeof p, "%s/d/e/f", dir);
    CHECK(fs_mkdirs(p, &st) == KS_OK && fs_mkdirs(p, &st) == KS_OK);
    snprintf(p, sizeof p, "%s/d/e/f/out", dir);
    CHECK(symlink(outside, p) == 0);
    snprintf(p, sizeof p, "%s/b.txt/x", dir);
    CHECK(fs_mkdirs(p, &st) != KS_OK);
    CHECK(fs_remove_tree(dir, &st) == KS_OK);
    CHECK(fs_lstat(dir, &t, &size, &st) == KS_OK && t == FS_MISSING);
    CHECK(fs_lstat(q, &t, &size, &st) == KS_OK && t == FS_FILE);
    CHECK(fs_remove_tree(dir, &st) == KS_OK); /* missing is fine */
    CHECK(fs_remove_tree(outside, &st) == KS_OK);

    /* Locks: one holder per key; another key is free; the holder's note is
     * shown; a holder that dies (even by SIGKILL) leaves no lock behind. */
    char lock[4200];
    CHECK(fs_mkdtemp("klab-test-lock-", dir, sizeof dir, &st) == KS_OK);
    snprintf(lock, sizeof lock, "%s/db.lock", dir);
    int fd1 = -1, fd2 = -1, fd3 = -1;
    char held[FS_LOCK_NOTE + 2];
    CHECK(fs_lock(lock, "sweep", "pid 1 on here", &fd1, held, sizeof held, &st) == KS_OK && fd1 >= 0);
    CHECKF(fs_lock(lock, "sweep", "pid 2", &fd2, held, sizeof held, &st) == KS_EIO && st.sub == EAGAIN &&
               strcmp(held, "pid 1 on here") == 0, "%s / %s", st.msg, held);
    CHECK(fs_lock(lock, "other", "pid 2", &fd3, held, sizeof held, &st) == KS_OK);
    fs_unlock(fd1);
    fs_unlock(fd3);
    CHECK(fs_lock(lock, "sweep", "pid 3", &fd2, held, sizeof held, &st) == KS_OK);
    fs_unlock(fd2);
    pid_t child = fork();
    if (child == 0) {
        int fd;
        ks_status cst;
        if (fs_lock(lock, "sweep", "child", &fd, NULL, 0, &cst) != KS_OK)
            _exit(1);
        pause();
        _exit(0);
    }
    int got = 0;
    for (int i = 0; i < 500 && !got; i++) {
        if (fs_lock(lock, "sweep", "parent", &fd2, held, sizeof held, &st) == KS_OK)
            fs_unlock(fd2);
        else
            got = strcmp(held, "child") == 0;
        usleep(10000);
    }
    CHECK(got);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK(fs_lock(lock, "sweep", "parent", &fd2, held, sizeof held, &st) == KS_OK);
    fs_unlock(fd2);
    /* The lock file holds only the notes' table: small, whatever the keys
     * (a file-size limit must not stop a sweep at its lock). */
    for (int i = 0; i < 300; i++) {
        char key[32];
        snprintf(key, sizeof key, "experiment-%d", i);
        CHECK(fs_lock(lock, key, "many", &fd3, NULL, 0, &st) == KS_OK);
        fs_unlock(fd3);
    }
    {
        struct stat lsb;
        CHECKF(stat(lock, &lsb) == 0 && lsb.st_size <= 16384 && (long long)lsb.st_blocks * 512 <= 65536,
               "lock file: %lld bytes, %lld blocks", (long long)lsb.st_size, (long long)lsb.st_blocks);
    }

    /* Waiting: the slot comes free when its holder exits, and not before. */
    int ready[2];
    CHECK(pipe(ready) == 0);
    child = fork();
    if (child == 0) {
        int fd;
        ks_status cst;
        if (fs_lock(lock, "gpu", "child", &fd, NULL, 0, &cst) != KS_OK)
            _exit(1);
        (void)!write(ready[1], "x", 1);
        usleep(300000);
        _exit(0);
    }
    char c;
    CHECK(read(ready[0], &c, 1) == 1);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    CHECK(fs_lock_wait(lock, "gpu", "parent", &fd2, &st) == KS_OK && fd2 >= 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double waited = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    CHECKF(waited > 0.1, "took the held slot after %.3f s", waited);
    int status = -1;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    fs_unlock(fd2);
    close(ready[0]);
    close(ready[1]);

    writes_never_follow_links(dir);
    CHECK(fs_remove_tree(dir, &st) == KS_OK);
    return check_done();
}
