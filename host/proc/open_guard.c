/* open_guard.c: the C library's path functions, checked once armed (see
 * open_guard.h).
 *
 * Each definition below has the C library's name and signature. Unarmed, it
 * calls the next definition (the C library's, or a sanitizer's), found once
 * with dlsym(RTLD_NEXT) when the program starts, so that a forked child
 * never needs the loader. Armed, it checks the path first. */
#undef _FORTIFY_SOURCE
#include "proc/open_guard.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* The compatibility entry points older libraries (NVRTC among them) still
 * call; current headers no longer declare them. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int __xstat(int ver, const char *path, struct stat *buf);
int __xstat64(int ver, const char *path, struct stat64 *buf);
int __lxstat(int ver, const char *path, struct stat *buf);
int __lxstat64(int ver, const char *path, struct stat64 *buf);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *buf, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *buf, int flags);

static int armed;
static char roots[OPEN_GUARD_MAX_ROOTS][PATH_MAX];
static size_t root_len[OPEN_GUARD_MAX_ROOTS];
static int nroots;
static long n_checked, n_refused;
static char first_refused[256];

/* ---- the next definitions ------------------------------------------------ */

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef FILE *(*fopen_fn)(const char *, const char *);
typedef FILE *(*freopen_fn)(const char *, const char *, FILE *);
typedef int (*fstatat_fn)(int, const char *, struct stat *, int);
typedef int (*statx_fn)(int, const char *, int, unsigned, struct statx *);
typedef int (*faccessat_fn)(int, const char *, int, int);
typedef ssize_t (*readlinkat_fn)(int, const char *, char *, size_t);
typedef char *(*realpath_fn)(const char *, char *);
typedef DIR *(*opendir_fn)(const char *);
typedef int (*statfs_fn)(const char *, struct statfs *);
typedef int (*statvfs_fn)(const char *, struct statvfs *);
typedef int (*path_fn)(const char *);
typedef int (*mkdir_fn)(const char *, mode_t);
typedef int (*rename_fn)(const char *, const char *);
typedef int (*truncate_fn)(const char *, off_t);

static struct {
    open_fn open;
    openat_fn openat;
    fopen_fn fopen;
    freopen_fn freopen;
    fstatat_fn fstatat;
    statx_fn statx;
    faccessat_fn faccessat;
    readlinkat_fn readlinkat;
    realpath_fn realpath;
    opendir_fn opendir;
    statfs_fn statfs;
    statvfs_fn statvfs;
    path_fn chdir, rmdir, unlink;
    mkdir_fn mkdir;
    rename_fn rename;
    truncate_fn truncate;
} next;

static void *find_next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

__attribute__((constructor)) static void find_all(void)
{
    next.open = (open_fn)find_next("open");
    next.openat = (openat_fn)find_next("openat");
    next.fopen = (fopen_fn)find_next("fopen");
    next.freopen = (freopen_fn)find_next("freopen");
    next.fstatat = (fstatat_fn)find_next("fstatat");
    next.statx = (statx_fn)find_next("statx");
    next.faccessat = (faccessat_fn)find_next("faccessat");
    next.readlinkat = (readlinkat_fn)find_next("readlinkat");
    next.realpath = (realpath_fn)find_next("realpath");
    next.opendir = (opendir_fn)find_next("opendir");
    next.statfs = (statfs_fn)find_next("statfs");
    next.statvfs = (statvfs_fn)find_next("statvfs");
    next.chdir = (path_fn)find_next("chdir");
    next.rmdir = (path_fn)find_next("rmdir");
    next.unlink = (path_fn)find_next("unlink");
    next.mkdir = (mkdir_fn)find_next("mkdir");
    next.rename = (rename_fn)find_next("rename");
    next.truncate = (truncate_fn)find_next("truncate");
}

/* A definition that runs before the constructor (another constructor
 * opening a file) finds its next one then. */
#define NEXT(f) (next.f ? next.f : (find_all(), next.f))

/* ---- the check ----------------------------------------------------------- */

