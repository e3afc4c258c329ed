/*
 * The two cuts of one key in a job's set (proxy/reflect.c, issue 18,
 * redteam5 row 6): the proxy scans a value the job was released to use
 * from 7 bytes before its secret part (a cut echo of the job's own key
 * just past its prefix is still redacted), and a value released for the
 * scan only from its secret part (so that a trip needs 8 bytes of the
 * secret, not the public prefix's last 7 and one guessed byte). The two
 * cuts of one value are one value of the set: whichever comes first,
 * the job's own echo of its own key is redacted as its own and does not
 * trip, and a scan-only key's match needs 8 of its secret bytes.
 */
#include "reflect.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "sk_live_" and 24 secret bytes: the own cut is from "k_live_", the
 * scan-only cut from the secret part. */
static const char own[] = "k_live_R5t9Lm2Qx8Vb4Nw7Zc3Kp6Hd";
static const char secret_part[] = "R5t9Lm2Qx8Vb4Nw7Zc3Kp6Hd";

/* The answer text scanned by set's chain: 0 or the feed's -errno, the
 * output into out (cap bytes). */
static int
scan_text(struct reflect_set *set, const char *text, char *out, size_t cap)
{
	struct reflect_scan r;
	struct buf b = BUF_INIT(1 << 20);
	int rc;

	ck_assert_int_eq(reflect_scan_init(&r, set), 0);
	rc = reflect_scan_feed(&r, text, strlen(text), &b, NULL);
	if (rc == 0)
		rc = reflect_scan_flush(&r, &b);
	snprintf(out, cap, "%.*s", (int)b.len, b.data != NULL ? b.data : "");
	buf_free(&b);
	reflect_scan_free(&r);
	return rc;
}

START_TEST(the_scan_only_cut_first_then_the_own_one_is_one_own_value)
{
	struct reflect_set s = { 0 };
	char out[256];

	ck_assert_int_eq(reflect_set_put_scan(&s, "up-key", 1, secret_part,
			     strlen(secret_part), 0, 0),
	    1);
	ck_assert_int_eq(reflect_set_put(&s, "up-key", 1, own, strlen(own), 0,
			     0),
	    1);
	ck_assert_uint_eq(s.n, 1);
	ck_assert(!s.v[0].scan_only);
	ck_assert_uint_eq(s.v[0].len, strlen(own));
	/* The job's own echo: redacted, no trip (-EPERM). */
	ck_assert_int_eq(scan_text(&s, "Key sk_live_R5t9Lm2Qx8Vb4Nw7Zc3Kp6Hd.",
			     out, sizeof(out)),
	    0);
	ck_assert_msg(strstr(out, "R5t9") == NULL, "%s", out);
	/* A cut just past the prefix is still the own value's. */
	ck_assert_int_eq(scan_text(&s, "sk_live_R5t9 ", out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "R5t9") == NULL, "%s", out);
	reflect_set_clear(&s);
}
END_TEST

START_TEST(the_own_cut_first_holds_the_scan_only_one)
{
	struct reflect_set s = { 0 };
	char out[256];

	ck_assert_int_eq(reflect_set_put(&s, "up-key", 1, own, strlen(own), 0,
			     0),
	    1);
	ck_assert_int_eq(reflect_set_put_scan(&s, "up-key", 1, secret_part,
			     strlen(secret_part), 0, 0),
	    0);
	ck_assert_int_eq(reflect_set_put_borrowed(&s, "up-key", 0, secret_part,
			     strlen(secret_part), 0, 0),
	    0);
	ck_assert_uint_eq(s.n, 1);
	ck_assert(!s.v[0].scan_only);
	ck_assert_int_eq(scan_text(&s, "Key sk_live_R5t9Lm2Qx8Vb4Nw7Zc3Kp6Hd.",
			     out, sizeof(out)),
	    0);
	ck_assert_msg(strstr(out, "R5t9") == NULL, "%s", out);
	/* Another secret's value that ends the same is not held by it. */
	ck_assert_int_eq(reflect_set_put_scan(&s, "other", 1, secret_part + 1,
			     strlen(secret_part) - 1, 0, 0),
	    1);
	ck_assert_uint_eq(s.n, 2);
	reflect_set_clear(&s);
}
END_TEST

START_TEST(a_scan_only_cut_trips_on_eight_secret_bytes_only)
{
	struct reflect_set s = { 0 };
	char out[4096], text[2048] = "";
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

	ck_assert_int_eq(reflect_set_put_scan(&s, "up-key", 1, secret_part,
			     strlen(secret_part), 0, 0),
	    1);
	/* The prefix's last 7 bytes and every candidate of the first
	 * secret byte: nothing of it is 8 secret bytes. */
	for (size_t i = 0; alnum[i] != '\0'; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
		    ".k_live_%c", alnum[i]);
	ck_assert_int_eq(scan_text(&s, text, out, sizeof(out)), 0);
	ck_assert_str_eq(out, text);
	/* Seven secret bytes after the prefix: not a trip either. */
	ck_assert_int_eq(scan_text(&s, "sk_live_R5t9Lm2 ", out, sizeof(out)),
	    0);
	ck_assert_str_eq(out, "sk_live_R5t9Lm2 ");
	/* Eight of them, anywhere: a trip. */
	ck_assert_int_eq(scan_text(&s, "x R5t9Lm2Q y", out, sizeof(out)),
	    -EPERM);
	ck_assert_int_eq(scan_text(&s, "x Vb4Nw7Zc y", out, sizeof(out)),
	    -EPERM);
	reflect_set_clear(&s);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("reflect_cuts");
	TCase *tc = tcase_create("reflect_cuts");

	tcase_add_test(tc,
	    the_scan_only_cut_first_then_the_own_one_is_one_own_value);
	tcase_add_test(tc, the_own_cut_first_holds_the_scan_only_one);
	tcase_add_test(tc, a_scan_only_cut_trips_on_eight_secret_bytes_only);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
