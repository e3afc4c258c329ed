/*
 * Short-lived upstream credentials in a fleet (issues 18 and 21): two
 * cordon-brokers on one database of a private PostgreSQL (pg.h), with
 * one keys directory (one secrets.aead), and the test issuer
 * (jobs/issuers/issuer.py, OAuth client credentials and RFC 7009 over
 * TLS on 127.0.0.1). What it shows: a credential broker A obtained is
 * the one broker B releases too, and a revoke at B while A is down
 * revokes it at the issuer; two revokes of a job at A and B at once
 * revoke each of its credentials exactly once; a revocation the issuer
 * refuses stays pending (/metrics counts it at both brokers), is retried
 * in the background once the issuer answers, and each attempt is
 * audited.
 *
 * Without PostgreSQL it fails and says so, unless CORDON_TEST_NO_PG=1.
 */
#include "harness.h"
#include "injectkit.h"
#include "issuerkit.h"
#include "pg.h"
#include "upstream.h"

#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct pg_server pg;
static char url[400], dir[300], ca[400], events[400];
static struct daemon A, B;
static char admin[128], launcher[128], verifier[128];
static pid_t issuer_pid = -1;
static unsigned issuer_port;

/* Starts the issuer on port (0: any), refusing revocations when told
 * (flag: "--refuse-revoke", "--hang-revoke"). */
static void
issuer_start_with(unsigned port, const char *flag)
{
	char ports[16];

	snprintf(ports, sizeof(ports), "%u", port);
	const char *args[] = { "--port", ports, flag, NULL };
	issuer_pid = issuerkit_start(dir, events, args, &issuer_port);
}

static void
issuer_start(unsigned port, bool refuse_revoke)
{
	issuer_start_with(port, refuse_revoke ? "--refuse-revoke" : NULL);
}

static void
issuer_kill(void)
{
	ck_assert_int_gt(issuer_pid, 1);
	issuerkit_kill(&issuer_pid);
}

/* How many revocations of token the issuer saw; ok_only: answered 200
 * (not refused). */
static int
issuer_revokes(const char *token, bool ok_only)
{
	json_t *revs = issuerkit_events(events, "revoke"), *e;
	size_t i;
	int n = 0;

	json_array_foreach(revs, i, e)
	{
		const char *t = json_string_value(json_object_get(e, "token"));
		if (t != NULL && strcmp(t, token) == 0 &&
		    (!ok_only || json_object_get(e, "was_live") != NULL))
			n++;
	}
	json_decref(revs);
	return n;
}

static void
read_key(const char *role, char *out, size_t len)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/keys/%s.key", dir, role);
	ck_assert_int_eq(harness_read_line(path, out, len), 0);
}

static void
setup(void)
{
	char name[64], cfg[1500];
	static int n;

	signal(SIGPIPE, SIG_IGN);
	snprintf(name, sizeof(name), "isf%d_%d", (int)getpid(), n++);
	ck_assert_int_eq(pg_create_db(&pg, name, url, sizeof(url)), 0);
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(events, sizeof(events), "%s/events.jsonl", dir);
	issuer_start(0, false);
	snprintf(cfg, sizeof(cfg),
	    "{\"store\": \"%s\", \"keys_dir\": \"%s/keys\", \"pepper\": "
	    "\"%s/pepper\", \"lease_seconds\": 3600, \"log_level\": "
	    "\"info\", \"issuer_ca_file\": \"%s\"}",
	    url, dir, dir, ca);
	ck_assert_int_eq(daemon_start(&A, "broker", cfg), 0);
	ck_assert_int_eq(daemon_start(&B, "broker", cfg), 0);
	read_key("admin", admin, sizeof(admin));
	read_key("launcher", launcher, sizeof(launcher));
	read_key("verifier", verifier, sizeof(verifier));
}

static void
teardown(void)
{
	if (issuer_pid > 1)
		issuer_kill();
}

