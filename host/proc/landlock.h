/*
 * landlock.h: holding a process to reading only some folders.
 *
 * Landlock (Linux 5.13 and later) lets an unprivileged process give up
 * rights for good: after landlock_read_beneath, this process and its
 * future children can open for reading only files beneath the given paths
 * (and list only folders beneath them). Writing, running programs and
 * looking a file up (stat) are left as they were. klab's NVRTC child uses
 * it so that candidate code cannot make the compiler open any file of the
 * host outside the toolkit and the system's libraries, however the
 * preprocessor is steered (a __has_include spelled by token pasting, for
 * one).
 */
#ifndef KLAB_HOST_LANDLOCK_H
#define KLAB_HOST_LANDLOCK_H

#include "base/status.h"

/* Restricts reading to beneath paths[0..n) (folders, or single files);
 * paths that do not exist are left out. KS_OK; KS_EUNSUPPORTED when the
 * kernel has no Landlock (nothing is restricted then); another code when a
 * step failed (nothing is restricted either). */
int landlock_read_beneath(const char *const *paths, int n, ks_status *st);

/* What a process keeps beneath one path (landlock_restrict). */
enum {
    LANDLOCK_READ = 1,  /* read files, list folders */
    LANDLOCK_WRITE = 2, /* write, truncate, make and remove files and folders */
    LANDLOCK_EXEC = 4   /* run the file as a program (or as a program's loader) */
};
typedef struct landlock_path {
    const char *path;   /* a folder or a single file; one that is missing is left out */
    unsigned rights;    /* LANDLOCK_READ | ... */
} landlock_path;

/* Holds this process and its future children to paths[0..n): each file
 * access the kernel's Landlock knows is refused anywhere else, and where
 * it has them (ABI 4 and 6), TCP binds and connections, abstract UNIX
 * sockets and signals to processes outside this one's domain are refused
 * too. Same codes as landlock_read_beneath. */
int landlock_restrict(const landlock_path *paths, int n, ks_status *st);

/* The kernel's Landlock ABI version (1, 2, ...), or 0 without Landlock. */
int landlock_abi(void);

#endif
