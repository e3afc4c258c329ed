/*
 * The capability token format: "crd_", 32 base62 characters drawn from
 * RAND_bytes, then 6 base62 characters of the CRC32 of those 32. The
 * checksum lets a secret scanner match crd_[0-9A-Za-z]{38} and lets us
 * refuse a mistyped or made-up token before any database read.
 */
#ifndef CORDON_TOKEN_H
#define CORDON_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TOKEN_PREFIX "crd_"
#define TOKEN_PREFIX_LEN 4
#define TOKEN_BODY_LEN 32
#define TOKEN_CRC_LEN 6
#define TOKEN_LEN (TOKEN_PREFIX_LEN + TOKEN_BODY_LEN + TOKEN_CRC_LEN)

/* Writes a fresh token and its NUL into out: 0, or -EIO when the CSPRNG
 * fails (the caller must then refuse to mint). */
int token_generate(char out[TOKEN_LEN + 1]);

/* Writes n random base62 characters and a NUL into out (n + 1 bytes):
 * 0, or -EIO when the CSPRNG fails. For identifiers (job_..., tok_...). */
int token_random(char *out, size_t n);

/*
 * Checks that s (len bytes, no NUL needed) is a well-formed token: 0;
 * -EINVAL for the wrong length, prefix or alphabet; -EBADMSG when the
 * shape is right and the checksum is not.
 */
int token_parse(const char *s, size_t len);

/* CRC32 (IEEE 802.3, as zlib computes it) of n bytes. */
uint32_t token_crc32(const void *p, size_t n);

/* A character of a token's body: [0-9A-Za-z]. */
bool token_is_base62(char c);

/* The offset of the first token shape in s[0..n): "crd_" and 38 base62
 * characters, whatever comes before or after them (a token glued to a
 * letter is still a token to whoever cuts it out). The checksum is not
 * checked, so a typo is found too. -1 when there is none. */
ssize_t token_find(const char *s, size_t n);

/* Writes the 6-character base62 checksum of body into out (no NUL). */
void token_checksum(const char body[TOKEN_BODY_LEN], char out[TOKEN_CRC_LEN]);

#endif