/* Secret name, an OAuth client of the issuer, stored at A. */
static void
oauth_secret(const char *name)
{
	char tok[128], rev[128], path[128];

	snprintf(tok, sizeof(tok), "https://127.0.0.1:%u/oauth/token",
	    issuer_port);
	snprintf(rev, sizeof(rev), "https://127.0.0.1:%u/oauth/revoke",
	    issuer_port);
	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	json_decref(harness_expect(&A, 200, "PUT", path, admin, NULL,
	    json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind",
		"oauth_client_credentials", "token_url", tok, "client_id",
		"cordon-test", "client_secret", "s3cret-client",
		"revocation_url", rev)));
}

/* A rule to host injecting secret. */
static json_t *
rule(const char *host, const char *secret)
{
	return json_pack("{s:s, s:i, s:[s], s:s, s:[s], s:s, "
			 "s:{s:s, s:s, s:s, s:s}}",
	    "host", host, "port", 9, "methods", "GET", "reason", "the api",
	    "allow_cidrs", "127.0.0.0/8", "audience", "api", "inject", "secret",
	    secret, "header", "Authorization", "format", "Bearer {secret}",
	    "capability", "x.read");
}

/* Manifest name injecting s1 (and s2, when not NULL), and a job of it
 * created at A: its id in job. */
static void
job_of(const char *name, const char *s1, const char *s2, char *job, size_t len)
{
	char path[200];
	json_t *egress = json_array(), *j;

	json_array_append_new(egress, rule("a.test", s1));
	if (s2 != NULL)
		json_array_append_new(egress, rule("b.test", s2));
	json_t *m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, "
			      "s:s}], s:o}",
	    "name", name, "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress", egress);

	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(harness_expect(&A, 200, "PUT", path, admin, NULL, m));
	j = harness_expect(&A, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", name));
	snprintf(job, len, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
}

/* The credential d releases for job and secret (asserted 200): into
 * value. */
static void
release(const struct daemon *d, const char *job, const char *secret,
    char *value, size_t len)
{
	char path[200];
	json_t *j;

	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/%s/release", job,
	    secret);
	j = harness_expect(d, 200, "POST", path, verifier, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "source")),
	    "oauth_client_credentials");
	snprintf(value, len, "%s",
	    json_string_value(json_object_get(j, "value")));
	json_decref(j);
}

/* The revoke of job at d: its "upstream" array. */
static json_t *
revoke_at(const struct daemon *d, const char *job)
{
	char path[200];
	json_t *j, *up;

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	j = harness_expect(d, 200, "POST", path, launcher, NULL,
	    json_pack("{s:s}", "reason", "done"));
	up = json_incref(json_object_get(j, "upstream"));
	json_decref(j);
	ck_assert(json_is_array(up));
	return up;
}

/* How many records of event job's audit has (actor, when not NULL, is
 * theirs). */
static int
audited(const char *job, const char *event, const char *actor)
{
	char path[200];
	json_t *list, *r;
	size_t i;
	int n = 0;

	snprintf(path, sizeof(path), "/v1/audit?job=%s", job);
	list = harness_expect(&B, 200, "GET", path, admin, NULL, NULL);
	json_array_foreach(json_object_get(list, "records"), i, r)
	{
		const char *ev = json_string_value(json_object_get(r, "event"));
		const char *by = json_string_value(
		    json_object_get(json_object_get(r, "detail"), "actor"));
		if (by == NULL)
			by = json_string_value(json_object_get(r, "actor"));
		n += ev != NULL && strcmp(ev, event) == 0 &&
		    (actor == NULL || (by != NULL && strcmp(by, actor) == 0));
	}
	json_decref(list);
	return n;
}

START_TEST(a_revoke_at_b_revokes_what_a_obtained_while_a_is_down)
{
	char job[80], at_a[512], at_b[512];
	json_t *up;

	oauth_secret("api-key");
	job_of("fleet-one", "api-key", NULL, job, sizeof(job));
	release(&A, job, "api-key", at_a, sizeof(at_a));
	ck_assert_int_eq(strncmp(at_a, "oat_", 4), 0);
	/* B sees what A holds: the same credential, not a second one. */
	release(&B, job, "api-key", at_b, sizeof(at_b));
	ck_assert_str_eq(at_b, at_a);

	daemon_kill(&A);
	up = revoke_at(&B, job);
	ck_assert_msg(json_array_size(up) == 1,
	    "B's revoke listed %zu upstream revocations", json_array_size(up));
	ck_assert(json_is_true(json_object_get(json_array_get(up, 0), "ok")));
	json_decref(up);
	ck_assert_int_eq(issuer_revokes(at_a, true), 1);
	/* A back: nothing is left of the job to revoke again. */
	ck_assert_int_eq(daemon_restart(&A), 0);
	up = revoke_at(&A, job);
	ck_assert_uint_eq(json_array_size(up), 0);
	json_decref(up);
	ck_assert_int_eq(issuer_revokes(at_a, false), 1);
	daemon_stop(&A);
	daemon_stop(&B);
}
END_TEST

