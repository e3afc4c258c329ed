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
#include <time.h>
#include <unistd.h>

/* The broker's HTTP threads (broker/broker.h's BROKER_THREADS). */
#define HTTP_THREADS 4
/* The caps of broker/issuers.h: a job's waiting releases, and all. */
#define JOB_WAITERS 16
#define ALL_WAITERS 128
#define MAX_FDS 512

/* --- an issuer that accepts and never answers (hungissuer.c) ----------- */

static struct hung_issuer hung = { .lfd = -1 };

/* --- the broker ---------------------------------------------------------- */

static struct daemon broker;
static char admin[128], launcher[128], verifier[128];

/* A manifest name whose rule injects secret. */
static void
put_manifest(const char *name, const char *secret)
{
	char path[200];

	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(harness_expect(&broker, 200, "PUT", path, admin, NULL,
	    json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}]}",
		"name", name, "command", "/bin/true", "capabilities", "name",
		"x.read", "audience", "api", "params", "t", "1", "ttl_seconds",
		600, "reason", "read x", "egress", "host", "api.test", "port",
		443, "methods", "GET", "reason", "the api", "allow_cidrs",
		"127.0.0.0/8", "audience", "api", "inject", "secret", secret,
		"header", "Authorization", "format", "Bearer {secret}",
		"capability", "x.read")));
}

static void
setup(void)
{
	char url[128], rev[128];

	signal(SIGPIPE, SIG_IGN);
	hung_issuer_start(&hung);
	ck_assert_int_eq(daemon_start(&broker, "broker",
			     "{\"log_level\": \"info\"}"),
	    0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/oauth/token",
	    hung.port);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/secrets/slow-api",
	    admin, NULL,
	    json_pack("{s:s, s:s, s:s, s:s}", "kind",
		"oauth_client_credentials", "token_url", url, "client_id",
		"cordon-test", "client_secret", "s3cret-client")));
	put_manifest("slow", "slow-api");
	/* Tokens at once, revocations never answered. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/fast/token", hung.port);
	snprintf(rev, sizeof(rev), "http://127.0.0.1:%u/oauth/revoke",
	    hung.port);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/secrets/slow-rev",
	    admin, NULL,
	    json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind",
		"oauth_client_credentials", "token_url", url, "client_id",
		"cordon-test", "client_secret", "s3cret-client",
		"revocation_url", rev)));
	put_manifest("slowrev", "slow-rev");
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

/* A new job of manifest m: its id in job. */
static void
new_job_of(const char *m, char *job, size_t len)
{
	json_t *j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher,
	    NULL, json_pack("{s:s}", "manifest", m));

	snprintf(job, len, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
}

static void
new_job(char *job, size_t len)
{
	new_job_of("slow", job, len);
}

/* A token of job's x.read, minted as its proxy would: malloc'd. */
static char *
mint_for(const char *job)
{
	char hdr[128];
	json_t *j;
	char *tok;

	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", job);
	j = harness_expect(&broker, 200, "POST", "/v1/token", verifier, hdr,
	    json_pack("{s:s, s:{s:s}}", "capability", "x.read", "params", "t",
		"1"));
	tok = strdup(json_string_value(json_object_get(j, "access_token")));
	json_decref(j);
	return tok;
}

/* Sends one request to the broker on a new connection, not waiting for
 * its answer: the connected socket. */
static int
send_req(const char *method, const char *path, const char *key,
    const char *header, const char *body)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	const char *colon = strrchr(broker.addr, ':');
	char req[2048];
	int fd, n;

	ck_assert_ptr_nonnull(colon);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)strtoul(colon + 1, NULL, 10));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	n = snprintf(req, sizeof(req),
	    "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
	    "%s%sConnection: close\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s",
	    method, path, broker.addr, key, header != NULL ? header : "",
	    header != NULL ? "\r\n" : "", body != NULL ? strlen(body) : 0,
	    body != NULL ? body : "");
	ck_assert_int_lt(n, (int)sizeof(req));
	ck_assert_int_eq(write(fd, req, (size_t)n), n);
	return fd;
}

static int
send_release(const char *job)
{
	char path[200];

	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/slow-api/release",
	    job);
	return send_req("POST", path, verifier, NULL, NULL);
}

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

/* One request sent and, once read, its answer and when it came. */
struct pending {
	int fd;
	double sent, answered_ms; /* answered_ms: since sent */
	int order; /* the how-manieth answer; -1 until it came */
	char *resp;
};

/* Reads the answers of p[0..n) in the order they come, for at most
 * limit_ms in all: how many came. */
