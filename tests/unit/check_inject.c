/*
 * Credential injection's pure parts: the header value a rule's format
 * makes (proxy/inject.c), the reflection scanner (the value raw, in hex,
 * percent-encoded and base64 at every offset, in one read or split
 * across reads byte by byte, redacted in place with the length kept;
 * other text left alone; each escaping it reads unit by unit, JSON's,
 * HTML's, quoted-printable, UTF-16, a change of case, and all of them
 * mixed, cut at every offset and inside chunked framing, the same answer
 * whatever the cuts; a near copy kept), and the manifest's validation of
 * "inject" (common/manifest.c).
 */
#include "forward.h"
#include "inject.h"
#include "manifest.h"

#include "testutil.h"

#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char secret[] = "sk_live_51Hq/8+zZ=key";

START_TEST(test_format)
{
	char out[64];

	ck_assert_int_eq(inject_format("Bearer {secret}", "abc", 3, out,
			     sizeof(out)),
	    0);
	ck_assert_str_eq(out, "Bearer abc");
	ck_assert_int_eq(inject_format("{secret}", "abc", 3, out, sizeof(out)),
	    0);
	ck_assert_str_eq(out, "abc");
	ck_assert_int_eq(inject_format("token={secret};v=1", "abc", 3, out,
			     sizeof(out)),
	    0);
	ck_assert_str_eq(out, "token=abc;v=1");
	ck_assert_int_eq(inject_format("Bearer {secret}", "abc", 3, out, 10),
	    -EMSGSIZE);
	ck_assert_int_eq(inject_format("Bearer {secret}", "abc", 3, out, 11),
	    0);
	ck_assert_int_eq(inject_format("Bearer", "abc", 3, out, sizeof(out)),
	    -EINVAL);
	ck_assert_int_eq(inject_format("Bearer {secret}", "a\r\nb", 4, out,
			     sizeof(out)),
	    -EINVAL);
}
END_TEST

/* Feeds text through a scanner for secret in pieces of step bytes (0:
 * one piece): the answer, of the same length, and the matches. */
static char *
scan(const char *text, size_t len, size_t step, size_t *ret_found)
{
	struct inject_scanner s;
	struct buf out = BUF_INIT(1 << 20);
	size_t n;

	ck_assert_int_eq(inject_scanner_init(&s, secret, strlen(secret)), 0);
	if (step == 0)
		step = len;
	for (size_t off = 0; off < len; off += n) {
		n = len - off < step ? len - off : step;
		ck_assert_int_eq(inject_scanner_feed(&s, text + off, n, &out,
				     NULL),
		    0);
	}
	ck_assert_int_eq(inject_scanner_flush(&s, &out), 0);
	ck_assert_uint_eq(out.len, len);
	*ret_found = s.found;
	inject_scanner_free(&s);
	return buf_steal(&out, &n);
}

static void
expect_redacted(const char *text, const char *form)
{
	static const size_t steps[] = { 0, 1, 2, 3, 7, 64 };

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		size_t found;
		char *got = scan(text, strlen(text), steps[i], &found);
		ck_assert_msg(strstr(got, form) == NULL,
		    "step %zu: %s still in %s", steps[i], form, got);
		ck_assert_msg(found >= 1, "step %zu: nothing found in %s",
		    steps[i], text);
		/* What is not the value is kept. */
		ck_assert_int_eq(strncmp(got,
				     "HTTP/1.1 200 OK\r\nX-Echo: ", 25),
		    0);
		free(got);
	}
}

START_TEST(test_scan_forms)
{
	char text[1024], hex[128], pct[128], b64[128];
	size_t n = strlen(secret);

	snprintf(text, sizeof(text),
	    "HTTP/1.1 200 OK\r\nX-Echo: Bearer %s\r\n\r\n", secret);
	expect_redacted(text, secret);

	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)secret[i]);
	snprintf(text, sizeof(text), "HTTP/1.1 200 OK\r\nX-Echo: %s\r\n", hex);
	expect_redacted(text, hex);
	for (size_t i = 0; hex[i] != '\0'; i++)
		hex[i] = (char)(hex[i] >= 'a' ? hex[i] - 32 : hex[i]);
	snprintf(text, sizeof(text), "HTTP/1.1 200 OK\r\nX-Echo: %s\r\n", hex);
	expect_redacted(text, hex);

	for (size_t i = 0; i < n; i++)
		snprintf(pct + 3 * i, 4, "%%%02X", (unsigned char)secret[i]);
	snprintf(text, sizeof(text), "HTTP/1.1 200 OK\r\nX-Echo: q=%s&x\r\n",
	    pct);
	expect_redacted(text, pct);
	/* The usual form: only the reserved bytes escaped, lowercase. */
	snprintf(text, sizeof(text),
	    "HTTP/1.1 200 OK\r\nX-Echo: "
	    "q=sk_live_51Hq%%2f8%%2bzZ%%3dkey&x\r\n");
	expect_redacted(text, "sk_live_51Hq%2f8%2bzZ%3dkey");

	/* base64 of the header as echoed, so the value sits at each of the
	 * three offsets. */
	for (size_t k = 0; k < 3; k++) {
		char plain[128];
		int pl = snprintf(plain, sizeof(plain), "%.*sBearer %s", (int)k,
		    "ab", secret);
		int bl = EVP_EncodeBlock((unsigned char *)b64,
		    (const unsigned char *)plain, pl);
		ck_assert_int_gt(bl, 0);
		snprintf(text, sizeof(text),
		    "HTTP/1.1 200 OK\r\nX-Echo: %s\r\n", b64);
		size_t found;
		char *got = scan(text, strlen(text), 1, &found);
		ck_assert_uint_ge(found, 1);
		/* The encoded value's middle is gone. */
		ck_assert_ptr_null(
		    strstr(got, b64 + (pl - (int)n) * 4 / 3 + 4));
		free(got);
	}
}
END_TEST

START_TEST(test_scan_leaves_other_text)
{
	static const char text[] =
	    "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world";
	size_t found;
	char *got = scan(text, strlen(text), 1, &found);

	ck_assert_str_eq(got, text);
	ck_assert_uint_eq(found, 0);
	free(got);
}
END_TEST

/* Writes text[0..len) as a chunked body of pieces of size step (with an
 * extension on every other size line) into out: its length. */
static size_t
chunked(const char *text, size_t len, size_t step, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t off = 0, k = 0; off < len; off += step, k++) {
		size_t m = len - off < step ? len - off : step;
		n += (size_t)snprintf(out + n, cap - n, "%zx%s\r\n", m,
		    k % 2 ? ";ext=1" : "");
		memcpy(out + n, text + off, m);
		n += m;
		n += (size_t)snprintf(out + n, cap - n, "\r\n");
	}
	n += (size_t)snprintf(out + n, cap - n, "0\r\nTrailer: x\r\n\r\n");
	return n;
}

/* De-frames a chunked body (as chunked writes it) into out: the data's
 * length. */
static size_t
unchunk(const char *in, size_t len, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < len;) {
		size_t size = strtoul(in + i, NULL, 16);
		const char *eol = memmem(in + i, len - i, "\r\n", 2);
		ck_assert_ptr_nonnull(eol);
		i = (size_t)(eol - in) + 2;
		if (size == 0)
			break;
		memcpy(out + n, in + i, size);
		n += size;
		i += size + 2;
	}
	return n;
}