struct racer {
	const struct daemon *d;
	const char *job;
	json_t *up;
};

static void *
race_revoke(void *arg)
{
	struct racer *r = arg;
	char path[200];
	json_t *body = json_pack("{s:s}", "reason", "done"), *j;
	long status;

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", r->job);
	j = harness_call(r->d, "POST", path, launcher, NULL, body, &status);
	json_decref(body);
	r->up =
	    status == 200 ? json_incref(json_object_get(j, "upstream")) : NULL;
	json_decref(j);
	return NULL;
}

START_TEST(two_brokers_revoking_at_once_revoke_each_credential_once)
{
	oauth_secret("s1");
	oauth_secret("s2");
	for (int round = 0; round < 3; round++) {
		char job[80], name[32], v1[512], v2[512];
		struct racer ra = { &A, job, NULL }, rb = { &B, job, NULL };
		pthread_t ta, tb;

		snprintf(name, sizeof(name), "race-%d", round);
		job_of(name, "s1", "s2", job, sizeof(job));
		release(&A, job, "s1", v1, sizeof(v1));
		release(&B, job, "s2", v2, sizeof(v2));
		ck_assert_str_ne(v1, v2);
		pthread_create(&ta, NULL, race_revoke, &ra);
		pthread_create(&tb, NULL, race_revoke, &rb);
		pthread_join(ta, NULL);
		pthread_join(tb, NULL);
		ck_assert_ptr_nonnull(ra.up);
		ck_assert_ptr_nonnull(rb.up);
		/* Between them, each credential once, revoked. */
		ck_assert_msg(json_array_size(ra.up) + json_array_size(rb.up) ==
			2,
		    "round %d: A listed %zu, B %zu", round,
		    json_array_size(ra.up), json_array_size(rb.up));
		ck_assert_int_eq(issuer_revokes(v1, true), 1);
		ck_assert_int_eq(issuer_revokes(v2, true), 1);
		json_decref(ra.up);
		json_decref(rb.up);
	}
	daemon_stop(&A);
	daemon_stop(&B);
}
END_TEST

START_TEST(a_refused_revocation_is_retried_until_the_issuer_answers)
{
	char job[80], value[512];
	unsigned port;
	json_t *up, *e;
	int i;

	/* The issuer refuses revocations (503) at the stop. */
	issuer_kill();
	issuer_start(0, true);
	port = issuer_port;
	oauth_secret("flaky");
	job_of("fleet-retry", "flaky", NULL, job, sizeof(job));
	release(&A, job, "flaky", value, sizeof(value));
	up = revoke_at(&B, job);
	ck_assert_uint_eq(json_array_size(up), 1);
	e = json_array_get(up, 0);
	ck_assert(json_is_false(json_object_get(e, "ok")));
	ck_assert_msg(json_is_true(json_object_get(e, "pending")),
	    "a refused revocation is not kept pending");
	json_decref(up);
	ck_assert_int_eq(injectkit_metric(&A,
			     "cordon_broker_upstream_revocations_pending"),
	    1);
	ck_assert_int_eq(injectkit_metric(&B,
			     "cordon_broker_upstream_revocations_pending"),
	    1);
	/* Audited off the request path (store_audit_async): looked for. */
	for (i = 0;
	     i < 100 && audited(job, "upstream_revoke_failed", NULL) == 0; i++)
		usleep(100000);
	ck_assert_int_ge(audited(job, "upstream_revoke_failed", NULL), 1);

	/* The issuer answers again, on the same address. */
	issuer_kill();
	issuer_start(port, false);
	for (i = 0; i < 300 && issuer_revokes(value, true) == 0; i++)
		usleep(100000);
	ck_assert_msg(issuer_revokes(value, true) == 1,
	    "the pending revocation never reached the issuer again");
	for (i = 0; i < 100 && audited(job, "upstream_revoked", "broker") == 0;
	     i++)
		usleep(100000);
	ck_assert_int_eq(audited(job, "upstream_revoked", "broker"), 1);
	for (i = 0; i < 100 &&
	     injectkit_metric(&B,
		 "cordon_broker_upstream_revocations_pending") != 0;
	     i++)
		usleep(100000);
	ck_assert_int_eq(injectkit_metric(&B,
			     "cordon_broker_upstream_revocations_pending"),
	    0);
	/* Once: no broker tries it again. */
	sleep(3);
	ck_assert_int_eq(issuer_revokes(value, true), 1);
	daemon_stop(&A);
	daemon_stop(&B);
}
END_TEST

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* POST /v1/introspect of token at d: whether it answered active. */
static bool
introspect(const struct daemon *d, const char *token)
{
	json_t *j = harness_expect(d, 200, "POST", "/v1/introspect", verifier,
	    NULL, json_pack("{s:s}", "token", token));
	bool active = json_is_true(json_object_get(j, "active"));

	json_decref(j);
	return active;
}

