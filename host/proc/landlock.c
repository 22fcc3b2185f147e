/* landlock.c: reading held to some folders, through Landlock (see landlock.h). */
#include "proc/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The system call numbers are the same on every architecture klab builds
 * for (they were added after the tables were unified). */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

#define READ_RIGHTS ((uint64_t)(LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR))

/* Rights newer than the system headers may name (ABI 3, 4, 5 and 6). */
#define FS_TRUNCATE (1ULL << 14)
#define FS_IOCTL_DEV (1ULL << 15)
#define NET_BIND_TCP (1ULL << 0)
#define NET_CONNECT_TCP (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX (1ULL << 0)
#define SCOPE_SIGNAL (1ULL << 1)

/* The ruleset attributes as ABI 6 has them; older kernels take a prefix. */
typedef struct ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
} ruleset_attr;

/* The file rights paths[i].rights stand for, on a folder or a file. */
static uint64_t fs_rights(unsigned rights, int dir)
{
    const uint64_t write_rights = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                                  LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |
                                  LANDLOCK_ACCESS_FS_MAKE_REG | FS_TRUNCATE;
    uint64_t allowed = 0;
    if (rights & LANDLOCK_READ)
        allowed |= LANDLOCK_ACCESS_FS_READ_FILE | (dir ? LANDLOCK_ACCESS_FS_READ_DIR : 0);
    if (rights & LANDLOCK_WRITE) /* rights on a folder's entries only apply to folders */
        allowed |= dir ? write_rights : LANDLOCK_ACCESS_FS_WRITE_FILE | FS_TRUNCATE;
    if (rights & LANDLOCK_EXEC)
        allowed |= LANDLOCK_ACCESS_FS_EXECUTE;
    return allowed;
}

/* Makes a ruleset handling what attr[0..size) says, allows paths[0..n)
 * their rights within it, and holds this process to it. */
static int restrict_to(const ruleset_attr *attr, size_t size, const landlock_path *paths, int n, ks_status *st)
{
    int rs = (int)syscall(SYS_landlock_create_ruleset, attr, size, 0);
    if (rs < 0) {
        if (errno == ENOSYS || errno == EOPNOTSUPP)
            return ks_fail(st, KS_EUNSUPPORTED, errno, "this kernel has no Landlock (%s)", strerror(errno));
        return ks_fail(st, KS_EIO, errno, "landlock_create_ruleset: %s", strerror(errno));
    }
    int rc = KS_OK;
    for (int i = 0; i < n && rc == KS_OK; i++) {
        int fd = open(paths[i].path, O_PATH | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat sb;
        struct landlock_path_beneath_attr pb;
        memset(&pb, 0, sizeof pb);
        pb.parent_fd = fd;
        pb.allowed_access = fs_rights(paths[i].rights, fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) &
                            attr->handled_access_fs;
        if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) != 0)
            rc = ks_fail(st, KS_EIO, errno, "landlock_add_rule(%s): %s", paths[i].path, strerror(errno));
        close(fd);
    }
    if (rc == KS_OK && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        rc = ks_fail(st, KS_EIO, errno, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
    if (rc == KS_OK && syscall(SYS_landlock_restrict_self, rs, 0) != 0)
        rc = ks_fail(st, KS_EIO, errno, "landlock_restrict_self: %s", strerror(errno));
    close(rs);
    return rc;
}

int landlock_read_beneath(const char *const *paths, int n, ks_status *st)
{
    landlock_path *lp = calloc(n > 0 ? (size_t)n : 1, sizeof *lp);
    if (!lp)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory");
    for (int i = 0; i < n; i++)
        lp[i] = (landlock_path){paths[i], LANDLOCK_READ};
    ruleset_attr attr = {READ_RIGHTS, 0, 0};
    int rc = restrict_to(&attr, sizeof attr.handled_access_fs, lp, n, st);
    free(lp);
    return rc;
}

int landlock_restrict(const landlock_path *paths, int n, ks_status *st)
{
    int abi = landlock_abi();
    if (abi <= 0)
        return ks_fail(st, KS_EUNSUPPORTED, ENOSYS, "this kernel has no Landlock");
    ruleset_attr attr = {(1ULL << 13) - 1, 0, 0}; /* ABI 1: EXECUTE .. MAKE_SYM */
    if (abi >= 2)
        attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        attr.handled_access_fs |= FS_TRUNCATE;
    if (abi >= 5)
        attr.handled_access_fs |= FS_IOCTL_DEV;
    size_t size = sizeof attr.handled_access_fs;
    if (abi >= 4) {
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP;
        size += sizeof attr.handled_access_net;
    }
    if (abi >= 6) {
        attr.scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL;
        size += sizeof attr.scoped;
    }
    return restrict_to(&attr, size, paths, n, st);
}

int landlock_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v > 0 ? (int)v : 0;
}
