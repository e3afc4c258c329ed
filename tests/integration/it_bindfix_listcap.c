/*
 * The bindings' list stays within what every proxy reads (issue 18,
 * redteam3's #9): a proxy refuses a list past GUARD_BINDINGS_MAX (1,024)
 * secrets or GUARD_KEYS_MAX (16,384) hosts and addresses whole, and three
 * refreshes later every request of every job is 503
 * bindings_unavailable; the broker capped neither, nor the addresses one
 * secret is seen at (a name resolving anew each time adds one a request).
 * Now POST /v1/bindings past 64 addresses of a secret, and a POST, a
 * secret's PUT or a manifest's PUT that would take the list past 1,000
 * secrets or 16,000 hosts and addresses, answer 409 bindings_cap. On
 * sqlite, and the per-secret cap on PostgreSQL too (a private server;
 * skipped with CORDON_TEST_NO_PG=1). No job is spawned (uid base 1397000 reserved).
 */
#include "bindkit.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A status, the answer's error code into err (cap bytes); body taken. */
static long
call(const char *method, const char *path, const char *key, json_t *body,
    char *err, size_t cap)
{
	long st;
	json_t *r =
	    harness_call(&bk.broker, method, path, key, NULL, body, &st);
	const char *e = json_string_value(json_object_get(r, "error"));

	snprintf(err, cap, "%s", e != NULL ? e : "(none)");
	json_decref(r);
	json_decref(body);
	return st;
}

/* Secret name PUT with n guard_hosts <name>-<i>.test: its status. */
static long
put_declared(const char *name, int n, char *err, size_t cap)
{
	char path[200], h[128];
	json_t *hosts = json_array();

	for (int i = 0; i < n; i++) {
		snprintf(h, sizeof(h), "%s-%d.test", name, i);
		json_array_append_new(hosts, json_string(h));
	}
	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	return call("PUT", path, bk.admin,
	    json_pack("{s:s, s:o}", "value", "sk_cap_0123456789abcdef",
		"guard_hosts", hosts),
	    err, cap);
}

START_TEST(a_secret_is_seen_at_64_addresses_at_most)
{
	char a[64], addr[64], err[64];
	long st;

	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s}", "value", "sk_cap_0123456789abcdef"));
	json_decref(bindkit_manifest_put(200, "a",
	    json_pack("[o]", bindkit_rule("api.test", "up-key"))));
	bindkit_job_of("a", a, sizeof(a));
	for (int i = 1; i <= 65; i++) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", i);
		st = call("POST", "/v1/bindings", bk.verifier,
		    json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job", a,
			"addr", addr),
		    err, sizeof(err));
		if (i <= 64)
			ck_assert_msg(st == 200, "address %d: %ld %s", i, st,
			    err);
		else
			ck_assert_msg(st == 409 &&
				strcmp(err, "bindings_cap") == 0,
			    "the 65th address of up-key: %ld %s", st, err);
	}
	/* One it has already: known, not refused. */
	st = call("POST", "/v1/bindings", bk.verifier,
	    json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job", a, "addr",
		"127.0.0.1:7"),
	    err, sizeof(err));
	ck_assert_msg(st == 200, "a known address: %ld %s", st, err);
}
END_TEST

START_TEST(the_list_stays_within_the_proxys_caps)
{
	char a[64], name[64], err[64];
	long st;
	json_t *j;

	bindkit_secret_put(200, "s0",
	    json_pack("{s:s}", "value", "sk_cap_0123456789abcdef"));
	json_decref(bindkit_manifest_put(200, "a",
	    json_pack("[o]", bindkit_rule("api.test", "s0"))));
	/* 1,000 secrets, 1 + 999 x 16 + 15 = 16,000 hosts. */
	for (int i = 1; i <= 999; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		st = put_declared(name, 16, err, sizeof(err));
		ck_assert_msg(st == 200, "secret %s: %ld %s", name, st, err);
	}
	st = put_declared("s0", 15, err, sizeof(err));
	ck_assert_msg(st == 200, "s0's 15 names: %ld %s", st, err);

	/* One more host or address, or one more secret listed: refused (the
	 * job made now: one that never opened is ended within seconds). */
	bindkit_job_of("a", a, sizeof(a));
	st = call("POST", "/v1/bindings", bk.verifier,
	    json_pack("{s:s, s:s, s:s}", "secret", "s0", "job", a, "addr",
		"127.0.0.1:8443"),
	    err, sizeof(err));
	ck_assert_msg(st == 409 && strcmp(err, "bindings_cap") == 0,
	    "an address past 16,000 keys: %ld %s", st, err);
	st = put_declared("s0", 16, err, sizeof(err));
	ck_assert_msg(st == 409 && strcmp(err, "bindings_cap") == 0,
	    "a 16th name of s0 past 16,000 keys: %ld %s", st, err);
	st = put_declared("s1000", 1, err, sizeof(err));
	ck_assert_msg(st == 409 && strcmp(err, "bindings_cap") == 0,
	    "a 1,001st secret bound: %ld %s", st, err);
	/* Unbound, a secret is not listed; injecting it would list it. */
	bindkit_secret_put(200, "extra",
	    json_pack("{s:s}", "value", "sk_cap_0123456789abcdef"));
	j = bindkit_manifest_put(409, "b",
	    json_pack("[o]", bindkit_rule("x.test", "extra")));
	ck_assert_str_eq(json_string_value(json_object_get(j, "error")),
	    "bindings_cap");
	/* Its message names the cap and the count (the store's now). */
	ck_assert_str_eq(json_string_value(json_object_get(j, "message")),
	    "the bindings would list 1001 secrets, past the 1000 every proxy "
	    "reads: delete the secrets no manifest injects, or their "
	    "guard_hosts");
	json_decref(j);
	j = bindkit_manifest_put(409, "k",
	    json_pack("[o]", bindkit_rule("new.test", "s1")));
	ck_assert_str_eq(json_string_value(json_object_get(j, "message")),
	    "the bindings would hold 16001 hosts and addresses, past the "
	    "16000 every proxy reads: shorten secrets' guard_hosts, or "
	    "delete the secrets no manifest injects");
	json_decref(j);
	/* A place already bound costs nothing. */
	json_decref(bindkit_manifest_put(200, "c",
	    json_pack("[o]", bindkit_rule("api.test", "s0"))));

	j = harness_expect(&bk.broker, 200, "GET", "/v1/bindings", bk.verifier,
	    NULL, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "bindings")),
	    1000);
	json_decref(j);
}
END_TEST

/* The 1,000 PUTs on sqlite only (the count is the store's list either
 * way): the file's run stays under a minute. */
static TCase *
tests(const char *name, void (*up)(void), bool long_one)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, up, bindkit_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_secret_is_seen_at_64_addresses_at_most);
	if (long_one)
		tcase_add_test(tc, the_list_stays_within_the_proxys_caps);
	return tc;
}

int
main(void)
{
	return bindkit_main("it_bindfix_listcap", "bindfix_listcap", tests);
}
