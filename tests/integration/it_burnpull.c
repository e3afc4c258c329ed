/*
 * A burn reaches the proxies already holding the value (issue 18): the
 * broker burns a static secret's version past its reflect_budget (or at
 * a trip), and a job released it before the burn kept injecting it
 * from the proxy's cache for inject_cache_seconds, each such job with
 * reflect_limit + 1 more reflected answers. The bindings list now
 * carries each static secret's burned versions ("burned", and a burn
 * moves the list's epoch); the proxy forgets them for injection at the
 * list read (the next injected request asks the broker, 403 inject /
 * secret_burned, nothing sent) and keeps them in the job's scan, so an
 * answer that reflects the burned value is still redacted.
 *
 * On sqlite: job A released version 1 (a cache of an hour), its and job
 * B's reflected answers burn it past a budget of 3, A's next injected
 * request is refused within a list read and A's answer reflecting
 * version 1 comes back redacted. On PostgreSQL: a burn counted at one
 * broker is in the other's list, its epoch moved, and stays there after
 * a rotation. No job is spawned (uid base 1506000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "pg.h"
#include "upstream.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char value1[] = "sk_live_burnpull_0123456789abcd";
static const char value2[] = "sk_live_burnpull_rotated_fedcba";
static const char hosts[] = "127.0.0.1 api.test\n127.0.0.1 www.api.test\n";

static struct pg_server pg;
static bool have_pg;

static long long
num(const json_t *j, const char *key)
{
	return (long long)json_integer_value(json_object_get(j, key));
}

/* up-key's entry of the bindings list at broker (a new reference, NULL
 * when it is not listed); the list's epoch into *epoch. */
static json_t *
listed(const struct daemon *broker, const char *verifier, long long *epoch)
{
	json_t *l = harness_expect(broker, 200, "GET", "/v1/bindings", verifier,
		   NULL, NULL),
	       *b, *found = NULL;
	size_t i;

	*epoch = num(l, "epoch");
	json_array_foreach(json_object_get(l, "bindings"), i, b)
	{
		const char *s = json_string_value(json_object_get(b, "secret"));
		if (s != NULL && strcmp(s, "up-key") == 0)
			found = json_incref(b);
	}
	json_decref(l);
	return found;
}

/* Whether up-key's listed "burned" is exactly [version]. */
static bool
burned_is(const json_t *entry, long long version)
{
	const json_t *b = json_object_get(entry, "burned");

	return json_is_array(b) && json_array_size(b) == 1 &&
	    json_integer_value(json_array_get(b, 0)) == version;
}

/* A's manifest: rule 0 injects up-key at api.test's /case/, rule 1 reads
 * www.api.test's /open/ on the same upstream, injecting nothing. */
static json_t *
both_manifest(const struct injectkit *k)
{
	return injectkit_manifest("both",
	    json_pack("[o, {s:s, s:i, s:[s], s:[s], s:s, s:[s]}]",
		injectkit_inject_rule(k, false, NULL, NULL), "host",
		"www.api.test", "port", k->up_port, "methods", "GET", "paths",
		"/open/", "reason", "the same service", "allow_cidrs",
		"127.0.0.0/8"));
}