START_TEST(a_tripwire_does_not_wait_for_a_hung_issuer)
{
	char job[80], other[80], value[512], canary[256], live[256];
	double t0, tripwire_ms, during_ms;
	json_t *j;

	/* An issuer that holds every revocation 30 s, answering none. */
	issuer_kill();
	issuer_start_with(0, "--hang-revoke");
	oauth_secret("hung");
	job_of("fleet-trip", "hung", NULL, job, sizeof(job));
	j = harness_expect(&A, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s, s:i}", "manifest", "fleet-trip", "canaries", 1));
	snprintf(other, sizeof(other), "%s",
	    json_string_value(json_object_get(j, "job")));
	snprintf(canary, sizeof(canary), "%s",
	    json_string_value(
		json_array_get(json_object_get(j, "canaries"), 0)));
	/* A token of no job: the introspection's whole path all the same. */
	snprintf(live, sizeof(live), "crd_%s", "0000000000000000000000000000");
	json_decref(j);
	ck_assert_int_eq(strncmp(canary, "crd_", 4), 0);
	release(&A, other, "hung", value, sizeof(value));

	/* The canary trips the wire: the job is revoked, and its upstream
	 * credential handed to the background revocations. */
	t0 = now_ms();
	ck_assert(!introspect(&A, canary));
	tripwire_ms = now_ms() - t0;
	printf("it_issuers_fleet: with the issuer hung, the tripwire's "
	       "introspection took %.1f ms\n",
	    tripwire_ms);
	fflush(stdout);
	ck_assert_int_eq(injectkit_metric(&A,
			     "cordon_broker_upstream_revocations_pending"),
	    1);
	ck_assert_int_ge(audited(other, "tripwire", NULL), 1);
	/* Introspections meanwhile, at the same broker. */
	t0 = now_ms();
	(void)introspect(&A, live);
	during_ms = now_ms() - t0;
	printf("it_issuers_fleet: the next introspection took %.1f ms\n",
	    during_ms);
	(void)job;
	daemon_stop(&A);
	daemon_stop(&B);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("issuers_fleet");
	TCase *tc = tcase_create("fleet");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
	    a_revoke_at_b_revokes_what_a_obtained_while_a_is_down);
	tcase_add_test(tc,
	    two_brokers_revoking_at_once_revoke_each_credential_once);
	tcase_add_test(tc,
	    a_refused_revocation_is_retried_until_the_issuer_answers);
	tcase_add_test(tc, a_tripwire_does_not_wait_for_a_hung_issuer);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	char err[512];
	int rc;

	if (!pg_wanted()) {
		printf("it_issuers_fleet: CORDON_TEST_NO_PG=1: skipped\n");
		return 0;
	}
	if (pg_start(&pg, err, sizeof(err)) < 0) {
		fprintf(stderr, "it_issuers_fleet: %s\n", err);
		return 1;
	}
	rc = harness_main(suite());
	pg_destroy(&pg);
	return rc;
}