/* Cuts at every step bytes below len (step, 2 step, ...) into cuts, at
 * most cap: how many. */
static size_t
cuts_every(size_t step, size_t len, size_t *cuts, size_t cap)
{
	size_t nc = 0;

	for (size_t at = step; at < len && nc < cap; at += step)
		cuts[nc++] = at;
	return nc;
}

static char *scan_cuts(const char *value, const char *text, size_t len,
    const size_t *cuts, size_t ncuts, bool chunked_body, size_t *ret_found,
    char *ret_filler);

START_TEST(test_scan_across_chunked_framing)
{
	static const size_t steps[] = { 1, 2, 5, 9, 1000 };
	static const size_t reads[] = { 0, 1, 3, 17 };
	char text[256], body[4096], got_data[4096], want_data[4096], filler;
	size_t cuts[4096];

	snprintf(text, sizeof(text), "{\"echo\": \"Bearer %s\", \"n\": 1}",
	    secret);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		for (size_t k = 0; k < sizeof(reads) / sizeof(reads[0]); k++) {
			size_t len = chunked(text, strlen(text), steps[i], body,
				   sizeof(body)),
			       found;
			size_t nc = reads[k] == 0
			    ? 0
			    : cuts_every(reads[k], len, cuts, 4096);
			/* The framing as it was (its length asserted), the
			 * value's bytes filler. */
			char *got = scan_cuts(secret, body, len, cuts, nc, true,
			    &found, &filler);
			got_data[unchunk(got, len, got_data)] = '\0';
			ck_assert_msg(strstr(got_data, secret) == NULL,
			    "chunks of %zu, reads of %zu: %s", steps[i],
			    reads[k], got_data);
			ck_assert_uint_ge(found, 1);
			want_data[unchunk(body, len, want_data)] = '\0';
			ck_assert_uint_eq(strlen(got_data), strlen(want_data));
			ck_assert_int_eq(strncmp(got_data,
					     "{\"echo\": \"Bearer ", 17),
			    0);
			ck_assert_ptr_nonnull(
			    strstr(got_data, "\", \"n\": 1}"));
			free(got);
		}
}
END_TEST

/* --- the escapings, unit by unit ----------------------------------------- */

/* Scans text[0..len) for value, cut into reads at cuts[0..ncuts)
 * (ascending, inside the text), as a chunked body or not: the answer
 * (len bytes), the matches and the scanner's filler. */
static char *
scan_cuts(const char *value, const char *text, size_t len, const size_t *cuts,
    size_t ncuts, bool chunked_body, size_t *ret_found, char *ret_filler)
{
	struct inject_scanner s;
	struct buf out = BUF_INIT(1 << 20);
	size_t off = 0, n;

	ck_assert_int_eq(inject_scanner_init(&s, value, strlen(value)), 0);
	if (chunked_body)
		inject_scanner_chunked(&s);
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;
		ck_assert_int_eq(inject_scanner_feed(&s, text + off, end - off,
				     &out, NULL),
		    0);
		off = end;
	}
	ck_assert_int_eq(inject_scanner_flush(&s, &out), 0);
	ck_assert_uint_eq(out.len, len);
	*ret_found = s.found;
	*ret_filler = s.filler;
	inject_scanner_free(&s);
	return buf_steal(&out, &n);
}

/* A way of writing v[0..vl) as an upstream might reflect it: into out
 * (room for 16 bytes a byte), its length. */
typedef size_t (*encoder)(const char *v, size_t vl, char *out);

static size_t
enc_json_slash(const char *v, size_t vl, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < vl; i++) {
		if (v[i] == '/' || v[i] == '"' || v[i] == '\\')
			out[n++] = '\\';
		out[n++] = v[i];
	}
	return n;
}

static size_t
enc_json_u(const char *v, size_t vl, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < vl; i++)
		n += (size_t)snprintf(out + n, 16, "\\u%04x",
		    (unsigned char)v[i]);
	return n;
}

static size_t
enc_json_U(const char *v, size_t vl, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < vl; i++)
		n += (size_t)snprintf(out + n, 16, "\\u%04X",
		    (unsigned char)v[i]);
	return n;
}

/* JavaScript's and Python's \xHH, and a regular expression's \+. */
static size_t
enc_js(const char *v, size_t vl, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < vl; i++) {
		if (i % 2 == 0)
			n += (size_t)snprintf(out + n, 16, "\\x%02x",
			    (unsigned char)v[i]);
		else if (v[i] == '+' || v[i] == '/' || v[i] == '=') {
			out[n++] = '\\';
			out[n++] = v[i];
		} else
			out[n++] = v[i];
	}
	return n;
}

static size_t
enc_html_dec(const char *v, size_t vl, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < vl; i++)
		n +=
		    (size_t)snprintf(out + n, 16, "&#%u;", (unsigned char)v[i]);
	return n;
}

static size_t
enc_html_hex(const char *v, size_t vl, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < vl; i++)
		n += (size_t)snprintf(out + n, 16, i % 2 ? "&#x%x;" : "&#X%X;",
		    (unsigned char)v[i]);
	return n;
}

/* Leading zeros up to the cap: 8 digits. */
static size_t
enc_html_zeros(const char *v, size_t vl, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < vl; i++)
		n += (size_t)snprintf(out + n, 16,
		    i % 2 ? "&#%08u;" : "&#x%08x;", (unsigned char)v[i]);
	return n;
}

/* Past the cap: 9 digits, not read (credentials.md says so). */
static size_t
enc_html_nine(const char *v, size_t vl, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < vl; i++)
		n += (size_t)snprintf(out + n, 16, "&#%09u;",
		    (unsigned char)v[i]);
	return n;
}

static size_t
enc_html_named(const char *v, size_t vl, char *out)
{
	static const char *const names[][2] = { { "/", "&sol;" },
		{ "+", "&plus;" }, { "=", "&equals;" }, { "_", "&lowbar;" },
		{ "&", "&amp;" }, { "\"", "&quot;" }, { "<", "&lt;" },
		{ ">", "&gt;" }, { "'", "&apos;" } };
	size_t n = 0;

	for (size_t i = 0; i < vl; i++) {
		const char *name = NULL;
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (v[i] == names[k][0][0])
				name = names[k][1];
		if (name != NULL) {
			memcpy(out + n, name, strlen(name));
			n += strlen(name);
		} else
			out[n++] = v[i];
	}
	return n;
}

static size_t
enc_upper(const char *v, size_t vl, char *out)
{
	for (size_t i = 0; i < vl; i++)
		out[i] = (char)toupper((unsigned char)v[i]);
	return vl;
}

static size_t
enc_swapcase(const char *v, size_t vl, char *out)
{
	for (size_t i = 0; i < vl; i++) {
		unsigned char c = (unsigned char)v[i];
		out[i] = (char)(isupper(c) ? tolower(c) : toupper(c));
	}
	return vl;
}

static size_t
enc_utf16le(const char *v, size_t vl, char *out)
{
	for (size_t i = 0; i < vl; i++) {
		out[2 * i] = v[i];
		out[2 * i + 1] = '\0';
	}
	return 2 * vl;
}

/* Inside UTF-16LE text: the NUL of the character before comes first, so
 * the bytes read as big-endian up to the last one. */
