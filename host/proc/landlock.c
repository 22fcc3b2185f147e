/* landlock.c: reading held to some folders, through Landlock (see landlock.h). */
#include "proc/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
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

int landlock_read_beneath(const char *const *paths, int n, ks_status *st)
{
    struct landlock_ruleset_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.handled_access_fs = READ_RIGHTS;
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (rs < 0) {
        if (errno == ENOSYS || errno == EOPNOTSUPP)
            return ks_fail(st, KS_EUNSUPPORTED, errno, "this kernel has no Landlock (%s)", strerror(errno));
        return ks_fail(st, KS_EIO, errno, "landlock_create_ruleset: %s", strerror(errno));
    }
    int rc = KS_OK;
    for (int i = 0; i < n && rc == KS_OK; i++) {
        int fd = open(paths[i], O_PATH | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat sb;
        struct landlock_path_beneath_attr pb;
        memset(&pb, 0, sizeof pb);
        pb.parent_fd = fd;
        pb.allowed_access = (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) ? READ_RIGHTS
                                                                            : (uint64_t)LANDLOCK_ACCESS_FS_READ_FILE;
        if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) != 0)
            rc = ks_fail(st, KS_EIO, errno, "landlock_add_rule(%s): %s", paths[i], strerror(errno));
        close(fd);
    }
    if (rc == KS_OK && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        rc = ks_fail(st, KS_EIO, errno, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
    if (rc == KS_OK && syscall(SYS_landlock_restrict_self, rs, 0) != 0)
        rc = ks_fail(st, KS_EIO, errno, "landlock_restrict_self: %s", strerror(errno));
    close(rs);
    return rc;
}

int landlock_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v > 0 ? (int)v : 0;
}