/* Collapses "//", "." and ".." of an absolute path in place. */
static void lexical(char *p)
{
    char *out = p;
    const char *s = p;
    while (*s) {
        while (*s == '/')
            s++;
        const char *e = s;
        while (*e && *e != '/')
            e++;
        size_t n = (size_t)(e - s);
        if (n == 0)
            break;
        if (n == 1 && s[0] == '.') {
            /* nothing */
        } else if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (out > p && out[-1] != '/')
                out--;
            if (out > p)
                out--;
        } else {
            *out++ = '/';
            memmove(out, s, n);
            out += n;
        }
        s = e;
    }
    if (out == p)
        *out++ = '/';
    *out = '\0';
}

static int beneath(const char *p)
{
    for (int i = 0; i < nroots; i++) {
        size_t n = root_len[i];
        if (strncmp(p, roots[i], n) == 0 && (p[n] == '/' || p[n] == '\0'))
            return 1;
    }
    return 0;
}

static void note_refusal(const char *path)
{
    n_refused++;
    if (!first_refused[0])
        snprintf(first_refused, sizeof first_refused, "%s", path ? path : "(null)");
}

/* Whether an armed process may reach path (relative to dirfd). */
static int permitted(int dirfd, const char *path)
{
    n_checked++;
    if (!path || !path[0])
        return 0;
    char full[2 * PATH_MAX + 2];
    if (path[0] == '/') {
        if (strlen(path) >= sizeof full)
            return 0;
        strcpy(full, path);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (!getcwd(base, sizeof base))
                return 0;
        } else {
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            ssize_t n = (ssize_t)syscall(SYS_readlinkat, AT_FDCWD, link, base, sizeof base - 1);
            if (n <= 0)
                return 0;
            base[n] = '\0';
        }
        if (snprintf(full, sizeof full, "%s/%s", base, path) >= (int)sizeof full)
            return 0;
    }
    char resolved[PATH_MAX];
    realpath_fn rp = NEXT(realpath);
    if (rp && rp(full, resolved))
        return beneath(resolved);
    /* Nothing there (or not reachable): where the path would lie. The call
     * that follows then finds nothing either. */
    lexical(full);
    return beneath(full);
}

/* 1 when an armed process must refuse the call; errno is set. */
static int refused(int dirfd, const char *path)
{
    if (!armed)
        return 0;
    if (permitted(dirfd, path))
        return 0;
    note_refusal(path);
    errno = ENOENT;
    return 1;
}

static int refused_write(const char *path)
{
    if (!armed)
        return 0;
    n_checked++;
    note_refusal(path);
    errno = EACCES;
    return 1;
}

static int writes(int flags)
{
    return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC | O_APPEND)) != 0
#ifdef O_TMPFILE
           || (flags & O_TMPFILE) == O_TMPFILE
#endif
        ;
}

static int mode_writes(const char *mode)
{
    return !mode || strpbrk(mode, "wa+") != NULL;
}

/* ---- the definitions ----------------------------------------------------- */

static int guarded_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    if (armed && writes(flags)) {
        refused_write(path);
        return -1;
    }
    if (refused(dirfd, path))
        return -1;
    openat_fn f = NEXT(openat);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(dirfd, path, flags, mode);
}

