/*
 * Fuzzes credential injection's pure parts (proxy/inject.c): the format
 * of a header value (never past its buffer, the value and the format's
 * text exactly) and the reflection scanner fed an answer in pieces of a
 * fuzzed size: the answer keeps its length, and the value never comes
 * out of it raw. Input: one byte of value length (its 0x40 bit: the
 * answer is a chunked body), one of piece size, the value, then the
 * answer (or, with the top bit of the first byte, a format and a value
 * split at the first NUL).
 */
#include "fuzz.h"
#include "inject.h"

#include <stdlib.h>
#include <string.h>

static void
fuzz_format(const uint8_t *data, size_t size)
{
	const char *nul = memchr(data, '\0', size);
	char fmt[600], out[700];
	size_t flen, vlen;

	if (nul == NULL)
		return;
	flen = (size_t)(nul - (const char *)data);
	vlen = size - flen - 1;
	if (flen >= sizeof(fmt))
		return;
	memcpy(fmt, data, flen);
	fmt[flen] = '\0';
	if (inject_format(fmt, nul + 1, vlen, out, sizeof(out)) == 0) {
		const char *hole = strstr(fmt, "{secret}");
		FUZZ_ASSERT(hole != NULL);
		FUZZ_ASSERT(strlen(out) == flen - 8 + vlen);
		FUZZ_ASSERT(memcmp(out, fmt, (size_t)(hole - fmt)) == 0);
		FUZZ_ASSERT(memcmp(out + (hole - fmt), nul + 1, vlen) == 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct inject_scanner s;
	struct buf out = BUF_INIT(1 << 20);
	size_t vlen, step, off, n;

	if (size < 2)
		return 0;
	if (data[0] & 0x80) {
		fuzz_format(data + 1, size - 1);
		return 0;
	}
	vlen = (size_t)(data[0] & 0x3f) + 1;
	step = (size_t)data[1] + 1;
	if (size < 2 + vlen)
		return 0;
	const char *value = (const char *)data + 2;
	const char *text = value + vlen;
	size_t tlen = size - 2 - vlen;

	if (inject_scanner_init(&s, value, vlen) != 0)
		return 0;
	if (data[0] & 0x40)
		inject_scanner_chunked(&s);
	for (off = 0; off < tlen; off += n) {
		n = tlen - off < step ? tlen - off : step;
		FUZZ_ASSERT(
		    inject_scanner_feed(&s, text + off, n, &out, NULL) == 0);
	}
	FUZZ_ASSERT(inject_scanner_flush(&s, &out) == 0);
	FUZZ_ASSERT(out.len == tlen);
	FUZZ_ASSERT(
	    out.len < vlen || memmem(out.data, out.len, value, vlen) == NULL);
	inject_scanner_free(&s);
	buf_free(&out);
	return 0;
}