static size_t
enc_utf16le_inner(const char *v, size_t vl, char *out)
{
	out[0] = '\0';
	return 1 + enc_utf16le(v, vl, out + 1);
}

static size_t
enc_utf16be(const char *v, size_t vl, char *out)
{
	for (size_t i = 0; i < vl; i++) {
		out[2 * i] = '\0';
		out[2 * i + 1] = v[i];
	}
	return 2 * vl;
}

/* Quoted-printable: '=' and every fourth byte as =HH, a soft line break
 * ("=\r\n", or "=\n") after every seventh byte. */
static size_t
qp(const char *v, size_t vl, char *out, const char *soft)
{
	size_t n = 0;

	for (size_t i = 0; i < vl; i++) {
		if (i > 0 && i % 7 == 0) {
			memcpy(out + n, soft, strlen(soft));
			n += strlen(soft);
		}
		if (v[i] == '=' || i % 4 == 3)
			n += (size_t)snprintf(out + n, 16, "=%02X",
			    (unsigned char)v[i]);
		else
			out[n++] = v[i];
	}
	return n;
}

static size_t
enc_qp(const char *v, size_t vl, char *out)
{
	return qp(v, vl, out, "=\r\n");
}

static size_t
enc_qp_lf(const char *v, size_t vl, char *out)
{
	return qp(v, vl, out, "=\n");
}

static size_t
enc_pct_lower(const char *v, size_t vl, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < vl; i++)
		n += (size_t)snprintf(out + n, 16, "%%%02x",
		    (unsigned char)v[i]);
	return n;
}

/* Every escaping in one occurrence, a different one at each byte. */
static size_t
enc_mixed(const char *v, size_t vl, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < vl; i++) {
		unsigned char c = (unsigned char)v[i];
		switch (i % 11) {
		case 0:
			out[n++] = (char)toupper(c);
			break;
		case 1:
			n += (size_t)snprintf(out + n, 16, "\\u%04x", c);
			break;
		case 2:
			n += (size_t)snprintf(out + n, 16, "&#%u;", c);
			break;
		case 3:
			n += (size_t)snprintf(out + n, 16, "%%%02X", c);
			break;
		case 4:
			n += (size_t)snprintf(out + n, 16, "=%02X", c);
			break;
		case 5:
			n += (size_t)snprintf(out + n, 16, "&#x%x;", c);
			break;
		case 6:
			out[n++] = (char)c;
			out[n++] = '\0';
			break;
		case 7:
			out[n++] = '\0';
			out[n++] = (char)c;
			break;
		case 8:
			n += (size_t)snprintf(out + n, 16, "%02x", c);
			break;
		case 9:
			n += (size_t)snprintf(out + n, 16, "\\x%02X", c);
			break;
		default:
			n += enc_html_named(v + i, 1, out + n);
			break;
		}
	}
	return n;
}

static const struct {
	const char *name;
	encoder enc;
} forms[] = {
	{ "json \\/", enc_json_slash },
	{ "json \\u0073", enc_json_u },
	{ "json \\u005F", enc_json_U },
	{ "js \\x73 and \\+", enc_js },
	{ "html &#115;", enc_html_dec },
	{ "html &#x73;", enc_html_hex },
	{ "html, 8 digits", enc_html_zeros },
	{ "html named", enc_html_named },
	{ "upper case", enc_upper },
	{ "swapped case", enc_swapcase },
	{ "utf-16le", enc_utf16le },
	{ "utf-16le in utf-16 text", enc_utf16le_inner },
	{ "utf-16be", enc_utf16be },
	{ "quoted-printable", enc_qp },
	{ "quoted-printable, =\\n", enc_qp_lf },
	{ "percent, lower", enc_pct_lower },
	{ "mixed", enc_mixed },
};

#define PRE "HTTP/1.1 200 OK\r\nX-Echo: Bearer "
#define POST "\r\nContent-Length: 2\r\n\r\n{}"

/* PRE, form, POST into text: the form's offset is sizeof(PRE) - 1. */
static size_t
framed(const char *form, size_t flen, char *text)
{
	memcpy(text, PRE, sizeof(PRE) - 1);
	memcpy(text + sizeof(PRE) - 1, form, flen);
	memcpy(text + sizeof(PRE) - 1 + flen, POST, sizeof(POST) - 1);
	return sizeof(PRE) - 1 + flen + sizeof(POST) - 1;
}

/* got, a scan of a framed form (flen bytes of form) len bytes long, holds
 * the filler on every byte of the form but a line break (a soft one of
 * quoted-printable is kept), PRE and POST as they were; what names the
 * case in a failure. */
static void
expect_form_filled(const char *got, size_t len, const char *form, size_t flen,
    char filler, const char *what)
{
	for (size_t i = 0; i < flen; i++)
		ck_assert_msg(got[sizeof(PRE) - 1 + i] == filler ||
			form[i] == '\r' || form[i] == '\n',
		    "%s: byte %zu of the form kept: %.*s", what, i, (int)len,
		    got);
	ck_assert_int_eq(memcmp(got, PRE, sizeof(PRE) - 1), 0);
	ck_assert_int_eq(memcmp(got + len - (sizeof(POST) - 1), POST,
			     sizeof(POST) - 1),
	    0);
}

/* Each escaping alone: its every byte overwritten with the filler, the
 * text around it kept, whole or cut into reads at any one offset or in
 * pieces of 1, 2, 3 and 7 bytes, each cut giving the same answer. */
START_TEST(test_scan_escapings)
{
	const char *name = forms[_i].name;
	char form[16 * sizeof(secret)], text[sizeof(form) + 128], filler;
	size_t flen = forms[_i].enc(secret, strlen(secret), form);
	size_t len = framed(form, flen, text), found, cuts[1024];
	char *whole =
	    scan_cuts(secret, text, len, NULL, 0, false, &found, &filler);

	ck_assert_msg(found >= 1, "%s: not found", name);
	expect_form_filled(whole, len, form, flen, filler, name);
	for (size_t at = 1; at < len; at++) {
		size_t f;
		char fl,
		    *got = scan_cuts(secret, text, len, &at, 1, false, &f, &fl);
		ck_assert_msg(memcmp(got, whole, len) == 0 && f == found,
		    "%s: cut at %zu differs", name, at);
		free(got);
	}
	for (size_t step = 1; step <= 7; step++) {
		size_t nc = cuts_every(step, len, cuts, 1024), f;
		char fl, *got;
		got = scan_cuts(secret, text, len, cuts, nc, false, &f, &fl);
		ck_assert_msg(memcmp(got, whole, len) == 0 && f == found,
		    "%s: reads of %zu differ", name, step);
		free(got);
	}
	free(whole);
}
END_TEST

/* A slice of the value (issue 18's sliding cut), in each escaping:
 * INJECT_WINDOW bytes in a row of it or more, from anywhere in it (the
 * value less its last byte, its middle), are redacted, every byte of
 * the form; INJECT_WINDOW - 1 bytes (its start, its end) are not. */
