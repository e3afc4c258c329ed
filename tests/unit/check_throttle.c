/*
 * Each job's mint rate (broker/throttle.c): a bucket of burst mints given
 * back at per_minute a minute, one job's bucket apart from another's; a
 * run of refusals reported first once (the one the broker audits) and
 * ended only once the bucket is full again; Retry-After in whole seconds;
 * a ceiling noted once. Time is passed in, so nothing here waits.
 */
#include "throttle.h"

#include "testutil.h"

#include <check.h>
#include <stdio.h>

static int64_t retry;

static enum throttle_verdict
take(struct throttle *t, const char *job, int64_t per_minute, int64_t burst,
    double now)
{
	return throttle_take(t, job, per_minute, burst, now, &retry);
}

START_TEST(test_burst_then_refused)
{
	struct throttle *t = throttle_new();

	ck_assert_ptr_nonnull(t);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(take(t, "job_a", 60, 5, 100.0), THROTTLE_PASS);
	ck_assert_int_eq(take(t, "job_a", 60, 5, 100.0),
	    THROTTLE_LIMITED_FIRST);
	ck_assert_int_eq(retry, 1);
	/* The rest of the run: refused, not reported first again. */
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(take(t, "job_a", 60, 5, 100.5),
		    THROTTLE_LIMITED);
	/* Another job has a bucket of its own. */
	ck_assert_int_eq(take(t, "job_b", 60, 5, 100.5), THROTTLE_PASS);
	throttle_free(t);
}
END_TEST

START_TEST(test_refill_and_retry_after)
{
	struct throttle *t = throttle_new();

	/* One a minute. */
	ck_assert_int_eq(take(t, "j", 1, 1, 0.0), THROTTLE_PASS);
	ck_assert_int_eq(take(t, "j", 1, 1, 0.0), THROTTLE_LIMITED_FIRST);
	ck_assert_int_eq(retry, 60);
	ck_assert_int_eq(take(t, "j", 1, 1, 30.0), THROTTLE_LIMITED);
	ck_assert_int_eq(retry, 30);
	/* Refused requests take nothing: a minute after the grant, one is
	 * back. */
	ck_assert_int_eq(take(t, "j", 1, 1, 60.0), THROTTLE_PASS);
	/* A clock that went back gives nothing back. */
	ck_assert_int_eq(take(t, "j", 1, 1, 10.0), THROTTLE_LIMITED_FIRST);
	throttle_free(t);
}
END_TEST

START_TEST(test_run_ends_when_full)
{
	struct throttle *t = throttle_new();

	/* 60 a minute, burst 10: one a second comes back. */
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(take(t, "j", 60, 10, 0.0), THROTTLE_PASS);
	ck_assert_int_eq(take(t, "j", 60, 10, 0.0), THROTTLE_LIMITED_FIRST);
	/* One back and taken: the run goes on (the bucket never filled). */
	ck_assert_int_eq(take(t, "j", 60, 10, 1.0), THROTTLE_PASS);
	ck_assert_int_eq(take(t, "j", 60, 10, 1.0), THROTTLE_LIMITED);
	/* Quiet for ten seconds: full again, a new run is a new record. */
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(take(t, "j", 60, 10, 11.0), THROTTLE_PASS);
	ck_assert_int_eq(take(t, "j", 60, 10, 11.0), THROTTLE_LIMITED_FIRST);
	throttle_free(t);
}
END_TEST

START_TEST(test_ceiling_noted_once)
{
	struct throttle *t = throttle_new();

	ck_assert(throttle_ceiling_reached(t, "j", 0.0));
	ck_assert(!throttle_ceiling_reached(t, "j", 1.0));
	ck_assert(throttle_ceiling_reached(t, "k", 1.0));
	/* Noting it gives the job no burst it did not have. */
	ck_assert_int_eq(take(t, "j", 60, 5, 1.0), THROTTLE_PASS);
	throttle_free(t);
}
END_TEST

START_TEST(test_full_table_forgets_the_oldest)
{
	struct throttle *t = throttle_new();
	char job[32];

	/* Far more jobs than slots: every one is served, none refused at
	 * its first mint. */
	for (int i = 0; i < 3 * THROTTLE_SLOTS; i++) {
		snprintf(job, sizeof(job), "job_%d", i);
		ck_assert_int_eq(take(t, job, 60, 1, (double)i), THROTTLE_PASS);
	}
	/* The most recent is still remembered: its bucket is empty. */
	snprintf(job, sizeof(job), "job_%d", 3 * THROTTLE_SLOTS - 1);
	ck_assert_int_eq(take(t, job, 1, 1, 3.0 * THROTTLE_SLOTS - 1),
	    THROTTLE_LIMITED_FIRST);
	throttle_free(t);
	throttle_free(NULL);
}
END_TEST

static Suite *
throttle_suite(void)
{
	Suite *s = suite_create("throttle");
	TCase *tc = tcase_create("buckets");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_burst_then_refused);
	tcase_add_test(tc, test_refill_and_retry_after);
	tcase_add_test(tc, test_run_ends_when_full);
	tcase_add_test(tc, test_ceiling_noted_once);
	tcase_add_test(tc, test_full_table_forgets_the_oldest);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(throttle_suite());
}
