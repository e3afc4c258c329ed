/*
 * The revocation feed's two kinds of entry (common/feed_page.h), as its
 * readers take them: {"seq", "job"} is the job revoked, {"seq", "job",
 * "token"} one token of it revoked alone. feed_entry_parse reads both
 * (and takes a token it cannot read for the whole job: fail closed); the
 * proxy's broker client hands a token's entry to its token_revoked hook,
 * never to revoked (which closes the job's channel), and a job's to
 * revoked as before; without a token_revoked hook a token's entry is the
 * job's; the launcher's watch stops its job on the job's entry and not
 * on a token's. The broker here is a thread on loopback answering the
 * feed and the job's state with bodies the test sets.
 */
#include "brokerclient.h"
#include "feed_page.h"
#include "watch.h"

#include "testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* --- feed_entry_parse ---------------------------------------------------- */

static int
parse(const char *text, struct feed_entry *e)
{
	json_t *v = json_loads(text, 0, NULL);
	int r;

	ck_assert_ptr_nonnull(v);
	r = feed_entry_parse(v, e);
	/* The strings are the entry's: compare before it goes. */
	static char job[80], token[80];
	if (r == 0) {
		snprintf(job, sizeof(job), "%s", e->job);
		e->job = job;
		if (e->token != NULL) {
			snprintf(token, sizeof(token), "%s", e->token);
			e->token = token;
		}
	}
	json_decref(v);
	return r;
}

START_TEST(entries_of_both_kinds_are_read)
{
	struct feed_entry e;
	char text[300], id[FEED_ID_MAX + 2];

	ck_assert_int_eq(parse("{\"seq\": 7, \"job\": \"job_a\"}", &e), 0);
	ck_assert_int_eq(e.seq, 7);
	ck_assert_str_eq(e.job, "job_a");
	ck_assert_ptr_null(e.token);
	ck_assert_int_eq(parse("{\"seq\": 8, \"job\": \"job_a\", \"token\": "
			       "\"tok_x\"}",
			     &e),
	    0);
	ck_assert_int_eq(e.seq, 8);
	ck_assert_str_eq(e.job, "job_a");
	ck_assert_str_eq(e.token, "tok_x");
	/* A token that is not an id: the whole job (fail closed). */
	ck_assert_int_eq(parse("{\"seq\": 9, \"job\": \"job_a\", \"token\": 5}",
			     &e),
	    0);
	ck_assert_ptr_null(e.token);
	ck_assert_int_eq(parse("{\"seq\": 9, \"job\": \"job_a\", \"token\": "
			       "\"\"}",
			     &e),
	    0);
	ck_assert_ptr_null(e.token);
	memset(id, 'a', sizeof(id) - 1);
	id[sizeof(id) - 1] = '\0';
	snprintf(text, sizeof(text),
	    "{\"seq\": 9, \"job\": \"job_a\", \"token\": \"%s\"}", id);
	ck_assert_int_eq(parse(text, &e), 0);
	ck_assert_ptr_null(e.token);
	/* No entry at all. */
	ck_assert_int_eq(parse("{\"seq\": \"9\", \"job\": \"job_a\"}", &e),
	    -EINVAL);
	ck_assert_int_eq(parse("{\"seq\": 0, \"job\": \"job_a\"}", &e),
	    -EINVAL);
	ck_assert_int_eq(parse("{\"seq\": 9}", &e), -EINVAL);
	ck_assert_int_eq(parse("{\"seq\": 9, \"job\": \"\"}", &e), -EINVAL);
	snprintf(text, sizeof(text), "{\"seq\": 9, \"job\": \"%s\"}", id);
	ck_assert_int_eq(parse(text, &e), -EINVAL);
	ck_assert_int_eq(parse("[]", &e), -EINVAL);
}
END_TEST

/* --- a broker on loopback ------------------------------------------------ */

/* Answers GET /v1/revocations with feed and anything else with job. */
struct fake {
	int fd;
	pthread_mutex_t mu;
	char feed[512], job[256];
	atomic_int feeds, jobs; /* requests served */
	atomic_bool stop;
	pthread_t th;
	char base[64];
};