static mode_t mode_arg(int flags, va_list ap)
{
    int needs = (flags & O_CREAT) != 0;
#ifdef O_TMPFILE
    needs = needs || (flags & O_TMPFILE) == O_TMPFILE;
#endif
    return needs ? (mode_t)va_arg(ap, unsigned) : 0;
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return guarded_openat(AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return guarded_openat(AT_FDCWD, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return guarded_openat(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return guarded_openat(dirfd, path, flags, mode);
}

int __open_2(const char *path, int flags) { return guarded_openat(AT_FDCWD, path, flags, 0); }
int __open64_2(const char *path, int flags) { return guarded_openat(AT_FDCWD, path, flags, 0); }
int __openat_2(int dirfd, const char *path, int flags) { return guarded_openat(dirfd, path, flags, 0); }
int __openat64_2(int dirfd, const char *path, int flags) { return guarded_openat(dirfd, path, flags, 0); }

int creat(const char *path, mode_t mode) { return guarded_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode); }
int creat64(const char *path, mode_t mode) { return creat(path, mode); }

FILE *fopen(const char *path, const char *mode)
{
    if (armed && mode_writes(mode)) {
        refused_write(path);
        return NULL;
    }
    if (refused(AT_FDCWD, path))
        return NULL;
    fopen_fn f = NEXT(fopen);
    if (!f) {
        errno = ENOSYS;
        return NULL;
    }
    return f(path, mode);
}

FILE *fopen64(const char *path, const char *mode) { return fopen(path, mode); }

FILE *freopen(const char *path, const char *mode, FILE *stream)
{
    if (armed && (mode_writes(mode) || !path)) {
        refused_write(path);
        return NULL;
    }
    if (refused(AT_FDCWD, path))
        return NULL;
    freopen_fn f = NEXT(freopen);
    if (!f) {
        errno = ENOSYS;
        return NULL;
    }
    return f(path, mode, stream);
}

FILE *freopen64(const char *path, const char *mode, FILE *stream) { return freopen(path, mode, stream); }

/* An empty path with AT_EMPTY_PATH names the descriptor itself. */
static int of_descriptor(const char *path, int flags)
{
    return path && !path[0] && (flags & AT_EMPTY_PATH);
}

static int guarded_fstatat(int dirfd, const char *path, struct stat *buf, int flags)
{
    int of_fd = of_descriptor(path, flags);
    if (!of_fd && refused(dirfd, path))
        return -1;
    fstatat_fn f = NEXT(fstatat);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(dirfd, path, buf, flags);
}

int stat(const char *path, struct stat *buf) { return guarded_fstatat(AT_FDCWD, path, buf, 0); }
int stat64(const char *path, struct stat64 *buf) { return guarded_fstatat(AT_FDCWD, path, (struct stat *)buf, 0); }
int lstat(const char *path, struct stat *buf) { return guarded_fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW); }
int lstat64(const char *path, struct stat64 *buf)
{
    return guarded_fstatat(AT_FDCWD, path, (struct stat *)buf, AT_SYMLINK_NOFOLLOW);
}
int fstatat(int dirfd, const char *path, struct stat *buf, int flags)
{
    return guarded_fstatat(dirfd, path, buf, flags);
}
int fstatat64(int dirfd, const char *path, struct stat64 *buf, int flags)
{
    return guarded_fstatat(dirfd, path, (struct stat *)buf, flags);
}
/* On the 64-bit targets klab builds for, the versioned forms take the
 * kernel's own struct stat, which is the C library's. */
int __xstat(int ver, const char *path, struct stat *buf) { return guarded_fstatat(AT_FDCWD, path, buf, 0); }
int __xstat64(int ver, const char *path, struct stat64 *buf)
{
    return guarded_fstatat(AT_FDCWD, path, (struct stat *)buf, 0);
}
int __lxstat(int ver, const char *path, struct stat *buf)
{
    return guarded_fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
}
int __lxstat64(int ver, const char *path, struct stat64 *buf)
{
    return guarded_fstatat(AT_FDCWD, path, (struct stat *)buf, AT_SYMLINK_NOFOLLOW);
}
int __fxstatat(int ver, int dirfd, const char *path, struct stat *buf, int flags)
{
    return guarded_fstatat(dirfd, path, buf, flags);
}
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *buf, int flags)
{
    return guarded_fstatat(dirfd, path, (struct stat *)buf, flags);
}

int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *buf)
{
    if (!of_descriptor(path, flags) && refused(dirfd, path))
        return -1;
    statx_fn f = NEXT(statx);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(dirfd, path, flags, mask, buf);
}

int faccessat(int dirfd, const char *path, int mode, int flags)
{
    if (armed && (mode & W_OK)) {
        refused_write(path);
        return -1;
    }
    if (refused(dirfd, path))
        return -1;
    faccessat_fn f = NEXT(faccessat);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(dirfd, path, mode, flags);
}

int access(const char *path, int mode) { return faccessat(AT_FDCWD, path, mode, 0); }
int euidaccess(const char *path, int mode) { return faccessat(AT_FDCWD, path, mode, AT_EACCESS); }
int eaccess(const char *path, int mode) { return faccessat(AT_FDCWD, path, mode, AT_EACCESS); }

ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t len)
{
    if (refused(dirfd, path))
        return -1;
    readlinkat_fn f = NEXT(readlinkat);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(dirfd, path, buf, len);
}

ssize_t readlink(const char *path, char *buf, size_t len) { return readlinkat(AT_FDCWD, path, buf, len); }

