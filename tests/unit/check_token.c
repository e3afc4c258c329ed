/*
 * crd_ tokens: what token_generate mints is what a secret scanner matches
 * (crd_[0-9A-Za-z]{38}) and what token_parse accepts; tokens do not repeat
 * and draw the base62 alphabet evenly; any single mistyped character is
 * refused before a database would be asked; and the checksum is the CRC32
 * everyone else computes, so tokens minted today stay valid.
 */
#include "token.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char alphabet[] =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* Fixed, independently computed (Python zlib.crc32, base62 MSB first). */
#define KNOWN_BODY "0123456789ABCDEFGHIJKLMNOPQRSTUV"
#define KNOWN_CRC "1ggZdL"
#define KNOWN_TOKEN "crd_" KNOWN_BODY KNOWN_CRC

static void
mint(char out[TOKEN_LEN + 1])
{
	memset(out, '#', TOKEN_LEN + 1);
	ck_assert_int_eq(token_generate(out), 0);
	ck_assert_int_eq(out[TOKEN_LEN], '\0');
}

START_TEST(test_generated_match_scanner_pattern)
{
	regex_t re;
	char t[TOKEN_LEN + 1];

	ck_assert_int_eq(regcomp(&re, "^crd_[0-9A-Za-z]{38}$",
			     REG_EXTENDED | REG_NOSUB),
	    0);
	for (int n = 0; n < 2000; n++) {
		mint(t);
		ck_assert_uint_eq(strlen(t), 42);
		ck_assert_msg(regexec(&re, t, 0, NULL, 0) == 0,
		    "token %s does not match the scanner pattern", t);
		ck_assert_msg(token_parse(t, strlen(t)) == 0,
		    "minted token %s does not parse", t);
	}
	regfree(&re);
}
END_TEST

static int
cmp_token(const void *a, const void *b)
{
	return memcmp(a, b, TOKEN_LEN);
}

START_TEST(test_generated_unique)
{
	enum { N = 10000 };
	char(*t)[TOKEN_LEN + 1] = calloc(N, sizeof(*t));

	ck_assert_ptr_nonnull(t);
	for (int n = 0; n < N; n++)
		mint(t[n]);
	qsort(t, N, sizeof(*t), cmp_token);
	for (int n = 1; n < N; n++)
		ck_assert_msg(memcmp(t[n - 1], t[n], TOKEN_LEN) != 0,
		    "token %s minted twice", t[n]);
	/* The bodies alone are unique too: the checksum adds nothing. */
	for (int n = 1; n < N; n++)
		ck_assert_msg(memcmp(t[n - 1] + TOKEN_PREFIX_LEN,
				  t[n] + TOKEN_PREFIX_LEN, TOKEN_BODY_LEN) != 0,
		    "body of %s minted twice", t[n]);
	free(t);
}
END_TEST

START_TEST(test_generated_distribution)
{
	/* 10000 bodies of 32 characters: each of the 62 is expected about
	 * 5161 times with a standard deviation near 71. A modulo-biased draw
	 * (byte % 62 without rejection) makes '0'..'7' about 21% likelier,
	 * which the 12% band catches; a fair draw leaves it by >8 sigma
	 * only. */
	enum { N = 10000 };
	size_t count[256] = { 0 };
	const double expect = (double)N * TOKEN_BODY_LEN / 62;
	char t[TOKEN_LEN + 1];

	for (int n = 0; n < N; n++) {
		mint(t);
		for (size_t i = 0; i < TOKEN_BODY_LEN; i++)
			count[(unsigned char)t[TOKEN_PREFIX_LEN + i]]++;
	}
	for (size_t i = 0; i < 62; i++) {
		size_t c = count[(unsigned char)alphabet[i]];

		ck_assert_msg(c > 0, "'%c' never appears in a body",
		    alphabet[i]);
		ck_assert_msg(c > expect * 0.88 && c < expect * 1.12,
		    "'%c' appears %zu times, expected about %.0f", alphabet[i],
		    c, expect);
	}
}
END_TEST

START_TEST(test_known_token_parses)
{
	char crc[TOKEN_CRC_LEN];

	token_checksum(KNOWN_BODY, crc);
	ck_assert_mem_eq(crc, KNOWN_CRC, TOKEN_CRC_LEN);
	ck_assert_int_eq(token_parse(KNOWN_TOKEN, strlen(KNOWN_TOKEN)), 0);
	token_checksum("00000000000000000000000000000000", crc);
	ck_assert_mem_eq(crc, "2wjyrI", TOKEN_CRC_LEN);
	token_checksum("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", crc);
	ck_assert_mem_eq(crc, "4W8LJS", TOKEN_CRC_LEN);
}
END_TEST

