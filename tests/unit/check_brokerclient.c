/*
 * What the proxy's broker client leaves of an answer in libevent's
 * buffers (proxy/brokerclient.c): brokerclient_evbuffer_wipe zeroes every
 * byte of every chain of an evbuffer in place (a released secret's
 * answer is read out of one, then wiped, then drained), whatever the
 * chains' number and a start inside the first one; the buffer's length
 * is unchanged and the peek after the wipe sees zeros only.
 *
 * And where a call goes, at a broker of the test's that accepts and
 * answers only when told: each release, introspection and job's rules
 * on a connection of its own while some are free (a release never on an
 * introspection's); a job's releases past its 4 in flight wait their
 * turn unsent, and go out as its others are answered (a cancelled one
 * dropped); past 16 waiting, or 64 in flight in all, refused at once and
 * counted, another job's not.
 */
#include "brokerclient.h"

#include "testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* Every byte of b, by evbuffer_peek: zero? And how many chains. */
static bool
all_zero(struct evbuffer *b, int *ret_chains)
{
	int n = evbuffer_peek(b, -1, NULL, NULL, 0);
	struct evbuffer_iovec v[64];
	size_t total = 0;

	ck_assert_int_le(n, 64);
	ck_assert_int_eq(evbuffer_peek(b, -1, NULL, v, n), n);
	*ret_chains = n;
	for (int i = 0; i < n; i++) {
		const unsigned char *p = v[i].iov_base;
		for (size_t k = 0; k < v[i].iov_len; k++)
			if (p[k] != 0)
				return false;
		total += v[i].iov_len;
	}
	ck_assert_uint_eq(total, evbuffer_get_length(b));
	return true;
}

START_TEST(every_chain_is_zeroed_in_place)
{
	struct evbuffer *b = evbuffer_new(), *part;
	static char big[9000];
	int chains;

	memset(big, 'S', sizeof(big));
	/* More chains than the wipe peeks at once (8): buffers added
	 * whole keep their own. */
	for (int i = 0; i < 12; i++) {
		part = evbuffer_new();
		ck_assert_int_eq(evbuffer_add(part, big, 700 + 600 * i), 0);
		ck_assert_int_eq(evbuffer_add_buffer(b, part), 0);
		evbuffer_free(part);
	}
	/* A start inside the first chain (what a parser drained). */
	evbuffer_drain(b, 13);
	size_t len = evbuffer_get_length(b);
	ck_assert(!all_zero(b, &chains));
	ck_assert_int_gt(chains, 8);
	brokerclient_evbuffer_wipe(b);
	ck_assert_uint_eq(evbuffer_get_length(b), len);
	ck_assert_msg(all_zero(b, &chains), "a byte of the answer is left");
	evbuffer_free(b);

	/* Empty: nothing to do, nothing breaks. */
	b = evbuffer_new();
	brokerclient_evbuffer_wipe(b);
	ck_assert_uint_eq(evbuffer_get_length(b), 0);
	evbuffer_free(b);
}
END_TEST

/* --- where calls go ------------------------------------------------------ */

#define PEERS 96

/* The broker's side: a listener, and each connection it accepted with
 * the first line of what came on it and how many requests did. */
static struct {
	int lfd;
	size_t n;
	int fd[PEERS];
	char line[PEERS][160];
	unsigned requests[PEERS];
} peer;

