/* frame.c: blocking frame I/O over pipes and sockets (see frame.h). */
#include "proc/frame.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

/* Writes all n bytes; send(MSG_NOSIGNAL) first so that a socket peer that went
 * away is an error and not a signal, write() for anything that is not a socket. */
static int write_all(int fd, const unsigned char *p, size_t n, ks_status *st)
{
    int use_send = 1;
    while (n > 0) {
        ssize_t k;
        if (use_send) {
            k = send(fd, p, n, MSG_NOSIGNAL);
            if (k < 0 && errno == ENOTSOCK) {
                use_send = 0;
                continue;
            }
        } else {
            k = write(fd, p, n);
        }
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* A non-blocking fd: wait until it drains rather than spin. */
                struct pollfd pf = {.fd = fd, .events = POLLOUT};
                if (poll(&pf, 1, -1) < 0 && errno != EINTR)
                    return ks_fail(st, KS_EIO, errno, "frame write: poll: %s", strerror(errno));
                continue;
            }
            return ks_fail(st, KS_EIO, errno, "frame write: %s", strerror(errno));
        }
        p += k;
        n -= (size_t)k;
    }
    return KS_OK;
}

int frame_write(int fd, const void *buf, size_t n, ks_status *st)
{
    if (n > FRAME_MAX)
        return ks_fail(st, KS_EINVAL, 0, "frame of %zu bytes exceeds the %zu-byte limit", n,
                       FRAME_MAX);
    if (n > 0 && buf == NULL)
        return ks_fail(st, KS_EINVAL, 0, "frame write: NULL buffer");
    unsigned char hdr[FRAME_HDR];
    frame_put_len(hdr, (uint32_t)n);
    int rc = write_all(fd, hdr, FRAME_HDR, st);
    if (rc == KS_OK && n > 0)
        rc = write_all(fd, buf, n, st);
    return rc;
}

/* Waits until fd is readable or the deadline passes (deadline < 0: forever). */
static int wait_readable(int fd, double deadline, ks_status *st)
{
    for (;;) {
        int ms = -1;
        if (deadline >= 0) {
            double left = deadline - clock_now();
            if (left <= 0)
                return ks_fail(st, KS_ETIMEOUT, 0, "frame read: deadline passed");
            ms = (int)ceil(left * 1000.0);
        }
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int k = poll(&pf, 1, ms);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return ks_fail(st, KS_EIO, errno, "frame read: poll: %s", strerror(errno));
        }
        if (k > 0)
            return KS_OK; /* readable, hung up or in error: read() tells which */
    }
}

/* Reads exactly n bytes. *got counts what arrived, so the caller can tell a
 * clean end of stream (0 bytes) from a truncated one. */
static int read_all(int fd, unsigned char *p, size_t n, double deadline, size_t *got,
                    ks_status *st)
{
    *got = 0;
    while (*got < n) {
        int rc = wait_readable(fd, deadline, st);
        if (rc != KS_OK)
            return rc;
        ssize_t k = read(fd, p + *got, n - *got);
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return ks_fail(st, KS_EIO, errno, "frame read: %s", strerror(errno));
        }
        if (k == 0)
            return KS_OK; /* end of stream; *got < n tells the caller */
        *got += (size_t)k;
    }
    return KS_OK;
}

int frame_read(int fd, double deadline, void **payload, size_t *len, int *eof, ks_status *st)
{
    *payload = NULL;
    *len = 0;
    if (eof)
        *eof = 0;
    unsigned char hdr[FRAME_HDR];
    size_t got;
    int rc = read_all(fd, hdr, FRAME_HDR, deadline, &got, st);
    if (rc != KS_OK)
        return rc;
    if (got == 0) {
        if (eof) {
            *eof = 1;
            return KS_OK;
        }
        return ks_fail(st, KS_EIO, 0, "frame read: end of stream");
    }
    if (got < FRAME_HDR)
        return ks_fail(st, KS_EPROTO, 0, "frame read: end of stream inside a frame header");
    uint32_t n = frame_get_len(hdr);
    if ((size_t)n > FRAME_MAX)
        return ks_fail(st, KS_EPROTO, 0, "frame read: length %u exceeds the %zu-byte limit", n,
                       FRAME_MAX);
    unsigned char *buf = malloc((size_t)n + 1);
    if (buf == NULL)
        return ks_fail(st, KS_ENOMEM, 0, "frame read: cannot allocate %u bytes", n);
    rc = read_all(fd, buf, n, deadline, &got, st);
    if (rc != KS_OK) {
        free(buf);
        return rc;
    }
    if (got < n) {
        free(buf);
        return ks_fail(st, KS_EPROTO, 0, "frame read: end of stream after %zu of %u bytes", got,
                       n);
    }
    buf[n] = '\0';
    *payload = buf;
    *len = n;
    return KS_OK;
}