START_TEST(test_scan_slices)
{
	static const struct {
		size_t at, len;
		bool redacted;
	} cuts[] = { { 0, sizeof(secret) - 2, true }, { 1, 8, true },
		{ 5, 8, true }, { 13, 8, true }, { 3, 12, true },
		{ 0, 7, false }, { 14, 7, false }, { 6, 7, false } };
	const char *name = forms[_i].name;
	char form[16 * sizeof(secret)], text[sizeof(form) + 128], filler;
	char what[128];

	for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		size_t flen = forms[_i].enc(secret + cuts[c].at, cuts[c].len,
			   form),
		       len = framed(form, flen, text), found;
		char *got = scan_cuts(secret, text, len, NULL, 0, false, &found,
		    &filler);
		if (!cuts[c].redacted) {
			ck_assert_msg(found == 0 && memcmp(got, text, len) == 0,
			    "%s: %zu bytes at %zu were redacted: %.*s", name,
			    cuts[c].len, cuts[c].at, (int)len, got);
			free(got);
			continue;
		}
		ck_assert_msg(found == 1, "%s: %zu bytes at %zu: found %zu",
		    name, cuts[c].len, cuts[c].at, found);
		snprintf(what, sizeof(what), "%s: %zu bytes at %zu", name,
		    cuts[c].len, cuts[c].at);
		expect_form_filled(got, len, form, flen, filler, what);
		free(got);
	}
}
END_TEST

/* Each escaping inside a chunked body, split by the framing anywhere:
 * its bytes in the data all filler, the framing kept, every way of
 * reading it giving the same answer. */
START_TEST(test_scan_escapings_chunked)
{
	static const size_t steps[] = { 1, 2, 5, 9, 1000 };
	static const size_t reads[] = { 1, 3, 17 };
	const char *name = forms[_i].name;
	char form[16 * sizeof(secret)], data[sizeof(form) + 64];
	static char body[64 * 1024], got_data[64 * 1024];
	size_t flen = forms[_i].enc(secret, strlen(secret), form);
	size_t dlen = 0;
	static size_t cuts[64 * 1024];

	memcpy(data, "{\"echo\": \"", 10);
	dlen = 10;
	memcpy(data + dlen, form, flen);
	dlen += flen;
	memcpy(data + dlen, "\", \"n\": 1}", 10);
	dlen += 10;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		size_t len = chunked(data, dlen, steps[i], body, sizeof(body));
		size_t found, gl;
		char filler;
		char *whole = scan_cuts(secret, body, len, NULL, 0, true,
		    &found, &filler);
		ck_assert_msg(found >= 1, "%s, chunks of %zu: not found", name,
		    steps[i]);
		gl = unchunk(whole, len, got_data);
		ck_assert_uint_eq(gl, dlen);
		ck_assert_int_eq(memcmp(got_data, data, 10), 0);
		ck_assert_int_eq(memcmp(got_data + 10 + flen, data + 10 + flen,
				     10),
		    0);
		for (size_t k = 0; k < flen; k++)
			ck_assert_msg(got_data[10 + k] == filler ||
				form[k] == '\r' || form[k] == '\n',
			    "%s, chunks of %zu: byte %zu kept", name, steps[i],
			    k);
		for (size_t r = 0; r < sizeof(reads) / sizeof(reads[0]); r++) {
			size_t nc = cuts_every(reads[r], len, cuts,
				   sizeof(cuts) / sizeof(cuts[0])),
			       f;
			char fl, *got;
			got = scan_cuts(secret, body, len, cuts, nc, true, &f,
			    &fl);
			ck_assert_msg(memcmp(got, whole, len) == 0 &&
				f == found,
			    "%s, chunks of %zu, reads of %zu differ", name,
			    steps[i], reads[r]);
			free(got);
		}
		free(whole);
	}
}
END_TEST

/* Past the cap of 8 digits an entity is not read; at it, it is. */
START_TEST(test_scan_entity_cap)
{
	char form[16 * sizeof(secret)], text[sizeof(form) + 128], filler;
	size_t found, len, flen;
	char *got;

	flen = enc_html_nine(secret, strlen(secret), form);
	len = framed(form, flen, text);
	got = scan_cuts(secret, text, len, NULL, 0, false, &found, &filler);
	ck_assert_uint_eq(found, 0);
	ck_assert_int_eq(memcmp(got, text, len), 0);
	free(got);
	/* No ';': not an entity the scanner reads (nor one an encoder
	 * writes). */
	len = 0;
	for (size_t i = 0; secret[i] != '\0'; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "&#%u",
		    (unsigned char)secret[i]);
	got = scan_cuts(secret, text, len, NULL, 0, false, &found, &filler);
	ck_assert_uint_eq(found, 0);
	free(got);
}
END_TEST

/* pattern, each '*' in it the scanner's filler, into out (cap bytes). */
static void
with_filler(const char *pattern, char filler, char *out, size_t cap)
{
	snprintf(out, cap, "%s", pattern);
	for (char *w = out; *w != '\0'; w++)
		if (*w == '*')
			*w = filler;
}

/* base64 inside JSON with '/' written "\/", and base64 wrapped at line
 * ends (MIME, PEM): found at each of the three offsets. */
START_TEST(test_scan_base64_escaped)
{
	static const char v[] = "tok_???~~~_0123456789";
	size_t vl = strlen(v);

	for (size_t k = 0; k < 3; k++)
		for (int wrap = 0; wrap < 2; wrap++) {
			char plain[64], b64[128], esc[256], mid[256], text[512],
			    filler;
			size_t n = 0, m = 0, found, first = (8 * k + 5) / 6,
			       last = 8 * (k + vl) / 6;
			int pl = snprintf(plain, sizeof(plain), "%.*s%s",
			    (int)k, "ab", v);
			int bl = EVP_EncodeBlock((unsigned char *)b64,
			    (const unsigned char *)plain, pl);
			ck_assert_int_gt(bl, 0);
			ck_assert_ptr_nonnull(
			    memchr(b64 + first, '/', last - first));
			for (int i = 0; i < bl; i++) {
				if (wrap && i > 0 && i % 8 == 0) {
					esc[n++] = '\r';
					esc[n++] = '\n';
				}
				if (!wrap && b64[i] == '/')
					esc[n++] = '\\';
				esc[n++] = b64[i];
				if ((size_t)i >= first && (size_t)i < last) {
					if (b64[i] == '/' && !wrap)
						mid[m++] = '\\';
					mid[m++] = b64[i];
				}
			}
			esc[n] = '\0';
			snprintf(text, sizeof(text), "{\"blob\": \"%s\"}", esc);
			char *got = scan_cuts(v, text, strlen(text), NULL, 0,
			    false, &found, &filler);
			ck_assert_msg(found >= 1, "offset %zu, wrap %d: %s", k,
			    wrap, text);
			if (!wrap)
				ck_assert_ptr_null(
				    memmem(got, strlen(text), mid, m));
			ck_assert_ptr_nonnull(strstr(got, "{\"blob\": \""));
			free(got);
		}
}
END_TEST

/* Readings that overlap are one run, redacted whole: a value that
 * repeats itself over text of near copies, a run of the value longer
 * than a key, runs side by side; a target shorter than INJECT_WINDOW is
 * matched whole. The work stays linear: a few unit-matcher steps a
 * byte. */