static void
peer_listen(char *base, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	peer.lfd =
	    socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(peer.lfd, 0);
	ck_assert_int_eq(bind(peer.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(peer.lfd, PEERS), 0);
	ck_assert_int_eq(getsockname(peer.lfd, (struct sockaddr *)&a, &alen),
	    0);
	snprintf(base, len, "http://127.0.0.1:%u", ntohs(a.sin_port));
	peer.n = 0;
}

/* Runs the loop and takes what reached the broker until it holds want
 * requests (at most 5 s): how many it holds. */
static unsigned
peer_pump(struct event_base *base, unsigned want)
{
	unsigned got = 0;

	for (int round = 0; round < 500; round++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		int fd;
		while (peer.n < PEERS &&
		    (fd = accept4(peer.lfd, NULL, NULL,
			 SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
			peer.fd[peer.n] = fd;
			peer.line[peer.n][0] = '\0';
			peer.requests[peer.n++] = 0;
		}
		got = 0;
		for (size_t i = 0; i < peer.n; i++) {
			char buf[4096];
			ssize_t k = read(peer.fd[i], buf, sizeof(buf) - 1);
			if (k > 0) {
				buf[k] = '\0';
				/* A request per head's start (none has a
				 * body here). */
				for (char *at = buf;
				     (at = strstr(at, " HTTP/1.1\r\n")); at++)
					peer.requests[i]++;
				if (peer.line[i][0] == '\0')
					snprintf(peer.line[i],
					    sizeof(peer.line[i]), "%.*s",
					    (int)strcspn(buf, "\r"), buf);
			}
			got += peer.requests[i];
		}
		if (got >= want)
			return got;
		usleep(10000);
	}
	return got;
}

static void
peer_close(void)
{
	for (size_t i = 0; i < peer.n; i++)
		close(peer.fd[i]);
	close(peer.lfd);
}

/* The connection whose request line starts with what: its index. */
static size_t
peer_find(const char *what)
{
	for (size_t i = 0; i < peer.n; i++)
		if (strncmp(peer.line[i], what, strlen(what)) == 0)
			return i;
	ck_abort_msg("no request %s reached the broker", what);
	return 0;
}

static int answered;
static int answered_status;

static void
on_answer(void *arg, int status, json_t *body)
{
	(void)arg;
	(void)body;
	answered++;
	answered_status = status;
}

static int
release(struct brokerclient *b, const char *job, int k)
{
	char path[128];
	struct brokerclient_call *c = NULL;

	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/s%d/release", job, k);
	int r = brokerclient_release(b, job, path, on_answer, NULL, &c);
	ck_assert(r < 0 || c != NULL);
	return r;
}

/* The requests the broker holds after the loop ran a while more: what
 * is not sent by then is taken for not sent. */
static unsigned
peer_settle(struct event_base *base)
{
	unsigned got = 0;

	for (int i = 0; i < 20; i++) {
		got = peer_pump(base, 0);
		usleep(10000);
	}
	return got;
}

static void
answer_503(const char *line)
{
	static const char busy[] =
	    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
	    "application/json\r\nContent-Length: 27\r\n\r\n"
	    "{\"error\":\"broker_stopping\"}";
	size_t at = peer_find(line);

	ck_assert_int_eq(write(peer.fd[at], busy, sizeof(busy) - 1),
	    (ssize_t)sizeof(busy) - 1);
}

static void
counts_are(struct brokerclient *b, uint64_t in_flight, uint64_t waiting,
    uint64_t refused)
{
	uint64_t f, w, r;

	brokerclient_release_counts(b, &f, &w, &r);
	ck_assert_uint_eq(f, in_flight);
	ck_assert_uint_eq(w, waiting);
	ck_assert_uint_eq(r, refused);
}

START_TEST(each_call_has_a_connection_and_releases_are_capped)
{
	struct event_base *base = event_base_new();
	struct brokerclient *b;
	struct brokerclient_call *cancelled = NULL;
	char url[64], path[128];

	peer_listen(url, sizeof(url));
	struct brokerclient_options o = { .base = url,
		.verifier_key = "k",
		.follower = "unit" };
	ck_assert_int_eq(brokerclient_new(base, &o, &b), 0);
	/* A job's four releases, another job's three, three introspections
	 * and a job's rules (the 4 connections of calls). */
	for (int k = 0; k < BROKERCLIENT_JOB_RELEASES; k++)
		ck_assert_int_eq(release(b, "job_one", k), 0);
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(release(b, "job_two", k), 0);
	for (int k = 0; k < 3; k++)
		ck_assert_ptr_nonnull(brokerclient_call(b, "POST",
		    "/v1/introspect", NULL, on_answer, NULL));
	ck_assert_ptr_nonnull(brokerclient_call(b, "GET", "/v1/jobs/j/rules",
	    NULL, on_answer, NULL));
	/* Each on a connection of its own, and the feed's poll. */
	ck_assert_uint_eq(peer_pump(base, 1 + 7 + 4), 1 + 7 + 4);
	ck_assert_uint_eq(peer.n, 1 + 7 + 4);
	for (size_t i = 0; i < peer.n; i++)
		ck_assert_msg(peer.requests[i] == 1, "%u requests on '%s'",
		    peer.requests[i], peer.line[i]);
	counts_are(b, 7, 0, 0);

	/* The first job's next 16 wait their turn, unsent (the first of
	 * them cancelled); a 17th is refused. */
	snprintf(path, sizeof(path), "/v1/jobs/job_one/secrets/s4/release");
	ck_assert_int_eq(brokerclient_release(b, "job_one", path, on_answer,
			     NULL, &cancelled),
	    0);
	brokerclient_cancel(cancelled);
	for (int k = 5; k < 4 + BROKERCLIENT_JOB_WAITING; k++)
		ck_assert_int_eq(release(b, "job_one", k), 0);
	ck_assert_int_eq(release(b, "job_one", 99), -EBUSY);
	ck_assert_uint_eq(peer_settle(base), 1 + 7 + 4);
	counts_are(b, 7, BROKERCLIENT_JOB_WAITING, 1);

	/* One of its releases answered: the cancelled one is dropped, the
	 * next goes out; the other job's fourth goes at once. */
	answer_503("POST /v1/jobs/job_one/secrets/s0/release");
	for (int i = 0; i < 500 && answered == 0; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(10000);
	}
	ck_assert_int_eq(answered, 1);
	ck_assert_int_eq(answered_status, 503);
	ck_assert_int_eq(release(b, "job_two", 3), 0);
	ck_assert_uint_eq(peer_pump(base, 1 + 9 + 4), 1 + 9 + 4);
	(void)peer_find("POST /v1/jobs/job_one/secrets/s5/release");
	(void)peer_find("POST /v1/jobs/job_two/secrets/s3/release");
	for (size_t i = 0; i < peer.n; i++)
		ck_assert_msg(strstr(peer.line[i], "/s4/") == NULL,
		    "a cancelled release was sent: %s", peer.line[i]);
	counts_are(b, 8, BROKERCLIENT_JOB_WAITING - 2, 1);
	ck_assert_int_eq(answered, 1);

	/* All jobs: 64 in flight at most; a job's turn to wait is not
	 * taken by that. */
	int ok = 8;
	char job[32];
	for (int j = 0; ok < BROKERCLIENT_RELEASES; j++) {
		snprintf(job, sizeof(job), "job_%d", j);
		for (int k = 0; k < BROKERCLIENT_JOB_RELEASES &&
		     ok < BROKERCLIENT_RELEASES;
		     k++, ok++)
			ck_assert_int_eq(release(b, job, k), 0);
	}
	ck_assert_int_eq(release(b, "job_last", 0), -EBUSY);
	ck_assert_int_eq(release(b, "job_one", 100), 0);
	counts_are(b, BROKERCLIENT_RELEASES, BROKERCLIENT_JOB_WAITING - 1, 2);
	/* Freed with calls in flight and waiting: nobody is told. */
	brokerclient_free(b);
	ck_assert_int_eq(answered, 1);
	event_base_free(base);
	peer_close();
}
END_TEST

/* A call whose connection cannot even be made (no descriptor left: the
 * connect fails inside evhttp_make_request, which runs the request's
 * callback there and then): not sent, no answer, nothing of it left in
 * flight; the next call, with descriptors again, goes out. Before, the
 * answer ran inside the send, on a call not yet in flight (UBSan: store
 * to null pointer in call_done), and the send then linked the freed
 * call. */
START_TEST(a_call_whose_connect_fails_at_once_is_not_sent)
{
	struct event_base *base = event_base_new();
	struct brokerclient *b;
	struct rlimit old, none;
	char url[64];

	peer_listen(url, sizeof(url));
	struct brokerclient_options o = { .base = url,
		.verifier_key = "k",
		.follower = "unit" };
	ck_assert_int_eq(brokerclient_new(base, &o, &b), 0);
	/* No descriptor past the lowest free one: the socket fails. */
	int fd = dup(0);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	none = old;
	none.rlim_cur = (rlim_t)fd;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &none), 0);
	answered = 0;
	struct brokerclient_call *c = brokerclient_call(b, "POST",
	    "/v1/introspect", NULL, on_answer, NULL);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(answered, 0);
	counts_are(b, 0, 0, 0);
	/* With descriptors again: the next one reaches the broker. */
	ck_assert_ptr_nonnull(brokerclient_call(b, "POST", "/v1/introspect",
	    NULL, on_answer, NULL));
	ck_assert_uint_ge(peer_pump(base, 2), 2);
	(void)peer_find("POST /v1/introspect");
	ck_assert_int_eq(answered, 0);
	brokerclient_free(b);
	peer_close();
	event_base_free(base);
}
END_TEST

/* Reports of one (job, secret, version, event) while the first is still
 * in flight at a broker that does not answer: added up in its slot, none
 * lost. Before, each took a slot of its own and past 64 they were lost
 * (the fleet's budget missed them). */
START_TEST(reports_in_flight_are_added_up_not_lost)
{
	struct event_base *base = event_base_new();
	struct brokerclient *b;
	uint64_t told, kept, lost;
	char url[64];

	peer_listen(url, sizeof(url));
	struct brokerclient_options o = { .base = url,
		.verifier_key = "k",
		.follower = "unit" };
	ck_assert_int_eq(brokerclient_new(base, &o, &b), 0);
	for (int i = 0; i < BROKERCLIENT_REFLECTIONS_KEPT + 6; i++) {
		ck_assert_int_eq(brokerclient_reflection(b, "job_one", "up-key",
				     3, "reflected"),
		    0);
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	(void)peer_settle(base);
	brokerclient_reflection_counts(b, &told, &kept, &lost);
	ck_assert_msg(lost == 0 && kept == BROKERCLIENT_REFLECTIONS_KEPT + 6,
	    "told %llu, kept %llu, lost %llu of %d", (unsigned long long)told,
	    (unsigned long long)kept, (unsigned long long)lost,
	    BROKERCLIENT_REFLECTIONS_KEPT + 6);
	/* 63 more of other secrets fill the slots; the next is not kept,
	 * and says so (the proxy closes its job). */
	char secret[32];
	for (int i = 1; i < BROKERCLIENT_REFLECTIONS_KEPT; i++) {
		snprintf(secret, sizeof(secret), "s%d", i);
		ck_assert_int_eq(brokerclient_reflection(b, "job_one", secret,
				     1, "reflected"),
		    0);
	}
	ck_assert_int_eq(brokerclient_reflection(b, "job_one", "s-last", 1,
			     "reflected"),
	    -ENOSPC);
	brokerclient_free(b);
	peer_close();
	event_base_free(base);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("brokerclient");
	TCase *tc = tcase_create("brokerclient");

	tcase_add_test(tc, every_chain_is_zeroed_in_place);
	tcase_add_test(tc, each_call_has_a_connection_and_releases_are_capped);
	tcase_add_test(tc, a_call_whose_connect_fails_at_once_is_not_sent);
	tcase_add_test(tc, reports_in_flight_are_added_up_not_lost);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
