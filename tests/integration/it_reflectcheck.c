/*
 * A proxy's report of a reflection counts only for a job that held the
 * secret (issue 18, the last session's noticed): POST
 * /v1/jobs/{job}/secrets/{name}/reflections took any job and any static
 * secret, so the verifier's key alone could burn any version for the
 * fleet (a trip burns at once), even one the named job never held. Now a
 * report counts only for a job running or ended within
 * REFLECTIONS_ENDED_WINDOW_S whose manifest version injects the secret
 * (any event) or, for a trip, reaches a place the secret is bound to (a
 * job released it to scan for); else 409 and nothing counted. And
 * reflect_budget on an issuer secret's PUT, which did nothing, is 422.
 * On sqlite and on PostgreSQL (bindkit: a private server, skipped with
 * CORDON_TEST_NO_PG=1). No job is spawned (uid base 1503000 reserved).
 */
#include "bindkit.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* POSTs a report of event for job and up-key's version 1: the status,
 * the answer's error code into err (cap bytes). */
static long
report(const char *job, const char *secret, const char *event, int count,
    char *err, size_t cap)
{
	char path[300];
	long st;
	json_t *r;

	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/%s/reflections", job,
	    secret);
	json_t *body = json_pack("{s:i, s:s, s:i}", "version", 1, "event",
	    event, "count", count);
	r = harness_call(&bk.broker, "POST", path, bk.verifier, NULL, body,
	    &st);
	json_decref(body);
	const char *e = json_string_value(json_object_get(r, "error"));
	snprintf(err, cap, "%s", e != NULL ? e : "(none)");
	json_decref(r);
	return st;
}

/*
 * up-key (declared at www.api.test) and other-key; manifests: "a"
 * injects up-key at api.test, "o" injects other-key at other.test, "g"
 * reads www.api.test injecting nothing (a job scanned for up-key), "n"
 * reads nothing.test. A job of each into the four (64 bytes each).
 */
static void
setup_jobs(char a[64], char o[64], char g[64], char n[64])
{
	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s, s:i, s:[s]}", "value",
		"sk_live_check_0123456789ab", "reflect_budget", 3,
		"guard_hosts", "www.api.test"));
	bindkit_secret_put(200, "other-key",
	    json_pack("{s:s}", "value", "sk_live_other_0123456789ab"));
	json_decref(bindkit_manifest_put(200, "a",
	    json_pack("[o]", bindkit_rule("api.test", "up-key"))));
	json_decref(bindkit_manifest_put(200, "o",
	    json_pack("[o]", bindkit_rule("other.test", "other-key"))));
	json_decref(bindkit_manifest_put(200, "g",
	    json_pack("[o]", bindkit_rule("www.api.test", NULL))));
	json_decref(bindkit_manifest_put(200, "n",
	    json_pack("[o]", bindkit_rule("nothing.test", NULL))));
	bindkit_job_of("a", a, 64);
	bindkit_job_of("o", o, 64);
	bindkit_job_of("g", g, 64);
	bindkit_job_of("n", n, 64);
}

START_TEST(a_report_counts_only_for_a_job_that_held_the_secret)
{
	char a[64], o[64], g[64], n[64], err[64];
	long st;

	setup_jobs(a, o, g, n);
	/* A job that injects another secret, one that reads elsewhere: no
	 * report of theirs counts, not even a trip (which burns at once). */
	st = report(o, "up-key", "reflect_limit", 1000, err, sizeof(err));
	ck_assert_msg(st == 409 && strcmp(err, "not_injected") == 0,
	    "o's reflect_limit of up-key, a secret its manifest does not "
	    "inject: %ld %s",
	    st, err);
	st = report(n, "up-key", "guard_tripped", 1, err, sizeof(err));
	ck_assert_msg(st == 409 && strcmp(err, "not_guarded") == 0,
	    "n's trip on up-key, bound nowhere its manifest reaches: %ld %s",
	    st, err);
	/* g was released it to scan only: a trip, not its own reflection. */
	st = report(g, "up-key", "reflected", 1, err, sizeof(err));
	ck_assert_msg(st == 409 && strcmp(err, "not_injected") == 0,
	    "g's reflected of up-key, scanned for only: %ld %s", st, err);
	ck_assert_int_eq(bindkit_secret_field("up-key", "reflections"), 0);
	ck_assert_msg(bindkit_secret_field("up-key", "burned") == 0,
	    "up-key burned by reports of jobs that never held it");
	ck_assert_int_eq(harness_audit_count(&bk.broker, bk.admin,
			     "secret_reflected"),
	    0);
	ck_assert_int_eq(harness_audit_count(&bk.broker, bk.admin,
			     "secret_burned"),
	    0);

	/* The injecting job's report counts; the guarding job's trip burns. */
	st = report(a, "up-key", "reflected", 1, err, sizeof(err));
	ck_assert_msg(st == 200, "a's reflected: %ld %s", st, err);
	ck_assert_int_eq(bindkit_secret_field("up-key", "reflections"), 1);
	st = report(g, "up-key", "guard_tripped", 1, err, sizeof(err));
	ck_assert_msg(st == 200, "g's trip: %ld %s", st, err);
	ck_assert_int_eq(bindkit_secret_field("up-key", "burned"), 1);
	ck_assert_int_eq(harness_audit_count(&bk.broker, bk.admin,
			     "secret_reflected"),
	    2);
	ck_assert_int_eq(harness_audit_count(&bk.broker, bk.admin,
			     "secret_burned"),
	    1);
	/* An unknown job is 404 as before. */
	st = report("job_nonesuch", "up-key", "reflected", 1, err, sizeof(err));
	ck_assert_msg(st == 404 && strcmp(err, "unknown_job") == 0, "%ld %s",
	    st, err);
}
END_TEST

