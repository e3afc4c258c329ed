/*
 * An issuer that hangs never holds the broker's HTTP threads (issue 18).
 * The issuer here is a listener of the test's on 127.0.0.1 (plain HTTP,
 * which issuers.c allows to loopback) that accepts and never answers,
 * counting the calls it holds. While more releases of its credential are
 * stuck than the broker has HTTP threads (broker/broker.h's
 * BROKER_THREADS), a mint, an introspection and a job's revoke at the
 * same broker each answer, and correctly, before any stuck release does
 * (the latencies printed, not asserted); the stuck ones then end with
 * 503 issuer_unavailable and Retry-After once their deadline passed, and
 * one job's releases of one secret made one call to the issuer. Past the
 * caps (a job's waiting releases, the broker's), a release is answered
 * 503 issuer_busy with Retry-After at once, counted in /metrics. Jobs
 * whose credentials' revocation endpoint hangs (the issuer gives tokens
 * at once): their revokes at once, more than the broker's threads, leave
 * a mint and an introspection answered before any revoke stuck there,
 * and each revoke lists its credential pending. A broker stopped with
 * releases waiting answers each 503 broker_stopping and exits 0.
 */
#include "harness.h"
#include "hungissuer.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The broker's HTTP threads (broker/broker.h's BROKER_THREADS). */
#define HTTP_THREADS 4
/* The caps of broker/issuers.h: a job's waiting releases, and all. */
#define JOB_WAITERS 16
#define ALL_WAITERS 128

/* --- an issuer that accepts and never answers (hungissuer.c) ----------- */

static struct hung_issuer hung = { .lfd = -1 };

/* --- the broker ---------------------------------------------------------- */

static struct daemon broker;
static char admin[128], launcher[128], verifier[128];

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	hung_issuer_start(&hung);
	hung_broker_start(&broker, admin, launcher, verifier, sizeof(admin));
	hung_issuer_secret(&hung, &broker, admin, "slow-api", "oauth/token",
	    false);
	hung_manifest(&broker, admin, "slow", "slow-api", 443);
	/* Tokens at once, revocations never answered. */
	hung_issuer_secret(&hung, &broker, admin, "slow-rev", "fast/token",
	    true);
	hung_manifest(&broker, admin, "slowrev", "slow-rev", 443);
}

/* The broker stops cleanly whatever waited (ASan's leak check is in
 * its exit status). */
static void
teardown(void)
{
	if (broker.pid > 0)
		ck_assert_int_eq(daemon_stop(&broker), 0);
	hung_issuer_stop(&hung);
}

static void
new_job(char *job, size_t len)
{
	hung_new_job(&broker, launcher, "slow", job, len);
}

static int
send_release(const char *job)
{
	char path[200];

	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/slow-api/release",
	    job);
	return hung_send(&broker, "POST", path, verifier, NULL, NULL);
}

/*
 * Sends a release for each of jobs[0..n) in turn, giving each up to
 * 500 ms to reach the issuer, so that they spread over whatever makes the
 * calls (on today's tree, one HTTP thread takes the next connection only
 * once it is free), then waits until the issuer holds HTTP_THREADS calls.
 */
static void
send_stuck(struct hung_pending *p, char (*jobs)[64], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned before = atomic_load(&hung.accepted);

		hung_pending_init(&p[i], send_release(jobs[i]), 0);
		if (before < HTTP_THREADS)
			hung_issuer_wait_accepted(&hung, before, 500);
	}
	hung_issuer_wait_open(&hung, HTTP_THREADS);
}

/* Asserts resp is 503 with error code and a Retry-After. */
static void
assert_503(const char *resp, const char *code)
{
	json_t *j = hung_body_of(resp);

	ck_assert_msg(http_status(resp) == 503, "%.400s", resp);
	ck_assert_msg(strcasestr(resp, "\r\nRetry-After: ") != NULL,
	    "no Retry-After: %.400s", resp);
	ck_assert_str_eq(json_string_value(json_object_get(j, "error")), code);
	json_decref(j);
}

/* The value of the metric line that starts with name (labels included)
 * on the broker, or -1. */
