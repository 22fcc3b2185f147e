/* hmac.c: HMAC-SHA256; see hmac.h. */
#include "base/hmac.h"

#include <string.h>

#define BLOCK 64 /* SHA-256's block size */

void hmac_sha256_init(hmac_sha256_ctx *c, const void *key, size_t keylen)
{
    unsigned char k[BLOCK] = {0}, pad[BLOCK];
    /* A key longer than a block is hashed first (RFC 2104). */
    if (keylen > BLOCK)
        sha256(key, keylen, k);
    else if (keylen)
        memcpy(k, key, keylen);
    for (int i = 0; i < BLOCK; i++)
        pad[i] = k[i] ^ 0x36;
    sha256_init(&c->inner);
    sha256_update(&c->inner, pad, BLOCK);
    for (int i = 0; i < BLOCK; i++)
        pad[i] = k[i] ^ 0x5c;
    sha256_init(&c->outer);
    sha256_update(&c->outer, pad, BLOCK);
    memset(k, 0, sizeof k);
    memset(pad, 0, sizeof pad);
}

void hmac_sha256_update(hmac_sha256_ctx *c, const void *data, size_t len)
{
    sha256_update(&c->inner, data, len);
}

void hmac_sha256_final(hmac_sha256_ctx *c, unsigned char out[SHA256_DIGEST_LEN])
{
    unsigned char inner[SHA256_DIGEST_LEN];
    sha256_final(&c->inner, inner);
    sha256_update(&c->outer, inner, sizeof inner);
    sha256_final(&c->outer, out);
    memset(c, 0, sizeof *c);
}

void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len, unsigned char out[SHA256_DIGEST_LEN])
{
    hmac_sha256_ctx c;
    hmac_sha256_init(&c, key, keylen);
    hmac_sha256_update(&c, data, len);
    hmac_sha256_final(&c, out);
}
