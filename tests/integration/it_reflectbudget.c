/*
 * A fleet-wide reflection budget per secret version (issue 18's residual
 * oracle): a job's own key echoed by its upstream is redacted in place,
 * and the redaction of exactly the 8-byte runs that match teaches the
 * job about a byte an answer; reflect_limit closes one job after a few,
 * but the same hostile code run again and again added up to the key.
 * The proxy now tells the broker each reflected answer and each trip
 * (POST /v1/jobs/{job}/secrets/{name}/reflections); the broker counts
 * them per (secret, version) in its database, and past the version's
 * reflect_budget (a field of the secret's PUT) the version is burned:
 * every later release to inject it is 403 secret_burned, until a PUT
 * makes a new version with a fresh budget.
 *
 * On sqlite: jobs reflecting their own key until the budget, the count
 * surviving a broker restart, the next job refused with nothing sent,
 * a rotation injecting again; a trip of a scan-only key burns at once.
 * On PostgreSQL: two brokers count into one budget, reports at both at
 * once burn the version exactly once. No job is spawned (uid base
 * 1410000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "pg.h"
#include "upstream.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char value1[] = "sk_live_budget_0123456789abcdef";
static const char value2[] = "sk_live_budget_rotated_fedcba98";
static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
static const char hosts[] = "127.0.0.1 api.test\n127.0.0.1 www.api.test\n";

static struct pg_server pg;
static bool have_pg;

/* PUTs up-key with value and reflect_budget (0: none given). */
static json_t *
put_key(const struct daemon *broker, const char *admin, const char *value,
    int budget)
{
	json_t *body = json_pack("{s:s}", "value", value);

	if (budget > 0)
		json_object_set_new(body, "reflect_budget",
		    json_integer(budget));
	return harness_expect(broker, 200, "PUT", "/v1/secrets/up-key", admin,
	    NULL, body);
}

static long long
num(const json_t *j, const char *key)
{
	return (long long)json_integer_value(json_object_get(j, key));
}

/* GET /v1/secrets/up-key at broker, asserted 200. */
static json_t *
get_key(const struct daemon *broker, const char *admin)
{
	return harness_expect(broker, 200, "GET", "/v1/secrets/up-key", admin,
	    NULL, NULL);
}

/* Waits (15 s at most) until up-key's reflections at broker are at least
 * want; the last GET's answer. */
static json_t *
wait_reflections(const struct daemon *broker, const char *admin, long long want)
{
	json_t *s = NULL;

	for (int i = 0; i < 300; i++) {
		json_decref(s);
		s = get_key(broker, admin);
		if (num(s, "reflections") >= want)
			break;
		usleep(50 * 1000);
	}
	return s;
}

/*
 * The job on chan reads its own key back through the echo (the C
 * upstream echoes the target) with k's token at api.test's /case/, as
 * redteam3's repro did: from "sk_live_", each next byte the one candidate
 * that did not come back as sent. The answers that came in *ret_n.
 */
static void
reflect_own(const struct injectkit *k, int *ret_n)
{
	char got[80];
	size_t n = 8, alen = strlen(alphabet);

	snprintf(got, sizeof(got), "%.8s", value1);
	*ret_n = 0;
	while (n < 64) {
		char path[1024], req[2048], cand[16];
		int at = -1, missing = 0;

		snprintf(path, sizeof(path), "/case/");
		for (size_t i = 0; i < alen; i++)
			snprintf(path + strlen(path),
			    sizeof(path) - strlen(path), "-%.7s%c", got + n - 7,
			    alphabet[i]);
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "-");
		injectkit_request_to(k, req, sizeof(req), "api.test", "GET",
		    path, true, "close");
		char *resp = injectkit_send_on(k->channel, req);
		if (resp[0] != '\0')
			(*ret_n)++;
		if (http_status(resp) != 200) {
			free(resp);
			break;
		}
		for (size_t i = 0; i < alen; i++) {
			snprintf(cand, sizeof(cand), "-%.7s%c-", got + n - 7,
			    alphabet[i]);
			if (strstr(resp, cand) == NULL) {
				at = (int)i;
				missing++;
			}
		}
		free(resp);
		if (missing != 1)
			break;
		got[n++] = alphabet[at];
		got[n] = '\0';
	}
}

/*
 * injectkit_job_start of the manifest "writer" (injectkit_writer_manifest),
 * its channel asked again while the proxy answers 503 (its feed not back
 * yet after a broker's restart), 10 s at most.
 */
static void
job_start(struct injectkit *k)
{
	json_decref(
	    harness_expect(&k->broker, 200, "PUT", "/v1/manifests/writer",
		k->admin, NULL, injectkit_writer_manifest(k)));
	injectkit_job_of(k, "writer", 10000, k->job, k->channel, NULL);
	injectkit_mint_on(k->channel, k->tok, sizeof(k->tok));
}

