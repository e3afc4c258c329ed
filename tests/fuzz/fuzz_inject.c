/*
 * Fuzzes credential injection's pure parts (proxy/inject.c): the format
 * of a header value (never past its buffer, the value and the format's
 * text exactly) and the reflection scanner. The scanner's oracle: the
 * answer scanned in one feed and the same answer cut into feeds at
 * fuzzed points give the same bytes and the same count (what the scanner
 * decides depends on the bytes, never on the cuts); the answer keeps its
 * length; no INJECT_WINDOW bytes in a row of the value (the value whole
 * when shorter) come out of it raw, in any case; and a form
 * of the value this harness writes itself, unit by unit in the
 * escapings the scanner reads (credentials.md), put into the answer, is
 * always found. A scan past its budget of steps (-E2BIG: a value that
 * can be read many ways at once) is a fine outcome, the comparison then
 * skipped. The joined scanner (inject_scanner_join, a job's set at
 * once) of the value and a second one, a slice of the answer that bytes
 * 1 and 2 pick: the same however cut, redacting exactly the union of
 * what each value's own scanner redacts, each byte with the filler of
 * the lowest value covering it, and (plain bodies) each value's runs as
 * those bytes' owners give them.
 *
 * Input: byte 0 is the value's length less one (its low 6 bits), its
 * 0x40 bit makes the answer a chunked body and its 0x80 bit picks the
 * format instead (a format and a value split at the first NUL); byte 1
 * seeds the cuts; byte 2, when odd, asks for a written form, placed at
 * (byte 2 >> 1) of the answer; then the value; then, with a form, one
 * byte per byte of the value choosing its unit; then the answer.
 */
#include "fuzz.h"
#include "inject.h"

#include <errno.h>
#include <stdio.h>
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

static unsigned char
lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

static bool
is_punct(unsigned char c)
{
	return c > 0x20 && c < 0x7f && !(c >= '0' && c <= '9') &&
	    !(lower(c) >= 'a' && lower(c) <= 'z');
}

/* One unit for byte c, the kind chosen by k (the scanner's list, written
 * here apart from it): into o (room for 16), its length. */
static size_t
unit(unsigned char c, unsigned k, bool not_first, char *o)
{
	static const struct {
		unsigned char c;
		const char *name;
	} named[] = { { '/', "&sol;" }, { '+', "&PLUS;" }, { '=', "&equals;" },
		{ '&', "&amp;" }, { '"', "&quot;" }, { '<', "&lt;" },
		{ '_', "&lowbar;" }, { '.', "&period;" } };
	size_t n = 0;

	/* A quoted-printable soft line break before any unit but the
	 * first. */
	if (not_first && (k & 0x80)) {
		memcpy(o, "=\r\n", 3);
		n = 3;
	}
	switch (k % 16) {
	case 1:
		return n + (size_t)snprintf(o + n, 16, "%%%02x", c);
	case 2:
		return n + (size_t)snprintf(o + n, 16, "=%02X", c);
	case 3:
		return n + (size_t)snprintf(o + n, 16, "%02x", c);
	case 4:
		return n + (size_t)snprintf(o + n, 16, "\\u%04X", c);
	case 5:
		return n + (size_t)snprintf(o + n, 16, "\\x%02x", c);
	case 6:
		return n + (size_t)snprintf(o + n, 16, "&#%u;", c);
	case 7:
		return n + (size_t)snprintf(o + n, 16, "&#x%08X;", c);
	case 8:
		o[n] = (char)c;
		o[n + 1] = '\0';
		return n + 2;
	case 9:
		o[n] = '\0';
		o[n + 1] = (char)c;
		return n + 2;
	case 10:
		if (is_punct(c)) {
			o[n] = '\\';
			o[n + 1] = (char)c;
			return n + 2;
		}
		break;
	case 11:
		for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
			if (named[i].c == c) {
				memcpy(o + n, named[i].name,
				    strlen(named[i].name));
				return n + strlen(named[i].name);
			}
		break;
	case 12:
		o[n] = (char)(c >= 'a' && c <= 'z' ? c - 32 : c);
		return n + 1;
	case 13:
		return n + (size_t)snprintf(o + n, 16, "&#%08u;", c);
	default:
		break;
	}
	o[n] = (char)c;
	return n + 1;
}

