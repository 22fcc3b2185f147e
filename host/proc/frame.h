/*
 * frame.h: the framed message protocol between a supervisor and its workers.
 *
 * A frame is a 4-byte little-endian payload length followed by that many
 * payload bytes. Payloads larger than FRAME_MAX are refused on both sides
 * (KS_EPROTO when read, KS_EINVAL when asked to write), so a corrupt or
 * hostile length cannot make the reader allocate gigabytes.
 *
 * These functions block (reads optionally until a deadline) and retry on
 * EINTR and on partial reads and writes. The supervisor's non-blocking,
 * multiplexed loop lives in worker.c and uses only the length helpers.
 *
 * SIGPIPE: frame_write uses send(MSG_NOSIGNAL) when fd is a socket, so a
 * closed peer is KS_EIO (sub = EPIPE) and no signal. On a pipe it falls back
 * to write(), where a closed reader raises SIGPIPE as usual; this module
 * never changes signal dispositions.
 */
#ifndef KLAB_HOST_FRAME_H
#define KLAB_HOST_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define FRAME_HDR 4u
#define FRAME_MAX ((size_t)256 << 20) /* 256 MiB */

/* Writes n as the 4-byte little-endian frame header. */
static inline void frame_put_len(unsigned char hdr[FRAME_HDR], uint32_t n)
{
    hdr[0] = (unsigned char)(n & 0xff);
    hdr[1] = (unsigned char)((n >> 8) & 0xff);
    hdr[2] = (unsigned char)((n >> 16) & 0xff);
    hdr[3] = (unsigned char)((n >> 24) & 0xff);
}

/* Reads a 4-byte little-endian frame header. */
static inline uint32_t frame_get_len(const unsigned char hdr[FRAME_HDR])
{
    return (uint32_t)hdr[0] | ((uint32_t)hdr[1] << 8) | ((uint32_t)hdr[2] << 16) |
           ((uint32_t)hdr[3] << 24);
}


/* Writes one frame (header + n bytes of buf) to fd, looping over partial
 * writes and EINTR. KS_EINVAL when n > FRAME_MAX, KS_EIO (sub = errno) on a
 * write error, including a closed peer (EPIPE). */
int frame_write(int fd, const void *buf, size_t n, ks_status *st);

/* Reads one frame from fd. deadline is an absolute clock_now() time
 * (base/clock.h), or a negative number for none. On success *payload is a malloc'd buffer of *len
 * bytes plus a terminating NUL (never NULL, even for len 0) that the caller
 * frees, and *eof is 0. At end of stream before any byte of a frame, returns
 * KS_OK with *eof = 1, *payload = NULL, *len = 0. Failures: KS_ETIMEOUT (the
 * deadline passed; bytes already consumed are lost, so the stream is then
 * unusable), KS_EPROTO (length over FRAME_MAX, or end of stream inside a
 * frame), KS_ENOMEM, KS_EIO (sub = errno). eof may be NULL when the caller
 * treats end of stream as an error (then it is KS_EIO with sub 0). */
int frame_read(int fd, double deadline, void **payload, size_t *len, int *eof, ks_status *st);

#endif