START_TEST(reflections_past_the_budget_burn_the_version)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *u = upstream_start(NULL, NULL);
	json_t *s;
	int n;

	ck_assert_ptr_nonnull(u);
	injectkit_stack_start(&k, hosts, "proxy-budget", NULL);
	k.up_port = upstream_port(u);
	json_decref(put_key(&k.broker, k.admin, value1, 6));
	s = get_key(&k.broker, k.admin);
	ck_assert_int_eq(num(s, "reflect_budget"), 6);
	ck_assert_int_eq(num(s, "reflections"), 0);
	ck_assert(json_is_false(json_object_get(s, "burned")));
	json_decref(s);

	/* Job 1: three answers redacted, the fourth ends it. */
	job_start(&k);
	reflect_own(&k, &n);
	ck_assert_int_eq(n, 4);
	s = wait_reflections(&k.broker, k.admin, 4);
	ck_assert_msg(num(s, "reflections") == 4,
	    "the broker counted %lld reflections of job 1's 4",
	    num(s, "reflections"));
	ck_assert(json_is_false(json_object_get(s, "burned")));
	json_decref(s);

	/* The count is the database's: it survives a restart. */
	ck_assert_int_eq(daemon_stop(&k.broker), 0);
	ck_assert_int_eq(daemon_restart(&k.broker), 0);
	s = get_key(&k.broker, k.admin);
	ck_assert_int_eq(num(s, "reflections"), 4);
	json_decref(s);

	/* Job 2 takes the version past its budget of 6. */
	job_start(&k);
	reflect_own(&k, &n);
	s = wait_reflections(&k.broker, k.admin, 8);
	ck_assert_int_ge(num(s, "reflections"), 6);
	ck_assert_msg(json_is_true(json_object_get(s, "burned")), "%s",
	    json_dumps(s, JSON_COMPACT));
	ck_assert_str_eq(json_string_value(json_object_get(s, "burned_reason")),
	    "reflect_budget");
	ck_assert_int_gt(num(s, "burned_at"), 0);
	json_decref(s);
	ck_assert_int_eq(harness_audit_count(&k.broker, k.admin,
			     "secret_burned"),
	    1);
	ck_assert(injectkit_logged(&k.broker, "secret_burned"));
	ck_assert_int_eq(injectkit_metric(&k.broker,
			     "cordon_broker_secrets_burned_total"),
	    1);
	ck_assert_int_eq(injectkit_metric(&k.proxy,
			     "cordon_proxy_reflections_unreported_total"),
	    0);

	/* Job 3: its injected request is refused, nothing goes up. */
	job_start(&k);
	unsigned before = upstream_requests(u);
	char *resp = injectkit_ask(&k, "GET", "/case/after-burn", true);
	ck_assert_msg(http_status(resp) == 403, "%.400s", resp);
	ck_assert_msg(strstr(resp, "secret_burned") != NULL, "%.400s", resp);
	free(resp);
	ck_assert_uint_eq(upstream_requests(u), before);
	ck_assert(injectkit_decisions_hold(&k.proxy, "secret_burned"));
	ck_assert_int_ge(injectkit_metric(&k.broker,
			     "cordon_broker_releases_burned_total"),
	    1);

	/* A rotation: version 2 has a fresh budget (the same 6). */
	s = put_key(&k.broker, k.admin, value2, 0);
	ck_assert_int_eq(num(s, "version"), 2);
	json_decref(s);
	s = get_key(&k.broker, k.admin);
	ck_assert(json_is_false(json_object_get(s, "burned")));
	ck_assert_int_eq(num(s, "reflections"), 0);
	ck_assert_int_eq(num(s, "reflect_budget"), 6);
	json_decref(s);
	job_start(&k);
	resp = injectkit_ask(&k, "GET", "/case/after-rotation", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	char *head = upstream_last_head(u), want[128];
	snprintf(want, sizeof(want), "Key %s", value2);
	ck_assert_ptr_nonnull(head);
	ck_assert_msg(strstr(head, want) != NULL, "%s", head);
	free(head);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

/* B's rule: api.test on k's upstream port, GET, /open/, no inject. */
START_TEST(a_trip_of_a_scan_only_key_burns_at_once)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *u = upstream_start(NULL, NULL);
	char req[1024], chan[300];
	json_t *s;

	ck_assert_ptr_nonnull(u);
	injectkit_stack_start(&k, hosts, "proxy-budget", NULL);
	k.up_port = upstream_port(u);
	json_decref(put_key(&k.broker, k.admin, value1, 0));
	s = get_key(&k.broker, k.admin);
	ck_assert_int_eq(num(s, "reflect_budget"), 8); /* the default */
	json_decref(s);
	/* A's manifest binds api.test; B reads there, injecting nothing. */
	json_decref(
	    harness_expect(&k.broker, 200, "PUT", "/v1/manifests/writer",
		k.admin, NULL, injectkit_writer_manifest(&k)));
	injectkit_job_open(&k, "reader",
	    injectkit_manifest("reader",
		json_pack("[o]", injectkit_open_rule(&k, "api.test"))),
	    NULL, chan, NULL);
	/* The echo of the key's secret bytes (the public prefix's last 7
	 * and one guessed byte are none for B: it_tripwin). */
	injectkit_request_to(&k, req, sizeof(req), "api.test", "GET",
	    "/open/-0123456789abcdef-", false, "close");
	free(injectkit_send_on(chan, req));
	s = wait_reflections(&k.broker, k.admin, 1);
	ck_assert_msg(json_is_true(json_object_get(s, "burned")), "%s",
	    json_dumps(s, JSON_COMPACT));
	ck_assert_str_eq(json_string_value(json_object_get(s, "burned_reason")),
	    "guard_tripped");
	json_decref(s);
	/* The writer's injection is refused from now on. */
	job_start(&k);
	unsigned before = upstream_requests(u);
	char *resp = injectkit_ask(&k, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 403 &&
		strstr(resp, "secret_burned") != NULL,
	    "%.400s", resp);
	free(resp);
	ck_assert_uint_eq(upstream_requests(u), before);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

/* --- PostgreSQL: two brokers, one budget ---------------------------------- */

struct report_arg {
	const struct daemon *broker;
	const char *verifier, *path;
	long status;
};

static void *
report_thread(void *p)
{
	struct report_arg *a = p;
	json_t *body = json_pack("{s:i, s:s, s:i}", "version", 1, "event",
	    "reflected", "count", 1);

	json_decref(harness_call(a->broker, "POST", a->path, a->verifier, NULL,
	    body, &a->status));
	json_decref(body);
	return NULL;
}

START_TEST(two_brokers_share_one_budget)
{
	char url[400], dir[300], cfg[1500], name[64], rpath[300], path[400];
	char admin[128], launcher[128], verifier[128], keyp[400];
	struct daemon a, b;
	json_t *s, *j;

	snprintf(name, sizeof(name), "rb%d", (int)getpid());
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

	json_decref(put_key(&a, admin, value1, 4));
	struct injectkit k = { .up_port = 9 };
	json_decref(harness_expect(&a, 200, "PUT", "/v1/manifests/writer",
	    admin, NULL, injectkit_writer_manifest(&k)));
	j = harness_expect(&b, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "writer"));
	snprintf(rpath, sizeof(rpath), "/v1/jobs/%s/secrets/up-key/reflections",
	    json_string_value(json_object_get(j, "job")));
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/up-key/release",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	json_decref(
	    harness_expect(&b, 200, "POST", path, verifier, NULL, NULL));

	/* Three at A, then the version at B says so. */
	for (int i = 0; i < 3; i++) {
		s = harness_expect(&a, 200, "POST", rpath, verifier, NULL,
		    json_pack("{s:i, s:s, s:i}", "version", 1, "event",
			"reflected", "count", 1));
		ck_assert(json_is_false(json_object_get(s, "burned")));
		json_decref(s);
	}
	s = get_key(&b, admin);
	ck_assert_int_eq(num(s, "reflections"), 3);
	ck_assert(json_is_false(json_object_get(s, "burned")));
	json_decref(s);
	json_decref(
	    harness_expect(&a, 200, "POST", path, verifier, NULL, NULL));

	/* Eight at once, at both: each counted, the version burned once. */
	struct report_arg args[8];
	pthread_t t[8];
	for (int i = 0; i < 8; i++) {
		args[i] =
		    (struct report_arg){ i % 2 ? &a : &b, verifier, rpath, 0 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, report_thread,
				     &args[i]),
		    0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(args[i].status, 200);
	}
	s = get_key(&a, admin);
	ck_assert_int_eq(num(s, "reflections"), 11);
	ck_assert(json_is_true(json_object_get(s, "burned")));
	json_decref(s);
	ck_assert_int_eq(harness_audit_count(&b, admin, "secret_burned"), 1);
	/* Refused at either broker. */
	s = harness_expect(&b, 403, "POST", path, verifier, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(s, "error")),
	    "secret_burned");
	json_decref(s);
	json_decref(
	    harness_expect(&a, 403, "POST", path, verifier, NULL, NULL));
	/* A rotation at B: released again at A. */
	json_decref(put_key(&b, admin, value2, 0));
	s = harness_expect(&a, 200, "POST", path, verifier, NULL, NULL);
	ck_assert_int_eq(num(s, "version"), 2);
	json_decref(s);
	ck_assert_int_eq(daemon_stop(&a), 0);
	ck_assert_int_eq(daemon_stop(&b), 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("reflectbudget");
	TCase *tc = tcase_create("sqlite");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, reflections_past_the_budget_burn_the_version);
	tcase_add_test(tc, a_trip_of_a_scan_only_key_burns_at_once);
	suite_add_tcase(s, tc);
	if (have_pg) {
		TCase *tp = tcase_create("postgresql");
		tcase_set_timeout(tp, 60);
		tcase_add_test(tp, two_brokers_share_one_budget);
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
		printf("it_reflectbudget: CORDON_TEST_NO_PG=1: the PostgreSQL "
		       "case skipped\n");
	} else if (pg_start(&pg, err, sizeof(err)) < 0) {
		fprintf(stderr, "it_reflectbudget: %s\n", err);
		return 1;
	} else
		have_pg = true;
	rc = harness_main(suite());
	if (have_pg)
		pg_destroy(&pg);
	return rc;
}
