/*
 * A burned value must not come back as a fresh version (redteam5 #5):
 * after the broker burns a static secret's version (past its
 * reflect_budget, or at a guard trip), a PUT of the same value as the
 * next version started a fresh count, so the burn bounded nothing. Now
 * the burn records the value's keyed digest (burned_values) and a PUT of
 * that value, under the same name or another, is 409 value_burned with
 * nothing stored and the refusal audited; a different value is taken.
 * The burn is driven by the verifier's reflections route for a job whose
 * manifest injects the secret (no job is spawned: uid base 1511000
 * reserved). On sqlite and on PostgreSQL (bindkit: a private server,
 * skipped with CORDON_TEST_NO_PG=1).
 */
#include "bindkit.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BURNED_VALUE "sk_live_burnreput_0123456789abcdef"

/* PUTs value as name: the status, the answer's error into err. */
static long
put_value(const char *name, const char *value, char *err, size_t cap)
{
	char path[200];
	long st;
	json_t *body = json_pack("{s:s}", "value", value), *r;

	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	r = harness_call(&bk.broker, "PUT", path, bk.admin, NULL, body, &st);
	json_decref(body);
	const char *e = json_string_value(json_object_get(r, "error"));
	const char *m = json_string_value(json_object_get(r, "message"));
	snprintf(err, cap, "%s: %s", e != NULL ? e : "(none)",
	    m != NULL ? m : "");
	json_decref(r);
	return st;
}

/* Reports count reflections of version of secret for job: the status. */
static long
report(const char *job, const char *secret, int version, int count)
{
	char path[300];
	long st;
	json_t *body = json_pack("{s:i, s:s, s:i}", "version", version, "event",
	    "reflected", "count", count);

	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/%s/reflections", job,
	    secret);
	json_decref(harness_call(&bk.broker, "POST", path, bk.verifier, NULL,
	    body, &st));
	json_decref(body);
	return st;
}

START_TEST(a_burned_value_put_again_is_refused)
{
	char job[64], err[400];
	long st;

	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s, s:i}", "value", BURNED_VALUE, "reflect_budget",
		2));
	json_decref(bindkit_manifest_put(200, "a",
	    json_pack("[o]", bindkit_rule("api.test", "up-key"))));
	bindkit_job_of("a", job, sizeof(job));
	ck_assert_int_eq(report(job, "up-key", 1, 2), 200);
	ck_assert_msg(bindkit_secret_field("up-key", "burned") == 1,
	    "up-key's version 1 not burned past its budget");

	/* The same value again: refused, nothing stored, audited. */
	st = put_value("up-key", BURNED_VALUE, err, sizeof(err));
	ck_assert_msg(st == 409 && strncmp(err, "value_burned:", 13) == 0,
	    "PUT of up-key's burned value again: %ld %s", st, err);
	ck_assert_msg(strstr(err, "burned on ") != NULL &&
		strstr(err, "put a new key") != NULL,
	    "the refusal's message: %s", err);
	ck_assert_int_eq(bindkit_secret_field("up-key", "version"), 1);
	ck_assert_int_eq(bindkit_secret_field("up-key", "burned"), 1);
	/* The refusal is audited without waiting for the commit. */
	int refused = 0;
	for (int i = 0; i < 100 && refused == 0; i++) {
		refused = harness_audit_count(&bk.broker, bk.admin,
		    "secret_put_refused");
		if (refused == 0)
			usleep(100 * 1000);
	}
	ck_assert_int_eq(refused, 1);
	/* Under another name it is the same leaked value. */
	st = put_value("copy-key", BURNED_VALUE, err, sizeof(err));
	ck_assert_msg(st == 409 && strncmp(err, "value_burned:", 13) == 0,
	    "PUT of the burned value as copy-key: %ld %s", st, err);
	json_decref(harness_expect(&bk.broker, 404, "GET",
	    "/v1/secrets/copy-key", bk.admin, NULL, NULL));

	/* The same credential with a space at an end (the upstream trims a
	 * field value's spaces): no such value is taken at all (redteam6). */
	st = put_value("space-key", BURNED_VALUE " ", err, sizeof(err));
	ck_assert_msg(st == 422,
	    "PUT of the burned value and a trailing space: %ld %s", st, err);
	st = put_value("space-key", "\t" BURNED_VALUE, err, sizeof(err));
	ck_assert_msg(st == 422, "PUT of a tab and the burned value: %ld %s",
	    st, err);
	json_decref(harness_expect(&bk.broker, 404, "GET",
	    "/v1/secrets/space-key", bk.admin, NULL, NULL));
	/* A new value is taken: version 2, nothing counted, not burned. */
	st = put_value("up-key", "sk_live_burnreput_fresh_456789abcdef", err,
	    sizeof(err));
	ck_assert_msg(st == 200, "PUT of a new value: %ld %s", st, err);
	ck_assert_int_eq(bindkit_secret_field("up-key", "version"), 2);
	ck_assert_int_eq(bindkit_secret_field("up-key", "burned"), 0);
	ck_assert_int_eq(bindkit_secret_field("up-key", "reflections"), 0);

	/* Deleting the secret forgets nothing: the value stays burned. */
	json_decref(harness_expect(&bk.broker, 200, "DELETE",
	    "/v1/secrets/up-key", bk.admin, NULL, NULL));
	st = put_value("up-key", BURNED_VALUE, err, sizeof(err));
	ck_assert_msg(st == 409 && strncmp(err, "value_burned:", 13) == 0,
	    "PUT of the burned value after the secret's deletion: %ld %s", st,
	    err);
}
END_TEST

static TCase *
tests(const char *name, void (*up)(void), bool sqlite)
{
	TCase *tc = tcase_create(name);

	(void)sqlite;
	tcase_add_checked_fixture(tc, up, bindkit_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_burned_value_put_again_is_refused);
	return tc;
}

int
main(void)
{
	return bindkit_main("it_burnreput", "burnreput", tests);
}