START_TEST(test_parse_needs_no_nul)
{
	/* Only len bytes are read: a token inside a longer header parses. */
	const char *header = "Bearer " KNOWN_TOKEN " trailing";

	ck_assert_int_eq(token_parse(header + 7, TOKEN_LEN), 0);
	ck_assert_int_eq(token_parse(header + 7, TOKEN_LEN + 1), -EINVAL);
}
END_TEST

START_TEST(test_single_substitution_refused)
{
	/* CRC32 catches every one-byte change, and the base62 form of the
	 * checksum is one-to-one, so no single substitution in body or
	 * checksum may pass: base62 ones fail the checksum, others the
	 * alphabet. */
	char t[TOKEN_LEN + 1], bad[TOKEN_LEN + 1];

	for (int n = 0; n < 20; n++) {
		if (n == 0)
			memcpy(t, KNOWN_TOKEN, TOKEN_LEN + 1);
		else
			mint(t);
		for (size_t pos = TOKEN_PREFIX_LEN; pos < TOKEN_LEN; pos++) {
			for (int c = 1; c < 256; c++) {
				int want;

				if (c == (unsigned char)t[pos])
					continue;
				want = strchr(alphabet, c) != NULL ? -EBADMSG
								   : -EINVAL;
				memcpy(bad, t, sizeof(bad));
				bad[pos] = (char)c;
				ck_assert_msg(token_parse(bad, TOKEN_LEN) ==
					want,
				    "%s (position %zu changed to 0x%02x) "
				    "not refused as %d",
				    t, pos, c, want);
			}
			memcpy(bad, t, sizeof(bad));
			bad[pos] = '\0';
			ck_assert_int_eq(token_parse(bad, TOKEN_LEN), -EINVAL);
		}
	}
}
END_TEST

START_TEST(test_adjacent_swap_refused)
{
	char t[TOKEN_LEN + 1], bad[TOKEN_LEN + 1];

	for (int n = 0; n < 200; n++) {
		mint(t);
		for (size_t pos = TOKEN_PREFIX_LEN; pos + 1 < TOKEN_LEN;
		     pos++) {
			if (t[pos] == t[pos + 1])
				continue;
			memcpy(bad, t, sizeof(bad));
			bad[pos] = t[pos + 1];
			bad[pos + 1] = t[pos];
			ck_assert_msg(token_parse(bad, TOKEN_LEN) == -EBADMSG,
			    "%s with %zu and %zu swapped accepted", t, pos,
			    pos + 1);
		}
	}
}
END_TEST

START_TEST(test_wrong_length_refused)
{
	char longer[TOKEN_LEN + 2];

	ck_assert_int_eq(token_parse("", 0), -EINVAL);
	ck_assert_int_eq(token_parse("crd_", 4), -EINVAL);
	ck_assert_int_eq(token_parse(KNOWN_TOKEN, TOKEN_LEN - 1), -EINVAL);
	/* Dropping one body character (the checksum then shifts). */
	ck_assert_int_eq(token_parse("crd_" KNOWN_BODY "1ggZd", TOKEN_LEN - 1),
	    -EINVAL);
	memcpy(longer, KNOWN_TOKEN, TOKEN_LEN);
	longer[TOKEN_LEN] = 'A';
	longer[TOKEN_LEN + 1] = '\0';
	ck_assert_int_eq(token_parse(longer, TOKEN_LEN + 1), -EINVAL);
	longer[TOKEN_LEN] = '\n';
	ck_assert_int_eq(token_parse(longer, TOKEN_LEN + 1), -EINVAL);
}
END_TEST

START_TEST(test_wrong_prefix_refused)
{
	static const char *const prefixes[] = { "crk_", "CRD_", "crd-", "crdX",
		"xrd_", "c rd", "crd\0" };
	char bad[TOKEN_LEN + 1];

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		memcpy(bad, KNOWN_TOKEN, sizeof(bad));
		memcpy(bad, prefixes[i], TOKEN_PREFIX_LEN);
		ck_assert_msg(token_parse(bad, TOKEN_LEN) == -EINVAL,
		    "prefix %zu accepted", i);
	}
}
END_TEST

START_TEST(test_wrong_alphabet_refused)
{
	static const char bad_chars[] = "-_+/= .~!\t\n\x7f\x80\xff";
	char bad[TOKEN_LEN + 1];

	for (size_t i = 0; i < sizeof(bad_chars) - 1; i++) {
		memcpy(bad, KNOWN_TOKEN, sizeof(bad));
		bad[TOKEN_PREFIX_LEN + 5] = bad_chars[i];
		ck_assert_msg(token_parse(bad, TOKEN_LEN) == -EINVAL,
		    "0x%02x in body accepted", (unsigned char)bad_chars[i]);
		memcpy(bad, KNOWN_TOKEN, sizeof(bad));
		bad[TOKEN_LEN - 1] = bad_chars[i];
		ck_assert_msg(token_parse(bad, TOKEN_LEN) == -EINVAL,
		    "0x%02x in checksum accepted", (unsigned char)bad_chars[i]);
	}
}
END_TEST