static long long
metric(const char *name)
{
	char cmd[256], line[512];
	long long v = -1;
	size_t n = strlen(name);
	FILE *f;

	snprintf(cmd, sizeof(cmd), "curl -s -m 10 %s/metrics", broker.base);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, name, n) == 0 && line[n] == ' ')
			v = strtoll(line + n + 1, NULL, 10);
	pclose(f);
	return v;
}

START_TEST(stuck_releases_hold_no_thread_mint_introspect_revoke_answer)
{
	enum { STUCK_JOBS = HTTP_THREADS + 2, EXTRA = 2 };
	enum { NREL = STUCK_JOBS + EXTRA, NALL = NREL + 3 };
	char stuck[STUCK_JOBS][64], rel[NREL][64], ja[64], jb[64], jc[64],
	    body[512];
	struct hung_pending p[NALL];
	char *tok_a, *tok_c, hdr[128];
	size_t i, first_release = NALL;
	json_t *j;

	new_job(ja, sizeof(ja));
	new_job(jb, sizeof(jb));
	new_job(jc, sizeof(jc));
	tok_a = hung_mint(&broker, verifier, ja);
	tok_c = hung_mint(&broker, verifier, jc);
	for (i = 0; i < STUCK_JOBS; i++)
		new_job(stuck[i], sizeof(stuck[i]));

	/* More releases stuck at the issuer than the broker has threads;
	 * the first job's three are one call. */
	for (i = 0; i < NREL; i++)
		memcpy(rel[i], stuck[i < STUCK_JOBS ? i : 0], sizeof(rel[i]));
	send_stuck(p, rel, NREL);

	/* Now a mint, an introspection and a revoke, at once. */
	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", jb);
	hung_pending_init(&p[NREL],
	    hung_send(&broker, "POST", "/v1/token", verifier, hdr,
		"{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}"),
	    0);
	snprintf(body, sizeof(body), "{\"token\":\"%s\"}", tok_a);
	hung_pending_init(&p[NREL + 1],
	    hung_send(&broker, "POST", "/v1/introspect", verifier, NULL, body),
	    0);
	hung_pending_init(&p[NREL + 2], hung_send_revoke(&broker, launcher, jc),
	    0);

	ck_assert_uint_eq(hung_collect(p, NALL, 30000, NULL), NALL);
	for (i = 0; i < NREL; i++)
		if (first_release == NALL ||
		    p[i].order < p[first_release].order)
			first_release = i;
	printf("mint %.1f ms, introspection %.1f ms, revoke %.1f ms; the "
	       "first stuck release answered after %.1f ms; issuer calls "
	       "%u\n",
	    p[NREL].answered_ms, p[NREL + 1].answered_ms,
	    p[NREL + 2].answered_ms, p[first_release].answered_ms,
	    atomic_load(&hung.accepted));
	for (i = NREL; i < NALL; i++)
		ck_assert_msg(p[i].order < p[first_release].order,
		    "check %zu answered after a stuck release (%.1f ms): "
		    "%.300s",
		    i - NREL, p[i].answered_ms, p[i].resp);

	ck_assert_msg(http_status(p[NREL].resp) == 200, "%.400s", p[NREL].resp);
	j = hung_body_of(p[NREL].resp);
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(j, "access_token")),
		"crd_"));
	json_decref(j);
	ck_assert_msg(http_status(p[NREL + 1].resp) == 200, "%.400s",
	    p[NREL + 1].resp);
	j = hung_body_of(p[NREL + 1].resp);
	ck_assert(json_is_true(json_object_get(j, "active")));
	json_decref(j);
	ck_assert_msg(http_status(p[NREL + 2].resp) == 200, "%.400s",
	    p[NREL + 2].resp);
	j = hung_body_of(p[NREL + 2].resp);
	ck_assert_str_eq(json_string_value(json_object_get(j, "job")), jc);
	json_decref(j);
	ck_assert(!harness_token_active(&broker, verifier, tok_c));

	/* Each stuck release ended, once its deadline passed, with the
	 * documented error; one job's three made one call. */
	for (i = 0; i < NREL; i++)
		assert_503(p[i].resp, "issuer_unavailable");
	ck_assert_uint_le(atomic_load(&hung.accepted), STUCK_JOBS);
	hung_pending_free(p, NALL);
	free(tok_a);
	free(tok_c);
}
END_TEST

