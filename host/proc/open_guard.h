/*
 * open_guard.h: every file a process opens, checked against the folders it
 * may read.
 *
 * klab defines the C library's functions that take a path (open, openat,
 * fopen, stat and its kin, access, readlink, realpath, opendir, statfs,
 * chdir, mkdir, ...) in its own executable, which exports them (-rdynamic):
 * a library loaded at run time (NVRTC, and the C++ runtime it uses) binds
 * to these definitions before the C library's. Until a process arms the
 * guard they pass every call through unchanged. Once armed (the NVRTC
 * child does so before it compiles candidate code), a path resolves first
 * (links and "..", relative to the working folder or the given descriptor)
 * and is let through only when it lies beneath one of the roots; any other
 * path is absent (ENOENT), present or not, so the compiler can neither read
 * a host file nor learn that one exists; and any write (a write mode, a
 * created, removed or renamed file) is refused (EACCES) everywhere. This
 * holds on every kernel and needs no privilege; Landlock, where the kernel
 * has it, holds the process a second time (proc/landlock.h).
 *
 * The guard sees what dynamically loaded code asks of the C library; it is
 * a policy on a trusted compiler steered by untrusted text (an include name
 * built by macros), not a sandbox for hostile machine code.
 */
#ifndef KLAB_HOST_OPEN_GUARD_H
#define KLAB_HOST_OPEN_GUARD_H

#include "base/status.h"

#define OPEN_GUARD_MAX_ROOTS 8

/* 1 when libraries loaded at run time bind to the guard's definitions
 * (the executable exports them); 0 when they would reach the C library's
 * directly (an executable linked without -rdynamic), so arming could not
 * hold them. */
int open_guard_bound(void);

/* From now on, in this process, paths resolve and must lie beneath one of
 * roots[0..n) (resolved here; roots that do not exist are left out).
 * KS_EINVAL when none is left or n is too large. There is no disarming:
 * arm a child that exits when its work is done. */
int open_guard_arm(const char *const *roots, int n, ks_status *st);

/* What the armed guard did: calls it checked, and paths it refused. The
 * first refused path (as the caller spelled it, cut to fit) is copied into
 * first[0..n) when first is not NULL. */
void open_guard_counts(long *checked, long *refused, char *first, size_t n);

#endif
