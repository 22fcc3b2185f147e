/* seccomp.c: a filter of system calls that fail (see seccomp.h). */
#include "proc/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#define X32_BIT 0x40000000u
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp.c: add this architecture's AUDIT_ARCH"
#endif

#define STMT(code, k) ((struct sock_filter)BPF_STMT(code, k))
#define JUMP(code, k, jt, jf) ((struct sock_filter)BPF_JUMP(code, k, jt, jf))

/* The filter's records (n * 5 + 8 at most); returns how many. */
static int build(const seccomp_rule *rules, int n, struct sock_filter *prog)
{
    int k = 0;
    prog[k++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    prog[k++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0);
    /* Another ABI's calls (i386 on x86-64) have other numbers: none pass. */
    prog[k++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
    prog[k++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#ifdef X32_BIT
    prog[k++] = JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_BIT, 0, 1);
    prog[k++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
#endif
    for (int i = 0; i < n; i++) {
        const seccomp_rule *r = &rules[i];
        if (r->nr < 0)
            continue;
        unsigned ret = SECCOMP_RET_ERRNO | ((unsigned)r->err & SECCOMP_RET_DATA);
        if (r->flags_arg < 0) {
            prog[k++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)r->nr, 0, 1);
            prog[k++] = STMT(BPF_RET | BPF_K, ret);
        } else {
            /* The low 32 bits of the argument (both targets are little-endian). */
            prog[k++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)r->nr, 0, 4);
            prog[k++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[r->flags_arg]));
            if (r->test == SECCOMP_IF_ANY_BIT)
                prog[k++] = JUMP(BPF_JMP | BPF_JSET | BPF_K, r->flags_mask, 0, 1);
            else /* fail when the test the jump makes is false */
                prog[k++] = JUMP(BPF_JMP | (r->test == SECCOMP_IF_NO_BIT ? BPF_JSET : BPF_JEQ) | BPF_K,
                                 r->flags_mask, 1, 0);
            prog[k++] = STMT(BPF_RET | BPF_K, ret);
            prog[k++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        }
    }
    prog[k++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    return k;
}

int seccomp_program(const seccomp_rule *rules, int n, unsigned char **out, size_t *len, ks_status *st)
{
    struct sock_filter *prog = calloc((size_t)n * 5 + 8, sizeof *prog);
    if (!prog)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory");
    *len = (size_t)build(rules, n, prog) * sizeof *prog;
    *out = (unsigned char *)prog;
    return KS_OK;
}

int seccomp_refuse(const seccomp_rule *rules, int n, ks_status *st)
{
    struct sock_filter *prog = calloc((size_t)n * 5 + 8, sizeof *prog);
    if (!prog)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory");
    int k = build(rules, n, prog);
    struct sock_fprog fp = {(unsigned short)k, prog};
    int rc = KS_OK;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        rc = ks_fail(st, KS_EIO, errno, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
    else if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp, 0, 0) != 0)
        rc = ks_fail(st, errno == EINVAL || errno == ENOSYS ? KS_EUNSUPPORTED : KS_EIO, errno,
                     "seccomp filter: %s", strerror(errno));
    free(prog);
    return rc;
}

int seccomp_read_only_rules(seccomp_rule *out)
{
    unsigned writes = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
#ifdef O_TMPFILE
    writes |= O_TMPFILE;
#endif
    const long plain[] = {
#ifdef __NR_creat
        __NR_creat,
#endif
#ifdef __NR_mkdir
        __NR_mkdir,
#endif
#ifdef __NR_rmdir
        __NR_rmdir,
#endif
#ifdef __NR_unlink
        __NR_unlink,
#endif
#ifdef __NR_rename
        __NR_rename,
#endif
#ifdef __NR_link
        __NR_link,
#endif
#ifdef __NR_symlink
        __NR_symlink,
#endif
#ifdef __NR_chmod
        __NR_chmod,
#endif
#ifdef __NR_chown
        __NR_chown,
#endif
#ifdef __NR_lchown
        __NR_lchown,
#endif
#ifdef __NR_mknod
        __NR_mknod,
#endif
        __NR_mkdirat, __NR_unlinkat, __NR_renameat, __NR_renameat2, __NR_linkat, __NR_symlinkat,
        __NR_truncate, __NR_fchmodat, __NR_fchownat, __NR_mknodat, __NR_execve, __NR_execveat,
        __NR_socket,
    };
    int n = 0;
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        out[n++] = (seccomp_rule){plain[i], EACCES, -1, 0, SECCOMP_IF_ANY_BIT};
#ifdef __NR_open
    out[n++] = (seccomp_rule){__NR_open, EACCES, 1, writes, SECCOMP_IF_ANY_BIT};
#endif
    out[n++] = (seccomp_rule){__NR_openat, EACCES, 2, writes, SECCOMP_IF_ANY_BIT};
#ifdef __NR_openat2
    /* Its flags live in a structure a filter cannot read. */
    out[n++] = (seccomp_rule){__NR_openat2, ENOSYS, -1, 0, SECCOMP_IF_ANY_BIT};
#else
    out[n++] = (seccomp_rule){437, ENOSYS, -1, 0, SECCOMP_IF_ANY_BIT};
#endif
    return n;
}