/* Whether value[0..vlen) is in text[0..n) in any case. */
static bool
holds_nocase(const char *text, size_t n, const char *value, size_t vlen)
{
	for (size_t i = 0; i + vlen <= n; i++) {
		size_t j = 0;
		while (j < vlen &&
		    lower((unsigned char)text[i + j]) ==
			lower((unsigned char)value[j]))
			j++;
		if (j == vlen)
			return true;
	}
	return false;
}

/* The answer through a scanner for value, cut where seed says (0: one
 * feed): into out, the matches into *ret_found. 0, or -E2BIG when the
 * scan went past its budget of steps (which cuts may move). */
static int
scan(const char *value, size_t vlen, bool chunked, const char *text,
    size_t tlen, unsigned seed, struct buf *out, size_t *ret_found)
{
	struct inject_scanner s;
	size_t off = 0, n;
	int r = 0;

	FUZZ_ASSERT(inject_scanner_init(&s, value, vlen) == 0);
	if (chunked)
		inject_scanner_chunked(&s);
	while (off < tlen && r == 0) {
		n = tlen - off;
		if (seed != 0) {
			seed = seed * 1103515245u + 12345u;
			n = (seed >> 16) % (n < 40 ? n : 40) + 1;
		}
		r = inject_scanner_feed(&s, text + off, n, out, NULL);
		FUZZ_ASSERT(r == 0 || r == -E2BIG);
		off += n;
	}
	if (r == 0)
		r = inject_scanner_flush(&s, out);
	FUZZ_ASSERT(r == 0 || r == -E2BIG);
	*ret_found = s.found;
	inject_scanner_free(&s);
	return r;
}

/* The answer through a copy of prep, cut where seed says (0: one feed):
 * into out, each value's runs into found (2). 0 or -E2BIG. */
static int
scan_copy(const struct inject_scanner *prep, bool chunked, const char *text,
    size_t tlen, unsigned seed, struct buf *out, size_t *found)
{
	struct inject_scanner s;
	size_t off = 0, n;
	int r = 0;

	FUZZ_ASSERT(inject_scanner_copy(&s, prep) == 0);
	if (chunked)
		inject_scanner_chunked(&s);
	while (off < tlen && r == 0) {
		n = tlen - off;
		if (seed != 0) {
			seed = seed * 1103515245u + 12345u;
			n = (seed >> 16) % (n < 40 ? n : 40) + 1;
		}
		r = inject_scanner_feed(&s, text + off, n, out, NULL);
		FUZZ_ASSERT(r == 0 || r == -E2BIG);
		off += n;
	}
	if (r == 0)
		r = inject_scanner_flush(&s, out);
	FUZZ_ASSERT(r == 0 || r == -E2BIG);
	for (size_t i = 0; i < inject_scanner_values(&s); i++)
		found[i] = inject_scanner_found(&s, i);
	inject_scanner_free(&s);
	return r;
}

/* The joined scanner of value and other (text[at..at + olen)) against
 * each one's own (mine: the value's, its output whole). */
