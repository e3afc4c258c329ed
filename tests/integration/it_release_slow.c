/*
 * A release that waits at the broker never holds another job's calls at
 * the proxy (proxy/brokerclient.c; credentials.md "A slow issuer holds
 * no thread"). The issuer is a listener of the test's on 127.0.0.1 that
 * accepts and never answers (as it_issuer_slow's). Job A's rule injects
 * its credential and A sends many requests at once: each is introspected,
 * then its release waits at the broker (up to 4 s). Meanwhile job B's
 * requests, each with its own crd_ token and the proxy's token cache off
 * (every request introspected), are answered 200 by the upstream, while
 * A's releases still wait at the broker (its gauge
 * cordon_broker_issuer_releases_waiting read as B is answered) and
 * before any of them ends (the latencies printed, not asserted). A's
 * requests share the one release of its secret in flight (conn.c: one
 * a job and secret), so none is refused 503 releases_busy at the
 * proxy's caps for a job (4 in flight, 16 more waiting their turn; see
 * check_brokerclient); all end 503 issuer_unavailable with it. A broker
 * stopping with a release waiting: the job's request gets 503 broker_stopping, not a
 * 403 as if the secret were refused.
 */
#include "buf.h"
#include "harness.h"
#include "http_client.h"
#include "hungissuer.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The proxy's caps on one job's releases in flight and waiting their
 * turn (brokerclient.h's BROKERCLIENT_JOB_RELEASES, _JOB_WAITING). */
#define JOB_RELEASES 4
#define JOB_WAITING 16

/* --- an issuer that accepts and never answers (hungissuer.c) ----------- */

static struct hung_issuer hung = { .lfd = -1 };

/* --- the broker, the proxy, an upstream and two jobs --------------------- */

static struct daemon broker, proxy;
static struct upstream *up;
static char admin[128], launcher[128], verifier[128];
static char job_a[64], job_b[64], chan_a[300], chan_b[300];

/* A job of manifest m, its id in job, and its channel at the proxy. */
static void
job_and_channel(const char *m, char *job, size_t len, char *chan, size_t clen)
{
	char path[200];
	json_t *j;

	hung_new_job(&broker, launcher, m, job, len);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(chan, clen, "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);
}

static void
setup(void)
{
	char cfg[2048], dir[300], path[400], hostsf[400];

	signal(SIGPIPE, SIG_IGN);
	hung_issuer_start(&hung);
	up = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(up);
	hung_broker_start(&broker, admin, launcher, verifier, sizeof(admin));
	hung_issuer_secret(&hung, &broker, admin, "slow-api", "oauth/token",
	    false);
	hung_manifest(&broker, admin, "slow", "slow-api", upstream_port(up));
	hung_manifest(&broker, admin, "plain", NULL, upstream_port(up));

	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", dir);
	harness_write_file(hostsf, "127.0.0.1 api.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", dir);
	harness_write_file(path, verifier);
	/* The token cache off: every request of B is introspected. */
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", \"hosts_file\": \"%s\", "
	    "\"follower\": \"release-slow\", \"token_cache_seconds\": 0}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	job_and_channel("slow", job_a, sizeof(job_a), chan_a, sizeof(chan_a));
	job_and_channel("plain", job_b, sizeof(job_b), chan_b, sizeof(chan_b));
}

/* Both daemons stop cleanly whatever waited (ASan's leak check is in
 * their exit status). */
static void
teardown(void)
{
	if (proxy.pid > 0)
		ck_assert_int_eq(daemon_stop(&proxy), 0);
	if (broker.pid > 0)
		ck_assert_int_eq(daemon_stop(&broker), 0);
	upstream_stop(up);
	hung_issuer_stop(&hung);
}

/* Mints x.read on chan's broker.cordon: the token, malloc'd. */
static char *
mint(const char *chan)
{
	static const char body[] =
	    "{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}";
	char req[512], *resp, *tok, *end;
	int fd = unix_connect(chan);

	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "POST http://broker.cordon/v1/token HTTP/1.1\r\nHost: "
	    "broker.cordon\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
	    strlen(body), body);
	resp = http_exchange(fd, req, strlen(req), 10000);
	close(fd);
	ck_assert_msg(http_status(resp) == 200, "mint: %.400s", resp);
	tok = strstr(resp, "crd_");
	ck_assert_ptr_nonnull(tok);
	end = strchr(tok, '"');
	ck_assert_ptr_nonnull(end);
	*end = '\0';
	tok = strdup(tok);
	free(resp);
	return tok;
}

/* Sends one request with tok on a new connection of chan, not waiting
 * for its answer: the socket. */
static int
send_get(const char *chan, const char *tok, const char *what)
{
	char req[1024];
	int fd = unix_connect(chan), n;

	ck_assert_int_ge(fd, 0);
	n = snprintf(req, sizeof(req),
	    "GET http://api.test:%u/%s HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
	    upstream_port(up), what, upstream_port(up), tok);
	ck_assert_int_lt(n, (int)sizeof(req));
	ck_assert_int_eq(write(fd, req, (size_t)n), n);
	return fd;
}

/* A metric's value (labels included in name) on d, or -1 when absent. */
static long long
metric(const struct daemon *d, const char *name)
{
	struct httpc_answer a;
	long long v = -1;
	size_t n = strlen(name);

	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(httpc_request(d->base, "GET", "/metrics", NULL, NULL,
			     NULL, 5000, &a),
	    0);
	ck_assert_int_eq(a.status, 200);
	const char *p = buf_str(&a.body);
	while (p != NULL && *p != '\0') {
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			v = strtoll(p + n + 1, NULL, 10);
		p = strchr(p, '\n');
		p = p != NULL ? p + 1 : NULL;
	}
	httpc_answer_free(&a);
	return v;
}

static long long
waiting(void)
{
	return metric(&broker, "cordon_broker_issuer_releases_waiting");
}

/* Waits (up to 15 s) until at least n releases wait at the broker. */
static void
wait_waiting(long long n)
{
	for (int i = 0; i < 300 && waiting() < n; i++)
		usleep(50000);
	ck_assert_msg(waiting() >= n,
	    "%lld releases wait at the broker, want %lld", waiting(), n);
}

/* As each of B's answers comes (tagged 1), the broker's gauge of waiting
 * releases is read. */
static void
note_waiting(struct hung_pending *p)
{
	if (p->tag)
		p->seen = waiting();
}

/* Whether resp carries this error code (its body's "error" or the
 * X-Cordon-Error line, or the message naming it). */
static bool
says(const char *resp, const char *code)
{
	return resp != NULL && strstr(resp, code) != NULL;
}

START_TEST(a_job_whose_issuer_hangs_holds_no_other_jobs_introspection)
{
	enum { NA = JOB_RELEASES + JOB_WAITING + 4, NB = 3, N = NA + NB };
	struct hung_pending p[N];
	char *tok_a = mint(chan_a), *tok_b = mint(chan_b);
	size_t i, first_timed_out = N, busy = 0, timed_out = 0;

	/* A asks for its injected host many times at once: its release
	 * waits at the broker for the issuer, which never answers. */
	for (i = 0; i < NA; i++)
		hung_pending_init(&p[i], send_get(chan_a, tok_a, "a"), 0);
	wait_waiting(1);

	/* Now B's requests, each introspected. */
	for (i = NA; i < N; i++)
		hung_pending_init(&p[i], send_get(chan_b, tok_b, "b"), 1);
	ck_assert_uint_eq(hung_collect(p, N, 30000, note_waiting), N);

	for (i = 0; i < NA; i++) {
		ck_assert_msg(http_status(p[i].resp) == 503,
		    "A's request %zu: %.400s", i, p[i].resp);
		if (says(p[i].resp, "issuer_unavailable")) {
			timed_out++;
			if (first_timed_out == N ||
			    p[i].order < p[first_timed_out].order)
				first_timed_out = i;
		} else {
			ck_assert_msg(says(p[i].resp, "releases_busy"),
			    "A's request %zu: %.400s", i, p[i].resp);
			busy++;
		}
	}
	printf("B's requests answered after");
	for (i = NA; i < N; i++)
		printf(" %.1f ms (%lld releases waiting)", p[i].answered_ms,
		    p[i].seen);
	printf("; A's first release timed out after %.1f ms; %zu of A's %d "
	       "refused at the proxy at once, %zu timed out; %u issuer "
	       "calls\n",
	    first_timed_out < N ? p[first_timed_out].answered_ms : -1.0, busy,
	    NA, timed_out, atomic_load(&hung.accepted));
	fflush(stdout);
	ck_assert_uint_gt(timed_out, 0);
	for (i = NA; i < N; i++) {
		ck_assert_msg(http_status(p[i].resp) == 200, "B's %zu: %.400s",
		    i - NA, p[i].resp);
		ck_assert_msg(strstr(p[i].resp, "\"target\"") != NULL &&
			strstr(p[i].resp, "/b") != NULL,
		    "not the upstream's answer: %.400s", p[i].resp);
		ck_assert_msg(p[i].order < p[first_timed_out].order,
		    "B's request %zu answered after A's release timed out "
		    "(%.1f ms)",
		    i - NA, p[i].answered_ms);
		ck_assert_msg(p[i].seen > 0,
		    "B's request %zu answered with no release waiting at the "
		    "broker (%.1f ms)",
		    i - NA, p[i].answered_ms);
	}
	/* One release of A's secret in flight, which every request of A
	 * waits for: none past the job's caps at the proxy. */
	ck_assert_uint_eq(busy, 0);
	ck_assert_int_eq(metric(&proxy, "cordon_proxy_releases_refused_total"),
	    (long long)busy);
	hung_pending_free(p, N);
	free(tok_a);
	free(tok_b);
}
END_TEST

START_TEST(a_broker_stopping_reaches_the_job_as_503)
{
	struct hung_pending p[1];
	char *tok = mint(chan_a);

	hung_pending_init(&p[0], send_get(chan_a, tok, "a"), 0);
	wait_waiting(1);
	ck_assert_int_eq(daemon_stop(&broker), 0);
	ck_assert_uint_eq(hung_collect(p, 1, 10000, note_waiting), 1);
	printf("a release waiting at a stopping broker: %.300s\n", p[0].resp);
	fflush(stdout);
	ck_assert_msg(http_status(p[0].resp) == 503, "%.400s", p[0].resp);
	ck_assert_msg(says(p[0].resp, "broker_stopping"), "%.400s", p[0].resp);
	hung_pending_free(p, 1);
	free(tok);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("release_slow");
	TCase *tc = tcase_create("release_slow");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc,
	    a_job_whose_issuer_hangs_holds_no_other_jobs_introspection);
	tcase_add_test(tc, a_broker_stopping_reaches_the_job_as_503);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
