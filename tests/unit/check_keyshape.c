/*
 * A value's scan part (proxy/keyshape.c): the type prefix of Stripe,
 * GitHub, Slack and GitLab keys and a JWT's header and claims left out,
 * values of no such shape (AWS secret keys, random hex, UUIDs), short
 * keys and values of public-looking parts only scanned whole; and the
 * proof that leaving the public part out lets no secret byte through: a
 * scanner of the part alone redacts every unit of the part's bytes in
 * the whole key, raw, in either case, %HH, hex, UTF-16 and JSON's
 * escapes, and every base64 character that depends on them only, at
 * each of the three offsets, while the public part alone (an answer
 * naming the format, another user's JWT) goes through untouched.
 */
#include "inject.h"
#include "keyshape.h"

#include <check.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JWT_HEAD "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
/* {"iss":"supabase","role":"service_role"} */
#define JWT_CLAIMS "eyJpc3MiOiJzdXBhYmFzZSIsInJvbGUiOiJzZXJ2aWNlX3JvbGUifQ"
#define JWT_SIG "EU9SOmyPBT0Qn3WbtXi03E338zJCHvT9-6o4k9NKPkI"

static const struct {
	const char *value;
	size_t pub; /* its public part's length */
} shapes[] = {
	{ "sk_live_51HqABCDEFghijklmnopqrstuvwx", 8 },
	{ "sk_live_redteam4_0123456789abcdef", 8 }, /* a word of 8: stops */
	{ "rk_test_51HqABCDEFghijklmnopqrstuvwx", 8 },
	{ "ghp_0123456789abcdefghijABCDEFGHIJ012345", 4 },
	{ "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJ"
	  "KLMNOPQRSTUVWXYZ0123",
	    11 },
	{ "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", 5 },
	{ "glpat-ABCDEFGHIJ0123456789", 6 },
	{ "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
	    13 }, /* a vendor's longer prefix, named */
	{ "sk-ant-admin01-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", 15 },
	{ "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", 8 },
	/* Two words at most, the longest that leaves 16 of a
	 * random-looking rest. */
	{ "sk_live_budget_0123456789abcdef", 0 }, /* "budget_" left: a word */
	{ "sk_live_0123456789abcdefABCDEF", 8 },
	{ "sk_test_abc_0123456789abcdef", 0 }, /* "abc_" left: a word */
	/* Words are no type prefix: a rest with a word of three lowercase
	 * letters or more between separators, or without a digit or an
	 * upper-case letter, is a passphrase's or a password's, whole. */
	{ "stone-eagle-river-plain-moon-cat", 0 },
	{ "blue-sky-green-Tree42-and-more", 0 },
	{ "prod-db-password-9f8e7d6c5b4a3", 0 },
	{ "redis-abcdefghijklmnopqrstuvwxyz", 0 },
	{ "ab_cd_ef_gh_ij_kl_mn_op", 0 }, { "ab_cdefghijklmnopqr", 0 },
	/* No shape: scanned whole. */
	{ "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 0 }, /* AWS secret */
	{ "AKIAIOSFODNN7EXAMPLE_and_more_bytes", 0 },
	{ "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	    0 },
	{ "a3f2b1c4-5d6e-4f70-8a9b-0c1d2e3f4a5b", 0 }, /* UUID: 8-char word */
	{ "SK_LIVE_51HqABCDEFghijklmnopqrstuvwx", 0 },
	{ "s_live_51HqABCDEFghijklmnopqrstuvwx", 0 }, /* a first word of 1 */
	{ "sk live_51HqABCDEFghijklmnopqrstuvwx", 0 },
	/* Short keys and values of public-looking parts only: whole. */
	{ "sk_live_short", 0 },
	{ "ghp_0123456789abcde", 0 }, /* 15 would remain */
	{ "sk_live_", 0 }, { "sk_live_test_", 0 }, { "sk-ant-api03-", 0 },
	{ "xoxb-", 0 }, { "a_b", 0 },
	/* JWTs: the signature only. */
	{ JWT_HEAD "." JWT_CLAIMS "." JWT_SIG,
	    sizeof(JWT_HEAD "." JWT_CLAIMS ".") - 1 },
	{ JWT_HEAD "." JWT_CLAIMS ".", 0 }, /* unsigned: whole */
	{ JWT_HEAD "." JWT_CLAIMS ".c2hvcnQ", 0 }, /* 7: whole */
	{ JWT_CLAIMS "." JWT_CLAIMS "." JWT_SIG, 0 }, /* no "alg" */
	{ JWT_HEAD ".." JWT_SIG, 0 },
	{ JWT_HEAD "." JWT_CLAIMS "." JWT_SIG ".x", 0 },
	{ JWT_HEAD "." JWT_CLAIMS "." JWT_SIG "=", 0 },
	{ JWT_HEAD ".bm90IGpzb24." JWT_SIG, 0 }, /* claims not an object */
};

START_TEST(test_shapes)
{
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const char *v = shapes[i].value;
		size_t pub = keyshape_public_len(v, strlen(v));
		ck_assert_msg(pub == shapes[i].pub, "%s: public %zu, want %zu",
		    v, pub, shapes[i].pub);
		ck_assert_msg(strlen(v) - pub >= KEYSHAPE_REST_MIN || pub == 0,
		    "%s", v);
		/* The scan part: the last 7 public bytes and the rest. */
		size_t off = 99, n = keyshape_scan_part(v, strlen(v), &off);
		ck_assert_uint_eq(off, pub > 7 ? pub - 7 : 0);
		ck_assert_uint_eq(n, strlen(v) - off);
	}
	size_t off = 7;
	ck_assert_uint_eq(keyshape_public_len("", 0), 0);
	ck_assert_uint_eq(keyshape_scan_part("", 0, &off), 0);
	ck_assert_uint_eq(off, 0);
}
END_TEST

/* text[0..len) through a scanner of value[0..vlen): the answer (len
 * bytes, NUL after) and the matches. */
static char *
scan(const char *value, size_t vlen, const char *text, size_t len,
    size_t *ret_found)
{
	struct inject_scanner s;
	struct buf out = BUF_INIT(1 << 20);
	size_t n;

	ck_assert_int_eq(inject_scanner_init(&s, value, vlen), 0);
	ck_assert_int_eq(inject_scanner_feed(&s, text, len, &out, NULL), 0);
	ck_assert_int_eq(inject_scanner_flush(&s, &out), 0);
	ck_assert_uint_eq(out.len, len);
	*ret_found = s.found;
	inject_scanner_free(&s);
	ck_assert_int_eq(buf_append(&out, "", 1), 0);
	return buf_steal(&out, &n);
}

/* Byte c as a unit of form f (0 raw, 1 %HH, 2 hex, 3 JSON's \\u00hh,
 * 4 an HTML entity) into u: its width. */
static size_t
unit(unsigned char c, int f, char *u)
{
	static const char hx[] = "0123456789abcdef", HX[] = "0123456789ABCDEF";
	size_t n = 0;

	switch (f) {
	case 0:
		u[n++] = (char)c;
		break;
	case 1:
		u[n++] = '%';
		u[n++] = HX[c >> 4];
		u[n++] = HX[c & 15];
		break;
	case 2:
		u[n++] = hx[c >> 4];
		u[n++] = hx[c & 15];
		break;
	case 3:
		memcpy(u, "\\u00", 4);
		n = 4;
		u[n++] = hx[c >> 4];
		u[n++] = hx[c & 15];
		break;
	default:
		memcpy(u, "&#x", 3);
		n = 3;
		u[n++] = hx[c >> 4];
		u[n++] = hx[c & 15];
		u[n++] = ';';
		break;
	}
	return n;
}

/* The key written with each byte as a unit of form f (width w), into
 * out: the text "X: " + units + "\r\n", and where unit 0 starts. */
static size_t
units(const char *key, size_t len, int f, size_t w, char *out)
{
	size_t at = 3;

	memcpy(out, "X: ", 3);
	for (size_t i = 0; i < len; i++) {
		ck_assert_uint_eq(unit((unsigned char)key[i], f, out + at), w);
		at += w;
	}
	memcpy(out + at, "\r\n", 3);
	return 3;
}

/* Every unit of the scan part's bytes (units of width w from start,
 * the part at off) changed in got; the public part's kept when raw
 * (encoded, a reading of the part may begin in its last units). */
static void
expect_part_covered(const char *text, const char *got, size_t start, size_t w,
    size_t off, size_t n, const char *what)
{
	for (size_t b = off; b < off + n; b++)
		for (size_t k = 0; k < w; k++) {
			size_t at = start + b * w + k;
			ck_assert_msg(got[at] != text[at],
			    "%s: byte %zu of the secret part came back: %s",
			    what, b, got);
		}
	/* (But its last byte: a reading of the part may start there, a
	 * separator or UTF-16's NUL in the other order.) */
	for (size_t at = 0; w == 1 && at < start + off - 1; at++)
		ck_assert_msg(got[at] == text[at], "%s: public part cut: %s",
		    what, got);
}

START_TEST(test_part_covers_the_key)
{
	static const char *const fmts[] = { "raw", "percent", "hex", "json",
		"entity" };
	static const size_t widths[] = { 1, 3, 2, 6, 6 };

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const char *key = shapes[i].value;
		size_t len = strlen(key), off;
		size_t n = keyshape_scan_part(key, len, &off);
		size_t pub = keyshape_public_len(key, len);
		if (off == 0)
			continue;
		const char *part = key + off;
		char text[8192], upper[256];
		size_t found;
		for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
			size_t start = units(key, len, (int)f, widths[f], text);
			char *got = scan(part, n, text, strlen(text), &found);
			expect_part_covered(text, got, start, widths[f], off, n,
			    fmts[f]);
			ck_assert_uint_ge(found, 1);
			free(got);
		}
		/* A cut just past the public part (a quotation that ends
		 * there): every secret byte of it redacted, from the first. */
		for (size_t j = 1; j < 8 && pub + j <= len; j++) {
			memcpy(text, "X: ", 3);
			memcpy(text + 3, key, pub + j);
			memcpy(text + 3 + pub + j, "\r\n", 3);
			char *cut = scan(part, n, text, strlen(text), &found);
			ck_assert_msg(found >= 1, "a cut of %zu: %s", j, cut);
			for (size_t b = pub; b < pub + j; b++)
				ck_assert_msg(cut[3 + b] != key[b],
				    "a cut of %zu: secret byte %zu came back: "
				    "%s",
				    j, b, cut);
			free(cut);
		}
		/* In the other case. */
		for (size_t k = 0; k < len; k++)
			upper[k] =
			    (char)(key[k] >= 'a' && key[k] <= 'z' ? key[k] - 32
								  : key[k]);
		size_t start = units(upper, len, 0, 1, text);
		char *got = scan(part, n, text, strlen(text), &found);
		expect_part_covered(text, got, start, 1, off, n, "upper");
		free(got);
		/* UTF-16LE: each byte, then a NUL. */
		memcpy(text, "X: ", 3);
		for (size_t k = 0; k < len; k++) {
			text[3 + 2 * k] = key[k];
			text[4 + 2 * k] = '\0';
		}
		got = scan(part, n, text, 3 + 2 * len, &found);
		expect_part_covered(text, got, 3, 2, off, n, "utf16le");
		free(got);
		/* base64 of the key after 0, 1, 2 bytes: every character whose
		 * six bits are all the part's. */
		for (size_t lead = 0; lead < 3; lead++) {
			unsigned char in[300], b64[512];
			memset(in, 'Q', lead);
			memcpy(in + lead, key, len);
			int bl = EVP_EncodeBlock(b64, in, (int)(lead + len));
			memcpy(text, "X: ", 3);
			memcpy(text + 3, b64, (size_t)bl);
			got = scan(part, n, text, 3 + (size_t)bl, &found);
			size_t lo = 8 * (lead + off), hi = 8 * (lead + len);
			for (size_t c = (lo + 5) / 6; c < hi / 6; c++)
				ck_assert_msg(got[3 + c] != text[3 + c],
				    "base64 at %zu: char %zu came back: %s",
				    lead, c, got);
			free(got);
		}
	}
}
END_TEST

