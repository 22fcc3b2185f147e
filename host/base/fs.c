/* fs.c: file operations without a shell (see fs.h). */
#include "base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/random.h"
#include "base/sha256.h"

#define FS_READ_DEFAULT_CAP ((size_t)64 << 20)
/* A key locks one byte of a range that is never written (a lock may lie
 * past the end of a file), so the lock file holds only the notes: a table
 * of FS_LOCK_NOTES notes of FS_LOCK_SLOT_BYTES, 16 KiB at most. */
#define FS_LOCK_SLOTS 65536u
#define FS_LOCK_RANGE ((off_t)1 << 20)
#define FS_LOCK_NOTES 64u
#define FS_LOCK_SLOT_BYTES 256

const char *fs_type_name(fs_type t)
{
    switch (t) {
    case FS_FILE: return "file";
    case FS_DIR: return "dir";
    case FS_LINK: return "link";
    case FS_OTHER: return "other";
    default: return "missing";
    }
}

static fs_type type_of_mode(mode_t m)
{
    if (S_ISREG(m))
        return FS_FILE;
    if (S_ISDIR(m))
        return FS_DIR;
    if (S_ISLNK(m))
        return FS_LINK;
    return FS_OTHER;
}

/* Why a file that is not regular is refused, for messages. */
static const char *kind_of_mode(mode_t m)
{
    if (S_ISDIR(m))
        return "is a directory, not a file";
    if (S_ISLNK(m))
        return "is a symbolic link";
    if (S_ISFIFO(m))
        return "is a FIFO, not a regular file";
    if (S_ISCHR(m))
        return "is a character device, not a regular file";
    if (S_ISBLK(m))
        return "is a block device, not a regular file";
    if (S_ISSOCK(m))
        return "is a socket, not a regular file";
    return "is not a regular file";
}

int fs_lstat(const char *path, fs_type *type, uint64_t *size, ks_status *st)
{
    struct stat sb;
    *type = FS_MISSING;
    if (size)
        *size = 0;
    if (lstat(path, &sb) != 0) {
        if (errno == ENOENT)
            return KS_OK;
        return ks_fail(st, KS_EIO, errno, "%s: %s", path, strerror(errno));
    }
    *type = type_of_mode(sb.st_mode);
    if (size && *type == FS_FILE)
        *size = (uint64_t)sb.st_size;
    return KS_OK;
}

void fs_list_free(fs_entry *e, size_t n)
{
    if (!e)
        return;
    for (size_t i = 0; i < n; i++)
        free(e[i].name);
    free(e);
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const fs_entry *)a)->name, ((const fs_entry *)b)->name);
}

int fs_list(const char *dir, fs_entry **out, size_t *n, ks_status *st)
{
    *out = NULL;
    *n = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        int e = errno;
        if (e == ENOENT)
            return ks_fail(st, KS_ENOTFOUND, e, "%s: no such file or directory", dir);
        if (e == ENOTDIR)
            return ks_fail(st, KS_EINVAL, e, "%s: not a directory", dir);
        return ks_fail(st, KS_EIO, e, "%s: %s", dir, strerror(e));
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return ks_fail(st, KS_EIO, e, "%s: %s", dir, strerror(e));
    }
    fs_entry *v = NULL;
    size_t len = 0, cap = 0;
    int rc = KS_OK;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (len == cap) {
            size_t nc = cap ? 2 * cap : 16;
            fs_entry *p = realloc(v, nc * sizeof *p);
            if (!p) {
                rc = ks_fail(st, KS_ENOMEM, 0, "out of memory listing %s", dir);
                break;
            }
            v = p;
            cap = nc;
        }
        fs_entry *e = &v[len];
        e->name = strdup(de->d_name);
        if (!e->name) {
            rc = ks_fail(st, KS_ENOMEM, 0, "out of memory listing %s", dir);
            break;
        }
        len++;
        struct stat sb;
        if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
            e->type = type_of_mode(sb.st_mode);
            e->size = e->type == FS_FILE ? (uint64_t)sb.st_size : 0;
        } else {
            /* Gone since readdir: listed as what it no longer is. */
            e->type = FS_MISSING;
            e->size = 0;
        }
        errno = 0;
    }
    if (rc == KS_OK && errno != 0)
        rc = ks_fail(st, KS_EIO, errno, "%s: %s", dir, strerror(errno));
    closedir(d);
    if (rc) {
        fs_list_free(v, len);
        return rc;
    }
    if (len > 1)
        qsort(v, len, sizeof *v, entry_cmp);
    *out = v;
    *n = len;
    return KS_OK;
}

