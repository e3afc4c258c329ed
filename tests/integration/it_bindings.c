/*
 * The secrets' bindings at a real broker (issue 18's HIGH: a key one
 * job's request left at a service that shows what it stores, read back
 * by another job): a manifest's injecting rule binds its host, a
 * secret's guard_hosts bind the service's other names, GET /v1/bindings
 * and a job's egress answer list them, a proxy's POST /v1/bindings adds
 * an address for a running job whose manifest injects the secret and
 * for no other; a scan release gives a bound static value for a job that
 * does not inject it (purpose scan, audited, counted apart, never its
 * last_used), refuses an unbound secret and an issuer's; a passthrough or
 * upgrade rule that reaches a bound host is refused at the manifest's
 * PUT; a secret's deletion takes its bindings. On sqlite and on
 * PostgreSQL (a private server; skipped with CORDON_TEST_NO_PG=1). No
 * job is spawned.
 */
#include "bindkit.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first problem's field of a 422 answer (static). */
static const char *
field_of(json_t *j)
{
	static char out[128];
	json_t *p = json_array_get(json_object_get(j, "problems"), 0);

	snprintf(out, sizeof(out), "%s",
	    p != NULL ? json_string_value(json_object_get(p, "field")) : "-");
	return out;
}

/* The binding of secret in a list, or NULL. */
static json_t *
binding_in(json_t *list, const char *secret)
{
	size_t i;
	json_t *b;

	json_array_foreach(list, i, b)
	{
		if (strcmp(json_string_value(json_object_get(b, "secret")),
			secret) == 0)
			return b;
	}
	return NULL;
}

/* The strings of array a, joined with ",". */
static const char *
joined(json_t *a)
{
	static char out[512];
	size_t i, n = 0;
	json_t *v;

	out[0] = '\0';
	json_array_foreach(a, i, v)
	{
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s",
		    i > 0 ? "," : "", json_string_value(v));
		ck_assert(n < sizeof(out));
	}
	return out;
}

static json_t *
post_seen(long want, const char *secret, const char *job, const char *addr)
{
	return harness_expect(&bk.broker, want, "POST", "/v1/bindings",
	    bk.verifier, NULL,
	    json_pack("{s:s, s:s, s:s}", "secret", secret, "job", job, "addr",
		addr));
}

