/* random.c: bytes from the operating system's generator (see random.h). */
#include "base/random.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

int random_bytes(void *buf, size_t n, ks_status *st)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        break;
    }
    if (got == n)
        return KS_OK;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ks_fail(st, KS_EIO, errno, "no random bytes: getrandom and /dev/urandom failed (%s)", strerror(errno));
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    return got == n ? KS_OK : ks_fail(st, KS_EIO, 0, "no random bytes: /dev/urandom ended early");
}
