/*
 * seccomp.h: system calls a process gives up for good.
 *
 * A seccomp filter (Linux 3.5 and later, no privilege: the process sets
 * no_new_privs first) makes the listed system calls fail with the given
 * errno in this process and every child it starts. klab's NVRTC child
 * gives up running programs and changing files (proc/open_guard.h checks
 * what it reads); the tests use it to take Landlock away from klab, as a
 * container's seccomp profile or an old kernel would.
 */
#ifndef KLAB_HOST_SECCOMP_H
#define KLAB_HOST_SECCOMP_H

#include "base/status.h"

/* When a rule with flags_arg >= 0 fails its call, by the low 32 bits of
 * that argument (the default, 0: when they have a bit of flags_mask). */
typedef enum {
    SECCOMP_IF_ANY_BIT = 0, /* arg & flags_mask != 0 */
    SECCOMP_IF_NO_BIT,      /* arg & flags_mask == 0 */
    SECCOMP_IF_NOT_EQUAL    /* arg != flags_mask */
} seccomp_test;

typedef struct seccomp_rule {
    long nr;           /* system call number (this architecture's); < 0: unused entry */
    int err;           /* errno it fails with */
    int flags_arg;     /* >= 0: fail only when argument flags_arg passes `test` */
    unsigned flags_mask;
    seccomp_test test;
} seccomp_rule;

/* Installs a filter with rules[0..n); every other call goes through.
 * KS_EUNSUPPORTED when the kernel has no seccomp filters. */
int seccomp_refuse(const seccomp_rule *rules, int n, ks_status *st);

/* The filter seccomp_refuse installs, as the kernel's program bytes (struct
 * sock_filter records, 8 bytes each), for a process that installs it
 * itself later (klab's Triton child does, after exec). *out is malloc'd. */
int seccomp_program(const seccomp_rule *rules, int n, unsigned char **out, size_t *len, ks_status *st);

/* The rules that keep a process from running a program or writing a file
 * (open and openat with a write flag, creating, removing, renaming,
 * linking, truncating, executing); fills out (room for at least 40) and
 * returns how many. */
int seccomp_read_only_rules(seccomp_rule *out);

#endif