static void
joined(const char *value, size_t vlen, bool chunked, const char *text,
    size_t tlen, size_t at, size_t olen, unsigned seed, const struct buf *mine)
{
	struct inject_scanner one[2], join;
	struct buf theirs = BUF_INIT(1 << 20), jw = BUF_INIT(1 << 20),
		   jc = BUF_INIT(1 << 20);
	size_t fw[2] = { 0, 0 }, fc[2] = { 0, 0 }, runs[2] = { 0, 0 }, f[2];
	const char *other = text + at;

	if (olen == vlen && memcmp(other, value, vlen) == 0)
		return;
	FUZZ_ASSERT(inject_scanner_init(&one[0], value, vlen) == 0);
	FUZZ_ASSERT(inject_scanner_init(&one[1], other, olen) == 0);
	struct inject_part parts[2] = { { &one[0], 0, "a" },
		{ &one[1], 0, NULL } };
	FUZZ_ASSERT(inject_scanner_join(&join, parts, 2) == 0);
	if (scan_copy(&one[1], chunked, text, tlen, 0, &theirs, f) != 0 ||
	    scan_copy(&join, chunked, text, tlen, 0, &jw, fw) != 0 ||
	    scan_copy(&join, chunked, text, tlen, seed, &jc, fc) != 0)
		goto out;
	FUZZ_ASSERT(jw.len == tlen && jc.len == tlen && theirs.len == tlen);
	FUZZ_ASSERT(tlen == 0 || memcmp(jw.data, jc.data, tlen) == 0);
	FUZZ_ASSERT(fw[0] == fc[0] && fw[1] == fc[1]);
	int run = -1;
	for (size_t k = 0; k < tlen; k++) {
		int owner = mine->data[k] != text[k] ? 0
		    : theirs.data[k] != text[k]      ? 1
						     : -1;
		if (owner < 0) {
			FUZZ_ASSERT(jw.data[k] == text[k]);
			if (text[k] != '\r' && text[k] != '\n')
				run = -1;
			continue;
		}
		FUZZ_ASSERT(jw.data[k] == one[owner].filler);
		if (run != owner)
			runs[owner]++;
		run = owner;
	}
	if (!chunked)
		FUZZ_ASSERT(fw[0] == runs[0] && fw[1] == runs[1]);
out:
	inject_scanner_free(&join);
	inject_scanner_free(&one[0]);
	inject_scanner_free(&one[1]);
	buf_free(&theirs);
	buf_free(&jw);
	buf_free(&jc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf whole = BUF_INIT(1 << 20), cut = BUF_INIT(1 << 20);
	size_t vlen, tlen, fw, fc, at = 0, flen = 0;
	bool chunked, form;
	char *text;

	if (size < 3)
		return 0;
	if (data[0] & 0x80) {
		fuzz_format(data + 1, size - 1);
		return 0;
	}
	vlen = (size_t)(data[0] & 0x3f) + 1;
	chunked = (data[0] & 0x40) != 0;
	form = (data[2] & 1) != 0;
	if (size < 3 + vlen + (form ? vlen : 0))
		return 0;
	const char *value = (const char *)data + 3;
	const uint8_t *kinds = data + 3 + vlen;
	const char *rest = value + vlen + (form ? vlen : 0);
	size_t rlen = size - (size_t)(rest - (const char *)data);

	/* The answer: the rest, with the written form put in. */
	text = malloc(rlen + 19 * vlen + 1);
	FUZZ_ASSERT(text != NULL);
	if (form) {
		char f[19 * 64];
		for (size_t i = 0; i < vlen; i++)
			flen += unit((unsigned char)value[i], kinds[i], i > 0,
			    f + flen);
		at = rlen > 0 ? (size_t)(data[2] >> 1) % (rlen + 1) : 0;
		memcpy(text, rest, at);
		memcpy(text + at, f, flen);
		memcpy(text + at + flen, rest + at, rlen - at);
	} else
		memcpy(text, rest, rlen);
	tlen = rlen + flen;

	if (scan(value, vlen, chunked, text, tlen, 0, &whole, &fw) != 0 ||
	    scan(value, vlen, chunked, text, tlen, (unsigned)data[1] + 1, &cut,
		&fc) != 0)
		goto out;
	FUZZ_ASSERT(whole.len == tlen && cut.len == tlen);
	FUZZ_ASSERT(tlen == 0 || memcmp(whole.data, cut.data, tlen) == 0);
	FUZZ_ASSERT(fw == fc);
	/* No run of the value (a slice: issue 18's sliding cut). */
	for (size_t j = 0, w = vlen < INJECT_WINDOW ? vlen : INJECT_WINDOW;
	     j + w <= vlen; j++)
		FUZZ_ASSERT(!holds_nocase(whole.data, whole.len, value + j, w));
	if (form)
		FUZZ_ASSERT(fw >= 1);
	if (tlen > 0) {
		size_t oat = ((size_t)data[2] * 31 + data[1]) % tlen;
		size_t olen = 1 + (size_t)data[1] % 40;
		if (olen > tlen - oat)
			olen = tlen - oat;
		joined(value, vlen, chunked, text, tlen, oat, olen,
		    (unsigned)data[1] + 7, &whole);
	}
out:
	free(text);
	buf_free(&whole);
	buf_free(&cut);
	return 0;
}