char *realpath(const char *path, char *resolved)
{
    if (refused(AT_FDCWD, path))
        return NULL;
    realpath_fn f = NEXT(realpath);
    if (!f) {
        errno = ENOSYS;
        return NULL;
    }
    return f(path, resolved);
}

char *canonicalize_file_name(const char *path) { return realpath(path, NULL); }

DIR *opendir(const char *path)
{
    if (refused(AT_FDCWD, path))
        return NULL;
    opendir_fn f = NEXT(opendir);
    if (!f) {
        errno = ENOSYS;
        return NULL;
    }
    return f(path);
}

int statfs(const char *path, struct statfs *buf)
{
    if (refused(AT_FDCWD, path))
        return -1;
    statfs_fn f = NEXT(statfs);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(path, buf);
}

int statfs64(const char *path, struct statfs64 *buf) { return statfs(path, (struct statfs *)buf); }

int statvfs(const char *path, struct statvfs *buf)
{
    if (refused(AT_FDCWD, path))
        return -1;
    statvfs_fn f = NEXT(statvfs);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(path, buf);
}

int statvfs64(const char *path, struct statvfs64 *buf) { return statvfs(path, (struct statvfs *)buf); }

int chdir(const char *path)
{
    if (refused(AT_FDCWD, path))
        return -1;
    path_fn f = NEXT(chdir);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(path);
}

int mkdir(const char *path, mode_t mode)
{
    if (refused_write(path))
        return -1;
    mkdir_fn f = NEXT(mkdir);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(path, mode);
}

int rmdir(const char *path)
{
    if (refused_write(path))
        return -1;
    path_fn f = NEXT(rmdir);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(path);
}

int unlink(const char *path)
{
    if (refused_write(path))
        return -1;
    path_fn f = NEXT(unlink);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(path);
}

int rename(const char *from, const char *to)
{
    if (refused_write(from))
        return -1;
    rename_fn f = NEXT(rename);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(from, to);
}

int truncate(const char *path, off_t len)
{
    if (refused_write(path))
        return -1;
    truncate_fn f = NEXT(truncate);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(path, len);
}

/* ---- arming ------------------------------------------------------------ */

int open_guard_bound(void)
{
    /* What a library's unresolved reference binds to: the first definition
     * in the global scope, which starts with the executable. */
    static const struct {
        const char *name;
        void *ours;
    } fns[] = {
        {"open", (void *)open},       {"openat", (void *)openat},     {"fopen", (void *)fopen},
        {"fopen64", (void *)fopen64}, {"stat", (void *)stat},         {"__xstat", (void *)__xstat},
        {"__lxstat", (void *)__lxstat}, {"access", (void *)access},   {"readlink", (void *)readlink},
        {"realpath", (void *)realpath}, {"opendir", (void *)opendir}, {"statfs", (void *)statfs},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (dlsym(RTLD_DEFAULT, fns[i].name) != fns[i].ours)
            return 0;
    return 1;
}

int open_guard_arm(const char *const *paths, int n, ks_status *st)
{
    if (n < 0 || n > OPEN_GUARD_MAX_ROOTS)
        return ks_fail(st, KS_EINVAL, 0, "open_guard_arm: at most %d roots", OPEN_GUARD_MAX_ROOTS);
    realpath_fn rp = NEXT(realpath);
    if (!rp)
        return ks_fail(st, KS_EUNSUPPORTED, 0, "open_guard_arm: the C library has no realpath");
    nroots = 0;
    for (int i = 0; i < n; i++) {
        if (!paths[i] || !rp(paths[i], roots[nroots]) || !strcmp(roots[nroots], "/"))
            continue;
        root_len[nroots] = strlen(roots[nroots]);
        nroots++;
    }
    if (nroots == 0)
        return ks_fail(st, KS_EINVAL, 0, "open_guard_arm: none of the folders exists");
    n_checked = n_refused = 0;
    first_refused[0] = '\0';
    armed = 1;
    return KS_OK;
}

void open_guard_counts(long *checked, long *refused_out, char *first, size_t n)
{
    if (checked)
        *checked = n_checked;
    if (refused_out)
        *refused_out = n_refused;
    if (first && n)
        snprintf(first, n, "%s", first_refused);
}
