/*
 * The revocation feed's followers of other brokers (feed_remote, a
 * fleet on one database): a follower another broker reports is waited
 * for by a revoke here and listed in its answer, and its
 * acknowledgement lets the revoke answer; this broker's followers are
 * told to the others (feed_set_share) at each poll and its end; a poll
 * here supersedes the other broker's word; and a follower whose broker
 * went silent while it was polling there stops counting once no poll
 * could still be running (FEED_MAX_WAIT_S and the acknowledgement
 * wait), instead of counting for ever.
 */
#include "feed.h"

#include "testutil.h"

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void
sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static bool
lists(const json_t *result, const char *key, const char *name)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(result, key), i, v)
	{
		if (strcmp(json_string_value(v), name) == 0)
			return true;
	}
	return false;
}

START_TEST(test_remote_follower_is_waited_for)
{
	struct feed *f = feed_new(0);
	json_t *r;

	ck_assert_ptr_nonnull(f);
	feed_remote(f, "host-b", 0, true);
	ck_assert_uint_eq(feed_followers(f), 1);
	feed_publish(f, 1);
	/* Not yet acknowledged: a revoke of 1 would have to wait. The
	 * request is never touched when the answer can be given now, so
	 * the next call, after the acknowledgement, passes none. */
	feed_remote(f, "host-b", 1, true);
	ck_assert_int_eq(feed_wait_acks(f, 1, NULL), 1);
	r = feed_acks_result(f, 1);
	ck_assert(lists(r, "acknowledged", "host-b"));
	ck_assert_int_eq(json_integer_value(json_object_get(r, "followers")),
	    1);
	json_decref(r);
	feed_free(f);
}
END_TEST

START_TEST(test_silent_remote_follower_goes)
{
	struct feed *f = feed_new(0);

	ck_assert_ptr_nonnull(f);
	feed_remote(f, "host-b", 0, true);
	ck_assert_uint_eq(feed_followers(f), 1);
	/* Its broker died while it polled there: nobody ends that poll. */
	sleep_ms(FEED_MAX_WAIT_S * 1000 + FEED_ACK_WAIT_MS + 500);
	ck_assert_uint_eq(feed_followers(f), 0);
	feed_free(f);
}
END_TEST

struct told {
	char name[64];
	int64_t acked;
	bool polling;
	int n;
};

static void
share(void *arg, const char *name, int64_t ack, bool polling)
{
	struct told *t = arg;

	snprintf(t->name, sizeof(t->name), "%s", name);
	t->acked = ack;
	t->polling = polling;
	t->n++;
}

START_TEST(test_own_followers_are_told)
{
	struct feed *f = feed_new(3);
	struct told t = { 0 };

	ck_assert_ptr_nonnull(f);
	feed_set_share(f, share, &t);
	/* A poll answered at once (wait 0) acknowledging 3, then its end. */
	ck_assert_int_eq(feed_poll(f, "host-a", 3, 0, NULL), 1);
	ck_assert_int_eq(t.n, 1);
	ck_assert_str_eq(t.name, "host-a");
	ck_assert_int_eq(t.acked, 3);
	ck_assert(t.polling);
	ck_assert_int_eq(feed_poll_done(f, "host-a"), 3);
	ck_assert_int_eq(t.n, 2);
	ck_assert(!t.polling);
	/* Another broker's word on a follower polling here is older. */
	ck_assert_int_eq(feed_poll(f, "host-a", 3, 0, NULL), 1);
	feed_remote(f, "host-a", 0, false);
	json_t *r = feed_acks_result(f, 3);
	ck_assert(lists(r, "acknowledged", "host-a"));
	json_decref(r);
	feed_poll_done(f, "host-a");
	feed_free(f);
}
END_TEST

static Suite *
feed_fleet_suite(void)
{
	Suite *s = suite_create("feed_fleet");
	TCase *tc = tcase_create("feed_fleet");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_remote_follower_is_waited_for);
	tcase_add_test(tc, test_silent_remote_follower_goes);
	tcase_add_test(tc, test_own_followers_are_told);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(feed_fleet_suite());
}
