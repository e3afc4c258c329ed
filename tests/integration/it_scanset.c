/*
 * The scan release answers every value a service may hold (issue 18,
 * redteam3 #5): a guarded job's answers are scanned for the secret's
 * whole scan set, not only what this proxy released or the current
 * version. Cases: an issuer's secret, job A's token stored by a hostile
 * service, the proxy restarted (it forgot the tokens it released), job B
 * reading the stored page under another name: B must not get A's token
 * (before: the scan release was 409 issuer_scan and B read it in clear);
 * a static secret rotated while the service stores v1: B reading it
 * does not get v1 (before: the scan release gave v2 alone); a job that
 * injects v2 itself reading that service does not get v1 either
 * (before: its own release stood for the scan); a set behind the list's
 * version is refused once, not asked again and again; at the broker's
 * cap of live credentials (256) the set is whole, past it the scan
 * release fails closed and B's guarded request is 503 with nothing sent
 * upstream. The first two on sqlite and on PostgreSQL (a fresh server
 * the test starts), the rest on sqlite. No job is spawned (uid base
 * 1400000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "issuerkit.h"
#include "pg.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char hosts[] = "127.0.0.1 api.test\n127.0.0.1 www.api.test\n"
			    "127.0.0.1 other.test\n";
/* Two versions with no 6 bytes in a row alike. */
static const char v1[] = "AAbb11CCdd22EEff33GGhh44";
static const char v2[] = "zq9Xw3Lm7Rt5Yp1Nk0Hv8Jc6";

/* The store of the broker: NULL for sqlite, else a fresh database's URL
 * on pg (the PostgreSQL fixture's). */
static struct pg_server pg;
static char store_url[400];
static bool on_pg;

static void
setup_sqlite(void)
{
	on_pg = false;
}

static void
setup_pg(void)
{
	char name[64];
	static int n;

	snprintf(name, sizeof(name), "scanset%d_%d", (int)getpid(), n++);
	ck_assert_int_eq(pg_create_db(&pg, name, store_url, sizeof(store_url)),
	    0);
	on_pg = true;
}

/* The broker (with the issuer's CA when dir is not NULL), its keys, and
 * the proxy (follower) with hosts. */
static void
stack(struct injectkit *k, const char *dir, const char *follower)
{
	char cfg[2048], store[500] = "", ca[400] = "";

	k->up_pid = -1;
	if (on_pg)
		snprintf(store, sizeof(store), ", \"store\": \"%s\"",
		    store_url);
	if (dir != NULL)
		snprintf(ca, sizeof(ca), ", \"issuer_ca_file\": \"%s/ca.pem\"",
		    dir);
	/* No job here heartbeats: a lease past any case's length (the cap's
	 * 257 jobs took more than the default 30 s at load, and lapsed). */
	snprintf(cfg, sizeof(cfg),
	    "{\"log_level\": \"info\", \"lease_seconds\": 3600%s%s}", store,
	    ca);
	injectkit_stack_start_cfg(k, cfg, hosts, follower, NULL);
}

/* Job A: the kit's injecting rule 0 on k->up_port (api.test /case/),
 * its injected request sent (200 asserted), the address it went to
 * waited for in the broker's list (5 s at most). */
