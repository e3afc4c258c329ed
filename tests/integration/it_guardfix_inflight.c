/*
 * A binding made while another job's exchange is open (redteam3's #2,
 * issue 18): job B's request to a storing service (jobs/redteam3/
 * waiting.py) under a name nobody bound went up BEFORE job A's first
 * injected request reached that address, so the guard passed it
 * unscanned, and the service answered it once A's key was stored: an
 * answer held (/wait), a chunked stream whose head went before
 * (/stream), an upgrade made before (/upgrade: 101, then raw bytes).
 * Now the address A's injection adds ends every open connection there
 * that does not scan for the secret (bound_midway). No job is spawned
 * (uid base 1392000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char value[] = "sk_live_inflight_0123456789abcdef";

static const char hosts[] = "127.0.0.1 api.test\n127.0.0.1 www.api.test\n";

static void
stack(struct injectkit *k)
{
	k->up_pid = -1;
	injectkit_stack_start(k, hosts, "proxy-inflight", NULL);
	injectkit_secret(k, "up-key", value);
	k->up_pid =
	    injectkit_jobs_upstream("redteam3/waiting.py", NULL, &k->up_port);
}

/* B's manifest "reader": www.api.test on k's port, GET, /open/, no
 * inject, upgrade as told; its channel into chan. */
static void
job_b(struct injectkit *k, bool upgrade, char chan[300])
{
	json_t *r = injectkit_open_rule(k, "www.api.test");

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(json_object_set_new(r, "upgrade",
			     json_boolean(upgrade)),
	    0);
	injectkit_job_open(k, "reader",
	    injectkit_manifest("reader", json_pack("[o]", r)), NULL, chan,
	    NULL);
}

/* Job A: the kit's injecting rule 0 (api.test /case/). */
static void
job_a(struct injectkit *k)
{
	injectkit_job_start(k, "writer", injectkit_writer_manifest(k));
}

/* B's request (extra: its Connection line and more, CRLF each) to www.api.test/open/what, written
 * on a new connection to chan and not read: the fd. */
static int
b_open(const struct injectkit *k, const char *chan, const char *what,
    const char *extra)
{
	char req[1024], path[64];
	int fd = unix_connect(chan);

	ck_assert_int_ge(fd, 0);
	snprintf(path, sizeof(path), "/open/%s", what);
	snprintf(req, sizeof(req),
	    "GET http://www.api.test:%u%s HTTP/1.1\r\nHost: "
	    "www.api.test:%u\r\n%s\r\n",
	    k->up_port, path, k->up_port, extra);
	ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL),
	    (ssize_t)strlen(req));
	return fd;
}

/* Until the service has n callers waiting for a key (10 s at most). */
static void
waiters(const struct injectkit *k, const char *chan, int n)
{
	char want[32];

	snprintf(want, sizeof(want), "waiters: %d", n);
	for (int i = 0; i < 200; i++) {
		char req[512];
		injectkit_request_to(k, req, sizeof(req), "www.api.test", "GET",
		    "/open/waiters", false, "close");
		char *resp = injectkit_send_on(chan, req);
		bool ok = strstr(resp, want) != NULL;
		free(resp);
		if (ok)
			return;
		usleep(50000);
	}
	ck_abort_msg("the service never had %d waiting", n);
}

/* A's injected request: the key stored, its address bound. */
static void
a_injects(struct injectkit *k)
{
	char *resp = injectkit_ask(k, "GET", "/case/x", true);

	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
}

/* What is left on fd in 10 s (or up to a whole answer). */
static char *
rest(int fd)
{
	char *resp = http_exchange(fd, "", 0, 10000);

	ck_assert_ptr_nonnull(resp);
	return resp;
}

START_TEST(an_answer_held_across_the_binding_is_scanned)
{
	struct injectkit k;
	char chan[300], *resp;

	stack(&k);
	job_a(&k);
	job_b(&k, false, chan);
	int fd = b_open(&k, chan, "wait", "Connection: close\r\n");
	waiters(&k, chan, 1);
	a_injects(&k);
	resp = rest(fd);
	close(fd);
	ck_assert_msg(!injectkit_holds_piece(value, resp),
	    "job B read job A's key: %.400s", resp);
	free(resp);
	ck_assert(
	    injectkit_decisions_hold(&k.proxy, "\"detail\":\"bound_midway\""));
	injectkit_stop(&k);
}
END_TEST

START_TEST(a_stream_begun_before_the_binding_is_scanned)
{
	struct injectkit k;
	char chan[300], *resp;

	stack(&k);
	job_a(&k);
	job_b(&k, false, chan);
	int fd = b_open(&k, chan, "stream", "Connection: close\r\n");
	waiters(&k, chan, 1);
	a_injects(&k);
	resp = rest(fd);
	close(fd);
	ck_assert_msg(strstr(resp, "waiting") != NULL, "%.400s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp),
	    "job B read job A's key: %.400s", resp);
	free(resp);
	injectkit_stop(&k);
}
END_TEST

START_TEST(an_upgrade_made_before_the_binding_is_ended_or_read)
{
	struct injectkit k;
	char chan[300], *resp;

	stack(&k);
	job_a(&k);
	job_b(&k, true, chan);
	int fd = b_open(&k, chan, "upgrade",
	    "Connection: Upgrade\r\nUpgrade: websocket\r\n");
	resp = http_exchange(fd, "", 0, 5000); /* the 101's head */
	ck_assert_msg(resp != NULL && strstr(resp, " 101 ") != NULL, "%.400s",
	    resp);
	free(resp);
	waiters(&k, chan, 1);
	a_injects(&k);
	resp = rest(fd);
	close(fd);
	ck_assert_msg(!injectkit_holds_piece(value, resp),
	    "job B read job A's key: %.400s", resp);
	free(resp);
	injectkit_stop(&k);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("guardfix_inflight");
	TCase *tc = tcase_create("inflight");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, an_answer_held_across_the_binding_is_scanned);
	tcase_add_test(tc, a_stream_begun_before_the_binding_is_scanned);
	tcase_add_test(tc, an_upgrade_made_before_the_binding_is_ended_or_read);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