static double
metric(const char *name)
{
	char cmd[300], out[8192], *p;
	char *argv[] = { "/usr/bin/curl", "-s", cmd, NULL };
	size_t n = strlen(name);

	snprintf(cmd, sizeof(cmd), "%s/metrics", bk.broker.base);
	char err[256];

	ck_assert_int_eq(harness_run(argv, out, sizeof(out), err, sizeof(err)),
	    0);
	for (p = out; (p = strstr(p, name)) != NULL; p += n)
		if ((p == out || p[-1] == '\n') && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	ck_abort_msg("no %s in /metrics", name);
	return -1;
}

START_TEST(bindings_listed_reported_and_shown)
{
	char a[64], b[64], path[200];
	json_t *j, *e, *list;
	long st;

	/* guard_hosts: names or IP literals, lowercase, no port, no
	 * wildcard; each refusal at its index. */
	j = harness_expect(&bk.broker, 422, "PUT", "/v1/secrets/up-key",
	    bk.admin, NULL,
	    json_pack("{s:s, s:[s, s]}", "value", "sk_bind_0123456789abcdef",
		"guard_hosts", "www.api.test", "API.test"));
	ck_assert_str_eq(field_of(j), "guard_hosts[1]");
	json_decref(j);
	j = harness_expect(&bk.broker, 422, "PUT", "/v1/secrets/up-key",
	    bk.admin, NULL,
	    json_pack("{s:s, s:[s]}", "value", "sk_bind_0123456789abcdef",
		"guard_hosts", "*.api.test"));
	ck_assert_str_eq(field_of(j), "guard_hosts[0]");
	json_decref(j);
	j = harness_expect(&bk.broker, 422, "PUT", "/v1/secrets/up-key",
	    bk.admin, NULL,
	    json_pack("{s:s, s:[s]}", "value", "sk_bind_0123456789abcdef",
		"guard_hosts", "api.test:443"));
	ck_assert_str_eq(field_of(j), "guard_hosts[0]");
	json_decref(j);
	j = harness_expect(&bk.broker, 422, "PUT", "/v1/secrets/up-key",
	    bk.admin, NULL,
	    json_pack("{s:s, s:[s]}", "value", "sk_bind_0123456789abcdef",
		"guard_hosts", "::FFFF:10.0.0.1"));
	json_decref(j);
	/* An IPv6 literal is kept in its canonical form, a v4-mapped one
	 * as its IPv4. */
	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s, s:[s, s]}", "value", "sk_bind_0123456789abcdef",
		"guard_hosts", "www.api.test", "::ffff:10.0.0.1"));
	json_decref(bindkit_manifest_put(200, "a",
	    json_pack("[o]", bindkit_rule("api.test", "up-key"))));
	json_decref(bindkit_manifest_put(200, "b",
	    json_pack("[o]", bindkit_rule("api.test", NULL))));

	j = harness_expect(&bk.broker, 200, "GET", "/v1/bindings", bk.verifier,
	    NULL, NULL);
	ck_assert(json_is_integer(json_object_get(j, "epoch")));
	json_int_t epoch = json_integer_value(json_object_get(j, "epoch"));
	e = binding_in(json_object_get(j, "bindings"), "up-key");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(json_string_value(json_object_get(e, "kind")),
	    "static");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "version")), 1);
	ck_assert_str_eq(joined(json_object_get(e, "hosts")),
	    "10.0.0.1,api.test,www.api.test");
	ck_assert_str_eq(joined(json_object_get(e, "addrs")), "");
	ck_assert_ptr_null(json_object_get(e, "value"));
	json_decref(j);
	/* An admin reads it too; a launcher does not. */
	json_decref(harness_expect(&bk.broker, 200, "GET", "/v1/bindings",
	    bk.admin, NULL, NULL));
	json_decref(harness_call(&bk.broker, "GET", "/v1/bindings", bk.launcher,
	    NULL, NULL, &st));
	ck_assert_int_eq(st, 403);

	/* A running job injecting it: its upstream address is added once. */
	bindkit_job_of("a", a, sizeof(a));
	bindkit_job_of("b", b, sizeof(b));
	j = post_seen(200, "up-key", a, "127.0.0.1:8443");
	ck_assert(json_is_true(json_object_get(j, "added")));
	json_decref(j);
	j = post_seen(200, "up-key", a, "127.0.0.1:8443");
	ck_assert(json_is_false(json_object_get(j, "added")));
	json_decref(j);
	j = post_seen(200, "up-key", a, "[::1]:8443");
	ck_assert(json_is_true(json_object_get(j, "added")));
	json_decref(j);
	/* Fail closed: a job whose manifest injects nothing plants
	 * nothing; unknown jobs and secrets, bad addresses. */
	json_decref(post_seen(409, "up-key", b, "127.0.0.2:8443"));
	json_decref(post_seen(404, "up-key", "job_nope", "127.0.0.2:8443"));
	json_decref(post_seen(404, "nope", a, "127.0.0.2:8443"));
	j = post_seen(422, "up-key", a, "127.0.0.2");
	ck_assert_str_eq(field_of(j), "addr");
	json_decref(j);
	json_decref(post_seen(422, "up-key", a, "[::1:8443"));
	json_decref(post_seen(422, "up-key", a, "127.0.0.2:0"));
	json_t *body = json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job",
	    a, "addr", "127.0.0.3:1");
	json_decref(harness_call(&bk.broker, "POST", "/v1/bindings", bk.admin,
	    NULL, body, &st));
	json_decref(body);
	ck_assert_int_eq(st, 403);

	j = harness_expect(&bk.broker, 200, "GET", "/v1/bindings", bk.verifier,
	    NULL, NULL);
	ck_assert_int_gt(json_integer_value(json_object_get(j, "epoch")),
	    epoch);
	e = binding_in(json_object_get(j, "bindings"), "up-key");
	ck_assert_str_eq(joined(json_object_get(e, "addrs")),
	    "127.0.0.1:8443,[::1]:8443");
	list = json_incref(json_object_get(j, "bindings"));
	json_decref(j);

	/* The egress answer a proxy reads at a channel's open carries the
	 * same list. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/egress", b);
	j = harness_expect(&bk.broker, 200, "GET", path, bk.verifier, NULL,
	    NULL);
	ck_assert(json_equal(json_object_get(j, "bindings"), list));
	json_decref(j);
	json_decref(list);

	/* The secret's metadata shows them. */
	j = harness_expect(&bk.broker, 200, "GET", "/v1/secrets/up-key",
	    bk.admin, NULL, NULL);
	ck_assert_str_eq(joined(json_object_get(j, "hosts")),
	    "10.0.0.1,api.test,www.api.test");
	ck_assert_str_eq(joined(json_object_get(j, "guard_hosts")),
	    "10.0.0.1,www.api.test");
	ck_assert_str_eq(joined(json_object_get(j, "addrs")),
	    "127.0.0.1:8443,[::1]:8443");
	json_decref(j);

	/* Audited, once an address. */
	j = harness_expect(&bk.broker, 200, "GET", "/v1/audit", bk.admin, NULL,
	    NULL);
	size_t i, seen = 0;
	json_array_foreach(json_object_get(j, "records"), i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "event")),
			"binding_seen") == 0) {
			seen++;
			ck_assert_str_eq(json_string_value(
					     json_object_get(e, "job")),
			    a);
		}
	}
	ck_assert_uint_eq(seen, 2);
	json_decref(j);

	/* A job that ended lately: a proxy's tell may land after its end
	 * (the address is a fact either way; it_bindfix_places). */
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", a);
	json_decref(harness_expect(&bk.broker, 200, "POST", path, bk.launcher,
	    NULL, NULL));
	json_decref(post_seen(200, "up-key", a, "127.0.0.4:8443"));

	/* A PUT without guard_hosts keeps them; the deletion takes all. */
	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s}", "value", "sk_bind_fedcba9876543210"));
	j = harness_expect(&bk.broker, 200, "GET", "/v1/secrets/up-key",
	    bk.admin, NULL, NULL);
	ck_assert_str_eq(joined(json_object_get(j, "guard_hosts")),
	    "10.0.0.1,www.api.test");
	json_decref(j);
	json_decref(harness_expect(&bk.broker, 200, "DELETE",
	    "/v1/secrets/up-key", bk.admin, NULL, NULL));
	j = harness_expect(&bk.broker, 200, "GET", "/v1/bindings", bk.verifier,
	    NULL, NULL);
	ck_assert_ptr_null(
	    binding_in(json_object_get(j, "bindings"), "up-key"));
	json_decref(j);
}
END_TEST

