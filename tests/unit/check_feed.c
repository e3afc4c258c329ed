/*
 * The revocation feed's followers, as a revoke sees them: a poll is
 * answered at once when there is news and otherwise deferred until a
 * publish or its wait runs out; a revoke waits for every connected
 * follower to acknowledge (poll again with after >= seq) and learns who
 * did and who was declared gone after FEED_ACK_WAIT_MS; shutdown resumes
 * every waiting request; the follower table has a hard size. Every
 * deferred request is resumed exactly once, never before its defer.
 */
#include "feed.h"

#include "testutil.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0)
		;
}

/*
 * A stand-in for the HTTP glue's request: the feed only defers and
 * resumes it, so this one counts both and says when it was resumed.
 * Linked ahead of cordon_common, these definitions are the ones the feed
 * calls.
 */
struct http_request {
	pthread_mutex_t mu;
	pthread_cond_t resumed_cond;
	int deferred, resumed;
	bool early; /* resumed while not deferred */
	int64_t resumed_ms;
};

void
http_request_defer(struct http_request *req)
{
	pthread_mutex_lock(&req->mu);
	req->deferred++;
	pthread_mutex_unlock(&req->mu);
}

void
http_request_resume(struct http_request *req)
{
	pthread_mutex_lock(&req->mu);
	if (req->resumed >= req->deferred)
		req->early = true;
	req->resumed++;
	req->resumed_ms = now_ms();
	pthread_cond_broadcast(&req->resumed_cond);
	pthread_mutex_unlock(&req->mu);
}

static void
req_init(struct http_request *req)
{
	*req = (struct http_request){ .resumed_ms = -1 };
	pthread_mutex_init(&req->mu, NULL);
	pthread_cond_init(&req->resumed_cond, NULL);
}

/* Deferred and resumed counts, read under the request's lock. */
static void
req_counts(struct http_request *req, int *ret_deferred, int *ret_resumed)
{
	pthread_mutex_lock(&req->mu);
	*ret_deferred = req->deferred;
	*ret_resumed = req->resumed;
	pthread_mutex_unlock(&req->mu);
}

/* Deferred exactly once and not (yet) resumed. */
static void
assert_waiting(struct http_request *req)
{
	int d, r;

	req_counts(req, &d, &r);
	ck_assert_msg(d == 1 && r == 0, "deferred %d, resumed %d", d, r);
}

/* Never deferred: the answer was given at once. */
static void
assert_answered_now(struct http_request *req)
{
	int d, r;

	req_counts(req, &d, &r);
	ck_assert_msg(d == 0 && r == 0, "deferred %d, resumed %d", d, r);
}

/* Waits up to ms for req's resume: when it came (now_ms()). Deferred once,
 * resumed once, and never the other way round. */
static int64_t
await_resume(struct http_request *req, int ms)
{
	struct timespec until;
	int64_t when;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000 + 1;
	pthread_mutex_lock(&req->mu);
	while (req->resumed == 0 &&
	    pthread_cond_timedwait(&req->resumed_cond, &req->mu, &until) == 0)
		;
	ck_assert_msg(req->resumed == 1 && req->deferred == 1 && !req->early,
	    "deferred %d, resumed %d%s", req->deferred, req->resumed,
	    req->early ? ", before its defer" : "");
	when = req->resumed_ms;
	pthread_mutex_unlock(&req->mu);
	return when;
}

static void
req_destroy(struct http_request *req)
{
	pthread_mutex_destroy(&req->mu);
	pthread_cond_destroy(&req->resumed_cond);
}

/* The names in acks' list key, comma-joined, for comparing. */
static const char *
names(json_t *acks, const char *key, char *buf, size_t len)
{
	json_t *list = json_object_get(acks, key), *v;
	size_t i, off = 0;

	ck_assert_msg(json_is_array(list), "\"%s\" is not a list", key);
	buf[0] = '\0';
	json_array_foreach(list, i, v)
	{
		int n = snprintf(buf + off, len - off, "%s%s", i > 0 ? "," : "",
		    json_string_value(v));

		ck_assert(n > 0 && (size_t)n < len - off);
		off += (size_t)n;
	}
	return buf;
}

/* feed_acks_result(f, seq) is {"followers": n, "acknowledged": [acked],
 * "gone": [gone]}. */