static void *
fake_main(void *arg)
{
	struct fake *f = arg;

	while (!atomic_load(&f->stop)) {
		struct pollfd p = { .fd = f->fd, .events = POLLIN };
		char buf[4096], out[1024], body[512];
		int c, n;

		if (poll(&p, 1, 50) != 1)
			continue;
		if ((c = accept4(f->fd, NULL, NULL, SOCK_CLOEXEC)) < 0)
			continue;
		for (n = 0; n < (int)sizeof(buf) - 1;) {
			ssize_t k =
			    recv(c, buf + n, sizeof(buf) - 1 - (size_t)n, 0);
			if (k <= 0)
				break;
			n += (int)k;
			buf[n] = '\0';
			if (strstr(buf, "\r\n\r\n") != NULL)
				break;
		}
		bool feed = strncmp(buf, "GET /v1/revocations", 19) == 0;
		pthread_mutex_lock(&f->mu);
		snprintf(body, sizeof(body), "%s", feed ? f->feed : f->job);
		pthread_mutex_unlock(&f->mu);
		n = snprintf(out, sizeof(out),
		    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		    strlen(body), body);
		(void)send(c, out, (size_t)n, MSG_NOSIGNAL);
		close(c);
		atomic_fetch_add(feed ? &f->feeds : &f->jobs, 1);
	}
	return NULL;
}

static void
fake_set(struct fake *f, const char *feed, const char *job)
{
	pthread_mutex_lock(&f->mu);
	snprintf(f->feed, sizeof(f->feed), "%s", feed);
	snprintf(f->job, sizeof(f->job), "%s", job);
	pthread_mutex_unlock(&f->mu);
}