START_TEST(a_burn_pulls_the_value_from_a_job_holding_it)
{
	struct injectkit a = { .up_pid = -1 };
	struct upstream *u = upstream_start(NULL, NULL);
	char req[1024], path[256], *resp;
	long long epoch0, epoch1;
	json_t *s;

	ck_assert_ptr_nonnull(u);
	/* An hour's cache: without the list's word A injects version 1
	 * for the whole test. The echo shows the injected header, so each
	 * injected answer reflects the key: no reflect_limit closes A. */
	injectkit_stack_start(&a, hosts, "proxy-burnpull",
	    "\"inject_cache_seconds\": 3600, \"bindings_refresh_seconds\": "
	    "1, \"reflect_limit\": 1000000");
	a.up_port = upstream_port(u);
	json_decref(harness_expect(&a.broker, 200, "PUT", "/v1/secrets/up-key",
	    a.admin, NULL,
	    json_pack("{s:s, s:i}", "value", value1, "reflect_budget", 3)));

	/* Job A: version 1 released, kept in the proxy's cache. */
	injectkit_job_start(&a, "both", both_manifest(&a));
	resp = injectkit_ask(&a, "GET", "/case/before", true);
	ck_assert_msg(http_status(resp) == 200, "A's first: %.300s", resp);
	free(resp);
	s = listed(&a.broker, a.verifier, &epoch0);
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(!json_is_true(json_object_get(s, "burned")) &&
		json_array_size(json_object_get(s, "burned")) == 0,
	    "%s", json_dumps(s, JSON_COMPACT));
	json_decref(s);

	/* Job B (the same manifest): the echo reflects its own key (the
	 * header it was sent), redacted; with A's one the fleet's count
	 * reaches the budget of 3 and version 1 burns. */
	struct injectkit b = a;
	injectkit_job_start(&b, "both", both_manifest(&b));
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/case/b-%d", i);
		injectkit_request_to(&b, req, sizeof(req), "api.test", "GET",
		    path, true, "close");
		resp = injectkit_send_on(b.channel, req);
		ck_assert_msg(http_status(resp) == 200 &&
			!injectkit_holds_piece(value1 + 8, resp),
		    "B's reflected answer %d: %.300s", i, resp);
		free(resp);
	}
	for (int i = 0; i < 300; i++) {
		s = harness_expect(&a.broker, 200, "GET", "/v1/secrets/up-key",
		    a.admin, NULL, NULL);
		bool burned = json_is_true(json_object_get(s, "burned"));
		json_decref(s);
		if (burned)
			break;
		usleep(50 * 1000);
	}
	s = listed(&a.broker, a.verifier, &epoch1);
	ck_assert_msg(burned_is(s, 1), "the list after the burn: %s",
	    json_dumps(s, JSON_COMPACT));
	json_decref(s);
	ck_assert_msg(epoch1 > epoch0, "the burn left the epoch at %lld",
	    epoch1);

	/* A's next injected requests: refused once a list read carried the
	 * burn (a read a second; 15 s at most), nothing sent then. */
	unsigned sent = 0, before = 0;
	int status = 0;
	for (int i = 0; i < 60; i++) {
		before = upstream_requests(u);
		resp = injectkit_ask(&a, "GET", "/case/after-burn", true);
		status = http_status(resp);
		bool refused =
		    status == 403 && strstr(resp, "secret_burned") != NULL;
		free(resp);
		if (refused)
			break;
		sent++;
		usleep(250 * 1000);
	}
	ck_assert_msg(status == 403,
	    "job A's injected request still went out with version 1 after "
	    "the burn (%u sent, the last HTTP %d)",
	    sent, status);
	ck_assert_uint_eq(upstream_requests(u), before);
	ck_assert(injectkit_decisions_hold(&a.proxy, "secret_burned"));
	printf("it_burnpull: %u injected requests of A went up between the "
	       "burn and the list read that carried it\n",
	    sent);
	/* And again: the cache holds nothing, the broker refuses. */
	resp = injectkit_ask(&a, "GET", "/case/again", true);
	ck_assert_msg(http_status(resp) == 403 &&
		strstr(resp, "secret_burned") != NULL,
	    "%.300s", resp);
	free(resp);
	ck_assert_uint_eq(upstream_requests(u), before);

	/* Still scanned for: the service echoing version 1 to A under the
	 * rule that injects nothing is redacted, not handed over. */
	snprintf(path, sizeof(path), "/open/-%s-", value1);
	injectkit_request_to(&a, req, sizeof(req), "www.api.test", "GET", path,
	    false, "close");
	resp = injectkit_send_on(a.channel, req);
	ck_assert_msg(http_status(resp) == 200 &&
		!injectkit_holds_piece(value1 + 8, resp),
	    "job A read the burned version 1: %.400s", resp);
	free(resp);

	/* A rotation: A injects version 2. */
	json_decref(harness_expect(&a.broker, 200, "PUT", "/v1/secrets/up-key",
	    a.admin, NULL, json_pack("{s:s}", "value", value2)));
	resp = injectkit_ask(&a, "GET", "/case/rotated", true);
	ck_assert_msg(http_status(resp) == 200, "after the rotation: %.300s",
	    resp);
	free(resp);
	char *head = upstream_last_head(u), want[128];
	snprintf(want, sizeof(want), "Key %s", value2);
	ck_assert_ptr_nonnull(head);
	ck_assert_msg(strstr(head, want) != NULL, "%s", head);
	free(head);
	injectkit_stop(&a);
	upstream_stop(u);
}
END_TEST

/* --- PostgreSQL: the burn is the fleet's list's --------------------------- */