/* Whether p's answer is there to be read now. */
static bool
answered_now(const struct hung_pending *p, int wait_ms)
{
	struct pollfd pf = { .fd = p->fd, .events = POLLIN };

	return poll(&pf, 1, wait_ms) > 0;
}

START_TEST(revokes_at_a_hung_revocation_endpoint_leave_threads)
{
	enum { NREV = HTTP_THREADS + 2, NALL = NREV + 2 };
	char rj[NREV][64], ja[64], jb[64], path[200], hdr[128], body[512];
	struct hung_pending p[NALL];
	bool early[NREV];
	size_t i, nearly = 0, first_late = NALL;
	char *tok_a;
	json_t *j;

	new_job(ja, sizeof(ja));
	new_job(jb, sizeof(jb));
	tok_a = hung_mint(&broker, verifier, ja);
	/* Jobs that each hold a credential whose revocation hangs. */
	for (i = 0; i < NREV; i++) {
		hung_new_job(&broker, launcher, "slowrev", rj[i],
		    sizeof(rj[i]));
		snprintf(path, sizeof(path),
		    "/v1/jobs/%s/secrets/slow-rev/release", rj[i]);
		j = harness_expect(&broker, 200, "POST", path, verifier, NULL,
		    NULL);
		ck_assert_str_eq(json_string_value(json_object_get(j, "value")),
		    "tok-fast-0123456789");
		json_decref(j);
	}
	/* Their revokes one at a time: each reaches the revocation
	 * endpoint, or is answered, or (all threads taken) is given 300 ms,
	 * all well within the 2 s a call to the endpoint waits. */
	for (i = 0; i < NREV; i++) {
		unsigned before = atomic_load(&hung.revokes);

		hung_pending_init(&p[i],
		    hung_send_revoke(&broker, launcher, rj[i]), 0);
		for (int k = 0;
		     k < 30 && atomic_load(&hung.revokes) == before &&
		     !answered_now(&p[i], 10);
		     k++)
			;
	}
	for (i = 0; i < NREV; i++)
		nearly += early[i] = answered_now(&p[i], 0);

	/* A mint and an introspection, at once. */
	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", jb);
	hung_pending_init(&p[NREV],
	    hung_send(&broker, "POST", "/v1/token", verifier, hdr,
		"{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}"),
	    0);
	snprintf(body, sizeof(body), "{\"token\":\"%s\"}", tok_a);
	hung_pending_init(&p[NREV + 1],
	    hung_send(&broker, "POST", "/v1/introspect", verifier, NULL, body),
	    0);
	ck_assert_uint_eq(hung_collect(p, NALL, 30000, NULL), NALL);
	for (i = 0; i < NREV; i++)
		if (!early[i] &&
		    (first_late == NALL || p[i].order < p[first_late].order))
			first_late = i;
	printf("mint %.1f ms, introspection %.1f ms; %zu of %d revokes "
	       "answered before them, the first other after %.1f ms; %u "
	       "revocation calls\n",
	    p[NREV].answered_ms, p[NREV + 1].answered_ms, nearly, NREV,
	    first_late < NALL ? p[first_late].answered_ms : -1.0,
	    atomic_load(&hung.revokes));
	for (i = NREV; i < NALL && first_late < NALL; i++)
		ck_assert_msg(p[i].order < p[first_late].order,
		    "check %zu answered after a revoke stuck at its issuer "
		    "(%.1f ms): %.300s",
		    i - NREV, p[i].answered_ms, p[i].resp);
	ck_assert_msg(http_status(p[NREV].resp) == 200, "%.400s", p[NREV].resp);
	ck_assert_msg(http_status(p[NREV + 1].resp) == 200, "%.400s",
	    p[NREV + 1].resp);
	j = hung_body_of(p[NREV + 1].resp);
	ck_assert(json_is_true(json_object_get(j, "active")));
	json_decref(j);

	/* Every revoke answered, its credential told pending (retried by
	 * the broker's background revocations), never lost. */
	for (i = 0; i < NREV; i++) {
		json_t *up, *e;

		ck_assert_msg(http_status(p[i].resp) == 200, "%.400s",
		    p[i].resp);
		j = hung_body_of(p[i].resp);
		up = json_object_get(j, "upstream");
		ck_assert_uint_eq(json_array_size(up), 1);
		e = json_array_get(up, 0);
		ck_assert(json_is_false(json_object_get(e, "ok")));
		ck_assert_msg(json_is_true(json_object_get(e, "pending")),
		    "%.400s", p[i].resp);
		json_decref(j);
	}
	hung_pending_free(p, NALL);
	free(tok_a);
}
END_TEST

