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
#include "readable.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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
	FUZZ_ASSERT(!fuzz_fools_a_reader(text, len, false));
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
	size_t len = json_string_length(j), n, plen = strlen(path);
	char *out;

	FUZZ_ASSERT(p != NULL);
	if (p[0] != '"') {
		FUZZ_ASSERT(strcmp(p, path) == 0);
		FUZZ_ASSERT(valid_utf8((const unsigned char *)p, len));
	}
	out = malloc(len + 4);
	FUZZ_ASSERT(out != NULL);
	n = fuzz_report_path(p, len, out, len + 4);
	/* It names exactly the path. */
	FUZZ_ASSERT(n == plen && memcmp(out, path, n) == 0);
	free(out);
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
