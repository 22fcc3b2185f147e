/* hash.c: the content hashes the store keys its rows by (store.h,
 * "hashing"); plain SHA-256, no database. */
#include "store/store.h"

#include "base/sha256.h"

#include <stdint.h>
#include <string.h>


void store_hash_parts(const char *const *p, const size_t *lens, size_t n,
                      char out[STORE_HASH_HEX + 1])
{
    sha256_ctx c;
    sha256_init(&c);
    for (size_t i = 0; i < n; i++) {
        uint64_t len = p[i] ? (lens ? lens[i] : strlen(p[i])) : UINT64_MAX;
        unsigned char lb[8];
        for (int k = 0; k < 8; k++)
            lb[k] = (unsigned char)(len >> (8 * k));
        sha256_update(&c, lb, 8);
        if (p[i])
            sha256_update(&c, p[i], (size_t)len);
    }
    unsigned char d[SHA256_DIGEST_LEN];
    sha256_final(&c, d);
    sha256_tohex(d, out);
}