static void
job_a_stores(struct injectkit *k)
{
	char *resp;
	bool bound = false;

	injectkit_job_start(k, "writer",
	    injectkit_manifest("writer",
		json_pack("[o]", injectkit_inject_rule(k, false, NULL, NULL))));
	resp = injectkit_ask(k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	for (int i = 0; i < 100 && !bound; i++) {
		json_t *l = harness_expect(&k->broker, 200, "GET",
			   "/v1/bindings", k->verifier, NULL, NULL),
		       *b;
		size_t n;
		json_array_foreach(json_object_get(l, "bindings"), n, b)
		{
			if (json_array_size(json_object_get(b, "addrs")) > 0)
				bound = true;
		}
		json_decref(l);
		if (!bound)
			usleep(50 * 1000);
	}
	ck_assert_msg(bound, "the address job A's request went to is unbound");
}

/* Job B of manifest "reader": host on port, GET /open/, no inject; its
 * channel into chan, its id into id. */
static void
job_b(struct injectkit *k, const char *host, unsigned port, char chan[300],
    char id[64])
{
	json_t *r = json_pack("{s:s, s:i, s:[s], s:[s], s:s, s:[s]}", "host",
	    host, "port", port, "methods", "GET", "paths", "/open/", "reason",
	    "the public part", "allow_cidrs", "127.0.0.0/8");

	injectkit_job_open(k, "reader",
	    injectkit_manifest("reader", json_pack("[o]", r)), id, chan, NULL);
}

/* Whether the broker's log has secret_scan_released of version for job
 * (purpose scan: the audit's secret_released). */
static bool
scan_released(const struct injectkit *k, const char *job, long long version)
{
	json_t *lines = daemon_log_lines(&k->broker), *v;
	bool found = false;
	size_t i;

	json_array_foreach(lines, i, v)
	{
		const char *ev = json_string_value(json_object_get(v, "event"));
		const char *j = json_string_value(json_object_get(v, "job"));
		const char *p =
		    json_string_value(json_object_get(v, "purpose"));
		if (ev != NULL && strcmp(ev, "secret_scan_released") == 0 &&
		    j != NULL && strcmp(j, job) == 0 && p != NULL &&
		    strcmp(p, "scan") == 0 &&
		    json_integer_value(json_object_get(v, "version")) ==
			version)
			found = true;
	}
	json_decref(lines);
	return found;
}

/*
 * An issuer's token stored at a service by job A, then the proxy
 * restarted: it no longer holds the tokens it released, so only the
 * broker's scan set can tell B's scan about A's.
 */
START_TEST(an_issuers_token_at_a_restarted_proxy_is_not_read)
{
	struct injectkit k = { .up_pid = -1 };
	char dir[300], events[400], chan[300], id[64], *resp;
	unsigned iport;
	pid_t ipid;

	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(events, sizeof(events), "%s/events.jsonl", dir);
	ipid = issuerkit_start(dir, events, NULL, &iport);
	ck_assert_int_gt(ipid, 1);
	stack(&k, dir, "proxy-scanset");
	injectkit_oauth_secret(&k, "up-key", iport);
	k.up_pid =
	    injectkit_jobs_upstream("redteam2/stored.py", NULL, &k.up_port);
	job_a_stores(&k);
	ck_assert_int_eq(daemon_stop(&k.proxy), 0);
	ck_assert_int_eq(daemon_restart(&k.proxy), 0);
	job_b(&k, "www.api.test", k.up_port, chan, id);
	resp = injectkit_get_open(&k, chan, "www.api.test", "fields");
	ck_assert_msg(strstr(resp, "oat_") == NULL,
	    "job B read job A's live token at the restarted proxy: %.300s",
	    resp);
	free(resp);
	ck_assert_msg(scan_released(&k, id, 1),
	    "no scan release of the issuer's token audited for job B");
	injectkit_stop(&k);
	issuerkit_kill(&ipid);
}
END_TEST

/* A static secret rotated while the service keeps v1. */
START_TEST(a_rotated_out_version_stored_is_not_read)
{
	struct injectkit k = { .up_pid = -1 };
	char chan[300], id[64], *resp;

	stack(&k, NULL, "proxy-scanset");
	injectkit_secret(&k, "up-key", v1);
	k.up_pid =
	    injectkit_jobs_upstream("redteam2/stored.py", NULL, &k.up_port);
	job_a_stores(&k);
	injectkit_secret(&k, "up-key", v2);
	job_b(&k, "www.api.test", k.up_port, chan, id);
	resp = injectkit_get_open(&k, chan, "www.api.test", "fields");
	ck_assert_msg(!injectkit_holds_piece(v1, resp),
	    "job B read version 1, rotated out, stored at the service: %.300s",
	    resp);
	free(resp);
	ck_assert_msg(scan_released(&k, id, 1) && scan_released(&k, id, 2),
	    "versions 1 and 2 not both audited as scan releases for job B");
	injectkit_stop(&k);
}
END_TEST

/*
 * A job that injects the rotated secret itself (v2, at another service)
 * and reads the service that keeps v1 under a rule that injects nothing:
 * its own v2 is no scan for v1 (before: its own release stood for the
 * scan, no scan release was asked and v1 came in clear).
 */
START_TEST(an_injecting_job_reads_no_rotated_out_version)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *echo = upstream_start(NULL, NULL);
	char req[1024], *resp;

	ck_assert_ptr_nonnull(echo);
	stack(&k, NULL, "proxy-scanset");
	injectkit_secret(&k, "up-key", v1);
	k.up_pid =
	    injectkit_jobs_upstream("redteam2/stored.py", NULL, &k.up_port);
	job_a_stores(&k);
	injectkit_secret(&k, "up-key", v2);
	/* C: up-key injected at other.test (the echo), the storing
	 * service read at www.api.test. */
	struct injectkit c = k;
	c.up_port = upstream_port(echo);
	json_t *inj = injectkit_inject_rule(&c, false, NULL, NULL);
	ck_assert_int_eq(json_object_set_new(inj, "host",
			     json_string("other.test")),
	    0);
	json_t *open = json_pack("{s:s, s:i, s:[s], s:[s], s:s, s:[s]}", "host",
	    "www.api.test", "port", k.up_port, "methods", "GET", "paths",
	    "/open/", "reason", "the public part", "allow_cidrs",
	    "127.0.0.0/8");
	injectkit_job_start(&c, "both",
	    injectkit_manifest("both", json_pack("[o, o]", inj, open)));
	injectkit_request_to(&c, req, sizeof(req), "other.test", "GET",
	    "/case/x", true, "close");
	resp = injectkit_send_on(c.channel, req);
	ck_assert_msg(http_status(resp) == 200, "C's injection: %.300s", resp);
	free(resp);
	injectkit_request_to(&k, req, sizeof(req), "www.api.test", "GET",
	    "/open/fields", false, "close");
	resp = injectkit_send_on(c.channel, req);
	ck_assert_msg(!injectkit_holds_piece(v1, resp),
	    "job C, injecting version 2, read version 1 stored at the "
	    "service: %.300s",
	    resp);
	free(resp);
	ck_assert_msg(scan_released(&k, c.job, 1),
	    "no scan release of version 1 audited for job C");
	injectkit_stop(&k);
	upstream_stop(echo);
}
END_TEST

