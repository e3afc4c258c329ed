/*
 * The binary half of a patch: a "GIT binary patch" literal hunk, as
 * `git diff --binary` writes one and `git apply` reads it: the length,
 * the data as a zlib stream in git's base85, 52 bytes a line. cordon has
 * no zlib, so the stream is made of stored (uncompressed) deflate blocks:
 * bigger than git's, but any inflater takes it.
 */
#include "binary.h"

#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BASE85_LINE 52 /* bytes of data per line of a binary literal */
#define STORED_MAX 65535 /* bytes in one stored deflate block */

static uint32_t
adler32(const unsigned char *p, size_t n)
{
	uint32_t a = 1, b = 0;

	while (n > 0) {
		/* 5552 bytes is the most that cannot overflow b. */
		size_t k = n < 5552 ? n : 5552;

		n -= k;
		while (k-- > 0) {
			a += *p++;
			b += a;
		}
		a %= 65521;
		b %= 65521;
	}
	return b << 16 | a;
}

/*
 * data as a zlib stream (RFC 1950) of stored deflate blocks (RFC 1951,
 * BTYPE 00): the 2-byte header, blocks of at most 65535 bytes each with
 * LEN and its complement, the last one flagged final, and the Adler-32
 * of the data, big-endian.
 */
static int
zlib_stored(const unsigned char *data, size_t len, unsigned char **ret,
    size_t *ret_len)
{
	size_t blocks = len == 0 ? 1 : (len - 1) / STORED_MAX + 1;
	size_t size, off = 0;
	unsigned char *z, *p;
	uint32_t sum;

	if (len > SIZE_MAX / 2)
		return -E2BIG;
	size = 2 + 5 * blocks + len + 4;
	z = malloc(size);
	if (z == NULL)
		return -ENOMEM;
	p = z;
	*p++ = 0x78; /* deflate, 32K window */
	*p++ = 0x01; /* no dictionary, fastest; (0x78 << 8 | 0x01) % 31 == 0 */
	for (size_t i = 0; i < blocks; i++) {
		size_t n = len - off < STORED_MAX ? len - off : STORED_MAX;

		*p++ = i + 1 == blocks ? 1 : 0; /* BFINAL, BTYPE 00 */
		*p++ = (unsigned char)(n & 0xff);
		*p++ = (unsigned char)(n >> 8);
		*p++ = (unsigned char)(~n & 0xff);
		*p++ = (unsigned char)((~n >> 8) & 0xff);
		if (n > 0)
			memcpy(p, data + off, n);
		p += n;
		off += n;
	}
	sum = adler32(data, len);
	*p++ = (unsigned char)(sum >> 24);
	*p++ = (unsigned char)(sum >> 16);
	*p++ = (unsigned char)(sum >> 8);
	*p++ = (unsigned char)sum;
	*ret = z;
	*ret_len = (size_t)(p - z);
	return 0;
}

/* git's base85: each 4 bytes (the last group padded with zeros) as 5
 * characters, most significant first. Writes 5 * ceil(n / 4) chars. */
static size_t
encode85(char *dst, const unsigned char *src, size_t n)
{
	static const char en85[] = "0123456789"
				   "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "abcdefghijklmnopqrstuvwxyz"
				   "!#$%&()*+-;<=>?@^_`{|}~";
	size_t w = 0;

	while (n > 0) {
		uint32_t acc = 0;

		for (int shift = 24; shift >= 0; shift -= 8) {
			acc |= (uint32_t)*src++ << shift;
			if (--n == 0)
				break;
		}
		for (int i = 4; i >= 0; i--) {
			dst[w + (size_t)i] = en85[acc % 85];
			acc /= 85;
		}
		w += 5;
	}
	return w;
}

/* "literal <len>", the base85 lines of the zlib stream, a blank line. */
int
binary_literal(struct buf *out, const unsigned char *data, size_t len)
{
	_cleanup_free_ unsigned char *z = NULL;
	size_t z_len;
	int r;

	r = buf_printf(out, "literal %zu\n", len);
	if (r < 0)
		return r;
	r = zlib_stored(data, len, &z, &z_len);
	if (r < 0)
		return r;
	for (size_t off = 0; off < z_len; off += BASE85_LINE) {
		char line[1 + BASE85_LINE / 4 * 5 + 1];
		size_t n =
		    z_len - off < BASE85_LINE ? z_len - off : BASE85_LINE;
		size_t w;

		line[0] = n <= 26 ? (char)('A' + n - 1) : (char)('a' + n - 27);
		w = 1 + encode85(line + 1, z + off, n);
		line[w++] = '\n';
		r = buf_append(out, line, w);
		if (r < 0)
			return r;
	}
	return buf_append(out, "\n", 1);
}