START_TEST(test_scan_runs_overlap)
{
	static const struct {
		const char *value, *text, *want;
		size_t found;
	} cases[] = {
		{ "aaaaaaaaab", "xaaaaaaaaaaaaaaaby", "x****************y", 1 },
		{ "abacabad", "abacabacabad.", "abac********.", 1 },
		{ "abacabad", "AbAcAbAcAbAd.", "AbAc********.", 1 },
		{ "aab", "aaab aab aaaab", "a*** *** aa***", 3 },
		{ "a5a5b", "a5a5a5a5b!", "a5a5*****!", 1 },
		{ "sk_live_0123456789", "sk_live_01 x 23456789 y ve_01234 z",
		    "********** x ******** y ******** z", 3 },
		{ "sk_live_0123456789", "sk_live ve_01234567 _live_0",
		    "sk_live *********** _live_0", 1 },
		{ "0123456789", "01234567890123456789", "********************",
		    1 },
		/* The hex of an upper-case letter at a run's start. */
		{ "yyyyyyyy", "x 59YYYYYYY y", "x ********* y", 1 },
		/* A value that starts with an escape's first byte. */
		{ "&zbcdefghi", "x &zbcdefghi y", "x ********** y", 1 },
		{ "\\qwertyuio", "x \\qwertyuio y", "x ********** y", 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t found, len = strlen(cases[i].text);
		char filler, want[64];
		char *got = scan_cuts(cases[i].value, cases[i].text, len, NULL,
		    0, false, &found, &filler);
		with_filler(cases[i].want, filler, want, sizeof(want));
		ck_assert_msg(memcmp(got, want, len) == 0 &&
			found == cases[i].found,
		    "%s in %s: %.*s, %zu found", cases[i].value, cases[i].text,
		    (int)len, got, found);
		free(got);
	}

	/* 64 KiB of 'a' for a, ..., a, b of 40 and of 400 bytes: one run,
	 * a few steps a byte. */
	static char text[64 * 1024], value[401];
	for (size_t vl = 40; vl <= 400; vl *= 10) {
		struct inject_scanner s;
		struct buf out = BUF_INIT(2 * sizeof(text));
		memset(text, 'a', sizeof(text));
		memset(value, 'a', vl - 1);
		value[vl - 1] = 'b';
		ck_assert_int_eq(inject_scanner_init(&s, value, vl), 0);
		for (size_t off = 0; off < sizeof(text); off += 4096)
			ck_assert_int_eq(inject_scanner_feed(&s, text + off,
					     4096, &out, NULL),
			    0);
		ck_assert_int_eq(inject_scanner_flush(&s, &out), 0);
		ck_assert_uint_eq(s.found, 1);
		ck_assert_msg(s.steps <= 2 * INJECT_WINDOW * sizeof(text),
		    "value of %zu: %zu steps for %zu bytes", vl, s.steps,
		    sizeof(text));
		inject_scanner_free(&s);
		buf_free(&out);
	}
}
END_TEST

/* Text that can be read in many ways at once, each the start of a key:
 * "6161..." is "61" or "a" (hex) at each pair, and a value made of those
 * two tokens holds most of the ways. Past INJECT_STEPS_BYTE unit steps a
 * byte fed the scan fails closed (-E2BIG, nothing given out) rather than
 * holding the proxy's loop. Real answers take a few steps a byte. */
START_TEST(test_scan_too_costly_fails_closed)
{
	static char text[256 * 1024], value[INJECT_VALUE_MAX];
	struct inject_scanner s;
	struct buf out = BUF_INIT(2 * sizeof(text));
	size_t vl = 0, off;
	unsigned seed = 7;
	int r = 0;

	while (vl + 2 <= sizeof(value)) {
		seed = seed * 1103515245u + 12345u;
		if ((seed >> 16) & 1) {
			value[vl++] = '6';
			value[vl++] = '1';
		} else
			value[vl++] = 'a';
	}
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = "61"[i % 2];
	ck_assert_int_eq(inject_scanner_init(&s, value, vl), 0);
	for (off = 0; off < sizeof(text) && r == 0; off += 4096)
		r = inject_scanner_feed(&s, text + off, 4096, &out, NULL);
	ck_assert_msg(r == -E2BIG, "%d after %zu bytes, %zu steps", r, off,
	    s.steps);
	ck_assert_uint_le(s.steps,
	    INJECT_STEPS_BYTE * (off + s.maxspan) + INJECT_READINGS);
	inject_scanner_free(&s);
	buf_free(&out);
	/* A real reflection, mixed and long, stays far under the budget. */
	{
		char form[16 * sizeof(secret)], big[64 * 1024], filler;
		size_t flen = enc_mixed(secret, strlen(secret), form), n = 0,
		       found;
		while (n + flen + 16 < sizeof(big)) {
			memcpy(big + n, "{\"k\": \"", 8);
			memcpy(big + n + 8, form, flen);
			memcpy(big + n + 8 + flen, "\"},\n", 4);
			n += flen + 12;
		}
		char *got =
		    scan_cuts(secret, big, n, NULL, 0, false, &found, &filler);
		ck_assert_uint_eq(found, n / (flen + 12));
		free(got);
	}
}
END_TEST

/* base64 of text into out (a NUL after): its length. */
static size_t
b64(const char *text, char *out)
{
	int n = EVP_EncodeBlock((unsigned char *)out,
	    (const unsigned char *)text, (int)strlen(text));
	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

/* A secret stored as it goes on the wire (issue 18's Basic): the value
 * holds a base64 word that decodes to printable text, and its secret
 * side, decoded, is redacted as the value is (a slice of it too, in its
 * escapings), the user name kept; a word that decodes to no text, or to
 * a secret shorter than 6 bytes, adds nothing. */
START_TEST(test_scan_decoded_secret)
{
	static const struct {
		const char *pre, *plain, *text, *want;
		size_t decoded;
	} cases[] = {
		/* A key as the user (Stripe). */
		{ "", "sk_live_redteam_0123456789abcdef:",
		    "{\"user\": \"sk_live_redteam_0123456789abcdef\"}",
		    "{\"user\": \"********************************\"}", 1 },
		/* e-mail:token (Atlassian): the e-mail is no secret. */
		{ "", "alice@example.com:ATATT3xFfGF0tok_en",
		    "hi alice@example.com, token ATATT3xFfGF0tok%5Fen, "
		    "3xFfGF0t",
		    "hi alice@example.com, token ********************, "
		    "********",
		    1 },
		/* sid:token (Twilio), the word inside the value. */
		{ "Basic ", "AC0123456789abcdef:twilio_token_9876",
		    "AC0123456789abcdef twilio&lowbar;token_9876",
		    "AC0123456789abcdef ************************", 1 },
		/* A password shorter than 6 bytes: nothing decoded. */
		{ "", "someone@example.com:pw12", "someone@example.com pw12",
		    "someone@example.com pw12", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char value[256], filler, want[128];
		size_t pl = strlen(cases[i].pre), len = strlen(cases[i].text),
		       found, cuts[128], nc = 0;
		struct inject_scanner s;
		memcpy(value, cases[i].pre, pl);
		b64(cases[i].plain, value + pl);
		ck_assert_int_eq(inject_scanner_init(&s, value, strlen(value)),
		    0);
		ck_assert_msg(s.ndecoded == cases[i].decoded, "%s: %zu decoded",
		    cases[i].plain, s.ndecoded);
		inject_scanner_free(&s);
		char *got = scan_cuts(value, cases[i].text, len, NULL, 0, false,
		    &found, &filler);
		with_filler(cases[i].want, filler, want, sizeof(want));
		ck_assert_msg(memcmp(got, want, len) == 0, "%s: %.*s",
		    cases[i].plain, (int)len, got);
		nc = cuts_every(1, len, cuts, sizeof(cuts) / sizeof(cuts[0]));
		char *cut = scan_cuts(value, cases[i].text, len, cuts, nc,
		    false, &found, &filler);
		ck_assert_int_eq(memcmp(got, cut, len), 0);
		free(cut);
		free(got);
	}
	/* A key that is base64 of no text (bytes past 0x7e). */
	{
		struct inject_scanner s;
		static const char key[] =
		    "sk_live_51Hq8zZkeyABCDEFGHIJ0123456789xy";
		ck_assert_int_eq(inject_scanner_init(&s, key, strlen(key)), 0);
		ck_assert_uint_eq(s.ndecoded, 0);
		inject_scanner_free(&s);
	}
}
END_TEST

START_TEST(test_scanner_init_refuses)
{
	struct inject_scanner s;
	static char big[INJECT_VALUE_MAX + 1];

	ck_assert_int_eq(inject_scanner_init(&s, "", 0), -EINVAL);
	ck_assert_int_eq(inject_scanner_init(&s, big, sizeof(big)), -EINVAL);
	inject_scanner_free(&s);
}
END_TEST

static size_t
problems_of(const char *rule)
{
	char text[2048];
	json_t *m, *problems = json_array(), *warnings = json_array();
	size_t n;

	snprintf(text, sizeof(text),
	    "{\"name\": \"j\", \"command\": [\"/bin/true\"],"
	    " \"capabilities\": [{\"name\": \"repo.read\", \"audience\": "
	    "\"gh\", \"params\": {\"repo\": [\"w\"]}, \"ttl_seconds\": 60,"
	    " \"reason\": \"r\"}], \"egress\": [%s]}",
	    rule);
	m = testutil_json(text, 0);
	manifest_validate(m, NULL, problems, warnings);
	n = 0;
	for (size_t i = 0; i < json_array_size(problems); i++) {
		const char *f = json_string_value(
		    json_object_get(json_array_get(problems, i), "field"));
		n += f != NULL && strncmp(f, "egress[0].inject", 16) == 0;
	}
	char *all = json_dumps(problems, 0);
	ck_assert_msg(json_array_size(problems) == n, "%s: %s", rule, all);
	free(all);
	json_decref(m);
	json_decref(problems);
	json_decref(warnings);
	return n;
}

#define RULE(tail)                                                             \
	"{\"host\": \"api.example.com\", \"methods\": [\"GET\"], "             \
	"\"reason\": \"r\", " tail "}"

START_TEST(test_manifest_inject)
{
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"Authorization\", \"format\": \"Bearer "
			      "{secret}\", \"capability\": \"repo.read\"}")),
	    0);
	/* Passthrough and plain HTTP to the world cannot carry it. */
	ck_assert_uint_eq(problems_of(RULE(
			      "\"tls\": \"passthrough\", \"inject\": "
			      "{\"secret\": \"gh\", \"header\": \"X-Key\", "
			      "\"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(
			      RULE("\"port\": 8080, \"inject\": {\"secret\": "
				   "\"gh\", \"header\": \"X-Key\", "
				   "\"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"port\": 8080, \"allow_cidrs\": "
			      "[\"127.0.0.0/8\"], \"inject\": {\"secret\": "
			      "\"gh\", \"header\": \"X-Key\", "
			      "\"capability\": \"repo.read\"}")),
	    0);
	ck_assert_uint_eq(problems_of(
			      RULE("\"port\": 8080, \"allow_cidrs\": "
				   "[\"10.0.0.0/8\"], \"inject\": {\"secret\": "
				   "\"gh\", \"header\": \"X-Key\", "
				   "\"capability\": \"repo.read\"}")),
	    1);
	/* Headers, formats, the capability, the audience, unknown keys. */
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"Host\", \"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"X-Cordon-Job\", \"capability\": "
			      "\"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"Bad Header\", \"capability\": "
			      "\"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"X-Key\", \"format\": \"{secret}{secret}\", "
			      "\"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"X-Key\", \"format\": \"{other}\", "
			      "\"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"X-Key\", \"capability\": \"nope\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"audience\": \"other\", \"inject\": "
			      "{\"secret\": \"gh\", \"header\": \"X-Key\", "
			      "\"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(
			      RULE("\"inject\": {\"secret\": \"Bad Name\", "
				   "\"header\": \"X-Key\", \"capability\": "
				   "\"repo.read\", \"value\": \"x\"}")),
	    2);
	ck_assert_uint_eq(problems_of(RULE("\"inject\": \"gh\"")), 1);
	ck_assert(manifest_inject_format_ok("Bearer {secret}"));
	ck_assert(!manifest_inject_format_ok("Bearer {secret"));
	ck_assert(!manifest_inject_format_ok("Bearer\n{secret}"));
	ck_assert(manifest_inject_header_ok("Authorization"));
	ck_assert(!manifest_inject_header_ok("content-length"));
}
END_TEST

