/*
 * The bindings' caps hold under reports at once (issue 18, capfail): the
 * broker counted the list, then wrote, so reports racing for the last
 * place of a secret (its 64th address) each saw room and each landed;
 * and a secret's PUT that re-created its kept places (after a DELETE)
 * passed the caps uncounted. Now the count and the write are one
 * transaction (sqlite's writer, PostgreSQL's audit-head lock), and a
 * PUT's re-created places count. On sqlite and on PostgreSQL (a private
 * server; skipped with CORDON_TEST_NO_PG=1). No job is spawned (uid base
 * 1421000 reserved).
 */
#include "bindkit.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RACERS 20

/* POST /v1/bindings of addr for secret and job: status and error. */
static long
tell(const char *secret, const char *job, const char *addr, char *err,
    size_t cap)
{
	long st;
	json_t *q = json_pack("{s:s, s:s, s:s}", "secret", secret, "job", job,
	    "addr", addr);
	json_t *r = harness_call(&bk.broker, "POST", "/v1/bindings",
	    bk.verifier, NULL, q, &st);
	const char *e = json_string_value(json_object_get(r, "error"));

	snprintf(err, cap, "%s", e != NULL ? e : "(none)");
	json_decref(r);
	json_decref(q);
	return st;
}

struct racer {
	const char *job;
	char addr[64], err[64];
	long status;
	pthread_t t;
};

static void *
racer_main(void *arg)
{
	struct racer *r = arg;

	r->status = tell("up-key", r->job, r->addr, r->err, sizeof(r->err));
	return NULL;
}

/* up-key's addresses in the list. */
static size_t
addrs_listed(void)
{
	json_t *j = harness_expect(&bk.broker, 200, "GET", "/v1/bindings",
		   bk.verifier, NULL, NULL),
	       *v;
	size_t i, n = 0;

	json_array_foreach(json_object_get(j, "bindings"), i, v)
	{
		if (strcmp(json_string_value(json_object_get(v, "secret")),
			"up-key") == 0)
			n = json_array_size(json_object_get(v, "addrs"));
	}
	json_decref(j);
	return n;
}

START_TEST(reports_racing_for_the_last_place_land_once)
{
	char a[64], addr[64], err[64];
	struct racer r[RACERS];
	int ok = 0;

	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s}", "value", "sk_race_0123456789abcdef"));
	json_decref(bindkit_manifest_put(200, "a",
	    json_pack("[o]", bindkit_rule("api.test", "up-key"))));
	bindkit_job_of("a", a, sizeof(a));
	for (int i = 1; i <= 63; i++) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", i);
		ck_assert_int_eq(tell("up-key", a, addr, err, sizeof(err)),
		    200);
	}
	for (int i = 0; i < RACERS; i++) {
		r[i].job = a;
		snprintf(r[i].addr, sizeof(r[i].addr), "127.0.0.2:%d",
		    1000 + i);
		ck_assert_int_eq(pthread_create(&r[i].t, NULL, racer_main,
				     &r[i]),
		    0);
	}
	for (int i = 0; i < RACERS; i++)
		pthread_join(r[i].t, NULL);
	for (int i = 0; i < RACERS; i++) {
		if (r[i].status == 200)
			ok++;
		else
			ck_assert_msg(r[i].status == 409 &&
				strcmp(r[i].err, "bindings_cap") == 0,
			    "racer %d: %ld %s", i, r[i].status, r[i].err);
	}
	ck_assert_msg(ok == 1 && addrs_listed() == 64,
	    "%d of %d reports for the last place landed; up-key has %zu "
	    "addresses",
	    ok, RACERS, addrs_listed());
}
END_TEST

/*
 * A secret deleted keeps its seen addresses; 1,000 other secrets listed
 * since (each bound by a manifest's rule), its PUT again would list a
 * 1,001st secret (its rule host and two addresses), past the cap: 409
 * bindings_cap (before: 200, 1,001 secrets listed, past what the broker
 * promises the proxies).
 */
START_TEST(a_put_that_relists_kept_places_counts_them)
{
	char a[64], name[64], h[64], err[64];
	long st;
	json_t *r, *q;

	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s}", "value", "sk_race_0123456789abcdef"));
	json_decref(bindkit_manifest_put(200, "a",
	    json_pack("[o]", bindkit_rule("api.test", "up-key"))));
	bindkit_job_of("a", a, sizeof(a));
	ck_assert_int_eq(tell("up-key", a, "127.0.0.1:1", err, sizeof(err)),
	    200);
	ck_assert_int_eq(tell("up-key", a, "127.0.0.1:2", err, sizeof(err)),
	    200);
	json_decref(harness_expect(&bk.broker, 200, "DELETE",
	    "/v1/secrets/up-key", bk.admin, NULL, NULL));
	/* Each bound by a rule: 100 manifests of 10 (a PUT with guard_hosts
	 * each read the whole list first: minutes under load). */
	for (int i = 1; i <= 1000; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		bindkit_secret_put(200, name,
		    json_pack("{s:s}", "value", "sk_race_0123456789abcdef"));
	}
	for (int m = 0; m < 100; m++) {
		json_t *egress = json_array();
		for (int i = m * 10 + 1; i <= m * 10 + 10; i++) {
			snprintf(name, sizeof(name), "s%d", i);
			snprintf(h, sizeof(h), "s%d.test", i);
			json_array_append_new(egress, bindkit_rule(h, name));
		}
		snprintf(name, sizeof(name), "m%d", m);
		json_decref(bindkit_manifest_put(200, name, egress));
	}
	q = json_pack("{s:s}", "value", "sk_race_0123456789abcdef");
	r = harness_call(&bk.broker, "PUT", "/v1/secrets/up-key", bk.admin,
	    NULL, q, &st);
	json_decref(q);
	const char *e = json_string_value(json_object_get(r, "error"));
	ck_assert_msg(st == 409 && e != NULL && strcmp(e, "bindings_cap") == 0,
	    "the PUT that lists up-key's kept places again: %ld %s", st,
	    e != NULL ? e : "(none)");
	json_decref(r);
	r = harness_expect(&bk.broker, 200, "GET", "/v1/bindings", bk.verifier,
	    NULL, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(r, "bindings")),
	    1000);
	json_decref(r);
	/* Not half made: the secret was not created either. */
	json_decref(harness_expect(&bk.broker, 404, "GET", "/v1/secrets/up-key",
	    bk.admin, NULL, NULL));
}
END_TEST

/* The 1,000 PUTs on sqlite only: the file's run stays under a minute. */
static TCase *
tests(const char *name, void (*up)(void), bool long_one)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, up, bindkit_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, reports_racing_for_the_last_place_land_once);
	if (long_one)
		tcase_add_test(tc, a_put_that_relists_kept_places_counts_them);
	return tc;
}

int
main(void)
{
	return bindkit_main("it_capfail_race", "capfail_race", tests);
}