START_TEST(scan_release_for_a_job_that_does_not_inject)
{
	char b[64], path[300];
	json_t *j, *e;
	const char *value = "sk_bind_0123456789abcdef";

	/* www.api.test declared: a scan release is for a bound place. */
	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s, s:[s]}", "value", value, "guard_hosts",
		"www.api.test"));
	bindkit_secret_put(200, "lone",
	    json_pack("{s:s}", "value", "sk_lone_0123456"));
	bindkit_secret_put(200, "things-api",
	    json_pack("{s:s, s:s, s:s, s:s, s:[s]}", "kind",
		"oauth_client_credentials", "token_url",
		"https://127.0.0.1:9/oauth/token", "client_id", "cordon-test",
		"client_secret", "cs_0123456789", "guard_hosts",
		"things.test"));
	json_decref(bindkit_manifest_put(200, "a",
	    json_pack("[o]", bindkit_rule("api.test", "up-key"))));
	json_decref(bindkit_manifest_put(200, "b",
	    json_pack("[o, o]", bindkit_rule("www.api.test", NULL),
		bindkit_rule("things.test", NULL))));
	bindkit_job_of("b", b, sizeof(b));

	j = harness_expect(&bk.broker, 200, "GET", "/v1/bindings", bk.verifier,
	    NULL, NULL);
	e = binding_in(json_object_get(j, "bindings"), "things-api");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(json_string_value(json_object_get(e, "kind")),
	    "oauth_client_credentials");
	ck_assert_ptr_null(binding_in(json_object_get(j, "bindings"), "lone"));
	json_decref(j);

	/* Not an injection: b's manifest injects nothing. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/up-key/release", b);
	json_decref(harness_expect(&bk.broker, 403, "POST", path, bk.verifier,
	    NULL, NULL));
	snprintf(path, sizeof(path),
	    "/v1/jobs/%s/secrets/up-key/release?purpose=scan&host=www.api.test"
	    "&addr=127.0.0.1:8443",
	    b);
	j = harness_expect(&bk.broker, 200, "POST", path, bk.verifier, NULL,
	    NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "value")), value);
	ck_assert_str_eq(json_string_value(json_object_get(j, "purpose")),
	    "scan");
	ck_assert_str_eq(json_string_value(json_object_get(j, "source")),
	    "static");
	ck_assert_str_eq(json_string_value(json_object_get(j, "job")), b);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 1);
	json_decref(j);

	/* Unbound, an issuer's, bad arguments, unknowns. */
	snprintf(path, sizeof(path),
	    "/v1/jobs/%s/secrets/lone/release?purpose=scan&host=api.test", b);
	j = harness_expect(&bk.broker, 403, "POST", path, bk.verifier, NULL,
	    NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "error")),
	    "not_bound");
	json_decref(j);
	snprintf(path, sizeof(path),
	    "/v1/jobs/%s/secrets/things-api/release?purpose=scan&host=things."
	    "test",
	    b);
	/* An issuer's: every live credential of it (none yet), no value. */
	j = harness_expect(&bk.broker, 200, "POST", path, bk.verifier, NULL,
	    NULL);
	ck_assert_int_eq(json_array_size(json_object_get(j, "values")), 0);
	ck_assert(json_is_array(json_object_get(j, "values")));
	ck_assert_ptr_null(json_object_get(j, "value"));
	json_decref(j);
	const char *bad[] = { "purpose=scan", "purpose=scan&host=API.test",
		"purpose=scan&host=api.test&addr=api.test:1",
		"purpose=inject&host=api.test" };
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path),
		    "/v1/jobs/%s/secrets/up-key/release?%s", b, bad[i]);
		json_decref(harness_expect(&bk.broker, 422, "POST", path,
		    bk.verifier, NULL, NULL));
	}
	json_decref(harness_expect(&bk.broker, 404, "POST",
	    "/v1/jobs/job_nope/secrets/up-key/release?purpose=scan&host=a.test",
	    bk.verifier, NULL, NULL));
	snprintf(path, sizeof(path),
	    "/v1/jobs/%s/secrets/nope/release?purpose=scan&host=a.test", b);
	json_decref(harness_expect(&bk.broker, 404, "POST", path, bk.verifier,
	    NULL, NULL));

	/* Never the secret's last use by an injection; counted apart. */
	j = harness_expect(&bk.broker, 200, "GET", "/v1/secrets/up-key",
	    bk.admin, NULL, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "last_used")),
	    0);
	json_decref(j);
	/* up-key's and things-api's (its set of no credential). */
	ck_assert(metric("cordon_broker_secrets_scan_released_total") == 2);
	ck_assert(metric("cordon_broker_secrets_released_total") == 0);

	/* Audited with its purpose, host and addr, never the value. */
	snprintf(path, sizeof(path), "/v1/audit?job=%s", b);
	j = harness_expect(&bk.broker, 200, "GET", path, bk.admin, NULL, NULL);
	char *text = json_dumps(j, 0);
	ck_assert_msg(strstr(text, value) == NULL, "%s", text);
	free(text);
	size_t i, found = 0;
	json_array_foreach(json_object_get(j, "records"), i, e)
	{
		json_t *d = json_object_get(e, "detail");
		if (strcmp(json_string_value(json_object_get(e, "event")),
			"secret_released") != 0 ||
		    strcmp(json_string_value(json_object_get(d, "secret")),
			"up-key") != 0)
			continue;
		found++;
		/* Every value of the set, by version, never a value. */
		ck_assert_int_eq(json_integer_value(json_object_get(
				     json_array_get(json_object_get(d,
							"values"),
					 0),
				     "version")),
		    1);
		ck_assert_str_eq(json_string_value(
				     json_object_get(d, "purpose")),
		    "scan");
		ck_assert_str_eq(json_string_value(json_object_get(d, "host")),
		    "www.api.test");
		ck_assert_str_eq(json_string_value(json_object_get(d, "addr")),
		    "127.0.0.1:8443");
	}
	ck_assert_uint_eq(found, 1);
	json_decref(j);

	/* A stopped job gets nothing. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", b);
	json_decref(harness_expect(&bk.broker, 200, "POST", path, bk.launcher,
	    NULL, NULL));
	snprintf(path, sizeof(path),
	    "/v1/jobs/%s/secrets/up-key/release?purpose=scan&host=www.api.test",
	    b);
	json_decref(harness_expect(&bk.broker, 409, "POST", path, bk.verifier,
	    NULL, NULL));
}
END_TEST

START_TEST(unreadable_rule_to_a_bound_host_refused)
{
	json_t *j, *r;

	bindkit_secret_put(200, "up-key",
	    json_pack("{s:s, s:[s]}", "value", "sk_bind_0123456789abcdef",
		"guard_hosts", "www.api.test"));
	bindkit_secret_put(200, "fresh",
	    json_pack("{s:s}", "value", "sk_fresh_01234"));
	json_decref(bindkit_manifest_put(200, "a",
	    json_pack("[o]", bindkit_rule("api.test", "up-key"))));

	/* Passthrough to the rule's host, to a wildcard over the declared
	 * name, an upgrade to the declared name: refused where it is. */
	r = bindkit_rule("api.test", NULL);
	json_object_set_new(r, "tls", json_string("passthrough"));
	j = bindkit_manifest_put(422, "c", json_pack("[o]", r));
	ck_assert_str_eq(field_of(j), "egress[0].tls");
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(
		       json_object_get(json_array_get(json_object_get(j,
							  "problems"),
					   0),
			   "problem")),
		"secret up-key"));
	json_decref(j);
	r = bindkit_rule("*.api.test", NULL);
	json_object_set_new(r, "tls", json_string("passthrough"));
	j = bindkit_manifest_put(422, "c", json_pack("[o]", r));
	ck_assert_str_eq(field_of(j), "egress[0].tls");
	json_decref(j);
	r = bindkit_rule("www.api.test", NULL);
	json_object_set_new(r, "upgrade", json_true());
	j = bindkit_manifest_put(422, "c", json_pack("[o]", r));
	ck_assert_str_eq(field_of(j), "egress[0].upgrade");
	json_decref(j);
	/* The manifest's own injecting rule counts, before it is stored. */
	r = bindkit_rule("*.fresh.test", NULL);
	json_object_set_new(r, "tls", json_string("passthrough"));
	j = bindkit_manifest_put(422, "d",
	    json_pack("[o, o]", bindkit_rule("x.fresh.test", "fresh"), r));
	ck_assert_str_eq(field_of(j), "egress[1].tls");
	json_decref(j);
	/* cordon lint refuses what it can see: the manifest's own. */
	char file[400], out[4096], err[1024];
	r = json_pack("{s:s, s:i, s:[s], s:s, s:s}", "host", "*.fresh.test",
	    "port", 8443, "methods", "GET", "reason", "opaque", "tls",
	    "passthrough");
	j = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}], "
		      "s:[o, o]}",
	    "name", "d", "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress", bindkit_rule("x.fresh.test", "fresh"),
	    r);
	char *whole = json_dumps(j, 0);
	snprintf(file, sizeof(file), "%s/d.json", harness_tmpdir());
	harness_write_file(file, whole);
	free(whole);
	json_decref(j);
	char *argv[] = { (char *)harness_bin("cordon"), "lint", file, NULL };
	ck_assert_int_eq(harness_run(argv, out, sizeof(out), err, sizeof(err)),
	    1);
	ck_assert_msg(strstr(out,
			  "egress[1].tls: host x.fresh.test is where "
			  "secret fresh is injected") != NULL,
	    "%s", out);
	/* Elsewhere it passes; terminated, it passes. */
	r = bindkit_rule("other.test", NULL);
	json_object_set_new(r, "tls", json_string("passthrough"));
	json_decref(bindkit_manifest_put(200, "c", json_pack("[o]", r)));
	r = bindkit_rule("*.api.test", NULL);
	json_object_set_new(r, "tls", json_string("terminate"));
	json_decref(bindkit_manifest_put(200, "e", json_pack("[o]", r)));
}
END_TEST

static TCase *
tests(const char *name, void (*up)(void), bool sqlite)
{
	(void)sqlite;
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, up, bindkit_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bindings_listed_reported_and_shown);
	tcase_add_test(tc, scan_release_for_a_job_that_does_not_inject);
	tcase_add_test(tc, unreadable_rule_to_a_bound_host_refused);
	return tc;
}

int
main(void)
{
	return bindkit_main("it_bindings", "bindings", tests);
}