static void
assert_acks(struct feed *f, int64_t seq, json_int_t n, const char *acked,
    const char *gone)
{
	json_t *acks = feed_acks_result(f, seq);
	char buf[512];

	ck_assert_ptr_nonnull(acks);
	ck_assert_int_eq(json_integer_value(json_object_get(acks, "followers")),
	    n);
	ck_assert_str_eq(names(acks, "acknowledged", buf, sizeof(buf)), acked);
	ck_assert_str_eq(names(acks, "gone", buf, sizeof(buf)), gone);
	ck_assert_uint_eq(json_object_size(acks), 3);
	json_decref(acks);
}

/* A poll answered at once, as the handler runs it: the head it reads. */
static int64_t
poll_now(struct feed *f, const char *name, int64_t after, int wait_s)
{
	struct http_request req;
	int r;

	req_init(&req);
	r = feed_poll(f, name, after, wait_s, &req);
	ck_assert_msg(r == 1, "poll by %s after %lld: %d", name,
	    (long long)after, r);
	assert_answered_now(&req);
	req_destroy(&req);
	return feed_poll_done(f, name);
}

/* --- polling --------------------------------------------------------- */

START_TEST(test_poll_news_answers_now)
{
	struct feed *f = feed_new(5);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(poll_now(f, "proxy", 3, 10), 5);
	ck_assert_int_eq(poll_now(f, "proxy", 4, 10), 5);
	ck_assert_int_eq(poll_now(f, "other", 0, 10), 5);
	/* wait 0 never waits, even with nothing new. */
	ck_assert_int_eq(poll_now(f, "proxy", 5, 0), 5);
	feed_free(f);
}
END_TEST

START_TEST(test_poll_waits_then_answers_head)
{
	struct feed *f = feed_new(5);
	struct http_request req;
	int64_t t0, ms;

	req_init(&req);
	t0 = now_ms();
	/* Nothing new: deferred, and resumed when wait_s has passed. */
	ck_assert_int_eq(feed_poll(f, "proxy", 5, 1, &req), 0);
	assert_waiting(&req);
	ms = await_resume(&req, 5000) - t0;
	ck_assert_msg(ms >= 950 && ms < 1700, "resumed after %lld ms for 1 s",
	    (long long)ms);
	ck_assert_int_eq(feed_poll_done(f, "proxy"), 5);
	req_destroy(&req);
	feed_free(f);
}
END_TEST

START_TEST(test_publish_wakes_poller)
{
	struct feed *f = feed_new(5);
	struct http_request req, ahead;
	int64_t published, when;

	req_init(&req);
	req_init(&ahead);
	ck_assert_int_eq(feed_poll(f, "proxy", 5, 20, &req), 0);
	/* A follower ahead of the head (after a restore from an older
	 * backup) is answered at once with the real head, to resync. */
	ck_assert_int_eq(feed_poll(f, "behind-the-times", 9, 20, &ahead), 1);
	ck_assert_int_eq(feed_poll_done(f, "behind-the-times"), 5);
	sleep_ms(100);
	assert_waiting(&req);
	published = now_ms();
	feed_publish(f, 6);
	when = await_resume(&req, 5000);
	ck_assert_msg(when - published < 500, "woke %lld ms after the publish",
	    (long long)(when - published));
	ck_assert_int_eq(feed_poll_done(f, "proxy"), 6);
	/* The next poll waits past 6, and is woken by 7 alone. */
	req_destroy(&ahead);
	req_init(&ahead);
	ck_assert_int_eq(feed_poll(f, "proxy", 6, 20, &ahead), 0);
	sleep_ms(50);
	assert_waiting(&ahead);
	feed_publish(f, 7);
	await_resume(&ahead, 5000);
	ck_assert_int_eq(feed_poll_done(f, "proxy"), 7);
	feed_publish(f, 8);

	/* An older sequence number does not move the head back. */
	feed_publish(f, 4);
	ck_assert_int_eq(poll_now(f, "proxy", 0, 0), 8);
	req_destroy(&req);
	req_destroy(&ahead);
	feed_free(f);
}
END_TEST