static size_t
collect(struct pending *p, size_t n, int limit_ms)
{
	double t0 = now_ms();
	size_t got = 0;
	struct pollfd pf[MAX_FDS];

	ck_assert_uint_le(n, MAX_FDS);
	while (got < n && now_ms() - t0 < limit_ms) {
		for (size_t i = 0; i < n; i++)
			pf[i] = (struct pollfd){ .fd = p[i].order < 0 ? p[i].fd
								      : -1,
				.events = POLLIN };
		if (poll(pf, n, 200) <= 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (pf[i].fd < 0 || pf[i].revents == 0)
				continue;
			p[i].answered_ms = now_ms() - p[i].sent;
			p[i].resp = http_exchange(p[i].fd, "", 0, 5000);
			ck_assert_ptr_nonnull(p[i].resp);
			p[i].order = (int)got++;
			close(p[i].fd);
			p[i].fd = -1;
		}
	}
	return got;
}

static void
pending_init(struct pending *p, int fd)
{
	*p = (struct pending){ .fd = fd, .sent = now_ms(), .order = -1 };
}

/*
 * Sends a release for each of jobs[0..n) in turn, giving each up to
 * 500 ms to reach the issuer, so that they spread over whatever makes the
 * calls (on today's tree, one HTTP thread takes the next connection only
 * once it is free), then waits until the issuer holds HTTP_THREADS calls.
 */
static void
send_stuck(struct pending *p, char (*jobs)[64], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned before = atomic_load(&hung.accepted);

		pending_init(&p[i], send_release(jobs[i]));
		if (before < HTTP_THREADS)
			hung_issuer_wait_accepted(&hung, before, 500);
	}
	hung_issuer_wait_open(&hung, HTTP_THREADS);
}

static void
pending_free(struct pending *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i].fd >= 0)
			close(p[i].fd);
		free(p[i].resp);
	}
}

/* The answer's JSON body: a new reference, asserted to parse. */
static json_t *
body_of(const char *resp)
{
	const char *b = strstr(resp, "\r\n\r\n");
	json_t *j;

	ck_assert_msg(b != NULL, "no answer: '%.300s'", resp);
	j = json_loads(b + 4, 0, NULL);
	ck_assert_msg(j != NULL, "not JSON: '%.300s'", resp);
	return j;
}

/* Asserts resp is 503 with error code and a Retry-After. */
static void
assert_503(const char *resp, const char *code)
{
	json_t *j = body_of(resp);

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
	struct pending p[NALL];
	char *tok_a, *tok_c, hdr[128];
	size_t i, first_release = NALL;
	json_t *j;

	new_job(ja, sizeof(ja));
	new_job(jb, sizeof(jb));
	new_job(jc, sizeof(jc));
	tok_a = mint_for(ja);
	tok_c = mint_for(jc);
	for (i = 0; i < STUCK_JOBS; i++)
		new_job(stuck[i], sizeof(stuck[i]));

	/* More releases stuck at the issuer than the broker has threads;
	 * the first job's three are one call. */
	for (i = 0; i < NREL; i++)
		memcpy(rel[i], stuck[i < STUCK_JOBS ? i : 0], sizeof(rel[i]));
	send_stuck(p, rel, NREL);

	/* Now a mint, an introspection and a revoke, at once. */
	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", jb);
	pending_init(&p[NREL],
	    send_req("POST", "/v1/token", verifier, hdr,
		"{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}"));
	snprintf(body, sizeof(body), "{\"token\":\"%s\"}", tok_a);
	pending_init(&p[NREL + 1],
	    send_req("POST", "/v1/introspect", verifier, NULL, body));
	snprintf(body, sizeof(body), "/v1/jobs/%s/revoke", jc);
	pending_init(&p[NREL + 2],
	    send_req("POST", body, launcher, NULL, "{\"reason\":\"done\"}"));

	ck_assert_uint_eq(collect(p, NALL, 30000), NALL);
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
	j = body_of(p[NREL].resp);
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(j, "access_token")),
		"crd_"));
	json_decref(j);
	ck_assert_msg(http_status(p[NREL + 1].resp) == 200, "%.400s",
	    p[NREL + 1].resp);
	j = body_of(p[NREL + 1].resp);
	ck_assert(json_is_true(json_object_get(j, "active")));
	json_decref(j);
	ck_assert_msg(http_status(p[NREL + 2].resp) == 200, "%.400s",
	    p[NREL + 2].resp);
	j = body_of(p[NREL + 2].resp);
	ck_assert_str_eq(json_string_value(json_object_get(j, "job")), jc);
	json_decref(j);
	ck_assert(!harness_token_active(&broker, verifier, tok_c));

	/* Each stuck release ended, once its deadline passed, with the
	 * documented error; one job's three made one call. */
	for (i = 0; i < NREL; i++)
		assert_503(p[i].resp, "issuer_unavailable");
	ck_assert_uint_le(atomic_load(&hung.accepted), STUCK_JOBS);
	pending_free(p, NALL);
	free(tok_a);
	free(tok_c);
}
END_TEST

