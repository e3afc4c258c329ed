/*
 * The scan release's reach (issue 18, redteam3's #7): the verifier key
 * (every proxy's, one key) asks for a bound static secret's value for a
 * job, to scan that job's answers from a host (and an address) for it.
 * Before, the broker checked only that the job ran and that the secret
 * was bound somewhere, so the key released every bound secret for any
 * running job, whatever its manifest. Now the job's manifest must have a
 * rule whose host pattern covers the host asked for, and either that
 * host is one of the secret's bindings, or the address is one and a rule
 * covering the host is for the address's port; else 403 not_bound_here.
 * No job is spawned (uid base 1395000 reserved).
 */
#include "harness.h"
#include "injectkit.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char value[] = "sk_live_scanall_0123456789abcdef";

/* A rule that injects nothing. */
static json_t *
plain_rule(const char *host, int port)
{
	return json_pack("{s:s, s:i, s:[s], s:[s], s:s}", "host", host, "port",
	    port, "methods", "GET", "paths", "/", "reason", "a reader");
}

/* A job of a new manifest name with egress rules, its id into id. */
static void
job_of(struct injectkit *k, const char *name, json_t *egress, char *id,
    size_t cap)
{
	json_t *j;

	json_decref(harness_expect(&k->broker, 200, "PUT",
	    (snprintf(id, cap, "/v1/manifests/%s", name), id), k->admin, NULL,
	    injectkit_manifest(name, egress)));
	j = harness_expect(&k->broker, 201, "POST", "/v1/jobs", k->launcher,
	    NULL, json_pack("{s:s}", "manifest", name));
	snprintf(id, cap, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
}

/* The scan release of up-key for job at host (and addr): its status; the
 * error code or the value into what (cap bytes). */
static long
scan(struct injectkit *k, const char *job, const char *host, const char *addr,
    char *what, size_t cap)
{
	char path[400];
	long st;
	json_t *r;

	snprintf(path, sizeof(path),
	    "/v1/jobs/%s/secrets/up-key/release?purpose=scan&host=%s%s%s", job,
	    host, addr != NULL ? "&addr=" : "", addr != NULL ? addr : "");
	r = harness_call(&k->broker, "POST", path, k->verifier, NULL, NULL,
	    &st);
	const char *v = json_string_value(json_object_get(r, "value"));
	const char *e = json_string_value(json_object_get(r, "error"));
	snprintf(what, cap, "%s", v != NULL ? v : e != NULL ? e : "(none)");
	json_decref(r);
	return st;
}

START_TEST(a_scan_release_for_a_job_that_reaches_no_bound_place_is_refused)
{
	struct injectkit k = { .up_pid = -1 };
	char other[128], reader[128], passer[128], writer[128], path[300];
	char what[128];
	long st;

	injectkit_stack_start(&k, "127.0.0.1 api.test\n", "proxy-broker", NULL);
	injectkit_secret(&k, "up-key", value);
	k.up_port = 9;
	/* A's manifest binds api.test. */
	job_of(&k, "writer",
	    json_pack("[o]", injectkit_inject_rule(&k, false, NULL, NULL)),
	    writer, sizeof(writer));
	job_of(&k, "other", json_pack("[o]", plain_rule("elsewhere.test", 80)),
	    other, sizeof(other));

	/* The control: an injection release of up-key for it is refused. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/up-key/release",
	    other);
	json_t *r =
	    harness_call(&k.broker, "POST", path, k.verifier, NULL, NULL, &st);
	ck_assert_msg(st >= 400 && st < 500, "injection release: %ld", st);
	json_decref(r);

	/* A host nobody bound, a bound host its manifest does not reach. */
	st = scan(&k, other, "elsewhere.test", NULL, what, sizeof(what));
	ck_assert_msg(st == 403 && strcmp(what, "not_bound_here") == 0,
	    "scan release for a job of \"other\" at elsewhere.test: %ld, %s",
	    st, what);
	st = scan(&k, other, "api.test", NULL, what, sizeof(what));
	ck_assert_msg(st == 403 && strcmp(what, "not_bound_here") == 0,
	    "scan release for a job of \"other\" at api.test: %ld, %s", st,
	    what);

	/* A job whose rule reaches the bound host gets it. */
	job_of(&k, "reader", json_pack("[o]", plain_rule("api.test", 9)),
	    reader, sizeof(reader));
	st = scan(&k, reader, "api.test", "127.0.0.1:9", what, sizeof(what));
	ck_assert_msg(st == 200 && strcmp(what, value) == 0,
	    "reader at api.test: %ld, %s", st, what);

	/* An address A's request went to: a name of a job's rule at that
	 * port reaches it, at another port it does not. */
	json_decref(harness_expect(&k.broker, 200, "POST", "/v1/bindings",
	    k.verifier, NULL,
	    json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job", writer,
		"addr", "127.0.0.1:9")));
	job_of(&k, "passer",
	    json_pack("[o, o]", plain_rule("*.api.test", 9),
		plain_rule("x.api.test", 10)),
	    passer, sizeof(passer));
	st = scan(&k, passer, "pass.api.test", "127.0.0.1:9", what,
	    sizeof(what));
	ck_assert_msg(st == 200 && strcmp(what, value) == 0,
	    "passer at pass.api.test, a bound address: %ld, %s", st, what);
	st = scan(&k, passer, "pass.api.test", "127.0.0.1:10", what,
	    sizeof(what));
	ck_assert_msg(st == 403 && strcmp(what, "not_bound_here") == 0,
	    "passer at an address nobody bound: %ld, %s", st, what);
	st = scan(&k, passer, "x.api.test", "127.0.0.1:9", what, sizeof(what));
	ck_assert_msg(st == 200, "x.api.test is under *.api.test: %ld, %s", st,
	    what);
	st = scan(&k, other, "elsewhere.test", "127.0.0.1:9", what,
	    sizeof(what));
	ck_assert_msg(st == 403 && strcmp(what, "not_bound_here") == 0,
	    "other's rule is for port 80, the address at 9: %ld, %s", st, what);
	st = scan(&k, passer, "api.test", "127.0.0.1:9", what, sizeof(what));
	ck_assert_msg(st == 403 && strcmp(what, "not_bound_here") == 0,
	    "*.api.test does not cover api.test: %ld, %s", st, what);
	injectkit_stop(&k);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("bindfix_scan");
	TCase *tc = tcase_create("broker");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc,
	    a_scan_release_for_a_job_that_reaches_no_bound_place_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
