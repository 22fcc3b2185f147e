/*
 * helper_nolandlock.c: runs a program without Landlock.
 *
 *   helper_nolandlock PROGRAM [ARGS...]
 *
 * Installs a seccomp filter under which the three Landlock system calls
 * fail with ENOSYS, as on a kernel before 5.13 or in a container whose
 * seccomp profile lacks them, then runs PROGRAM. The security tests run
 * klab this way to show that what holds its compiler does not rest on
 * Landlock.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc/seccomp.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: helper_nolandlock PROGRAM [ARGS...]\n");
        return 2;
    }
    const seccomp_rule rules[] = {
        {444, ENOSYS, -1, 0, SECCOMP_IF_ANY_BIT}, /* landlock_create_ruleset */
        {445, ENOSYS, -1, 0, SECCOMP_IF_ANY_BIT}, /* landlock_add_rule */
        {446, ENOSYS, -1, 0, SECCOMP_IF_ANY_BIT}, /* landlock_restrict_self */
    };
    ks_status st;
    if (seccomp_refuse(rules, 3, &st) != KS_OK) {
        fprintf(stderr, "helper_nolandlock: %s\n", st.msg);
        return 3;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "helper_nolandlock: %s: %s\n", argv[1], strerror(errno));
    return 127;
}