/* Whether p's answer is there to be read now. */
static bool
answered_now(const struct pending *p, int wait_ms)
{
	struct pollfd pf = { .fd = p->fd, .events = POLLIN };

	return poll(&pf, 1, wait_ms) > 0;
}

START_TEST(revokes_at_a_hung_revocation_endpoint_leave_threads)
{
	enum { NREV = HTTP_THREADS + 2, NALL = NREV + 2 };
	char rj[NREV][64], ja[64], jb[64], path[200], hdr[128], body[512];
	struct pending p[NALL];
	bool early[NREV];
	size_t i, nearly = 0, first_late = NALL;
	char *tok_a;
	json_t *j;

	new_job(ja, sizeof(ja));
	new_job(jb, sizeof(jb));
	tok_a = mint_for(ja);
	/* Jobs that each hold a credential whose revocation hangs. */
	for (i = 0; i < NREV; i++) {
		new_job_of("slowrev", rj[i], sizeof(rj[i]));
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

		snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", rj[i]);
		pending_init(&p[i],
		    send_req("POST", path, launcher, NULL,
			"{\"reason\":\"done\"}"));
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
	pending_init(&p[NREV],
	    send_req("POST", "/v1/token", verifier, hdr,
		"{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}"));
	snprintf(body, sizeof(body), "{\"token\":\"%s\"}", tok_a);
	pending_init(&p[NREV + 1],
	    send_req("POST", "/v1/introspect", verifier, NULL, body));
	ck_assert_uint_eq(collect(p, NALL, 30000), NALL);
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
	j = body_of(p[NREV + 1].resp);
	ck_assert(json_is_true(json_object_get(j, "active")));
	json_decref(j);

	/* Every revoke answered, its credential told pending (retried by
	 * the broker's background revocations), never lost. */
	for (i = 0; i < NREV; i++) {
		json_t *up, *e;

		ck_assert_msg(http_status(p[i].resp) == 200, "%.400s",
		    p[i].resp);
		j = body_of(p[i].resp);
		up = json_object_get(j, "upstream");
		ck_assert_uint_eq(json_array_size(up), 1);
		e = json_array_get(up, 0);
		ck_assert(json_is_false(json_object_get(e, "ok")));
		ck_assert_msg(json_is_true(json_object_get(e, "pending")),
		    "%.400s", p[i].resp);
		json_decref(j);
	}
	pending_free(p, NALL);
	free(tok_a);
}
END_TEST

START_TEST(past_the_caps_issuer_busy_at_once)
{
	/* One job past its own cap, then jobs that fill the broker's. */
	enum { OVER = 4, FILLERS = ALL_WAITERS / JOB_WAITERS };
	enum { NJOB = JOB_WAITERS + OVER, N = NJOB + FILLERS * JOB_WAITERS };
	char j0[64], fill[FILLERS][64];
	struct pending p[N];
	size_t i, busy = 0, busy_j0 = 0;

	new_job(j0, sizeof(j0));
	for (i = 0; i < FILLERS; i++)
		new_job(fill[i], sizeof(fill[i]));
	for (i = 0; i < NJOB; i++)
		pending_init(&p[i], send_release(j0));
	/* The job's own refusals first: the fillers then meet the broker's
	 * cap, which the first job's waiting releases count toward. */
	for (i = NJOB; i < N; i++)
		pending_init(&p[i],
		    send_release(fill[(i - NJOB) / JOB_WAITERS]));
	ck_assert_uint_eq(collect(p, N, 30000), N);
	for (i = 0; i < N; i++) {
		json_t *j = body_of(p[i].resp);
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
	pending_free(p, N);
}
END_TEST

START_TEST(stopped_with_releases_waiting_answers_each)
{
	enum { N = HTTP_THREADS + 2 };
	struct pending p[N];
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
	ck_assert_uint_eq(collect(p, N, 10000), N);
	for (i = 0; i < N; i++)
		assert_503(p[i].resp, "broker_stopping");
	pending_free(p, N);
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
