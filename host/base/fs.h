/*
 * fs.h: the file operations klab's library needs, without a shell.
 *
 * Everything here names a path in its messages and never follows a
 * symbolic link it was not asked to follow:
 *
 *   - fs_list lists a folder (names and types from lstat, sorted by name);
 *   - fs_read reads a regular file, and only that: the path is checked with
 *     lstat before it is opened (so no FIFO, device or socket is ever
 *     opened), opened with O_NOFOLLOW | O_NONBLOCK and checked again with
 *     fstat; a file larger than the cap is refused with its size, and the
 *     read stops at the cap whatever the size said (files under /proc say 0);
 *   - fs_mkdtemp makes a private temporary folder (mode 0700) under
 *     $TMPDIR or /tmp, fs_mkstemp a private temporary file;
 *   - fs_remove_tree removes a tree without following symbolic links (a
 *     link is removed, never what it points to) and without crossing into
 *     another file system;
 *   - fs_realpath resolves a path; fs_mkdirs makes a folder and its parents;
 *   - fs_lock takes an exclusive lock on one slot of a lock file, released
 *     by the kernel when the holder exits however it exits;
 *   - fs_create, fs_commit and fs_write write every file klab makes: a new
 *     file beside the target, then renamed over it, so a symbolic link at
 *     the target is replaced, never followed; fs_append adds to a file that
 *     is not a link.
 */
#ifndef KLAB_HOST_FS_H
#define KLAB_HOST_FS_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef enum { FS_FILE = 0, FS_DIR = 1, FS_LINK = 2, FS_OTHER = 3, FS_MISSING = 4 } fs_type;

typedef struct fs_entry {
    char *name;
    fs_type type;      /* of the entry itself (lstat): a link is FS_LINK */
    uint64_t size;     /* bytes, for FS_FILE; 0 otherwise */
} fs_entry;

/* "file", "dir", "link", "other", "missing". */
const char *fs_type_name(fs_type t);

/* The type and size of path itself (lstat). FS_MISSING when it does not
 * exist; KS_EIO for other failures (permission, a non-folder in the path). */
int fs_lstat(const char *path, fs_type *type, uint64_t *size, ks_status *st);

/* The entries of folder dir, "." and ".." left out, sorted by name
 * (strcmp). KS_ENOTFOUND when dir does not exist, KS_EINVAL when it is not
 * a folder. Free with fs_list_free. */
int fs_list(const char *dir, fs_entry **out, size_t *n, ks_status *st);
void fs_list_free(fs_entry *e, size_t n);

/* What fs_read refuses, for callers that want the kind (st->sub holds it
 * after a refusal with KS_EINVAL). */
enum { FS_NOT_REGULAR = 1, FS_TOO_LARGE = 2, FS_IS_LINK = 3, FS_IS_DIR = 4, FS_HARD_LINK = 5 };

/* fs_read's flags. FS_ONE_NAME: refuse a file that has other names (hard
 * links): a candidate's or a task's file must be its folder's own, not a
 * second name of a file elsewhere on the host. */
enum { FS_ONE_NAME = 1 };

/* Reads the regular file path into a malloc'd buffer (NUL-terminated; *len
 * excludes the NUL). Refused with KS_EINVAL and a message naming the path
 * and the reason: a symbolic link, a folder, a FIFO, a device, a socket,
 * more than cap bytes (cap 0: 64 MiB), or, with FS_ONE_NAME, several names.
 * KS_ENOTFOUND when it does not exist. */
int fs_read(const char *path, size_t cap, int flags, char **buf, size_t *len, ks_status *st);

/* Makes a new folder, mode 0700, named <tmp>/<prefix>XXXXXX where <tmp> is
 * $TMPDIR or /tmp; the path goes into out. */
int fs_mkdtemp(const char *prefix, char *out, size_t n, ks_status *st);

/* Makes a new empty file, mode 0600, named <tmp>/<prefix>XXXXXX (as
 * fs_mkdtemp); the path goes into out. */
int fs_mkstemp(const char *prefix, char *out, size_t n, ks_status *st);

/* Removes path and, when it is a folder, everything under it, without
 * following symbolic links and without leaving path's file system. A
 * missing path is KS_OK. */
int fs_remove_tree(const char *path, ks_status *st);

/* realpath(3) into out. KS_ENOTFOUND when a component is missing. */
int fs_realpath(const char *path, char *out, size_t n, ks_status *st);

/* mkdir -p with mode 0777 (less the umask). KS_OK when it exists already
 * as a folder. */
int fs_mkdirs(const char *path, ks_status *st);

/* An exclusive lock on one slot of lock file path (created, mode 0644):
 * slot is chosen from key, so that holders of different keys do not
 * collide (short of a hash collision among 65536 slots). The lock is an
 * open-file-description lock (F_OFD_SETLK): it belongs to this handle, not
 * to the process, so it is released when the handle is closed or the
 * process dies, kill -9 included; a stale lock cannot outlive its holder.
 * The holder writes `note` (one line, at most FS_LOCK_NOTE bytes, for
 * example "pid 123 on host since ...") into its slot. When the slot is
 * held elsewhere: KS_EIO with st->sub = EAGAIN and the holder's note in
 * held_by (when held_by is not NULL). *fd is the handle; release it with
 * fs_unlock. */
#define FS_LOCK_NOTE 200
int fs_lock(const char *path, const char *key, const char *note, int *fd, char *held_by,
            size_t held_n, ks_status *st);
/* The same, waiting until the slot is free (for turns on a shared
 * resource, such as the exclusive stages of workers sharing a GPU). */
int fs_lock_wait(const char *path, const char *key, const char *note, int *fd, ks_status *st);
void fs_unlock(int fd);

/* A file being written: fd is a new file beside path (same folder, a
 * random hidden name, made with O_CREAT | O_EXCL | O_NOFOLLOW so that no
 * link planted under that name is followed), renamed over path by
 * fs_commit. Whatever lies at path is replaced by the rename and never
 * opened: a symbolic link there stays pointing where it pointed, and what
 * it points to is untouched. The file gets mode 0666 less the umask. */
typedef struct fs_writer {
    int fd;      /* -1 once committed or aborted */
    char *path;  /* the target */
    char *tmp;   /* the new file's name until it is renamed */
} fs_writer;

/* Starts writing path. KS_EINVAL when path is a folder; KS_EIO when its
 * folder cannot hold a new file. */
int fs_create(const char *path, fs_writer *w, ks_status *st);
/* Appends n bytes to the new file. */
int fs_writer_write(fs_writer *w, const void *p, size_t n, ks_status *st);
/* Flushes the new file to disk (fsync), renames it over the target and
 * flushes the folder; on failure the new file is removed and the target is
 * as it was. Ends w either way. */
int fs_commit(fs_writer *w, ks_status *st);
/* Removes the new file and ends w (nothing at the target changes). Safe to
 * call on an ended writer. */
void fs_abort(fs_writer *w);

/* path's whole content, written as above (fs_create, fs_writer_write,
 * fs_commit). */
int fs_write(const char *path, const void *p, size_t n, ks_status *st);

/* Appends n bytes to path, made (mode 0666 less the umask) when missing.
 * Refused with KS_EINVAL when path is a symbolic link or not a regular file:
 * a log is never written through a link. */
int fs_append(const char *path, const void *p, size_t n, ks_status *st);

/* KS_OK when path is not a symbolic link (missing is fine); KS_EINVAL
 * naming path otherwise. For files that another library creates beside
 * klab's, such as SQLite's -wal and -shm. */
int fs_refuse_link(const char *path, ks_status *st);

#endif
