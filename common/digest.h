/*
 * SHA-256 as lowercase hex: patch and report digests, canary digests.
 */
#ifndef CORDON_DIGEST_H
#define CORDON_DIGEST_H

#include <stddef.h>

#define SHA256_HEX_LEN 64

/* out gets 64 hex digits and a NUL. */
void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1]);

#endif