START_TEST(test_stop_resumes_everyone)
{
	struct feed *f = feed_new(5);
	struct http_request a, b, revoke, late;
	int64_t stopped;

	req_init(&a);
	req_init(&b);
	req_init(&revoke);
	req_init(&late);
	ck_assert_int_eq(feed_poll(f, "proxy-a", 5, 20, &a), 0);
	ck_assert_int_eq(feed_poll(f, "proxy-b", 5, 20, &b), 0);
	feed_publish(f, 6);
	await_resume(&a, 5000);
	await_resume(&b, 5000);
	feed_poll_done(f, "proxy-a");
	feed_poll_done(f, "proxy-b");
	/* Neither has acknowledged 6: the revoke waits. */
	ck_assert_int_eq(feed_poll(f, "proxy-a", 6, 20, &late), 0);
	ck_assert_int_eq(feed_wait_acks(f, 6, &revoke), 0);
	assert_waiting(&revoke);
	stopped = now_ms();
	feed_stop(f);
	ck_assert_int_lt(await_resume(&late, 5000) - stopped, 1000);
	ck_assert_int_lt(await_resume(&revoke, 5000) - stopped, 1000);
	feed_poll_done(f, "proxy-a");
	/* Stopped: nothing is deferred any more. */
	req_destroy(&revoke);
	req_init(&revoke);
	ck_assert_int_eq(feed_wait_acks(f, 6, &revoke), 1);
	assert_answered_now(&revoke);
	ck_assert_int_eq(poll_now(f, "proxy-a", 6, 10), 6);
	req_destroy(&a);
	req_destroy(&b);
	req_destroy(&revoke);
	req_destroy(&late);
	feed_free(f);
}
END_TEST

/* --- acknowledgements ------------------------------------------------ */

START_TEST(test_acks_no_followers)
{
	struct feed *f = feed_new(0);
	struct http_request revoke;

	req_init(&revoke);
	feed_publish(f, 1);
	ck_assert_int_eq(feed_wait_acks(f, 1, &revoke), 1);
	assert_answered_now(&revoke);
	assert_acks(f, 1, 0, "", "");
	req_destroy(&revoke);
	feed_free(f);
}
END_TEST

START_TEST(test_acks_follower_acknowledges)
{
	struct feed *f = feed_new(0);
	struct http_request poll1, poll2, revoke;
	int64_t acked;

	req_init(&poll1);
	req_init(&poll2);
	req_init(&revoke);
	/* A proxy in its long poll... */
	ck_assert_int_eq(feed_poll(f, "proxy-a", 0, 20, &poll1), 0);
	/* ...a revocation commits, and the revoke waits for it. */
	feed_publish(f, 1);
	ck_assert_int_eq(feed_wait_acks(f, 1, &revoke), 0);
	await_resume(&poll1, 5000);
	ck_assert_int_eq(feed_poll_done(f, "proxy-a"), 1);
	sleep_ms(100);
	assert_waiting(&revoke);
	/* Its next poll, after 1, acknowledges: the revoke is answered at
	 * once, not at the deadline. */
	acked = now_ms();
	ck_assert_int_eq(feed_poll(f, "proxy-a", 1, 20, &poll2), 0);
	ck_assert_int_lt(await_resume(&revoke, 5000) - acked, 500);
	assert_acks(f, 1, 1, "proxy-a", "");
	ck_assert_uint_eq(feed_followers(f), 1);
	feed_stop(f);
	await_resume(&poll2, 5000);
	feed_poll_done(f, "proxy-a");
	req_destroy(&poll1);
	req_destroy(&poll2);
	req_destroy(&revoke);
	feed_free(f);
}
END_TEST

START_TEST(test_acks_silent_follower_gone)
{
	struct feed *f = feed_new(0);
	struct http_request revoke;
	int64_t t0, ms;

	req_init(&revoke);
	/* Connected (it just polled), then silent. */
	ck_assert_int_eq(poll_now(f, "proxy-b", 0, 0), 0);
	ck_assert_uint_eq(feed_followers(f), 1);
	feed_publish(f, 2);
	/* Acknowledging an older sequence number is not acknowledging 2. */
	ck_assert_int_eq(poll_now(f, "proxy-b", 1, 0), 2);
	t0 = now_ms();
	ck_assert_int_eq(feed_wait_acks(f, 2, &revoke), 0);
	ms = await_resume(&revoke, FEED_ACK_WAIT_MS + 5000) - t0;
	ck_assert_msg(ms >= FEED_ACK_WAIT_MS - 100 &&
		ms < FEED_ACK_WAIT_MS + 1500,
	    "resumed after %lld ms", (long long)ms);
	assert_acks(f, 2, 1, "", "proxy-b");
	/* Gone is not connected... */
	ck_assert_uint_eq(feed_followers(f), 0);
	/* ...until it polls again, which acknowledges at once. */
	ck_assert_int_eq(poll_now(f, "proxy-b", 2, 0), 2);
	ck_assert_uint_eq(feed_followers(f), 1);
	req_destroy(&revoke);
	req_init(&revoke);
	ck_assert_int_eq(feed_wait_acks(f, 2, &revoke), 1);
	assert_answered_now(&revoke);
	assert_acks(f, 2, 1, "proxy-b", "");
	req_destroy(&revoke);
	feed_free(f);
}
END_TEST