static int refuse(ks_status *st, int sub, const char *path, const char *why)
{
    return ks_fail(st, KS_EINVAL, sub, "%s: %s", path, why);
}

static int too_large(ks_status *st, const char *path, unsigned long long size, int exact, size_t cap)
{
    return ks_fail(st, KS_EINVAL, FS_TOO_LARGE, "%s: too large (%s%llu bytes; the limit is %zu bytes)", path,
                   exact ? "" : "more than ", size, cap);
}

int fs_read(const char *path, size_t cap, int flags, char **buf, size_t *len, ks_status *st)
{
    *buf = NULL;
    *len = 0;
    if (cap == 0)
        cap = FS_READ_DEFAULT_CAP;
    struct stat sb;
    /* lstat first: a FIFO or a device is never opened (opening one can
     * block or have effects of its own). */
    if (lstat(path, &sb) != 0) {
        int e = errno;
        if (e == ENOENT)
            return ks_fail(st, KS_ENOTFOUND, e, "%s: no such file", path);
        return ks_fail(st, KS_EIO, e, "%s: %s", path, strerror(e));
    }
    if (S_ISLNK(sb.st_mode))
        return refuse(st, FS_IS_LINK, path, "is a symbolic link");
    if (S_ISDIR(sb.st_mode))
        return refuse(st, FS_IS_DIR, path, "is a directory, not a file");
    if (!S_ISREG(sb.st_mode))
        return refuse(st, FS_NOT_REGULAR, path, kind_of_mode(sb.st_mode));
    if ((unsigned long long)sb.st_size > cap)
        return too_large(st, path, (unsigned long long)sb.st_size, 1, cap);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            return refuse(st, FS_IS_LINK, path, "is a symbolic link");
        return ks_fail(st, KS_EIO, e, "%s: %s", path, strerror(e));
    }
    /* Again on what was opened: the path may have changed in between. */
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ks_fail(st, KS_EIO, e, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return refuse(st, S_ISDIR(sb.st_mode) ? FS_IS_DIR : FS_NOT_REGULAR, path, kind_of_mode(sb.st_mode));
    }
    if ((unsigned long long)sb.st_size > cap) {
        close(fd);
        return too_large(st, path, (unsigned long long)sb.st_size, 1, cap);
    }
    if ((flags & FS_ONE_NAME) && sb.st_nlink > 1) {
        close(fd);
        return ks_fail(st, KS_EINVAL, FS_HARD_LINK, "%s: has %llu names (hard links); only a file of its own "
                       "folder is read", path, (unsigned long long)sb.st_nlink);
    }
    size_t alloc = (size_t)sb.st_size + 1 < cap + 1 ? (size_t)sb.st_size + 1 : cap + 1;
    if (alloc < 4096)
        alloc = cap + 1 < 4096 ? cap + 1 : 4096;
    char *p = malloc(alloc);
    if (!p) {
        close(fd);
        return ks_fail(st, KS_ENOMEM, 0, "out of memory reading %s", path);
    }
    size_t n = 0;
    for (;;) {
        if (n + 1 >= alloc) {
            if (alloc > cap) {
                /* cap + 1 bytes would not fit: the file is larger than cap. */
                char probe;
                ssize_t r;
                do
                    r = read(fd, &probe, 1);
                while (r < 0 && errno == EINTR);
                if (r > 0) {
                    free(p);
                    close(fd);
                    return too_large(st, path, (unsigned long long)cap, 0, cap);
                }
                break;
            }
            size_t na = alloc * 2 > cap + 1 ? cap + 1 : alloc * 2;
            char *q = realloc(p, na);
            if (!q) {
                free(p);
                close(fd);
                return ks_fail(st, KS_ENOMEM, 0, "out of memory reading %s", path);
            }
            p = q;
            alloc = na;
            continue;
        }
        ssize_t r = read(fd, p + n, alloc - 1 - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(p);
            close(fd);
            return ks_fail(st, KS_EIO, e, "%s: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    p[n] = '\0';
    *buf = p;
    *len = n;
    return KS_OK;
}

/* <tmp>/<prefix>XXXXXX into out; *tmp gets the folder used. */
static int temp_template(const char *prefix, char *out, size_t n, const char **tmp, ks_status *st)
{
    *tmp = getenv("TMPDIR");
    if (!*tmp || !**tmp)
        *tmp = "/tmp";
    if (!prefix || !*prefix)
        prefix = "klab-";
    if (strchr(prefix, '/'))
        return ks_fail(st, KS_EINVAL, 0, "temporary names: the prefix may not hold '/'");
    int w = snprintf(out, n, "%s/%sXXXXXX", *tmp, prefix);
    if (w < 0 || (size_t)w >= n)
        return ks_fail(st, KS_EINVAL, 0, "temporary names: the path is too long");
    return KS_OK;
}

int fs_mkdtemp(const char *prefix, char *out, size_t n, ks_status *st)
{
    const char *tmp;
    if (temp_template(prefix, out, n, &tmp, st))
        return st->code;
    if (!mkdtemp(out)) {
        int e = errno;
        return ks_fail(st, KS_EIO, e, "cannot create a temporary folder in %s: %s", tmp, strerror(e));
    }
    return KS_OK;
}

int fs_mkstemp(const char *prefix, char *out, size_t n, ks_status *st)
{
    const char *tmp;
    if (temp_template(prefix, out, n, &tmp, st))
        return st->code;
    int fd = mkostemp(out, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return ks_fail(st, KS_EIO, e, "cannot create a temporary file in %s: %s", tmp, strerror(e));
    }
    close(fd);
    return KS_OK;
}

/* Empties the folder open as dfd (which it closes), depth first, never
 * following a link and never leaving device dev. path is for messages. */
static int empty_dir(int dfd, dev_t dev, const char *path, int depth, ks_status *st)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return ks_fail(st, KS_EIO, e, "%s: %s", path, strerror(e));
    }
    if (depth > 256) {
        closedir(d);
        return ks_fail(st, KS_EINVAL, 0, "%s: nested more than 256 folders deep", path);
    }
    int rc = KS_OK;
    struct dirent *de;
    while (rc == KS_OK && (de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            continue;
        struct stat sb;
        if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT)
                continue;
            rc = ks_fail(st, KS_EIO, errno, "%s/%s: %s", path, name, strerror(errno));
            break;
        }
        if (S_ISDIR(sb.st_mode)) {
            if (sb.st_dev != dev) {
                rc = ks_fail(st, KS_EINVAL, 0, "%s/%s: another file system is mounted there; not removed",
                             path, name);
                break;
            }
            int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cfd < 0) {
                rc = ks_fail(st, KS_EIO, errno, "%s/%s: %s", path, name, strerror(errno));
                break;
            }
            char sub[PATH_MAX];
            snprintf(sub, sizeof sub, "%s/%s", path, name);
            rc = empty_dir(cfd, dev, sub, depth + 1, st);
            if (rc == KS_OK && unlinkat(dfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
                rc = ks_fail(st, KS_EIO, errno, "%s: %s", sub, strerror(errno));
        } else if (unlinkat(dfd, name, 0) != 0 && errno != ENOENT) {
            rc = ks_fail(st, KS_EIO, errno, "%s/%s: %s", path, name, strerror(errno));
        }
    }
    closedir(d);
    return rc;
}

