/*
 * crd_ tokens: generation from the OpenSSL CSPRNG without modulo bias, and
 * the offline shape and checksum check. The HMAC that the broker stores is
 * the broker's business, not this file's.
 */
#include "token.h"

#include <errno.h>
#include <openssl/rand.h>
#include <string.h>

static const char base62[] =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

uint32_t
token_crc32(const void *p, size_t n)
{
	/* Four bits a step (the polynomial's 16 remainders): every token
	 * a proxy reads is checked, a bit a step took 0.25 us a token. */
	static const uint32_t rem[16] = { 0x00000000u, 0x1db71064u, 0x3b6e20c8u,
		0x26d930acu, 0x76dc4190u, 0x6b6b51f4u, 0x4db26158u, 0x5005713cu,
		0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu, 0x9b64c2b0u,
		0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu };
	const unsigned char *s = p;
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		crc ^= s[i];
		crc = (crc >> 4) ^ rem[crc & 15u];
		crc = (crc >> 4) ^ rem[crc & 15u];
	}
	return ~crc;
}

void
token_checksum(const char body[TOKEN_BODY_LEN], char out[TOKEN_CRC_LEN])
{
	uint32_t v = token_crc32(body, TOKEN_BODY_LEN);

	/* 62^6 > 2^32, so six digits hold any CRC; most significant first. */
	for (int i = TOKEN_CRC_LEN - 1; i >= 0; i--) {
		out[i] = base62[v % 62];
		v /= 62;
	}
}

int
token_random(char *out, size_t n)
{
	unsigned char rnd[64];
	size_t have = 0;

	while (have < n) {
		if (RAND_bytes(rnd, sizeof(rnd)) != 1)
			return -EIO;
		/* 248 = 4 * 62: bytes at or above it would bias the draw. */
		for (size_t i = 0; i < sizeof(rnd) && have < n; i++)
			if (rnd[i] < 248)
				out[have++] = base62[rnd[i] % 62];
	}
	out[n] = '\0';
	return 0;
}

int
token_generate(char out[TOKEN_LEN + 1])
{
	char *body = out + TOKEN_PREFIX_LEN;
	int r;

	memcpy(out, TOKEN_PREFIX, TOKEN_PREFIX_LEN);
	r = token_random(body, TOKEN_BODY_LEN);
	if (r < 0)
		return r;
	token_checksum(body, out + TOKEN_PREFIX_LEN + TOKEN_BODY_LEN);
	out[TOKEN_LEN] = '\0';
	return 0;
}

bool
token_is_base62(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
	    (c >= 'a' && c <= 'z');
}

ssize_t
token_find(const char *s, size_t n)
{
	for (size_t i = 0; i + TOKEN_LEN <= n; i++) {
		size_t k = TOKEN_PREFIX_LEN;
		if (memcmp(s + i, TOKEN_PREFIX, TOKEN_PREFIX_LEN) != 0)
			continue;
		/* Whatever is glued to either side: a server may cut the
		 * token out of "xcrd_..." or "crd_...9" and use it. */
		while (k < TOKEN_LEN && token_is_base62(s[i + k]))
			k++;
		if (k == TOKEN_LEN)
			return (ssize_t)i;
	}
	return -1;
}

int
token_parse(const char *s, size_t len)
{
	char crc[TOKEN_CRC_LEN];

	if (len != TOKEN_LEN || memcmp(s, TOKEN_PREFIX, TOKEN_PREFIX_LEN) != 0)
		return -EINVAL;
	for (size_t i = TOKEN_PREFIX_LEN; i < TOKEN_LEN; i++)
		if (!token_is_base62(s[i]))
			return -EINVAL;
	token_checksum(s + TOKEN_PREFIX_LEN, crc);
	if (memcmp(crc, s + TOKEN_PREFIX_LEN + TOKEN_BODY_LEN, TOKEN_CRC_LEN) !=
	    0)
		return -EBADMSG;
	return 0;
}