START_TEST(test_crc32_check_values)
{
	ck_assert_uint_eq(token_crc32("123456789", 9), 0xCBF43926u);
	ck_assert_uint_eq(token_crc32("", 0), 0);
	ck_assert_uint_eq(token_crc32("a", 1), 0xE8B7BE43u);
	ck_assert_uint_eq(token_crc32("The quick brown fox jumps over the "
				      "lazy dog",
			      43),
	    0x414FA339u);
	ck_assert_uint_eq(token_crc32(KNOWN_BODY, 32), 0x5C339A43u);
}
END_TEST

/* The table's CRC is the bit-at-a-time one: every byte value alone,
 * and runs of every length up to 64 of mixed bytes. */
START_TEST(test_crc32_as_bit_at_a_time)
{
	unsigned char s[64];

	for (size_t i = 0; i < sizeof(s); i++)
		s[i] = (unsigned char)(i * 151u + 7u);
	for (unsigned v = 0; v < 256; v++) {
		unsigned char b = (unsigned char)v;
		uint32_t crc = 0xffffffffu ^ b;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1u));
		ck_assert_uint_eq(token_crc32(&b, 1), ~crc);
	}
	for (size_t n = 0; n <= sizeof(s); n++) {
		uint32_t crc = 0xffffffffu;
		for (size_t i = 0; i < n; i++) {
			crc ^= s[i];
			for (int k = 0; k < 8; k++)
				crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1u));
		}
		ck_assert_uint_eq(token_crc32(s, n), ~crc);
	}
}
END_TEST

/* Where the proxy looks for tokens in what a job sends. */
START_TEST(test_find_token_shapes)
{
	char tok[TOKEN_LEN + 1], text[200];

	ck_assert_int_eq(token_generate(tok), 0);
	snprintf(text, sizeof(text), "X-Key: %s\r\n", tok);
	ck_assert_int_eq(token_find(text, strlen(text)), 7);
	/* Glued to a letter or a digit, on either side, it is still the
	 * token a server may cut out and use (issue 16, item 2). */
	snprintf(text, sizeof(text), "a%s", tok);
	ck_assert_int_eq(token_find(text, strlen(text)), 1);
	snprintf(text, sizeof(text), "x0%s", tok);
	ck_assert_int_eq(token_find(text, strlen(text)), 2);
	snprintf(text, sizeof(text), "%sZ", tok);
	ck_assert_int_eq(token_find(text, strlen(text)), 0);
	snprintf(text, sizeof(text), "xcrd_%s", tok);
	ck_assert_int_eq(token_find(text, strlen(text)), 5);
	/* Cut short, or at the very end of the bytes. */
	ck_assert_int_eq(token_find(tok, TOKEN_LEN - 1), -1);
	ck_assert_int_eq(token_find(tok, TOKEN_LEN), 0);
	/* A checksum typo is still a token's shape. */
	tok[TOKEN_LEN - 1] = tok[TOKEN_LEN - 1] == 'a' ? 'b' : 'a';
	ck_assert_int_eq(token_find(tok, TOKEN_LEN), 0);
	ck_assert_int_eq(token_find("crd_", 4), -1);
}
END_TEST

static Suite *
token_suite(void)
{
	Suite *s = suite_create("token");
	TCase *tc;

	tc = tcase_create("generate");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_generated_match_scanner_pattern);
	tcase_add_test(tc, test_generated_unique);
	tcase_add_test(tc, test_generated_distribution);
	suite_add_tcase(s, tc);

	tc = tcase_create("parse");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_known_token_parses);
	tcase_add_test(tc, test_parse_needs_no_nul);
	tcase_add_test(tc, test_single_substitution_refused);
	tcase_add_test(tc, test_adjacent_swap_refused);
	tcase_add_test(tc, test_wrong_length_refused);
	tcase_add_test(tc, test_wrong_prefix_refused);
	tcase_add_test(tc, test_wrong_alphabet_refused);
	tcase_add_test(tc, test_find_token_shapes);
	suite_add_tcase(s, tc);

	tc = tcase_create("crc32");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_crc32_check_values);
	tcase_add_test(tc, test_crc32_as_bit_at_a_time);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(token_suite());
}