int fs_remove_tree(const char *path, ks_status *st)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        if (errno == ENOENT)
            return KS_OK;
        return ks_fail(st, KS_EIO, errno, "%s: %s", path, strerror(errno));
    }
    if (!S_ISDIR(sb.st_mode)) {
        if (unlink(path) != 0 && errno != ENOENT)
            return ks_fail(st, KS_EIO, errno, "%s: %s", path, strerror(errno));
        return KS_OK;
    }
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return ks_fail(st, KS_EIO, errno, "%s: %s", path, strerror(errno));
    int rc = empty_dir(dfd, sb.st_dev, path, 0, st);
    if (rc)
        return rc;
    if (rmdir(path) != 0 && errno != ENOENT)
        return ks_fail(st, KS_EIO, errno, "%s: %s", path, strerror(errno));
    return KS_OK;
}

int fs_realpath(const char *path, char *out, size_t n, ks_status *st)
{
    char buf[PATH_MAX];
    if (!realpath(path, buf)) {
        int e = errno;
        if (e == ENOENT)
            return ks_fail(st, KS_ENOTFOUND, e, "%s: no such file or directory", path);
        return ks_fail(st, KS_EIO, e, "%s: %s", path, strerror(e));
    }
    if (strlen(buf) >= n)
        return ks_fail(st, KS_EINVAL, 0, "%s: the resolved path is too long", path);
    snprintf(out, n, "%s", buf);
    return KS_OK;
}