START_TEST(test_forward_swaps_the_token)
{
	static const char req[] = "GET /repos/acme/widgets HTTP/1.1\r\n"
				  "Host: api.github.com\r\n"
				  "Authorization: Bearer crd_job_token_here\r\n"
				  "x-api-key: job-chosen\r\n"
				  "X-Cordon-Job: job_other\r\n"
				  "X-Other: crd_elsewhere\r\n"
				  "Accept: application/json\r\n"
				  "Accept-Encoding: gzip, br\r\n\r\n";
	struct http1_parser parser;
	struct forward_target t = { .host = "api.github.com",
		.port = 443,
		.tunnel = true,
		.inject_header = "X-Api-Key",
		.inject_value = "Key upstream-secret" };
	struct buf out = BUF_INIT(HTTP1_HEAD_MAX + 1024);
	size_t used = 0;

	http1_parser_init(&parser, HTTP1_MODE_ORIGIN);
	ck_assert_int_eq(http1_parse(&parser, req, strlen(req), &used), 0);
	ck_assert_int_eq(forward_head(&parser.req, req, &t, &out), 0);
	const char *s = buf_str(&out);
	ck_assert_ptr_nonnull(
	    strstr(s, "\r\nX-Api-Key: Key upstream-secret\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nAccept: application/json\r\n"));
	ck_assert_ptr_null(strstr(s, "crd_"));
	ck_assert_ptr_null(strstr(s, "job-chosen"));
	ck_assert_ptr_null(strstr(s, "X-Cordon"));
	ck_assert_ptr_null(strstr(s, "Authorization"));
	/* An answer the scanner can read: no compression asked for. */
	ck_assert_ptr_null(strstr(s, "gzip"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nAccept-Encoding: identity\r\n"));
	buf_free(&out);
	/* Without an injection the head is the job's, as before. */
	t.inject_header = NULL;
	buf_init(&out, HTTP1_HEAD_MAX + 1024);
	ck_assert_int_eq(forward_head(&parser.req, req, &t, &out), 0);
	ck_assert_ptr_nonnull(strstr(buf_str(&out), "crd_job_token_here"));
	buf_free(&out);
}
END_TEST

/* A token in the query goes too: the parameter holding it is dropped,
 * the others kept in order; no query is left when none remains. */
START_TEST(test_forward_drops_a_token_in_the_query)
{
	static const char *const in[] = {
		"GET /r?access_token=crd_job_token_here&page=2 HTTP/1.1\r\n",
		"GET /r?page=2&t=xcrd_glued&per=5 HTTP/1.1\r\n",
		"GET /r?access_token=crd_job_token_here HTTP/1.1\r\n",
		"GET /r?page=2 HTTP/1.1\r\n",
	};
	static const char *const want[] = { "GET /r?page=2 HTTP/1.1\r\n",
		"GET /r?page=2&per=5 HTTP/1.1\r\n", "GET /r HTTP/1.1\r\n",
		"GET /r?page=2 HTTP/1.1\r\n" };
	struct forward_target t = { .host = "api.github.com",
		.port = 443,
		.tunnel = true,
		.inject_header = "X-Api-Key",
		.inject_value = "Key upstream-secret" };

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		char req[512];
		struct http1_parser parser;
		struct buf out = BUF_INIT(HTTP1_HEAD_MAX + 1024);
		size_t used = 0;

		snprintf(req, sizeof(req),
		    "%sHost: api.github.com\r\nAccept: */*\r\n\r\n", in[i]);
		http1_parser_init(&parser, HTTP1_MODE_ORIGIN);
		ck_assert_int_eq(http1_parse(&parser, req, strlen(req), &used),
		    0);
		ck_assert_int_eq(forward_head(&parser.req, req, &t, &out), 0);
		ck_assert_msg(strncmp(buf_str(&out), want[i],
				  strlen(want[i])) == 0,
		    "%s", buf_str(&out));
		ck_assert_ptr_null(strstr(buf_str(&out), "crd_"));
		ck_assert_ptr_nonnull(
		    strstr(buf_str(&out), "\r\nAccept: */*\r\n"));
		buf_free(&out);
	}
}
END_TEST

/* The per-job cache of released values: kept for its window, replaced
 * by a new version, ended by its expiry, forgotten at clear. */
START_TEST(test_cache)
{
	struct inject_cache c;
	const struct inject_cached *e;

	memset(&c, 0, sizeof(c));
	ck_assert_ptr_null(inject_cache_get(&c, "k", 100, 30));
	ck_assert_int_eq(inject_cache_put(&c, "k", 1, "v-one", 5, 100, 0), 0);
	e = inject_cache_get(&c, "k", 129, 30);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->value, "v-one");
	ck_assert_int_eq(e->version, 1);
	ck_assert_ptr_null(inject_cache_get(&c, "k", 130, 30)); /* window */
	ck_assert_ptr_null(inject_cache_get(&c, "k", 100, 0)); /* disabled */
	ck_assert_ptr_null(inject_cache_get(&c, "other", 100, 30));
	ck_assert_int_eq(inject_cache_put(&c, "k", 2, "v-two", 5, 130, 0), 0);
	e = inject_cache_get(&c, "k", 131, 30);
	ck_assert_str_eq(e->value, "v-two");
	ck_assert_int_eq(e->version, 2);
	ck_assert_uint_eq(c.n, 1);
	/* An issuer's credential ends at its expiry, before the window. */
	ck_assert_int_eq(inject_cache_put(&c, "o", 1, "tok", 3, 130, 140), 0);
	ck_assert_ptr_nonnull(inject_cache_get(&c, "o", 139, 30));
	ck_assert_ptr_null(inject_cache_get(&c, "o", 140, 30));
	ck_assert_int_eq(inject_cache_put(&c, "o", 1, "", 0, 130, 0), -EINVAL);
	inject_cache_clear(&c);
	ck_assert_uint_eq(c.n, 0);
	ck_assert_ptr_null(inject_cache_get(&c, "k", 131, 30));
	for (int i = 0; i < INJECT_CACHE_MAX; i++) {
		char name[16];
		snprintf(name, sizeof(name), "s%d", i);
		ck_assert_int_eq(inject_cache_put(&c, name, 1, "x", 1, 1, 0),
		    0);
	}
	ck_assert_int_eq(inject_cache_put(&c, "more", 1, "x", 1, 1, 0),
	    -ENOMEM);
	inject_cache_clear(&c);
}
END_TEST