START_TEST(a_burn_at_one_broker_is_in_the_others_list)
{
	char url[400], dir[300], cfg[1500], name[64], rpath[300], path[400];
	char admin[128], launcher[128], verifier[128], keyp[400];
	struct daemon a, b;
	long long epoch0, epoch1, epoch2;
	json_t *s, *j;

	snprintf(name, sizeof(name), "bp%d", (int)getpid());
	ck_assert_int_eq(pg_create_db(&pg, name, url, sizeof(url)), 0);
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(cfg, sizeof(cfg),
	    "{\"store\": \"%s\", \"keys_dir\": \"%s/keys\", \"pepper\": "
	    "\"%s/pepper\", \"log_level\": \"info\"}",
	    url, dir, dir);
	ck_assert_int_eq(daemon_start(&a, "broker", cfg), 0);
	ck_assert_int_eq(daemon_start(&b, "broker", cfg), 0);
	snprintf(keyp, sizeof(keyp), "%s/keys/admin.key", dir);
	ck_assert_int_eq(harness_read_line(keyp, admin, sizeof(admin)), 0);
	snprintf(keyp, sizeof(keyp), "%s/keys/launcher.key", dir);
	ck_assert_int_eq(harness_read_line(keyp, launcher, sizeof(launcher)),
	    0);
	snprintf(keyp, sizeof(keyp), "%s/keys/verifier.key", dir);
	ck_assert_int_eq(harness_read_line(keyp, verifier, sizeof(verifier)),
	    0);

	json_decref(
	    harness_expect(&a, 200, "PUT", "/v1/secrets/up-key", admin, NULL,
		json_pack("{s:s, s:i}", "value", value1, "reflect_budget", 2)));
	struct injectkit k = { .up_port = 9 };
	json_decref(
	    harness_expect(&a, 200, "PUT", "/v1/manifests/writer", admin, NULL,
		injectkit_manifest("writer",
		    json_pack("[o]",
			injectkit_inject_rule(&k, false, NULL, NULL)))));
	j = harness_expect(&b, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "writer"));
	snprintf(rpath, sizeof(rpath), "/v1/jobs/%s/secrets/up-key/reflections",
	    json_string_value(json_object_get(j, "job")));
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/up-key/release",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	json_decref(
	    harness_expect(&b, 200, "POST", path, verifier, NULL, NULL));
	s = listed(&b, verifier, &epoch0);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(json_array_size(json_object_get(s, "burned")), 0);
	json_decref(s);

	/* Two reflections at A burn version 1; B's list says so. */
	for (int i = 0; i < 2; i++)
		json_decref(
		    harness_expect(&a, 200, "POST", rpath, verifier, NULL,
			json_pack("{s:i, s:s, s:i}", "version", 1, "event",
			    "reflected", "count", 1)));
	s = listed(&b, verifier, &epoch1);
	ck_assert_msg(burned_is(s, 1), "broker B's list after the burn: %s",
	    json_dumps(s, JSON_COMPACT));
	json_decref(s);
	ck_assert_msg(epoch1 > epoch0,
	    "the burn left the fleet's epoch at %lld", epoch1);

	/* A rotation at B: version 2 current, version 1 burned still. */
	json_decref(harness_expect(&b, 200, "PUT", "/v1/secrets/up-key", admin,
	    NULL, json_pack("{s:s}", "value", value2)));
	s = listed(&a, verifier, &epoch2);
	ck_assert_int_eq(num(s, "version"), 2);
	ck_assert_msg(burned_is(s, 1), "%s", json_dumps(s, JSON_COMPACT));
	json_decref(s);
	ck_assert_int_eq(daemon_stop(&a), 0);
	ck_assert_int_eq(daemon_stop(&b), 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("burnpull");
	TCase *tc = tcase_create("sqlite");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_burn_pulls_the_value_from_a_job_holding_it);
	suite_add_tcase(s, tc);
	if (have_pg) {
		TCase *tp = tcase_create("postgresql");
		tcase_set_timeout(tp, 60);
		tcase_add_test(tp, a_burn_at_one_broker_is_in_the_others_list);
		suite_add_tcase(s, tp);
	}
	return s;
}

int
main(void)
{
	char err[512];
	int rc;

	if (!pg_wanted()) {
		printf("it_burnpull: CORDON_TEST_NO_PG=1: the PostgreSQL case "
		       "skipped\n");
	} else if (pg_start(&pg, err, sizeof(err)) < 0) {
		fprintf(stderr, "it_burnpull: %s\n", err);
		return 1;
	} else
		have_pg = true;
	rc = harness_main(suite());
	if (have_pg)
		pg_destroy(&pg);
	return rc;
}
