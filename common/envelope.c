/*
 * Cleaning a job's output. ECMA-48 sequences (CSI, OSC, DCS and the
 * other string sequences, two-byte escapes) are removed whole, so that no
 * fragment of one reaches a terminal, a log viewer or a model's prompt;
 * and the Unicode characters that reorder text or hide it (the tag
 * characters spell out ASCII no one sees) are removed one by one.
 */
#include "envelope.h"

#include "buf.h"

#include <string.h>

size_t
envelope_utf8_decode(const unsigned char *p, size_t n, uint32_t *ret_cp)
{
	size_t len;
	uint32_t min, cp;

	if (p[0] < 0x80) {
		*ret_cp = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2, min = 0x80, cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3, min = 0x800, cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4, min = 0x10000, cp = p[0] & 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return len;
}

/* Ranges of envelope_invisible, in order. */
static const struct {
	uint32_t from, to;
} invisible[] = {
	{ 0x00ad, 0x00ad }, /* soft hyphen */
	{ 0x034f, 0x034f }, /* combining grapheme joiner */
	{ 0x061c, 0x061c }, /* Arabic letter mark */
	{ 0x115f, 0x1160 }, /* Hangul fillers */
	{ 0x17b4, 0x17b5 }, /* Khmer inherent vowels */
	{ 0x180b, 0x180f }, /* Mongolian variation selectors, vowel sep. */
	{ 0x200b, 0x200f }, /* zero-width space, (non-)joiner, LRM, RLM */
	{ 0x202a, 0x202e }, /* bidi embeddings and overrides */
	{ 0x2060, 0x206f }, /* word joiner, invisible operators, isolates */
	{ 0x3164, 0x3164 }, /* Hangul filler */
	{ 0xfe00, 0xfe0f }, /* variation selectors */
	{ 0xfeff, 0xfeff }, /* BOM, zero-width no-break space */
	{ 0xffa0, 0xffa0 }, /* halfwidth Hangul filler */
	{ 0xfff0, 0xfffb }, /* unassigned, interlinear annotation */
	{ 0x1bca0, 0x1bca3 }, /* shorthand format controls */
	{ 0x1d173, 0x1d17a }, /* musical format controls */
	{ 0xe0000, 0xe0fff }, /* tags, variation selectors supplement */
};

bool
envelope_invisible(uint32_t cp)
{
	for (size_t i = 0; i < sizeof(invisible) / sizeof(invisible[0]); i++) {
		if (cp < invisible[i].from)
			return false;
		if (cp <= invisible[i].to)
			return true;
	}
	return false;
}

/* Length of the escape sequence starting with ESC at p (n bytes left). */
static size_t
escape_len(const unsigned char *p, size_t n)
{
	size_t i = 1;

	if (n < 2)
		return n;
	switch (p[1]) {
	case '[': /* CSI: parameters, intermediates, a final byte */
		for (i = 2; i < n; i++)
			if (p[i] >= 0x40 && p[i] <= 0x7e)
				return i + 1;
		return n;
	case ']': /* OSC, DCS, SOS, PM, APC: up to BEL or ESC \ */
	case 'P':
	case 'X':
	case '^':
	case '_':
		for (i = 2; i < n; i++) {
			if (p[i] == 0x07)
				return i + 1;
			if (p[i] == 0x1b && i + 1 < n && p[i + 1] == '\\')
				return i + 2;
		}
		return n;
	default: /* ESC, intermediates (0x20..0x2f), a final byte */
		for (i = 1; i < n && p[i] >= 0x20 && p[i] <= 0x2f; i++)
			;
		return i < n ? i + 1 : n;
	}
}

json_t *
envelope_clean(const unsigned char *data, size_t len, size_t cap)
{
	struct buf out = BUF_INIT(cap);
	size_t i = 0, removed = 0, hidden = 0;
	bool truncated = false;

	while (i < len) {
		const unsigned char *p = data + i;
		const char *put = (const char *)p;
		size_t n = 1, put_len = 1;
		uint32_t cp = p[0];

		if (p[0] == 0x1b) {
			n = escape_len(p, len - i);
			put = NULL;
		} else if (p[0] < 0x20 && p[0] != '\n' && p[0] != '\t') {
			put = NULL; /* CR, BS, BEL, NUL and the rest */
		} else if (p[0] == 0x7f) {
			put = NULL;
		} else if (p[0] >= 0x80) {
			n = envelope_utf8_decode(p, len - i, &cp);
			put_len = n;
			if (n == 0 || (cp >= 0x80 && cp <= 0x9f)) {
				/* Invalid (one '?' a byte) or a C1 control,
				 * which acts like ESC (one '?'). */
				n = n == 0 ? 1 : n;
				put = "?";
				put_len = 1;
			} else if (envelope_invisible(cp)) {
				put = NULL;
				hidden++;
			} else if (cp == 0x2028 || cp == 0x2029) {
				put = "\n";
				put_len = 1;
			}
		}
		if (put != (const char *)p)
			removed++;
		if (put != NULL && buf_append(&out, put, put_len) < 0) {
			truncated = true;
			break;
		}
		i += n;
	}
	json_t *v = json_pack("{s:s%, s:I, s:b, s:I, s:I}", "text",
	    buf_str(&out), out.len, "bytes", (json_int_t)len, "truncated",
	    truncated, "removed", (json_int_t)removed, "invisible",
	    (json_int_t)hidden);
	buf_free(&out);
	return v;
}

json_t *
envelope_make(const unsigned char *out, size_t outlen, const unsigned char *err,
    size_t errlen, size_t cap)
{
	return json_pack("{s:s, s:o, s:o}", "trust", "untrusted", "stdout",
	    envelope_clean(out, outlen, cap), "stderr",
	    envelope_clean(err, errlen, cap));
}