int fs_mkdirs(const char *path, ks_status *st)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf)
        return ks_fail(st, KS_EINVAL, 0, "fs_mkdirs: bad path length");
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            return ks_fail(st, KS_EIO, e, "cannot create %s: %s", buf, strerror(e));
        }
        buf[i] = c;
    }
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return ks_fail(st, KS_EIO, ENOTDIR, "cannot create %s: something that is not a folder is there", path);
    return KS_OK;
}

/* The slot of key: the first bytes of its SHA-256. Its lock is byte
 * FS_LOCK_RANGE + v % FS_LOCK_SLOTS; its note is at (v % FS_LOCK_NOTES) *
 * FS_LOCK_SLOT_BYTES and starts with tag (8 hex digits of v), so that a
 * note another key wrote there is not taken for the holder's. */
static uint32_t lock_hash(const char *key)
{
    unsigned char d[SHA256_DIGEST_LEN];
    sha256(key, strlen(key), d);
    return (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3];
}

static int lock_slot(const char *path, const char *key, const char *note, int wait, int *fd, char *held_by,
                     size_t held_n, ks_status *st)
{
    *fd = -1;
    if (held_by && held_n)
        held_by[0] = '\0';
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (f < 0)
        return ks_fail(st, KS_EIO, errno, "cannot open the lock file %s: %s", path, strerror(errno));
    uint32_t v = lock_hash(key);
    off_t note_off = (off_t)(v % FS_LOCK_NOTES) * FS_LOCK_SLOT_BYTES;
    char tag[12];
    snprintf(tag, sizeof tag, "%08x ", (unsigned)v);
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = FS_LOCK_RANGE + (off_t)(v % FS_LOCK_SLOTS);
    fl.l_len = 1;
    int got;
    while ((got = fcntl(f, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl)) != 0 && wait && errno == EINTR)
        ;
    if (got != 0) {
        int e = errno;
        if (e == EAGAIN || e == EACCES) {
            if (held_by && held_n) {
                char slot[FS_LOCK_SLOT_BYTES + 1];
                ssize_t r = pread(f, slot, FS_LOCK_SLOT_BYTES, note_off);
                size_t k = 0;
                for (ssize_t i = 0; r > 0 && i < r && slot[i] && slot[i] != '\n'; i++)
                    k++;
                slot[k] = '\0';
                if (k >= 9 && strncmp(slot, tag, 9) == 0)
                    snprintf(held_by, held_n, "%s", slot + 9);
            }
            close(f);
            return ks_fail(st, KS_EIO, EAGAIN, "%s is locked by another process", path);
        }
        close(f);
        return ks_fail(st, KS_EIO, e, "cannot lock %s: %s", path, strerror(e));
    }
    char slot[FS_LOCK_SLOT_BYTES];
    memset(slot, 0, sizeof slot);
    snprintf(slot, sizeof slot < FS_LOCK_NOTE + 11 ? sizeof slot : FS_LOCK_NOTE + 11, "%s%s\n", tag,
             note ? note : "");
    /* The note is a courtesy for the next comer's message; the lock does not
     * depend on it. */
    (void)!pwrite(f, slot, sizeof slot, note_off);
    *fd = f;
    return KS_OK;
}

int fs_lock(const char *path, const char *key, const char *note, int *fd, char *held_by,
            size_t held_n, ks_status *st)
{
    return lock_slot(path, key, note, 0, fd, held_by, held_n, st);
}

int fs_lock_wait(const char *path, const char *key, const char *note, int *fd, ks_status *st)
{
    return lock_slot(path, key, note, 1, fd, NULL, 0, st);
}

void fs_unlock(int fd)
{
    if (fd < 0)
        return;
    /* Closing the descriptor releases the lock; the slot's note stays until
     * the next holder overwrites it, and is read only while a lock is held. */
    close(fd);
}

/* ---- writing ---- */

/* The folder part of path ("." when there is none), malloc'd. */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

