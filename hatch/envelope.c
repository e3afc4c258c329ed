/*
 * Cleaning a job's output. ECMA-48 sequences (CSI, OSC, DCS and the
 * other string sequences, two-byte escapes) are removed whole, so that no
 * fragment of one reaches a terminal, a log viewer or a model's prompt.
 */
#include "envelope.h"

#include "buf.h"

#include <stdbool.h>
#include <string.h>

/* Length of a valid UTF-8 sequence at p (of at most n bytes), or 0. */
static size_t
utf8_len(const unsigned char *p, size_t n)
{
	size_t len;
	unsigned min;
	unsigned cp;

	if (p[0] < 0x80)
		return 1;
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
	/* C1 controls (U+0080..U+009F) act like ESC sequences: drop them. */
	if (cp >= 0x80 && cp <= 0x9f)
		return 0;
	return len;
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
	size_t i = 0, removed = 0;
	bool truncated = false;

	while (i < len) {
		const unsigned char *p = data + i;
		size_t n = 1;
		bool keep = true;

		if (p[0] == 0x1b) {
			n = escape_len(p, len - i);
			keep = false;
		} else if (p[0] < 0x20 && p[0] != '\n' && p[0] != '\t') {
			keep = false; /* CR, BS, BEL, NUL and the rest */
		} else if (p[0] == 0x7f) {
			keep = false;
		} else if (p[0] >= 0x80) {
			n = utf8_len(p, len - i);
			if (n == 0) {
				/* Invalid or a C1 control: one '?' a byte. */
				n = 1;
				removed++;
				if (buf_append(&out, "?", 1) < 0) {
					truncated = true;
					break;
				}
				i += n;
				continue;
			}
		}
		if (!keep) {
			removed++;
		} else if (buf_append(&out, p, n) < 0) {
			truncated = true;
			break;
		}
		i += n;
	}
	json_t *v = json_pack("{s:s%, s:I, s:b, s:I}", "text", buf_str(&out),
	    out.len, "bytes", (json_int_t)len, "truncated", truncated,
	    "removed", (json_int_t)removed);
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
