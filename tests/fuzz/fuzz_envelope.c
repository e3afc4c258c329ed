/*
 * Fuzzes the two places where the return path shows text a job chose:
 * the output envelope (envelope_clean) and a path in the report
 * (policy_path_json). The input's first byte picks the envelope's cap
 * (1 byte to 64 KiB); the rest is the output, and, cut at its first NUL,
 * the path. Properties:
 *  - the envelope's text is valid UTF-8 of at most cap bytes; it holds no
 *    ESC, no control but newline and tab, no DEL, no C1 control, and none
 *    of the characters that reorder or hide text (bidi controls,
 *    zero-width characters, the BOM, tag characters, variation selectors:
 *    checked byte by byte here, not through the code under test); it
 *    counts what it took out; and plain printable text comes back whole;
 *  - a path is bare only when nothing in it would fool a reader, else
 *    quoted with every such character escaped, and the quoted form
 *    decodes to exactly the path.
 */
#include "envelope.h"
#include "fuzz.h"
#include "policy.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Whether the n bytes at s hold something a reader must not see raw: with
 * path, by a path's rules ('"' and '\\' too, no newline or tab), else by
 * the output's (newline and tab allowed). */
static bool
fools_a_reader(const unsigned char *s, size_t n, bool path)
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

/* Valid UTF-8, read here without the code under test. */
static bool
valid_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t k = c < 0x80      ? 1
		    : (c & 0xe0) == 0xc0 ? 2
		    : (c & 0xf0) == 0xe0 ? 3
		    : (c & 0xf8) == 0xf0 ? 4
					 : 0;
		unsigned long cp = k == 1 ? c
		    : k == 2              ? (c & 0x1fu)
		    : k == 3              ? (c & 0x0fu)
					  : (c & 0x07u);

		if (k == 0 || i + k > n)
			return false;
		for (size_t j = 1; j < k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3fu);
		}
		if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) ||
		    (k == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k;
	}
	return true;
}

static void
put_utf8(char *out, size_t *n, unsigned long cp)
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

static void
check_envelope(const unsigned char *data, size_t size, size_t cap)
{
	json_t *v = envelope_clean(data, size, cap);
	json_t *t = json_object_get(v, "text");
	const unsigned char *text = (const unsigned char *)json_string_value(t);
	size_t len = json_string_length(t);
	json_int_t removed = json_integer_value(json_object_get(v, "removed"));
	json_int_t hidden = json_integer_value(json_object_get(v, "invisible"));
	bool truncated = json_is_true(json_object_get(v, "truncated"));

	FUZZ_ASSERT(v != NULL && text != NULL);
	FUZZ_ASSERT(len <= cap);
	FUZZ_ASSERT(valid_utf8(text, len));
	FUZZ_ASSERT(!fools_a_reader(text, len, false));
	FUZZ_ASSERT(memchr(text, 0x1b, len) == NULL);
	FUZZ_ASSERT(json_integer_value(json_object_get(v, "bytes")) ==
	    (json_int_t)size);
	FUZZ_ASSERT(removed >= 0 && (size_t)removed <= size);
	FUZZ_ASSERT(hidden >= 0 && hidden <= removed);
	if (!truncated)
		FUZZ_ASSERT(len <= size + (size_t)removed);
	/* Printable ASCII, newlines and tabs: whole, nothing counted. */
	bool plain = true;
	for (size_t i = 0; i < size && plain; i++)
		plain = (data[i] >= 0x20 && data[i] < 0x7f) ||
		    data[i] == '\n' || data[i] == '\t';
	if (plain && size <= cap) {
		FUZZ_ASSERT(removed == 0 && !truncated && len == size);
		FUZZ_ASSERT(size == 0 || memcmp(text, data, size) == 0);
	}
	json_decref(v);
}

static void
check_path(const char *path)
{
	json_t *j = policy_path_json(path);
	const char *p = json_string_value(j);
	size_t len = json_string_length(j), n = 0, rn = 0, plen = strlen(path);
	char *out, *raw;

	FUZZ_ASSERT(p != NULL);
	if (p[0] != '"') {
		FUZZ_ASSERT(strcmp(p, path) == 0);
		FUZZ_ASSERT(valid_utf8((const unsigned char *)p, len));
		FUZZ_ASSERT(
		    !fools_a_reader((const unsigned char *)p, len, true));
		json_decref(j);
		return;
	}
	out = malloc(len + 1);
	raw = malloc(len + 1);
	FUZZ_ASSERT(out != NULL && raw != NULL);
	FUZZ_ASSERT(len >= 2 && p[len - 1] == '"');
	for (size_t i = 1; i + 1 < len;) {
		static const char esc[] = "abtnvfr";
		const char *e;

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
			FUZZ_ASSERT(end == hex + k && n + 4 <= len);
			put_utf8(out, &n, cp);
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
	/* It names exactly the path, which had to be quoted: for what this
	 * harness knows fools a reader, or for a code point past ASCII (the
	 * hatch's list of invisible ones is longer than the few here). */
	FUZZ_ASSERT(n == plen && memcmp(out, path, n) == 0);
	bool ascii = true;
	for (size_t i = 0; i < plen; i++)
		ascii = ascii && (unsigned char)path[i] < 0x80;
	FUZZ_ASSERT(
	    fools_a_reader((const unsigned char *)path, plen, true) || !ascii);
	/* What is left raw fools no one. */
	FUZZ_ASSERT(!fools_a_reader((const unsigned char *)raw, rn, true));
	free(out);
	free(raw);
	json_decref(j);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[] = { 1, 2, 3, 4, 7, 16, 100, 65536 };
	size_t cap;
	char *path;

	if (size == 0)
		return 0;
	cap = caps[data[0] & 7];
	data++;
	size--;
	check_envelope(data, size, cap);
	check_envelope(data, size, 1 << 20);
	path = malloc(size + 1);
	FUZZ_ASSERT(path != NULL);
	memcpy(path, data, size);
	path[size] = '\0';
	check_path(path);
	free(path);
	return 0;
}
