/*
 * The token set of a request (proxy/tokens.c): each distinct shape once,
 * at most TOKENS_MAX, a bad checksum judged without the broker, the first
 * refusal the request's, and a body scanned across reads so that a token
 * split between two of them is still found, and a token judged good lets
 * the same bytes pass.
 */
#include "testutil.h"
#include "tokens.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static void
fresh(char out[TOKEN_LEN + 1])
{
	ck_assert_int_eq(token_generate(out), 0);
}

/* A shape whose checksum is wrong. */
static void
mistyped(char out[TOKEN_LEN + 1])
{
	fresh(out);
	out[TOKEN_LEN - 1] = out[TOKEN_LEN - 1] == 'a' ? 'b' : 'a';
	ck_assert_int_eq(token_parse(out, TOKEN_LEN), -EBADMSG);
}

START_TEST(each_shape_once_and_at_most_sixteen)
{
	struct token_set s;
	char a[TOKEN_LEN + 1], text[4096];
	int len;

	tokens_reset(&s);
	fresh(a);
	len = snprintf(text, sizeof(text),
	    "GET /x?t=%s HTTP/1.1\r\nAuthorization: Bearer x%sy\r\n\r\n", a, a);
	ck_assert_int_eq(tokens_collect(&s, text, (size_t)len), 0);
	ck_assert_uint_eq(s.n, 1);
	ck_assert(!s.t[0].done);
	ck_assert_str_eq(s.t[0].tok, a);

	tokens_reset(&s);
	ck_assert_uint_eq(s.n, 0);
	for (int i = 0; i < TOKENS_MAX; i++) {
		fresh(a);
		ck_assert_int_eq(tokens_add(&s, a), i);
	}
	ck_assert_int_eq(tokens_add(&s, s.t[3].tok), 3); /* known: fine */
	fresh(a);
	ck_assert_int_eq(tokens_add(&s, a), -1);
	ck_assert_int_eq(tokens_collect(&s, a, TOKEN_LEN), -E2BIG);
}
END_TEST

START_TEST(a_bad_checksum_is_judged_without_the_broker)
{
	struct token_set s;
	char bad[TOKEN_LEN + 1];

	mistyped(bad);
	tokens_reset(&s);
	ck_assert_int_eq(tokens_add(&s, bad), 0);
	ck_assert(s.t[0].done);
	ck_assert_str_eq(s.t[0].why, "bad_checksum");
	ck_assert_int_eq(tokens_next(&s), -1);
	ck_assert_str_eq(tokens_refusal(&s), "bad_checksum");

	tokens_reset(&s);
	s.no_audience = true;
	ck_assert_int_eq(tokens_add(&s, bad), 0);
	ck_assert_str_eq(s.t[0].why, "no_audience");
}
END_TEST

START_TEST(the_first_refusal_is_the_requests)
{
	struct token_set s;
	char a[TOKEN_LEN + 1], b[TOKEN_LEN + 1], c[TOKEN_LEN + 1];

	fresh(a);
	fresh(b);
	fresh(c);
	tokens_reset(&s);
	tokens_add(&s, a);
	tokens_add(&s, b);
	tokens_add(&s, c);
	ck_assert_int_eq(tokens_next(&s), 0);
	tokens_judged(&s, 0, NULL);
	ck_assert_ptr_null(tokens_refusal(&s));
	ck_assert_int_eq(tokens_next(&s), 1);
	tokens_judged(&s, 1, "other_job");
	tokens_judged(&s, 2, "inactive");
	ck_assert_str_eq(tokens_refusal(&s), "other_job");
	ck_assert_int_eq(tokens_next(&s), -1);
	tokens_judged(&s, 9, "ignored"); /* out of range: nothing */
	ck_assert_uint_eq(s.n, 3);
}
END_TEST

START_TEST(a_token_split_across_body_reads_is_found)
{
	struct token_set s;
	char a[TOKEN_LEN + 1], body[200];
	int i = 99, len;

	fresh(a);
	len = snprintf(body, sizeof(body), "{\"note\": \"x%sy\"}", a);
	tokens_reset(&s);
	tokens_body_start(&s);
	/* One byte at a time: nothing until the last byte of the token. */
	size_t end = strstr(body, a) - body + TOKEN_LEN;
	for (size_t k = 0; k + 1 < end; k++)
		ck_assert(!tokens_body_scan(&s, body + k, 1, &i));
	ck_assert(tokens_body_scan(&s, body + end - 1, 1, &i));
	ck_assert_int_eq(i, 0);
	ck_assert_str_eq(s.t[0].tok, a);
	/* Judged good: the same byte passes now, and the rest. */
	tokens_judged(&s, 0, NULL);
	ck_assert(!tokens_body_scan(&s, body + end - 1, 1, &i));
	ck_assert(!tokens_body_scan(&s, body + end, (size_t)len - end, &i));
	ck_assert_uint_eq(s.n, 1);
}
END_TEST

START_TEST(a_refused_token_in_a_body_stops_it_again)
{
	struct token_set s;
	char a[TOKEN_LEN + 1], b[TOKEN_LEN + 1], body[200];
	int i = 99, len;

	fresh(a);
	mistyped(b);
	len = snprintf(body, sizeof(body), "%s and %s", a, b);
	tokens_reset(&s);
	tokens_body_start(&s);
	ck_assert(tokens_body_scan(&s, body, (size_t)len, &i));
	ck_assert_int_eq(i, 0);
	tokens_judged(&s, 0, NULL);
	/* The good one passes; the mistyped one is refused as it is found. */
	ck_assert(tokens_body_scan(&s, body, (size_t)len, &i));
	ck_assert_int_eq(i, 1);
	ck_assert(s.t[1].done);
	ck_assert_str_eq(s.t[1].why, "bad_checksum");
	ck_assert(tokens_body_scan(&s, body, (size_t)len, &i));
	ck_assert_int_eq(i, 1);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("tokens");
	TCase *tc = tcase_create("tokens");

	tcase_add_test(tc, each_shape_once_and_at_most_sixteen);
	tcase_add_test(tc, a_bad_checksum_is_judged_without_the_broker);
	tcase_add_test(tc, the_first_refusal_is_the_requests);
	tcase_add_test(tc, a_token_split_across_body_reads_is_found);
	tcase_add_test(tc, a_refused_token_in_a_body_stops_it_again);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