/*
 * The broker's version behind the proxy's list (up-key deleted and PUT
 * again: its versions start over at 1, the list read at B's channel open
 * still says 2): B's guarded request is refused 503 once, not asked of
 * the broker again and again until the next list read (before: a scan
 * release after a scan release, each answered version 1).
 */
START_TEST(a_version_behind_the_list_is_refused_not_asked_again)
{
	struct injectkit k = { .up_pid = -1 };
	char chan[300], id[64], *resp;

	stack(&k, NULL, "proxy-scanset");
	injectkit_secret(&k, "up-key", v1);
	k.up_pid =
	    injectkit_jobs_upstream("redteam2/stored.py", NULL, &k.up_port);
	job_a_stores(&k);
	injectkit_secret(&k, "up-key", v2);
	job_b(&k, "www.api.test", k.up_port, chan, id);
	json_decref(harness_expect(&k.broker, 200, "DELETE",
	    "/v1/secrets/up-key", k.admin, NULL, NULL));
	injectkit_secret(&k, "up-key", v1); /* version 1 again */
	long before = injectkit_metric(&k.proxy,
	    "cordon_proxy_guard_scan_releases_total");
	resp = injectkit_get_open(&k, chan, "www.api.test", "fields");
	long after = injectkit_metric(&k.proxy,
	    "cordon_proxy_guard_scan_releases_total");
	ck_assert_msg(!injectkit_holds_piece(v1, resp), "%.300s", resp);
	/* One scan release, or none answered while the list caught up. */
	ck_assert_msg(after - before <= 1,
	    "%ld scan releases for one request (%.200s)", after - before, resp);
	free(resp);
	injectkit_stop(&k);
}
END_TEST

/*
 * 256 live tokens of one issuer secret, the broker's cap: the scan
 * release gives all 256; 257: it is refused whole, and B's request at
 * the bound host is 503 with nothing sent upstream.
 */
