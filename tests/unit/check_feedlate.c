/*
 * The proxy's feed check against its own lateness (proxy/brokerclient.c,
 * redteam4 hole 1): the revocation feed is failed closed when the broker
 * is silent for FEED_FAIL_CLOSED_MS, and that silence is the broker's,
 * not the loop's. A fake broker of the test answers every feed poll at
 * once (after 50 ms); the loop is held up in callbacks of 2.2 s in a row
 * (a job's answers costly to scan did that on the real proxy), so that
 * the broker's answers wait in the socket while the check timer is due:
 * the feed is not lost and still answers. The same fake broker gone
 * silent (it reads polls and answers none) still loses the feed, in
 * about FEED_FAIL_CLOSED_MS of a loop on time.
 */
#include "brokerclient.h"

#include <arpa/inet.h>
#include <check.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static atomic_bool silent;
static int lfd;
static int lost;

/* One connection of the fake broker: each request head answered with an
 * empty feed page (or, silent, never). */
static void *
serve_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[8192];
	size_t n = 0;
	static const char ans[] =
	    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Content-Length: 31\r\n\r\n{\"revocations\": [], \"head\": 0}\n";

	for (;;) {
		ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		buf[n] = '\0';
		char *end;
		while ((end = strstr(buf, "\r\n\r\n")) != NULL) {
			size_t used = (size_t)(end + 4 - buf);
			memmove(buf, buf + used, n - used + 1);
			n -= used;
			if (atomic_load(&silent))
				continue;
			usleep(50000);
			if (write(fd, ans, sizeof(ans) - 1) < 0)
				break;
		}
		if (n >= sizeof(buf) - 1)
			break;
	}
	close(fd);
	return NULL;
}

static void *
serve(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		pthread_t t;
		pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
}

static void
on_lost(void *ctx)
{
	(void)ctx;
	lost++;
}

/* Holds the loop up (a costly callback), then again on the next turn. */
static int stalls;
static void
on_stall(evutil_socket_t fd, short what, void *arg)
{
	struct timespec t0, t;

	(void)fd;
	(void)what;
	(void)arg;
	if (stalls-- <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while (
	    (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 <
	    2200);
}

static struct brokerclient *
start(struct event_base *base)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	char url[64];
	struct brokerclient *b;
	pthread_t t;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(lfd, 16), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(a.sin_port));
	pthread_create(&t, NULL, serve, NULL);
	pthread_detach(t);
	struct brokerclient_options o = { .base = url,
		.verifier_key = "k",
		.follower = "unit",
		.hooks = { .feed_lost = on_lost } };
	ck_assert_int_eq(brokerclient_new(base, &o, &b), 0);
	return b;
}

/* Runs base's loop for ms of the clock. */
static void
run_for(struct event_base *base, int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		event_base_loop(base, EVLOOP_ONCE);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (
	    (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 <
	    ms);
}

START_TEST(a_late_loop_is_not_a_silent_broker)
{
	struct event_base *base = event_base_new();
	struct brokerclient *b = start(base);
	static const struct timeval every = { 0, 1000 };

	run_for(base, 1500);
	ck_assert_msg(brokerclient_feed_ok(b), "the feed never answered");
	/* A timer due at once, each turn: the loop is late by 2.2 s, three
	 * turns in a row, the broker's answers waiting meanwhile. */
	struct event *st = event_new(base, -1, EV_PERSIST, on_stall, NULL);
	stalls = 3;
	event_add(st, &every);
	while (stalls > 0) {
		event_base_loop(base, EVLOOP_ONCE);
		ck_assert_msg(lost == 0 && brokerclient_feed_ok(b),
		    "the feed was lost while the broker answered "
		    "(the loop was late, %d stalls left)",
		    stalls);
	}
	run_for(base, 500);
	ck_assert_int_eq(lost, 0);
	ck_assert(brokerclient_feed_ok(b));
	event_free(st);

	/* The broker goes silent: the feed is lost, the loop on time. */
	atomic_store(&silent, true);
	for (int i = 0; i < 100 && lost == 0; i++)
		run_for(base, 100);
	ck_assert_msg(lost == 1, "a silent broker's feed was not lost");
	ck_assert(!brokerclient_feed_ok(b));
	brokerclient_free(b);
	event_base_free(base);
	close(lfd);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("feedlate");
	TCase *tc = tcase_create("feedlate");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_late_loop_is_not_a_silent_broker);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed == 0 ? 0 : 1;
}
