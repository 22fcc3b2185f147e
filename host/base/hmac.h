/*
 * hmac.h: HMAC-SHA256 (RFC 2104 over FIPS 180-4), on base/sha256.
 *
 * The store marks each evaluation it writes with an HMAC under a key only
 * this machine's user holds (store/mark.c), so that a row someone else
 * wrote (a forged "passed" at 42x in a shared store) is never taken for a
 * measurement made here. Tested on RFC 4231's vectors.
 */
#ifndef KLAB_HOST_HMAC_H
#define KLAB_HOST_HMAC_H

#include <stddef.h>

#include "base/sha256.h"

typedef struct hmac_sha256_ctx {
    sha256_ctx inner, outer; /* keyed with the key xor ipad and opad */
} hmac_sha256_ctx;

void hmac_sha256_init(hmac_sha256_ctx *c, const void *key, size_t keylen);
void hmac_sha256_update(hmac_sha256_ctx *c, const void *data, size_t len);
void hmac_sha256_final(hmac_sha256_ctx *c, unsigned char out[SHA256_DIGEST_LEN]);

/* One shot. */
void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len, unsigned char out[SHA256_DIGEST_LEN]);

#endif