START_TEST(past_the_caps_issuer_busy_at_once)
{
	/* One job past its own cap, then jobs that fill the broker's. */
	enum { OVER = 4, FILLERS = ALL_WAITERS / JOB_WAITERS };
	enum { NJOB = JOB_WAITERS + OVER, N = NJOB + FILLERS * JOB_WAITERS };
	char j0[64], fill[FILLERS][64];
	struct hung_pending p[N];
	size_t i, busy = 0, busy_j0 = 0;

	new_job(j0, sizeof(j0));
	for (i = 0; i < FILLERS; i++)
		new_job(fill[i], sizeof(fill[i]));
	for (i = 0; i < NJOB; i++)
		hung_pending_init(&p[i], send_release(j0), 0);
	/* The job's own refusals first: the fillers then meet the broker's
	 * cap, which the first job's waiting releases count toward. */
	for (i = NJOB; i < N; i++)
		hung_pending_init(&p[i],
		    send_release(fill[(i - NJOB) / JOB_WAITERS]), 0);
	ck_assert_uint_eq(hung_collect(p, N, 30000, NULL), N);
	for (i = 0; i < N; i++) {
		json_t *j = hung_body_of(p[i].resp);
		const char *e = json_string_value(json_object_get(j, "error"));

		ck_assert_msg(e != NULL, "%.300s", p[i].resp);
		if (strcmp(e, "issuer_busy") == 0) {
			assert_503(p[i].resp, "issuer_busy");
			busy++;
			busy_j0 += i < NJOB;
		} else
			assert_503(p[i].resp, "issuer_unavailable");
		json_decref(j);
	}
	printf("%zu of %d releases answered issuer_busy (%zu of the first "
	       "job's %d)\n",
	    busy, N, busy_j0, NJOB);
	ck_assert_uint_eq(busy_j0, OVER);
	/* The first job's 16 and the fillers' 128 are 16 over the 128. */
	ck_assert_uint_eq(busy, OVER + JOB_WAITERS);
	ck_assert_int_eq(metric("cordon_broker_issuer_releases_refused_total"),
	    (long long)busy);
	ck_assert_int_eq(metric("cordon_broker_issuer_releases_waiting"), 0);
	hung_pending_free(p, N);
}
END_TEST

START_TEST(stopped_with_releases_waiting_answers_each)
{
	enum { N = HTTP_THREADS + 2 };
	struct hung_pending p[N];
	char job[N][64];
	size_t i;

	for (i = 0; i < N; i++)
		new_job(job[i], sizeof(job[i]));
	send_stuck(p, job, N);
	/* Every release deferred at the broker before it stops: one still on
	 * its way in (not yet read by a handler) is closed unanswered by a
	 * stopping server, which is no release left waiting. */
	for (int t = 0; t < 200 &&
	     metric("cordon_broker_issuer_releases_waiting") < (long long)N;
	     t++)
		usleep(50 * 1000);
	ck_assert_int_eq(metric("cordon_broker_issuer_releases_waiting"), N);
	ck_assert_int_eq(daemon_stop(&broker), 0);
	ck_assert_uint_eq(hung_collect(p, N, 10000, NULL), N);
	for (i = 0; i < N; i++)
		assert_503(p[i].resp, "broker_stopping");
	hung_pending_free(p, N);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("issuer_slow");
	TCase *tc = tcase_create("issuer_slow");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
	    stuck_releases_hold_no_thread_mint_introspect_revoke_answer);
	tcase_add_test(tc, revokes_at_a_hung_revocation_endpoint_leave_threads);
	tcase_add_test(tc, past_the_caps_issuer_busy_at_once);
	tcase_add_test(tc, stopped_with_releases_waiting_answers_each);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