/* A proxy tells a report again for a minute after a job's end: taken
 * after a revoke, refused once the job ended long before (its revoked_at
 * moved back in the database, the broker stopped meanwhile). */
START_TEST(a_report_for_a_job_ended_long_ago_is_refused)
{
	char a[64], o[64], g[64], n[64], err[64], path[300], db[400], q[400];
	long st;

	setup_jobs(a, o, g, n);
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", a);
	json_decref(harness_expect(&bk.broker, 200, "POST", path, bk.launcher,
	    NULL, NULL));
	st = report(a, "up-key", "reflected", 1, err, sizeof(err));
	ck_assert_msg(st == 200, "a's reflected just after its end: %ld %s", st,
	    err);

	ck_assert_int_eq(daemon_stop(&bk.broker), 0);
	snprintf(db, sizeof(db), "%s/var/broker/broker.db", bk.broker.dir);
	snprintf(q, sizeof(q),
	    "UPDATE jobs SET revoked_at = revoked_at - 7200 WHERE id = '%s'",
	    a);
	char *argv[] = { "/usr/bin/sqlite3", db, q, NULL };
	char out[512], serr[512];
	ck_assert_msg(harness_run(argv, out, sizeof(out), serr, sizeof(serr)) ==
		0,
	    "sqlite3: %s", serr);
	ck_assert_int_eq(daemon_restart(&bk.broker), 0);
	st = report(a, "up-key", "guard_tripped", 1, err, sizeof(err));
	ck_assert_msg(st == 409 && strcmp(err, "job_not_running") == 0,
	    "a's trip two hours after its end: %ld %s", st, err);
	ck_assert_int_eq(bindkit_secret_field("up-key", "reflections"), 1);
	ck_assert_int_eq(bindkit_secret_field("up-key", "burned"), 0);
}
END_TEST

/* An issuer's credentials are per job and short-lived, never counted:
 * a reflect_budget there would do nothing. */
START_TEST(reflect_budget_is_for_static_secrets_only)
{
	json_t *issuer = json_pack("{s:s, s:s, s:s, s:s, s:i}", "kind",
	    "oauth_client_credentials", "token_url",
	    "https://127.0.0.1:9/oauth/token", "client_id", "cordon-test",
	    "client_secret", "cs_0123456789", "reflect_budget", 5);
	json_t *r = harness_expect(&bk.broker, 422, "PUT",
	    "/v1/secrets/things-api", bk.admin, NULL, issuer);
	json_t *p = json_array_get(json_object_get(r, "problems"), 0);

	ck_assert_str_eq(json_string_value(json_object_get(p, "field")),
	    "reflect_budget");
	ck_assert_msg(strstr(json_string_value(json_object_get(p, "problem")),
			  "static secrets only") != NULL,
	    "%s", json_string_value(json_object_get(p, "problem")));
	json_decref(r);
	json_decref(harness_expect(&bk.broker, 404, "GET",
	    "/v1/secrets/things-api", bk.admin, NULL, NULL));
	/* Without it, and a static one with it, as before. */
	bindkit_secret_put(200, "things-api",
	    json_pack("{s:s, s:s, s:s, s:s}", "kind",
		"oauth_client_credentials", "token_url",
		"https://127.0.0.1:9/oauth/token", "client_id", "cordon-test",
		"client_secret", "cs_0123456789"));
	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s, s:i}", "value", "sk_live_check_0123456789ab",
		"reflect_budget", 5));
	ck_assert_int_eq(bindkit_secret_field("up-key", "reflect_budget"), 5);
}
END_TEST

static TCase *
tests(const char *name, void (*up)(void), bool sqlite)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, up, bindkit_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_report_counts_only_for_a_job_that_held_the_secret);
	tcase_add_test(tc, reflect_budget_is_for_static_secrets_only);
	if (sqlite)
		tcase_add_test(tc,
		    a_report_for_a_job_ended_long_ago_is_refused);
	return tc;
}

int
main(void)
{
	return bindkit_main("it_reflectcheck", "reflectcheck", tests);
}
