/*
 * Fuzzes the proxy's ClientHello reader. The input is a client's bytes.
 * Properties: the answer on every prefix is -EAGAIN or the answer on the
 * whole, the same name, and once given it stays given, with more bytes
 * appended too; no SNI_READ_MAX bytes answer -EAGAIN; a name is 1 to
 * SNI_MAX visible ASCII bytes, NUL-terminated, and out is "" for any
 * answer but 0; an accepted ClientHello ends with its last record, and
 * its handshake message cut into records of another size (as few or as
 * many as SNI_RECORDS_MAX) gets the same answer and name. Every call gets
 * an exactly-sized copy of its bytes, so that ASan sees an over-read.
 */
#include "fuzz.h"
#include "sni.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define PREFIX_ALL 512 /* inputs up to this long have every prefix tried */

struct answer {
	int r;
	char name[SNI_MAX + 1];
};

/* One parse of data[0..n) from an exactly-sized copy. */
static struct answer
parse_exact(const uint8_t *data, size_t n)
{
	struct answer a;
	uint8_t *copy = malloc(n);
	size_t len;

	FUZZ_ASSERT(copy != NULL || n == 0);
	if (n > 0)
		memcpy(copy, data, n);
	/* Not a string: sni_parse must make it one. */
	memset(a.name, 'Z', sizeof(a.name));
	a.r = sni_parse(copy, n, a.name);
	free(copy);
	FUZZ_ASSERT(
	    a.r == 0 || a.r == -ENOENT || a.r == -EAGAIN || a.r == -EBADMSG);
	if (a.r != 0) {
		FUZZ_ASSERT(a.name[0] == '\0');
		return a;
	}
	len = strnlen(a.name, sizeof(a.name));
	FUZZ_ASSERT(len >= 1 && len <= SNI_MAX);
	for (size_t i = 0; i < len; i++)
		FUZZ_ASSERT((unsigned char)a.name[i] >= 0x21 &&
		    (unsigned char)a.name[i] <= 0x7e);
	return a;
}

static bool
same_answer(const struct answer *a, const struct answer *b)
{
	return a->r == b->r && strcmp(a->name, b->name) == 0;
}

/* data[0..len) with suffix[0..slen) after it: the same final answer. */
static void
check_appended(const uint8_t *data, size_t len, const struct answer *whole,
    const uint8_t *suffix, size_t slen)
{
	uint8_t *more = malloc(len + slen);
	struct answer a;

	FUZZ_ASSERT(more != NULL);
	if (len > 0)
		memcpy(more, data, len);
	memcpy(more + len, suffix, slen);
	a = parse_exact(more, len + slen);
	free(more);
	FUZZ_ASSERT(same_answer(&a, whole));
}

/* No SNI_READ_MAX bytes that start with data leave the reader waiting. */
static void
check_bounded(const uint8_t *data, size_t len)
{
	size_t n = SNI_READ_MAX, at = len;
	uint8_t *big;
	struct answer a;

	if (len >= n)
		return;
	big = malloc(n);
	FUZZ_ASSERT(big != NULL);
	if (len > 0)
		memcpy(big, data, len);
	switch (len % 3) {
	case 0: /* zeros */
		memset(big + len, 0, n - len);
		break;
	case 1: /* the input again and again */
		for (size_t i = len; i < n; i++)
			big[i] = len > 0 ? data[i % len] : 0x16;
		break;
	default: { /* small handshake records of one repeated byte */
		size_t frag = len > 0 ? 1 + data[len - 1] : 1;
		uint8_t fill = len > 0 ? data[len / 2] : 0;

		while (at < n) {
			uint8_t hdr[5] = { 22, 3, 3, (uint8_t)(frag >> 8),
				(uint8_t)frag };
			for (size_t i = 0; i < 5 && at < n; i++)
				big[at++] = hdr[i];
			for (size_t i = 0; i < frag && at < n; i++)
				big[at++] = fill;
		}
		break;
	}
	}
	a = parse_exact(big, n);
	free(big);
	FUZZ_ASSERT(a.r != -EAGAIN);
}