START_TEST(test_acks_mixed)
{
	struct feed *f = feed_new(10);
	struct http_request poll, revoke;

	req_init(&poll);
	req_init(&revoke);
	ck_assert_int_eq(poll_now(f, "proxy-silent", 10, 0), 10);
	ck_assert_int_eq(poll_now(f, "proxy-a", 10, 0), 10);
	feed_publish(f, 11);
	ck_assert_int_eq(feed_wait_acks(f, 11, &revoke), 0);
	ck_assert_int_eq(feed_poll(f, "proxy-a", 11, 20, &poll), 0);
	/* One of two acknowledged: the revoke still waits for the other. */
	sleep_ms(100);
	assert_waiting(&revoke);
	await_resume(&revoke, FEED_ACK_WAIT_MS + 5000);
	assert_acks(f, 11, 2, "proxy-a", "proxy-silent");
	feed_stop(f);
	await_resume(&poll, 5000);
	feed_poll_done(f, "proxy-a");
	req_destroy(&poll);
	req_destroy(&revoke);
	feed_free(f);
}
END_TEST

/* --- the follower table ---------------------------------------------- */

START_TEST(test_follower_limit)
{
	struct feed *f = feed_new(3);
	struct http_request longpoll, refused;
	char name[32];

	req_init(&longpoll);
	req_init(&refused);
	/* One follower in a long poll, the rest just polled. */
	ck_assert_int_eq(feed_poll(f, "long", 3, 20, &longpoll), 0);
	for (int i = 1; i < FEED_FOLLOWERS_MAX; i++) {
		snprintf(name, sizeof(name), "proxy-%d", i);
		ck_assert_int_eq(poll_now(f, name, 3, 0), 3);
	}
	ck_assert_uint_eq(feed_followers(f), FEED_FOLLOWERS_MAX);
	/* Full while every one of them is connected: one more is refused
	 * (and its request left alone), the ones it has still poll. */
	ck_assert_int_eq(feed_poll(f, "one-more", 3, 20, &refused), -1);
	assert_answered_now(&refused);
	ck_assert_int_eq(poll_now(f, "proxy-1", 3, 0), 3);

	/* Once they fall silent their places are free; the long poll's is
	 * not. */
	sleep_ms(FEED_ACK_WAIT_MS + 300);
	ck_assert_uint_eq(feed_followers(f), 1);
	for (int i = 1; i < FEED_FOLLOWERS_MAX; i++) {
		snprintf(name, sizeof(name), "new-%d", i);
		ck_assert_int_eq(poll_now(f, name, 3, 0), 3);
	}
	ck_assert_int_eq(feed_poll(f, "one-more", 3, 20, &refused), -1);
	assert_answered_now(&refused);
	feed_stop(f);
	await_resume(&longpoll, 5000);
	ck_assert_int_eq(feed_poll_done(f, "long"), 3);
	req_destroy(&longpoll);
	req_destroy(&refused);
	feed_free(f);
}
END_TEST

static Suite *
feed_suite(void)
{
	Suite *s = suite_create("feed");
	TCase *tc;

	tc = tcase_create("poll");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_poll_news_answers_now);
	tcase_add_test(tc, test_poll_waits_then_answers_head);
	tcase_add_test(tc, test_publish_wakes_poller);
	tcase_add_test(tc, test_stop_resumes_everyone);
	suite_add_tcase(s, tc);

	tc = tcase_create("acks");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_acks_no_followers);
	tcase_add_test(tc, test_acks_follower_acknowledges);
	tcase_add_test(tc, test_acks_silent_follower_gone);
	tcase_add_test(tc, test_acks_mixed);
	suite_add_tcase(s, tc);

	tc = tcase_create("followers");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_follower_limit);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(feed_suite());
}
