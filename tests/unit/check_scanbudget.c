/*
 * A job's budget of scan steps (proxy/scanbudget.c): a new bucket is
 * full, steps taken may leave it owing, it fills at its rate up to its
 * burst and no further, an empty one says how long until it has steps
 * (at least 1 ms) and counts the hold; a rate of 0 is no budget. The
 * scan_throttled line is due at the first hold, then once a period while
 * holds go on, with the period's steps and holds.
 */
#include "scanbudget.h"

#include <check.h>

#define S ((int64_t)1000000) /* a second, in us */

START_TEST(fills_spends_and_holds)
{
	struct scanbudget b = { 0 };
	int64_t wait = 0;

	ck_assert(scanbudget_ok(&b, 1000, 500, 10 * S, &wait));
	ck_assert(b.tokens == 500);
	scanbudget_spend(&b, 800); /* one feed past what was left */
	ck_assert(!scanbudget_ok(&b, 1000, 500, 10 * S, &wait));
	ck_assert_int_eq(b.held, 1);
	/* 300 owed and one more step at 1000 a second: 301 ms. */
	ck_assert_int_eq(wait, 301000);
	ck_assert(!scanbudget_ok(&b, 1000, 500, 10 * S + 300000, &wait));
	ck_assert(scanbudget_ok(&b, 1000, 500, 10 * S + 302000, &wait));
	/* An hour idle fills to the burst, not past it. */
	ck_assert(scanbudget_ok(&b, 1000, 500, 3610 * S, &wait));
	ck_assert(b.tokens == 500);
	ck_assert_uint_eq(b.spent, 800);
	/* Time going back fills nothing. */
	scanbudget_spend(&b, 500);
	ck_assert(!scanbudget_ok(&b, 1000, 500, 3600 * S, &wait));
	ck_assert_int_eq(wait, 1000);
	/* No budget: always. */
	scanbudget_spend(&b, 1000000);
	ck_assert(scanbudget_ok(&b, 0, 500, 3610 * S, NULL));
}
END_TEST

START_TEST(the_line_once_a_period)
{
	struct scanbudget b = { 0 };
	uint64_t steps = 0, held = 0;

	ck_assert(scanbudget_ok(&b, 1000, 100, S, NULL));
	ck_assert(!scanbudget_log_due(&b, S, &steps, &held)); /* no hold */
	scanbudget_spend(&b, 150);
	ck_assert(!scanbudget_ok(&b, 1000, 100, S, NULL));
	ck_assert(scanbudget_log_due(&b, S, &steps, &held));
	ck_assert_uint_eq(steps, 150);
	ck_assert_uint_eq(held, 1);
	scanbudget_spend(&b, 100);
	ck_assert(!scanbudget_ok(&b, 1000, 100, S + 1000, NULL));
	ck_assert(!scanbudget_log_due(&b, S + 1000, &steps, &held));
	ck_assert(
	    !scanbudget_log_due(&b, S + SCANBUDGET_LOG_US - 1, &steps, &held));
	ck_assert(scanbudget_log_due(&b, S + SCANBUDGET_LOG_US, &steps, &held));
	ck_assert_uint_eq(steps, 100);
	ck_assert_uint_eq(held, 1);
	/* Nothing held since: no line, however long. */
	ck_assert(!scanbudget_log_due(&b, 100 * S, &steps, &held));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("scanbudget");
	TCase *tc = tcase_create("scanbudget");
	tcase_add_test(tc, fills_spends_and_holds);
	tcase_add_test(tc, the_line_once_a_period);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed == 0 ? 0 : 1;
}