static void
fake_start(struct fake *f, const char *feed, const char *job)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	fake_set(f, feed, job);
	f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(f->fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(f->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(f->fd, 16), 0);
	ck_assert_int_eq(getsockname(f->fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(f->base, sizeof(f->base), "http://127.0.0.1:%u",
	    ntohs(sa.sin_port));
	ck_assert_int_eq(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void
fake_stop(struct fake *f)
{
	atomic_store(&f->stop, true);
	pthread_join(f->th, NULL);
	close(f->fd);
	pthread_mutex_destroy(&f->mu);
}

/* Runs base until done() says so, for 10 s at most. */
static void
run_until(struct event_base *base, bool (*done)(void *), void *arg)
{
	struct timeval tick = { 0, 20 * 1000 };

	for (int i = 0; i < 500 && !done(arg); i++) {
		event_base_loopexit(base, &tick);
		event_base_dispatch(base);
	}
}

/* --- the proxy's broker client ------------------------------------------- */

struct heard {
	int revoked, tokens;
	char job[64], token[64];
	int64_t seq;
};

static void
on_revoked(void *ctx, const char *job, int64_t seq)
{
	struct heard *h = ctx;

	h->revoked++;
	snprintf(h->job, sizeof(h->job), "%s", job);
	h->seq = seq;
}

static void
on_token_revoked(void *ctx, const char *job, const char *token_id, int64_t seq)
{
	struct heard *h = ctx;

	h->tokens++;
	snprintf(h->job, sizeof(h->job), "%s", job);
	snprintf(h->token, sizeof(h->token), "%s", token_id);
	h->seq = seq;
}

static bool
heard_any(void *arg)
{
	const struct heard *h = arg;

	return h->revoked + h->tokens > 0;
}

/* The client on f's feed, with or without a token_revoked hook, until it
 * heard one revocation. */
static void
follow(struct fake *f, bool token_hook, struct heard *h)
{
	struct event_base *base = event_base_new();
	struct brokerclient *bc;
	struct brokerclient_options o = { .base = f->base,
		.verifier_key = "crk_verifier",
		.follower = "t",
		.hooks = { .revoked = on_revoked,
		    .token_revoked = token_hook ? on_token_revoked : NULL,
		    .ctx = h } };

	memset(h, 0, sizeof(*h));
	ck_assert_int_eq(brokerclient_new(base, &o, &bc), 0);
	run_until(base, heard_any, h);
	brokerclient_free(bc);
	event_base_free(base);
}

START_TEST(the_proxy_drops_a_token_and_keeps_the_job)
{
	struct fake f;
	struct heard h;

	fake_start(&f,
	    "{\"head\": 7, \"revocations\": [{\"seq\": 7, \"job\": \"j1\", "
	    "\"token\": \"tok_a\"}]}",
	    "{}");
	follow(&f, true, &h);
	ck_assert_msg(h.revoked == 0, "a token's entry closed job %s", h.job);
	/* (The fake answers every poll with it: once or more.) */
	ck_assert_int_ge(h.tokens, 1);
	ck_assert_str_eq(h.job, "j1");
	ck_assert_str_eq(h.token, "tok_a");
	ck_assert_int_eq(h.seq, 7);

	/* Without the hook, the token's entry revokes the job. */
	follow(&f, false, &h);
	ck_assert_int_ge(h.revoked, 1);
	ck_assert_str_eq(h.job, "j1");

	/* A job's entry is the job's, as it always was. */
	fake_set(&f,
	    "{\"head\": 8, \"revocations\": [{\"seq\": 8, \"job\": "
	    "\"j2\"}]}",
	    "{}");
	follow(&f, true, &h);
	ck_assert_int_eq(h.tokens, 0);
	ck_assert_int_ge(h.revoked, 1);
	ck_assert_str_eq(h.job, "j2");
	ck_assert_int_eq(h.seq, 8);
	fake_stop(&f);
}
END_TEST

/* --- the launcher's watch ------------------------------------------------ */

struct watched {
	struct fake *f;
	int jobs_then; /* job states served when the feeds were counted */
	int feeds_then;
	bool stopped;
	char reason[32];
};

static void
on_stop(void *arg, const char *reason)
{
	struct watched *w = arg;

	w->stopped = true;
	snprintf(w->reason, sizeof(w->reason), "%s", reason);
}

/* The job's state was asked, and the feed answered three times since. */
static bool
state_asked_and_feed_went_on(void *arg)
{
	struct watched *w = arg;
	int jobs = atomic_load(&w->f->jobs), feeds = atomic_load(&w->f->feeds);

	if (w->stopped)
		return true;
	if (jobs == 0)
		return false;
	if (w->jobs_then == 0) {
		w->jobs_then = jobs;
		w->feeds_then = feeds;
	}
	return feeds >= w->feeds_then + 3;
}

static bool
stopped(void *arg)
{
	return ((struct watched *)arg)->stopped;
}

START_TEST(the_watch_outlives_a_token_of_its_job)
{
	struct event_base *base = event_base_new();
	struct watched w = { 0 };
	struct watch *wt;
	struct fake f;

	/* The feed names one token of j1; the broker says j1 runs. */
	fake_start(&f,
	    "{\"head\": 7, \"revocations\": [{\"seq\": 7, \"job\": \"j1\", "
	    "\"token\": \"tok_a\"}]}",
	    "{\"job\": \"j1\", \"state\": \"running\"}");
	w.f = &f;
	ck_assert_int_eq(watch_start(base, f.base, "crk_launcher", "j1", 600000,
			     on_stop, &w, &wt),
	    0);
	run_until(base, state_asked_and_feed_went_on, &w);
	ck_assert_msg(!w.stopped, "a token's revoke stopped the job: %s",
	    w.reason);
	ck_assert_int_ge(atomic_load(&f.jobs), 1);
	/* Then the job's own entry: stopped, as always. */
	fake_set(&f,
	    "{\"head\": 8, \"revocations\": [{\"seq\": 8, \"job\": \"j1\"}]}",
	    "{\"job\": \"j1\", \"state\": \"revoked\", \"stop_reason\": "
	    "\"operator\"}");
	run_until(base, stopped, &w);
	ck_assert(w.stopped);
	ck_assert_str_eq(w.reason, "revoked");
	watch_free(wt);
	event_base_free(base);
	fake_stop(&f);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("feed_entries");
	TCase *tc = tcase_create("feed_entries");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, entries_of_both_kinds_are_read);
	tcase_add_test(tc, the_proxy_drops_a_token_and_keeps_the_job);
	tcase_add_test(tc, the_watch_outlives_a_token_of_its_job);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