/* --- the two bytes' skip (pass2) ----------------------------------------- */

/* The values the skip is tried on: the bench's hex key, this file's
 * secret, and one of punctuation and escapes' own bytes. */
static const char *const skip_values[] = {
	"3f9a1c07b2e4d8650a7f3c1e9b2d4a6081c5e7f3",
	secret,
	"&b\\c%d=e/f+g_h:i.j\"k",
};

#define UNIT_KINDS 16

/* Byte b written as unit kind k of credentials.md's table ("How the
 * scanner reads"), into o (room for 16): its length, 0 when kind k
 * cannot stand for b. */
static size_t
unit_of(unsigned char b, unsigned k, char *o)
{
	static const struct {
		unsigned char c;
		const char *name;
	} named[] = { { '/', "&sol;" }, { '+', "&plus;" }, { '=', "&equals;" },
		{ '&', "&AMP;" }, { '"', "&quot;" }, { '_', "&lowbar;" },
		{ '.', "&period;" }, { ':', "&colon;" }, { '\\', "&bsol;" },
		{ '%', "&percnt;" } };
	static const char shorts[] = "\bb\ff\nn\rr\tt";
	int n = 0;

	switch (k) {
	case 0:
		o[0] = (char)b;
		return 1;
	case 1:
		if (!isalpha(b))
			return 0;
		o[0] = (char)(b ^ 0x20);
		return 1;
	case 2:
		n = snprintf(o, 16, "%%%02X", b);
		break;
	case 3:
		n = snprintf(o, 16, "%%%02x", b);
		break;
	case 4:
		n = snprintf(o, 16, "=%02X", b);
		break;
	case 5:
		n = snprintf(o, 16, "%02X", b);
		break;
	case 6:
		n = snprintf(o, 16, "%02x", b);
		break;
	case 7:
		n = snprintf(o, 16, "\\u00%02x", b);
		break;
	case 8:
		n = snprintf(o, 16, "\\x%02X", b);
		break;
	case 9:
		if (b > 0x20 && b < 0x7f && !isalnum(b)) {
			o[0] = '\\';
			o[1] = (char)b;
			return 2;
		}
		for (size_t i = 0; shorts[i] != '\0'; i += 2)
			if (b == (unsigned char)shorts[i]) {
				o[0] = '\\';
				o[1] = shorts[i + 1];
				return 2;
			}
		return 0;
	case 10:
		n = snprintf(o, 16, "&#%u;", b);
		break;
	case 11:
		n = snprintf(o, 16, "&#x%02x;", b);
		break;
	case 12:
		n = snprintf(o, 16, "&#X0000%02X;", b);
		break;
	case 13:
		for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
			if (named[i].c == b) {
				n = snprintf(o, 16, "%s", named[i].name);
				return (size_t)n;
			}
		return 0;
	case 14:
		o[0] = (char)b;
		o[1] = '\0';
		return 2;
	default:
		o[0] = '\0';
		o[1] = (char)b;
		return 2;
	}
	return (size_t)n;
}

/* text[0..len) through a copy of prep (its pass2 replaced by pass2 when
 * not NULL) in pieces of step bytes: the answer (len bytes), found. */
