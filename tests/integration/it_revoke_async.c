/*
 * A job's revoke holds no broker HTTP thread on an issuer (issue 18).
 * Jobs each hold a credential of an issuer whose revocation endpoint
 * accepts and never answers (hungissuer.c: tokens at once). Their
 * revokes, all at once and more than the broker's HTTP threads, each wait
 * for their revocation at the issuer (tried by the issuers' own workers,
 * never "not tried here"), while another client's cheap requests (GET
 * /healthz, an introspection of a live job's token) are answered before
 * any revoke is; then every revoke answers 200, its credential listed
 * ok false and pending (retried in the background), the issuer having
 * been asked once for each. Orders and answers are asserted, never
 * timings (printed). A revoke at a hung revocation endpoint with a
 * follower told of it that never acknowledges lists the credential
 * pending and the follower gone. A broker stopped with revokes waiting
 * answers each and exits 0. No jobs are spawned: no uid range is used.
 */
#include "harness.h"
#include "hungissuer.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The broker's HTTP threads (broker/broker.h's BROKER_THREADS). */
#define HTTP_THREADS 4
/* Revokes at once: more than the HTTP threads, at most twice the
 * issuers' revoke workers (4), so that each is tried within its 3 s. */
#define NREV (HTTP_THREADS + 2)
#define NALL (NREV + 2)

static struct hung_issuer hung = { .lfd = -1 };
static struct daemon broker;
static char admin[128], launcher[128], verifier[128];

static void
setup(void)
{
	char url[128], rev[128], path[200];

	signal(SIGPIPE, SIG_IGN);
	hung_issuer_start(&hung);
	ck_assert_int_eq(daemon_start(&broker, "broker",
			     "{\"log_level\": \"info\"}"),
	    0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/fast/token", hung.port);
	snprintf(rev, sizeof(rev), "http://127.0.0.1:%u/oauth/revoke",
	    hung.port);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/secrets/slow-rev",
	    admin, NULL,
	    json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind",
		"oauth_client_credentials", "token_url", url, "client_id",
		"cordon-test", "client_secret", "s3cret-client",
		"revocation_url", rev)));
	snprintf(path, sizeof(path), "/v1/manifests/slowrev");
	json_decref(harness_expect(&broker, 200, "PUT", path, admin, NULL,
	    json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}]}",
		"name", "slowrev", "command", "/bin/true", "capabilities",
		"name", "x.read", "audience", "api", "params", "t", "1",
		"ttl_seconds", 600, "reason", "read x", "egress", "host",
		"api.test", "port", 443, "methods", "GET", "reason", "the api",
		"allow_cidrs", "127.0.0.0/8", "audience", "api", "inject",
		"secret", "slow-rev", "header", "Authorization", "format",
		"Bearer {secret}", "capability", "x.read")));
}

static void
teardown(void)
{
	if (broker.pid > 0)
		ck_assert_int_eq(daemon_stop(&broker), 0);
	hung_issuer_stop(&hung);
}

/* A new job holding the issuer's credential (released once): its id. */
static void
job_holding(char *job, size_t len)
{
	char path[200];
	json_t *j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher,
	    NULL, json_pack("{s:s}", "manifest", "slowrev"));

	snprintf(job, len, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/slow-rev/release",
	    job);
	j = harness_expect(&broker, 200, "POST", path, verifier, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "value")),
	    "tok-fast-0123456789");
	json_decref(j);
}

/* One request on a new connection, its answer not waited for: the
 * socket. */
static int
send_req(const char *method, const char *path, const char *key,
    const char *body)
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
	    "%s %s HTTP/1.1\r\nHost: %s\r\n%s%s%sConnection: close\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	    method, path, broker.addr,
	    key != NULL ? "Authorization: Bearer " : "", key != NULL ? key : "",
	    key != NULL ? "\r\n" : "", body != NULL ? strlen(body) : 0,
	    body != NULL ? body : "");
	ck_assert_int_lt(n, (int)sizeof(req));
	ck_assert_int_eq(write(fd, req, (size_t)n), n);
	return fd;
}

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

struct pending {
	int fd;
	double sent, answered_ms;
	int order; /* the how-manieth answer, -1 until it came */
	char *resp;
};

