/*
 * What the envelope and upper harnesses both assert of text a person
 * reads: an independent list of what must never be shown raw, and the
 * report path (policy_path_json's form) read back to the path it names.
 * Written here without the code under test, so that it can disagree
 * with it. Header-only: each harness is a program of its own.
 */
#ifndef CORDON_FUZZ_READABLE_H
#define CORDON_FUZZ_READABLE_H

#include "fuzz.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Whether the n bytes at s hold something a reader must not see raw: with
 * path, by a path's rules ('"' and '\\' too, no newline or tab), else by
 * the output's (newline and tab allowed). */
static inline bool
fuzz_fools_a_reader(const unsigned char *s, size_t n, bool path)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		unsigned char c1 = i + 1 < n ? s[i + 1] : 0;
		unsigned char c2 = i + 2 < n ? s[i + 2] : 0;

		if (c < 0x20 && (path || (c != '\n' && c != '\t')))
			return true;
		if (c == 0x7f || (path && (c == '"' || c == '\\')))
			return true;
		if (c == 0xc2 && c1 >= 0x80 && c1 <= 0x9f)
			return true; /* C1 */
		if (c == 0xe2 && c1 == 0x80 &&
		    ((c2 >= 0x8b && c2 <= 0x8f) || (c2 >= 0xa8 && c2 <= 0xae)))
			return true; /* zero-width, LRM, RLM, separators, bidi */
		if (c == 0xe2 && c1 == 0x81 && c2 >= 0xa0 && c2 <= 0xaf)
			return true; /* word joiner, isolates */
		if (c == 0xef && c1 == 0xbb && c2 == 0xbf)
			return true; /* BOM */
		if (c == 0xef && c1 == 0xb8 && c2 >= 0x80 && c2 <= 0x8f)
			return true; /* variation selectors */
		if (c == 0xf3 && c1 == 0xa0)
			return true; /* tags, variation selectors supplement */
		if (c == 0xd8 && c1 == 0x9c)
			return true; /* Arabic letter mark */
	}
	return false;
}

/* Puts code point cp as UTF-8 at out + *n. */
static inline void
fuzz_put_utf8(char *out, size_t *n, unsigned long cp)
{
	if (cp < 0x80) {
		out[(*n)++] = (char)cp;
	} else if (cp < 0x800) {
		out[(*n)++] = (char)(0xc0 | (cp >> 6));
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*n)++] = (char)(0xe0 | (cp >> 12));
		out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		out[(*n)++] = (char)(0xf0 | (cp >> 18));
		out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	}
}

/*
 * A report path (len bytes at p), back to the path it names, into out of
 * cap bytes, NUL-terminated; its length. Bare, or quoted with git's
 * escapes, \ooo for a byte and \uXXXX or \UXXXXXXXX for a code point.
 * Asserts that the form is the one it must be: bare only when nothing in
 * it fools a reader, quoted only when it had to be (for what this list
 * knows, or for a byte past ASCII: the hatch's list of invisible code
 * points is longer), and with nothing raw in the quoted form that would.
 */
static inline size_t
fuzz_report_path(const char *p, size_t len, char *out, size_t cap)
{
	char *raw; /* its raw bytes, a space for each escape */
	size_t n = 0, rn = 0;
	bool ascii = true;

	if (p[0] != '"') {
		FUZZ_ASSERT(
		    !fuzz_fools_a_reader((const unsigned char *)p, len, true));
		FUZZ_ASSERT(len < cap);
		memcpy(out, p, len);
		out[len] = '\0';
		return len;
	}
	FUZZ_ASSERT(len >= 2 && p[len - 1] == '"');
	raw = malloc(len);
	FUZZ_ASSERT(raw != NULL);
	for (size_t i = 1; i + 1 < len;) {
		static const char esc[] = "abtnvfr";
		const char *e;

		FUZZ_ASSERT(n + 4 < cap);
		if (p[i] != '\\') {
			raw[rn++] = p[i];
			out[n++] = p[i++];
			continue;
		}
		raw[rn++] = ' ';
		i++;
		FUZZ_ASSERT(i + 1 < len);
		if (p[i] == '"' || p[i] == '\\') {
			out[n++] = p[i++];
		} else if (p[i] != '\0' && (e = strchr(esc, p[i])) != NULL) {
			out[n++] = (char)(0x07 + (e - esc));
			i++;
		} else if (p[i] == 'u' || p[i] == 'U') {
			size_t k = p[i] == 'u' ? 4 : 8;
			char hex[9] = { 0 }, *end;

			FUZZ_ASSERT(i + k < len);
			memcpy(hex, p + i + 1, k);
			unsigned long cp = strtoul(hex, &end, 16);
			FUZZ_ASSERT(end == hex + k);
			fuzz_put_utf8(out, &n, cp);
			i += k + 1;
		} else {
			FUZZ_ASSERT(i + 3 < len && p[i] >= '0' && p[i] <= '3' &&
			    p[i + 1] >= '0' && p[i + 1] <= '7' &&
			    p[i + 2] >= '0' && p[i + 2] <= '7');
			out[n++] = (char)((p[i] - '0') << 6 |
			    (p[i + 1] - '0') << 3 | (p[i + 2] - '0'));
			i += 3;
		}
	}
	out[n] = '\0';
	for (size_t i = 0; i < n; i++)
		ascii = ascii && (unsigned char)out[i] < 0x80;
	FUZZ_ASSERT(
	    fuzz_fools_a_reader((const unsigned char *)out, n, true) || !ascii);
	FUZZ_ASSERT(!fuzz_fools_a_reader((const unsigned char *)raw, rn, true));
	free(raw);
	return n;
}

#endif