int fs_create(const char *path, fs_writer *w, ks_status *st)
{
    w->fd = -1;
    w->path = w->tmp = NULL;
    if (!path || !*path)
        return ks_fail(st, KS_EINVAL, 0, "cannot write a file with an empty name");
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return refuse(st, FS_IS_DIR, path, "is a folder, not a file: name a file to write");
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!*base)
        return refuse(st, FS_IS_DIR, path, "names a folder, not a file: name a file to write");
    char *dir = folder_of(path);
    size_t cap = strlen(path) + 64;
    w->path = strdup(path);
    w->tmp = malloc(cap);
    if (!dir || !w->path || !w->tmp) {
        free(dir);
        fs_abort(w);
        return ks_fail(st, KS_ENOMEM, 0, "out of memory writing %s", path);
    }
    /* A hidden name with 96 random bits: nobody can plant a file under it
     * in advance, and O_EXCL | O_NOFOLLOW refuses one that is there anyway
     * (a link included, dangling or not) rather than open it. The target's
     * name is cut to keep the new name within NAME_MAX. */
    int e = EEXIST;
    for (int tries = 0; tries < 16 && e == EEXIST; tries++) {
        unsigned char r[12];
        if (random_bytes(r, sizeof r, st) != KS_OK) {
            free(dir);
            fs_abort(w);
            return st->code;
        }
        char hex[2 * sizeof r + 1];
        for (size_t i = 0; i < sizeof r; i++)
            snprintf(hex + 2 * i, 3, "%02x", r[i]);
        snprintf(w->tmp, cap, "%s/.%.180s.%s.new", dir, base, hex);
        w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        e = w->fd < 0 ? errno : 0;
    }
    free(dir);
    if (w->fd < 0) {
        free(w->tmp); /* nothing was made under that name: never unlink it */
        w->tmp = NULL;
        fs_abort(w);
        return ks_fail(st, KS_EIO, e, "cannot write %s: %s", path, strerror(e));
    }
    return KS_OK;
}

int fs_writer_write(fs_writer *w, const void *p, size_t n, ks_status *st)
{
    if (w->fd < 0)
        return ks_fail(st, KS_EINVAL, 0, "writing %s after it was closed", w->path ? w->path : "a file");
    const char *c = p;
    while (n > 0) {
        ssize_t k = write(w->fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return ks_fail(st, KS_EIO, errno, "cannot write %s: %s", w->path, strerror(k < 0 ? errno : EIO));
        c += k;
        n -= (size_t)k;
    }
    return KS_OK;
}

int fs_commit(fs_writer *w, ks_status *st)
{
    if (w->fd < 0) {
        fs_abort(w);
        return ks_fail(st, KS_EINVAL, 0, "closing a file twice");
    }
    /* On disk before it takes the target's name, so that a crash leaves the
     * old file or the whole new one. */
    int e = 0;
    if (fsync(w->fd) != 0 && errno != EINVAL) /* EINVAL: a file system that cannot sync */
        e = errno;
    if (close(w->fd) != 0 && !e)
        e = errno;
    w->fd = -1;
    if (!e && rename(w->tmp, w->path) != 0)
        e = errno;
    if (e) {
        int rc = ks_fail(st, KS_EIO, e, "cannot write %s: %s", w->path, strerror(e));
        fs_abort(w);
        return rc;
    }
    char *dir = folder_of(w->path);
    int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        (void)fsync(dfd); /* the rename itself; the file is whole either way */
        close(dfd);
    }
    free(dir);
    free(w->tmp);
    w->tmp = NULL;
    fs_abort(w);
    return KS_OK;
}

void fs_abort(fs_writer *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    if (w->tmp)
        unlink(w->tmp);
    free(w->tmp);
    free(w->path);
    w->tmp = w->path = NULL;
}

int fs_write(const char *path, const void *p, size_t n, ks_status *st)
{
    fs_writer w;
    if (fs_create(path, &w, st) != KS_OK)
        return st->code;
    if (fs_writer_write(&w, p, n, st) != KS_OK) {
        fs_abort(&w);
        return st->code;
    }
    return fs_commit(&w, st);
}

int fs_append(const char *path, const void *p, size_t n, ks_status *st)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0 && errno == ELOOP)
        return refuse(st, FS_IS_LINK, path, "is a symbolic link: klab does not write through links");
    if (fd < 0)
        return ks_fail(st, KS_EIO, errno, "cannot write %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return refuse(st, FS_NOT_REGULAR, path, "is not a regular file: klab appends only to files");
    }
    fs_writer w = {fd, (char *)path, NULL};
    int rc = fs_writer_write(&w, p, n, st);
    if (close(fd) != 0 && rc == KS_OK)
        rc = ks_fail(st, KS_EIO, errno, "cannot write %s: %s", path, strerror(errno));
    return rc;
}

int fs_refuse_link(const char *path, ks_status *st)
{
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
        return refuse(st, FS_IS_LINK, path, "is a symbolic link: klab does not write through links");
    return KS_OK;
}