static void
pending_init(struct pending *p, int fd)
{
	*p = (struct pending){ .fd = fd, .sent = now_ms(), .order = -1 };
}

/* Reads the answers of p[0..n) as they come, for at most limit_ms: how
 * many came. */
static size_t
collect(struct pending *p, size_t n, int limit_ms)
{
	double t0 = now_ms();
	size_t got = 0;
	struct pollfd pf[NALL];

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
pending_free(struct pending *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i].fd >= 0)
			close(p[i].fd);
		free(p[i].resp);
	}
}

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

/* Asserts a revoke's answer: 200, its one credential listed, tried at
 * the issuer (never "not tried") and pending, not ok. */
static void
assert_tried_pending(const char *resp)
{
	json_t *j, *up, *e;
	const char *err;

	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	j = body_of(resp);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	    "revoked");
	up = json_object_get(j, "upstream");
	ck_assert_msg(json_array_size(up) == 1, "%.400s", resp);
	e = json_array_get(up, 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "secret")),
	    "slow-rev");
	ck_assert(json_is_false(json_object_get(e, "ok")));
	ck_assert_msg(json_is_true(json_object_get(e, "pending")), "%.400s",
	    resp);
	err = json_string_value(json_object_get(e, "error"));
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strncmp(err, "not tried", 9) != 0,
	    "the revocation was not tried at the issuer: %.400s", resp);
	json_decref(j);
}

START_TEST(revokes_wait_for_issuers_on_no_http_thread)
{
	char rj[NREV][64], live[64], path[200], body[600];
	struct pending p[NALL];
	char hdr[128];
	json_t *j;
	char *tok;
	size_t i;

	for (i = 0; i < NREV; i++)
		job_holding(rj[i], sizeof(rj[i]));
	/* A live job and its token, for the introspection. */
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "slowrev"));
	snprintf(live, sizeof(live), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(hdr, sizeof(hdr), "X-Cordon-Job: %s", live);
	j = harness_expect(&broker, 200, "POST", "/v1/token", verifier, hdr,
	    json_pack("{s:s, s:{s:s}}", "capability", "x.read", "params", "t",
		"1"));
	tok = strdup(json_string_value(json_object_get(j, "access_token")));
	json_decref(j);

	/* Every revoke at once. */
	for (i = 0; i < NREV; i++) {
		snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", rj[i]);
		pending_init(&p[i],
		    send_req("POST", path, launcher, "{\"reason\":\"done\"}"));
	}
	/* The issuer holds the revocations the broker makes at once (at
	 * least 2: as many as the tree before this made on its threads). */
	for (int t = 0; t < 400 && atomic_load(&hung.revokes) < 2; t++)
		usleep(10 * 1000);
	ck_assert_uint_ge(atomic_load(&hung.revokes), 2);
	/* Another client's cheap requests. */
	pending_init(&p[NREV], send_req("GET", "/healthz", NULL, NULL));
	snprintf(body, sizeof(body), "{\"token\":\"%s\"}", tok);
	pending_init(&p[NREV + 1],
	    send_req("POST", "/v1/introspect", verifier, body));
	ck_assert_uint_eq(collect(p, NALL, 30000), NALL);
	printf("healthz %.1f ms, introspection %.1f ms; revokes answered "
	       "after",
	    p[NREV].answered_ms, p[NREV + 1].answered_ms);
	for (i = 0; i < NREV; i++)
		printf(" %.0f", p[i].answered_ms);
	printf(" ms; %u revocation calls\n", atomic_load(&hung.revokes));
	for (i = 0; i < NREV; i++)
		ck_assert_msg(p[i].order > p[NREV].order &&
			p[i].order > p[NREV + 1].order,
		    "revoke %zu answered (#%d) before the healthz (#%d) or the "
		    "introspection (#%d): %.400s",
		    i, p[i].order, p[NREV].order, p[NREV + 1].order,
		    strstr(p[i].resp, "\r\n\r\n") ?: p[i].resp);
	ck_assert_msg(http_status(p[NREV].resp) == 200, "%.300s", p[NREV].resp);
	ck_assert_msg(http_status(p[NREV + 1].resp) == 200, "%.300s",
	    p[NREV + 1].resp);
	j = body_of(p[NREV + 1].resp);
	ck_assert(json_is_true(json_object_get(j, "active")));
	json_decref(j);
	for (i = 0; i < NREV; i++)
		assert_tried_pending(p[i].resp);
	/* Each revoke asked the issuer itself (retries may add more). */
	ck_assert_uint_ge(atomic_load(&hung.revokes), NREV);
	pending_free(p, NALL);
	free(tok);
}
END_TEST

