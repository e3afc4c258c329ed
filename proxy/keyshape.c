/*
 * A secret value's scan part (keyshape.h): a type prefix or a JWT's
 * header and claims are public by the value's format and left out of the
 * reflection scan but for their last 7 bytes; the rest, the secret
 * bytes, is scanned as the whole value was. Fails closed: a value that
 * would leave too little, or only looks like a shape in part, is scanned
 * whole.
 */
#include "keyshape.h"
#include "inject.h"

#include <stdbool.h>
#include <string.h>

_Static_assert(KEYSHAPE_CONTEXT == INJECT_WINDOW - 1,
    "every window of a scan part holds a secret byte, and a cut just past "
    "the public part is one");

static bool
is_lower(unsigned char c)
{
	return c >= 'a' && c <= 'z';
}

static bool
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool
is_upper(unsigned char c)
{
	return c >= 'A' && c <= 'Z';
}

/*
 * Whether r[0..n), what a type prefix would leave, reads as a key's
 * random part: it holds a digit or an upper-case letter, and no piece of
 * it between '_' and '-' is a word (three lowercase letters or more and
 * nothing else). Words after a "prefix" make a passphrase or a
 * password ("stone-eagle-river-...", "prod-db-password-..."), whose
 * first words are as secret as the rest.
 */
static bool
rest_looks_random(const char *r, size_t n)
{
	bool mixed = false;
	size_t piece = 0, lower = 0;

	for (size_t i = 0; i <= n; i++) {
		unsigned char c = i < n ? (unsigned char)r[i] : '_';
		if (c == '_' || c == '-') {
			if (piece >= 3 && lower == piece)
				return false;
			piece = lower = 0;
			continue;
		}
		piece++;
		lower += is_lower(c);
		mixed |= is_digit(c) || is_upper(c);
	}
	return mixed;
}

/* Type prefixes longer than the words rule takes, of formats whose
 * third word is the format's too (the words rule stops at two, lest a
 * third word of a secret be taken for public). */
static const char *const long_prefixes[] = { "sk-ant-api03-",
	"sk-ant-admin01-" };

/* The type prefix's length that leaves the most out and at least
 * KEYSHAPE_REST_MIN bytes of v[0..len) after it, a rest that looks
 * random: 0 when none. */
static size_t
prefix_len(const char *v, size_t len)
{
	size_t at = 0, best = 0;

	for (size_t i = 0; i < sizeof(long_prefixes) / sizeof(long_prefixes[0]);
	     i++) {
		size_t n = strlen(long_prefixes[i]);
		if (len >= n + KEYSHAPE_REST_MIN &&
		    memcmp(v, long_prefixes[i], n) == 0)
			return rest_looks_random(v + n, len - n) ? n : 0;
	}

	for (size_t w = 0; w < KEYSHAPE_WORDS_MAX; w++) {
		size_t n = 0;
		while (at + n < len && n <= KEYSHAPE_WORD_MAX &&
		    (is_lower((unsigned char)v[at + n]) ||
			(w > 0 && is_digit((unsigned char)v[at + n]))))
			n++;
		if (n < (w == 0 ? 2u : 1u) || n > KEYSHAPE_WORD_MAX ||
		    at + n >= len || (v[at + n] != '_' && v[at + n] != '-'))
			break;
		at += n + 1;
		if (at > KEYSHAPE_PREFIX_MAX)
			break;
		if (len - at >= KEYSHAPE_REST_MIN)
			best = at;
	}
	return best > 0 && rest_looks_random(v + best, len - best) ? best : 0;
}

static int
b64url_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/* Decodes the first bytes of the base64url text s[0..n) (no padding)
 * into out (at most cap): how many. */
static size_t
b64url_decode(const char *s, size_t n, char *out, size_t cap)
{
	unsigned acc = 0, bits = 0;
	size_t o = 0;

	for (size_t i = 0; i < n && o < cap; i++) {
		acc = (acc << 6 | (unsigned)b64url_val((unsigned char)s[i])) &
		    0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)(acc >> bits & 0xff);
		}
	}
	return o;
}

/* Whether the base64url segment s[0..n) decodes to a JSON object's
 * start (and, when alg, one naming "alg" in its first
 * KEYSHAPE_HEADER_MAX bytes). */
static bool
json_object_segment(const char *s, size_t n, bool alg)
{
	char d[KEYSHAPE_HEADER_MAX];
	size_t dn = b64url_decode(s, n, d, sizeof(d)), i = 0;

	while (i < dn &&
	    (d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n'))
		i++;
	if (i == dn || d[i] != '{')
		return false;
	if (!alg)
		return true;
	for (; i + 5 <= dn; i++)
		if (memcmp(d + i, "\"alg\"", 5) == 0)
			return true;
	return false;
}

/* Whether v[0..len) is a JWT (three base64url segments, the first a
 * header naming "alg", the second an object): its signature's offset in
 * *ret_off. */
static bool
jwt_signature(const char *v, size_t len, size_t *ret_off)
{
	size_t dot[2], ndots = 0;

	for (size_t i = 0; i < len; i++) {
		if (v[i] == '.') {
			if (ndots == 2)
				return false;
			dot[ndots++] = i;
		} else if (b64url_val((unsigned char)v[i]) < 0)
			return false;
	}
	if (ndots != 2 || dot[0] == 0 || dot[1] == dot[0] + 1)
		return false;
	if (!json_object_segment(v, dot[0], true) ||
	    !json_object_segment(v + dot[0] + 1, dot[1] - dot[0] - 1, false))
		return false;
	*ret_off = dot[1] + 1;
	return true;
}

size_t
keyshape_public_len(const char *value, size_t len)
{
	size_t off;

	if (value == NULL || len == 0)
		return 0;
	if (jwt_signature(value, len, &off))
		return len - off >= KEYSHAPE_REST_MIN ? off : 0;
	return prefix_len(value, len);
}

size_t
keyshape_scan_part(const char *value, size_t len, size_t *ret_off)
{
	size_t pub = keyshape_public_len(value, len);

	*ret_off = pub > KEYSHAPE_CONTEXT ? pub - KEYSHAPE_CONTEXT : 0;
	return len - *ret_off;
}