/*
 * The ClientHello accepted in data[0..len), its handshake message taken
 * out of its records and put back in records of frag bytes: the same
 * answer and name, with bytes of another record after it never read.
 */
static void
check_refragment(const uint8_t *data, size_t len, const struct answer *whole)
{
	static const uint8_t ccs[] = { 20, 3, 3, 0, 1, 1 };
	uint8_t *msg, *out;
	size_t mlen = 0, need = SIZE_MAX, at = 0, nrec, frag, o = 0;
	struct answer a;

	/* Every record is a handshake one, the last ends the message. */
	msg = malloc(len);
	FUZZ_ASSERT(msg != NULL);
	while (mlen < need) {
		size_t n;

		FUZZ_ASSERT(
		    at + 5 <= len && data[at] == 22 && data[at + 1] == 3);
		n = (size_t)data[at + 3] << 8 | data[at + 4];
		FUZZ_ASSERT(n > 0 && n <= SNI_RECORD_MAX && at + 5 + n <= len);
		memcpy(msg + mlen, data + at + 5, n);
		mlen += n;
		at += 5 + n;
		if (need == SIZE_MAX && mlen >= 4)
			need = 4 +
			    ((size_t)msg[1] << 16 | (size_t)msg[2] << 8 |
				msg[3]);
		FUZZ_ASSERT(mlen <= need);
	}
	FUZZ_ASSERT(msg[0] == 1 && mlen <= SNI_HELLO_MAX);

	frag = 1 + data[len - 1] % 64;
	if ((mlen + frag - 1) / frag > SNI_RECORDS_MAX)
		frag = (mlen + SNI_RECORDS_MAX - 1) / SNI_RECORDS_MAX;
	/* Every other input, as few records as it takes. */
	if (len % 2 == 0)
		frag = SNI_RECORD_MAX;
	nrec = (mlen + frag - 1) / frag;
	out = malloc(mlen + 5 * nrec + sizeof(ccs));
	FUZZ_ASSERT(out != NULL);
	for (size_t m = 0; m < mlen; m += frag) {
		size_t n = mlen - m < frag ? mlen - m : frag;

		out[o++] = 22;
		out[o++] = data[1];
		out[o++] = data[2];
		out[o++] = (uint8_t)(n >> 8);
		out[o++] = (uint8_t)n;
		memcpy(out + o, msg + m, n);
		o += n;
	}
	memcpy(out + o, ccs, sizeof(ccs));
	a = parse_exact(out, o);
	FUZZ_ASSERT(same_answer(&a, whole));
	a = parse_exact(out, o + sizeof(ccs));
	FUZZ_ASSERT(same_answer(&a, whole));
	free(out);
	free(msg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t junk[] = { 0, 22, 3, 3, 0, 1, 1, 0xff };
	struct answer whole = parse_exact(data, size);
	size_t decided = size + 1; /* the shortest prefix not -EAGAIN */
	size_t step = size <= PREFIX_ALL ? 1 : size / 64;

	/* Every prefix when short; else the ends, halfway, and a spread. */
	for (size_t n = 0; n <= size; n++) {
		struct answer a;

		if (step > 1 && n >= 64 && n + 64 < size && n % step != 0 &&
		    n != size / 2)
			continue;
		a = parse_exact(data, n);
		if (a.r == -EAGAIN) {
			/* Once answered, always answered. */
			FUZZ_ASSERT(decided > size);
			continue;
		}
		FUZZ_ASSERT(same_answer(&a, &whole));
		if (decided > size)
			decided = n;
	}
	if (whole.r == -EAGAIN) {
		FUZZ_ASSERT(size < SNI_READ_MAX);
		check_bounded(data, size);
		return 0;
	}
	FUZZ_ASSERT(decided <= size);
	check_appended(data, size, &whole, junk, sizeof(junk));
	check_appended(data, size, &whole, data, size);
	if (whole.r == 0 || whole.r == -ENOENT)
		check_refragment(data, size, &whole);
	return 0;
}
