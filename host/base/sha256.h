/*
 * sha256.h: SHA-256 (FIPS 180-4), written for klab's content hashes.
 *
 * Used for the compile cache key and for naming cubins by content. Not a
 * security boundary; correctness is tested on the standard vectors.
 */
#ifndef KLAB_HOST_SHA256_H
#define KLAB_HOST_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32
#define SHA256_HEX_LEN 64   /* without the terminating NUL */

typedef struct sha256_ctx {
    uint32_t h[8];          /* running hash value H(i) */
    uint64_t nbytes;        /* message length so far, in bytes */
    unsigned char buf[64];  /* the partial block */
    size_t nbuf;            /* bytes used in buf */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
/* Finishes the hash; c must be re-initialised before further use. */
void sha256_final(sha256_ctx *c, unsigned char out[SHA256_DIGEST_LEN]);

/* One-shot helpers. hex receives 64 lowercase hex digits and a NUL. */
void sha256(const void *data, size_t len, unsigned char out[SHA256_DIGEST_LEN]);
void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);
void sha256_tohex(const unsigned char digest[SHA256_DIGEST_LEN], char hex[SHA256_HEX_LEN + 1]);

#endif