static char *
scan_copy(const struct inject_scanner *prep, const uint64_t *pass2,
    const char *text, size_t len, size_t step, size_t *ret_found)
{
	struct inject_scanner s;
	struct buf out = BUF_INIT(1 << 20);
	size_t n;

	ck_assert_int_eq(inject_scanner_copy(&s, prep), 0);
	if (pass2 != NULL)
		s.pass2 = (uint64_t *)pass2;
	for (size_t off = 0; off < len; off += n) {
		n = len - off < step ? len - off : step;
		ck_assert_int_eq(inject_scanner_feed(&s, text + off, n, &out,
				     NULL),
		    0);
	}
	ck_assert_int_eq(inject_scanner_flush(&s, &out), 0);
	ck_assert_uint_eq(out.len, len);
	*ret_found = s.found;
	s.pass2 = prep->pass2;
	inject_scanner_free(&s);
	return buf_steal(&out, &n);
}

/* A run of the value whose first two bytes are each written as every
 * unit of the table, after each of a few bytes: it is found, and every
 * byte of it overwritten. The skip over places whose first two bytes
 * start no reading of a key must never pass such a run's start. */
START_TEST(test_skip_passes_no_unit)
{
	static const char before[] = "x \n%\\&=3fA\0";
	const char *v = skip_values[_i];
	struct inject_scanner prep;
	char text[128], u0[16], u1[16];

	ck_assert_int_eq(inject_scanner_init(&prep, v, strlen(v)), 0);
	for (unsigned k0 = 0; k0 < UNIT_KINDS; k0++)
		for (unsigned k1 = 0; k1 < UNIT_KINDS; k1++) {
			size_t l0 = unit_of((unsigned char)v[0], k0, u0),
			       l1 = unit_of((unsigned char)v[1], k1, u1);
			if (l0 == 0 || l1 == 0)
				continue;
			for (size_t b = 0; b < sizeof(before); b++) {
				size_t n = 0, start, end, found;
				text[n++] = 'q';
				text[n++] = before[b];
				start = n;
				memcpy(text + n, u0, l0);
				n += l0;
				memcpy(text + n, u1, l1);
				n += l1;
				memcpy(text + n, v + 2, INJECT_WINDOW - 2);
				n += INJECT_WINDOW - 2;
				end = n;
				memcpy(text + n, " ~~", 3);
				n += 3;
				char *got =
				    scan_copy(&prep, NULL, text, n, n, &found);
				ck_assert_msg(found >= 1,
				    "%s: units %u, %u after 0x%02x: not found",
				    v, k0, k1, (unsigned char)before[b]);
				for (size_t i = start; i < end; i++)
					ck_assert_msg(got[i] == prep.filler,
					    "%s: units %u, %u after 0x%02x: "
					    "byte %zu kept",
					    v, k0, k1, (unsigned char)before[b],
					    i - start);
				free(got);
			}
		}
	inject_scanner_free(&prep);
}
END_TEST

/* Answers mixing runs of the value (each byte a unit of the table), of
 * its base64, escapes' bytes and random ones, cut at random: the
 * scanner with its skip and the same scanner with a pass2 that rules
 * nothing out (every place looked at, as before the skip) give the same
 * bytes and the same count. */
START_TEST(test_skip_changes_nothing)
{
	const char *v = skip_values[_i];
	size_t vl = strlen(v);
	struct inject_scanner prep;
	uint64_t *ones = malloc(65536 / 8);
	char b64v[3][128], text[600], u[16];
	unsigned seed = 20261201u + (unsigned)_i;

	ck_assert_ptr_nonnull(ones);
	memset(ones, 0xff, 65536 / 8);
	ck_assert_int_eq(inject_scanner_init(&prep, v, vl), 0);
	for (size_t k = 0; k < 3; k++) {
		char pre[160] = "ab";
		memcpy(pre + k, v, vl + 1);
		b64(pre, b64v[k]);
	}
	for (int round = 0; round < 3000; round++) {
		size_t n = 0, f1, f2;
		while (n < 400) {
			seed = seed * 1103515245u + 12345u;
			unsigned r = seed >> 16;
			if (r % 4 == 0) {
				/* A run of the value from a random byte. */
				size_t at = (r >> 2) % vl,
				       len = 3 + (r >> 8) % 10;
				for (size_t j = at; j < vl && j < at + len;
				     j++) {
					seed = seed * 1103515245u + 12345u;
					size_t l = unit_of((unsigned char)v[j],
					    (seed >> 16) % UNIT_KINDS, u);
					if (l == 0)
						l = unit_of((unsigned char)v[j],
						    0, u);
					memcpy(text + n, u, l);
					n += l;
				}
			} else if (r % 4 == 1) {
				const char *b = b64v[(r >> 2) % 3];
				size_t bl = strlen(b), at = (r >> 4) % bl,
				       len = 4 + (r >> 9) % 12;
				for (size_t j = at; j < bl && j < at + len; j++)
					text[n++] = b[j];
			} else if (r % 4 == 2) {
				text[n++] =
				    "\\&%=#;\r\n\0x3fAF/+_"[(r >> 2) % 18];
			} else
				text[n++] = (char)(r >> 2);
		}
		seed = seed * 1103515245u + 12345u;
		size_t step = 1 + (seed >> 16) % 97;
		char *fast = scan_copy(&prep, NULL, text, n, step, &f1);
		char *slow = scan_copy(&prep, ones, text, n, step, &f2);
		ck_assert_msg(memcmp(fast, slow, n) == 0 && f1 == f2,
		    "%s: round %d (step %zu): the skip changed the answer "
		    "(found %zu, %zu)",
		    v, round, step, f1, f2);
		free(fast);
		free(slow);
	}
	inject_scanner_free(&prep);
	free(ones);
}
END_TEST

static Suite *
inject_suite(void)
{
	Suite *s = suite_create("inject");
	TCase *tc = tcase_create("inject");

	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_scan_forms);
	tcase_add_test(tc, test_scan_leaves_other_text);
	tcase_add_test(tc, test_scan_across_chunked_framing);
	tcase_add_loop_test(tc, test_scan_escapings, 0,
	    (int)(sizeof(forms) / sizeof(forms[0])));
	tcase_add_loop_test(tc, test_scan_slices, 0,
	    (int)(sizeof(forms) / sizeof(forms[0])));
	tcase_add_loop_test(tc, test_scan_escapings_chunked, 0,
	    (int)(sizeof(forms) / sizeof(forms[0])));
	tcase_add_test(tc, test_scan_entity_cap);
	tcase_add_test(tc, test_scan_base64_escaped);
	tcase_add_test(tc, test_scan_runs_overlap);
	tcase_add_test(tc, test_scan_too_costly_fails_closed);
	tcase_add_test(tc, test_scan_decoded_secret);
	tcase_add_test(tc, test_scanner_init_refuses);
	tcase_add_test(tc, test_manifest_inject);
	tcase_add_test(tc, test_forward_swaps_the_token);
	tcase_add_test(tc, test_forward_drops_a_token_in_the_query);
	tcase_add_test(tc, test_cache);
	tcase_add_loop_test(tc, test_skip_passes_no_unit, 0,
	    (int)(sizeof(skip_values) / sizeof(skip_values[0])));
	tcase_add_loop_test(tc, test_skip_changes_nothing, 0,
	    (int)(sizeof(skip_values) / sizeof(skip_values[0])));
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(inject_suite());
}