START_TEST(test_public_part_alone_untouched)
{
	static const struct {
		const char *key, *text;
	} cases[] = {
		{ "sk_live_redteam4_0123456789abcdef",
		    "X-Doc: set STRIPE_KEY=sk_live_XXXXXXXXXXXXXXXX\r\n" },
		{ "sk_live_redteam4_0123456789abcdef",
		    "{\"error\":\"Invalid API Key provided: sk_live_****"
		    "**********1234\"}" },
		{ "sk_test_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
		    "STRIPE_KEY=sk_test_... (your test key)" },
		{ "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789A"
		  "BCDEFGHIJKLMNOPQRSTUVWXYZ0123",
		    "see github_pat_ tokens" },
		/* Another user's token: the same header, other claims. */
		{ JWT_HEAD "." JWT_CLAIMS "." JWT_SIG,
		    "{\"access_token\":\"" JWT_HEAD
		    ".eyJzdWIiOiJ1c2VyLTQyIiwicm9sZSI6ImF1dGhlbnRpY2F0ZWQifQ"
		    ".6FaU8zDzRpinB7Pki3QlOGD9KdNMFQ-gTHMrhJoEw1c\"}" },
		/* Even the same claims: only the signature is the key. */
		{ JWT_HEAD "." JWT_CLAIMS "." JWT_SIG,
		    JWT_HEAD "." JWT_CLAIMS
			     ".6FaU8zDzRpinB7Pki3QlOGD9KdNMFQ-gTHMrhJoEw1c" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *key = cases[i].key, *text = cases[i].text;
		size_t off, found;
		size_t n = keyshape_scan_part(key, strlen(key), &off);
		ck_assert_uint_gt(off, 0);
		char *got = scan(key + off, n, text, strlen(text), &found);
		ck_assert_msg(strcmp(got, text) == 0 && found == 0,
		    "%s came back %s", text, got);
		free(got);
		/* The whole value's scanner cut it (the false alarm). */
		got = scan(key, strlen(key), text, strlen(text), &found);
		ck_assert_msg(found > 0, "%s: the whole value did not match",
		    text);
		free(got);
	}
}
END_TEST

static Suite *
keyshape_suite(void)
{
	Suite *s = suite_create("keyshape");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_shapes);
	tcase_add_test(tc, test_part_covers_the_key);
	tcase_add_test(tc, test_public_part_alone_untouched);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(keyshape_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
