/*
 * A reflection scanner made once per released value and copied for each
 * answer (proxy/inject.c inject_scanner_copy, proxy/reflect.c): issue
 * 18's bench target, an injected request's scan set up without making
 * the value's tables again. A copy shares its source's tables and
 * redacts exactly what a scanner made for the value does, the same
 * however the answer is cut (the value split across the answer's last
 * two reads: nothing of it leaves before the flush); copies are
 * independent of each other and outlive their source (the last one
 * frees the tables: under ASan a use after free or a leak fails); a
 * job's set keeps one per value and its scans are copies of it, still
 * good after the set is cleared in the middle of an answer: the set
 * keeps one scanner joined from all its values, its scans copies of it.
 */
#include "inject.h"
#include "reflect.h"
#include "testutil.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char value[] = "sk_live_copied_0123456789abcdef";

/* Whether b holds the value whole. */
static bool
holds(const struct buf *b)
{
	return b->len > 0 &&
	    memmem(b->data, b->len, value, strlen(value)) != NULL;
}

/* An answer's bytes through s in two feeds cut at cut, then the flush;
 * after the first feed, out must not hold the value whole. */
static void
through(struct inject_scanner *s, const char *a, size_t n, size_t cut,
    struct buf *out)
{
	buf_init(out, 1024);
	ck_assert_int_eq(inject_scanner_feed(s, a, cut, out, NULL), 0);
	ck_assert(!holds(out));
	ck_assert_int_eq(inject_scanner_feed(s, a + cut, n - cut, out, NULL),
	    0);
	ck_assert_int_eq(inject_scanner_flush(s, out), 0);
}

START_TEST(a_copy_redacts_as_a_scanner_made_for_the_value)
{
	char answer[512];
	struct inject_scanner prep, fresh, copy;

	/* The value at the answer's end: its last bytes in the last read. */
	int n = snprintf(answer, sizeof(answer),
	    "HTTP/1.1 200 OK\r\nContent-Length: 80\r\n\r\n{\"echo\": \"Key "
	    "%s\", \"again\": \"%s\"}",
	    value, value);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(inject_scanner_init(&prep, value, strlen(value)), 0);
	for (size_t cut = 0; cut <= (size_t)n; cut++) {
		struct buf a, b;
		ck_assert_int_eq(inject_scanner_init(&fresh, value,
				     strlen(value)),
		    0);
		ck_assert_int_eq(inject_scanner_copy(&copy, &prep), 0);
		/* Shared, not made again. */
		ck_assert_ptr_eq(copy.ks[0].keys, prep.ks[0].keys);
		ck_assert_ptr_eq(copy.all->pairs, prep.all->pairs);
		through(&fresh, answer, (size_t)n, cut, &a);
		through(&copy, answer, (size_t)n, cut, &b);
		ck_assert_uint_eq(a.len, b.len);
		ck_assert_mem_eq(a.data, b.data, a.len);
		ck_assert(!holds(&b));
		ck_assert_uint_eq(copy.found, 2);
		buf_free(&a);
		buf_free(&b);
		inject_scanner_free(&fresh);
		inject_scanner_free(&copy);
	}
	/* Never fed: the source's own state is as it was made. */
	ck_assert_uint_eq(prep.found, 0);
	ck_assert_uint_eq(prep.nhold, 0);
	inject_scanner_free(&prep);
}
END_TEST

START_TEST(copies_are_independent_and_outlive_their_source)
{
	struct inject_scanner prep, c1, c2;
	struct buf o1, o2;
	const char *half = value + 10;

	ck_assert_int_eq(inject_scanner_init(&prep, value, strlen(value)), 0);
	ck_assert_int_eq(inject_scanner_copy(&c1, &prep), 0);
	ck_assert_int_eq(inject_scanner_copy(&c2, &prep), 0);
	inject_scanner_free(&prep); /* the copies still read the tables */
	buf_init(&o1, 256);
	buf_init(&o2, 256);
	/* c1 holds the value's first bytes while c2 reads another answer. */
	ck_assert_int_eq(inject_scanner_feed(&c1, value, 10, &o1, NULL), 0);
	ck_assert_int_eq(inject_scanner_feed(&c2, "plain text ", 11, &o2, NULL),
	    0);
	ck_assert_int_eq(inject_scanner_flush(&c2, &o2), 0);
	ck_assert_uint_eq(o2.len, 11);
	ck_assert_mem_eq(o2.data, "plain text ", 11);
	ck_assert_uint_eq(c2.found, 0);
	inject_scanner_free(&c2);
	ck_assert_int_eq(inject_scanner_feed(&c1, half, strlen(half), &o1,
			     NULL),
	    0);
	ck_assert_int_eq(inject_scanner_flush(&c1, &o1), 0);
	ck_assert_uint_eq(c1.found, 1);
	ck_assert(!holds(&o1));
	inject_scanner_free(&c1);
	buf_free(&o1);
	buf_free(&o2);
}
END_TEST

START_TEST(a_sets_scans_are_copies_of_its_values_scanner)
{
	struct reflect_set set = { 0 };
	struct reflect_scan r1, r2;
	struct buf out;
	char answer[128];
	int n = snprintf(answer, sizeof(answer), "you sent %s.", value);

	ck_assert_int_eq(reflect_set_put(&set, "k", 1, value, strlen(value), 0,
			     0),
	    1);
	ck_assert_int_eq(reflect_scan_init(&r1, &set), 0);
	ck_assert_ptr_nonnull(set.joined);
	ck_assert_int_eq(reflect_scan_init(&r2, &set), 0);
	ck_assert_uint_eq(r1.n, 1);
	ck_assert_ptr_eq(r1.s[0].ks[0].keys, set.joined->ks[0].keys);
	ck_assert_ptr_eq(r2.s[0].ks[1].keys, set.joined->ks[1].keys);
	buf_init(&out, 256);
	ck_assert_int_eq(reflect_scan_feed(&r1, answer, 14, &out, NULL), 0);
	/* The job's channel closes in the middle of the answer. */
	reflect_set_clear(&set);
	reflect_scan_free(&r2);
	ck_assert_int_eq(reflect_scan_feed(&r1, answer + 14, (size_t)n - 14,
			     &out, NULL),
	    0);
	ck_assert_int_eq(reflect_scan_flush(&r1, &out), 0);
	ck_assert_uint_eq(out.len, (size_t)n);
	ck_assert(!holds(&out));
	ck_assert_uint_eq(r1.s[0].found, 1);
	reflect_scan_free(&r1);
	buf_free(&out);
}
END_TEST

static Suite *
inject_copy_suite(void)
{
	Suite *s = suite_create("inject_copy");
	TCase *tc = tcase_create("copy");

	tcase_add_test(tc, a_copy_redacts_as_a_scanner_made_for_the_value);
	tcase_add_test(tc, copies_are_independent_and_outlive_their_source);
	tcase_add_test(tc, a_sets_scans_are_copies_of_its_values_scanner);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(inject_copy_suite());
}