START_TEST(past_the_cap_the_scan_release_fails_closed)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *echo = upstream_start(NULL, NULL);
	char dir[300], events[400], chan[300], id[64], path[300], *resp;
	unsigned iport;
	pid_t ipid;
	long st;

	ck_assert_ptr_nonnull(echo);
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(events, sizeof(events), "%s/events.jsonl", dir);
	ipid = issuerkit_start(dir, events, NULL, &iport);
	ck_assert_int_gt(ipid, 1);
	stack(&k, dir, "proxy-scanset");
	injectkit_oauth_secret(&k, "up-key", iport);
	k.up_port = upstream_port(echo);
	json_decref(harness_expect(&k.broker, 200, "PUT",
	    "/v1/manifests/writer", k.admin, NULL,
	    injectkit_manifest("writer",
		json_pack("[o]",
		    injectkit_inject_rule(&k, false, NULL, NULL)))));
	/* B's rule reaches api.test, a rule's binding of up-key. */
	job_b(&k, "api.test", k.up_port, chan, id);
	for (int i = 0; i < 257; i++) {
		if (i == 256) {
			/* 256 live: the whole set, once. */
			struct timespec t0, t1;
			snprintf(path, sizeof(path),
			    "/v1/jobs/%s/secrets/up-key/release?purpose=scan&"
			    "host=api.test",
			    id);
			clock_gettime(CLOCK_MONOTONIC, &t0);
			json_t *set = harness_call(&k.broker, "POST", path,
			    k.verifier, NULL, NULL, &st);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			ck_assert_msg(st == 200, "the set of 256: %ld", st);
			ck_assert_uint_eq(json_array_size(
					      json_object_get(set, "values")),
			    256);
			printf("it_scanset: a scan set of 256 credentials in "
			       "%.1f ms\n",
			    (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
				(double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
			json_decref(set);
		}
		json_t *j = harness_expect(&k.broker, 201, "POST", "/v1/jobs",
		    k.launcher, NULL, json_pack("{s:s}", "manifest", "writer"));
		snprintf(path, sizeof(path),
		    "/v1/jobs/%s/secrets/up-key/release",
		    json_string_value(json_object_get(j, "job")));
		json_decref(j);
		j = harness_call(&k.broker, "POST", path, k.verifier, NULL,
		    NULL, &st);
		ck_assert_msg(st == 200, "release %d: %ld", i, st);
		json_decref(j);
	}
	resp = injectkit_get_open(&k, chan, "api.test", "x");
	ck_assert_msg(http_status(resp) == 503 &&
		strstr(resp, "guard_unavailable") != NULL,
	    "past the cap, job B's guarded request: %.400s", resp);
	free(resp);
	ck_assert_uint_eq(upstream_requests(echo), 0);
	injectkit_stop(&k);
	upstream_stop(echo);
	issuerkit_kill(&ipid);
}
END_TEST

static Suite *
suite(bool with_pg)
{
	Suite *s = suite_create("scanset");
	TCase *tc = tcase_create("sqlite");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup_sqlite, NULL);
	tcase_add_test(tc, an_issuers_token_at_a_restarted_proxy_is_not_read);
	tcase_add_test(tc, a_rotated_out_version_stored_is_not_read);
	tcase_add_test(tc, an_injecting_job_reads_no_rotated_out_version);
	tcase_add_test(tc,
	    a_version_behind_the_list_is_refused_not_asked_again);
	tcase_add_test(tc, past_the_cap_the_scan_release_fails_closed);
	suite_add_tcase(s, tc);
	if (with_pg) {
		tc = tcase_create("pg");
		tcase_set_timeout(tc, 120);
		tcase_add_checked_fixture(tc, setup_pg, NULL);
		tcase_add_test(tc,
		    an_issuers_token_at_a_restarted_proxy_is_not_read);
		tcase_add_test(tc, a_rotated_out_version_stored_is_not_read);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	char err[512];
	bool with_pg = pg_wanted();
	int rc;

	if (with_pg && pg_start(&pg, err, sizeof(err)) < 0) {
		fprintf(stderr, "it_scanset: %s\n", err);
		return 1;
	}
	if (!with_pg)
		printf("it_scanset: CORDON_TEST_NO_PG=1: PostgreSQL skipped\n");
	rc = harness_main(suite(with_pg));
	if (with_pg)
		pg_destroy(&pg);
	return rc;
}