START_TEST(stopped_with_revokes_waiting_answers_each)
{
	char rj[NREV][64], path[200];
	struct pending p[NREV];
	size_t i;

	for (i = 0; i < NREV; i++)
		job_holding(rj[i], sizeof(rj[i]));
	for (i = 0; i < NREV; i++) {
		snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", rj[i]);
		pending_init(&p[i],
		    send_req("POST", path, launcher, "{\"reason\":\"done\"}"));
	}
	for (int t = 0; t < 400 && atomic_load(&hung.revokes) < 2; t++)
		usleep(10 * 1000);
	ck_assert_int_eq(daemon_stop(&broker), 0);
	ck_assert_uint_eq(collect(p, NREV, 10000), NREV);
	/* Each answered, its credential pending: none lost, none said
	 * revoked. A revoke not read yet by a handler when the broker
	 * stopped is closed unanswered (nothing was revoked for it). */
	for (i = 0; i < NREV; i++) {
		json_t *j, *e;

		if (p[i].resp[0] == '\0')
			continue;
		ck_assert_msg(http_status(p[i].resp) == 200, "%.400s",
		    p[i].resp);
		j = body_of(p[i].resp);
		e = json_array_get(json_object_get(j, "upstream"), 0);
		ck_assert_msg(e != NULL, "%.400s", p[i].resp);
		ck_assert(json_is_false(json_object_get(e, "ok")));
		ck_assert(json_is_true(json_object_get(e, "pending")));
		json_decref(j);
	}
	pending_free(p, NREV);
}
END_TEST

START_TEST(a_revoke_waits_for_issuers_and_followers_at_once)
{
	char rj[64], path[200];
	struct pending p[2];
	long status, head;
	json_t *h, *j, *gone;

	job_holding(rj, sizeof(rj));
	h = harness_get_json(&broker, "/healthz", &status);
	ck_assert_int_eq(status, 200);
	head = (long)json_integer_value(json_object_get(h, "revocation_head"));
	json_decref(h);
	/* A follower that polls once, is told of the revoke and never
	 * acknowledges it. */
	snprintf(path, sizeof(path),
	    "/v1/revocations?after=%ld&wait=30&follower=ghost", head);
	pending_init(&p[0], send_req("GET", path, verifier, NULL));
	for (int t = 0; t < 100; t++) {
		h = harness_get_json(&broker, "/healthz", &status);
		long n = (long)json_integer_value(
		    json_object_get(h, "feed_followers"));
		json_decref(h);
		if (n >= 1)
			break;
		usleep(50 * 1000);
	}
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", rj);
	pending_init(&p[1],
	    send_req("POST", path, launcher, "{\"reason\":\"done\"}"));
	ck_assert_uint_eq(collect(p, 2, 20000), 2);
	printf("a revoke at a hung revocation endpoint, a follower never "
	       "acknowledging: answered after %.0f ms\n",
	    p[1].answered_ms);
	assert_tried_pending(p[1].resp);
	j = body_of(p[1].resp);
	gone = json_object_get(json_object_get(j, "propagated"), "gone");
	ck_assert_msg(json_array_size(gone) == 1 &&
		strcmp(json_string_value(json_array_get(gone, 0)), "ghost") ==
		    0,
	    "%.500s", p[1].resp);
	json_decref(j);
	pending_free(p, 2);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("revoke_async");
	TCase *tc = tcase_create("revoke_async");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, revokes_wait_for_issuers_on_no_http_thread);
	tcase_add_test(tc, a_revoke_waits_for_issuers_and_followers_at_once);
	tcase_add_test(tc, stopped_with_revokes_waiting_answers_each);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
