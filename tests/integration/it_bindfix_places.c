/*
 * The places a secret was sent to outlive its value (issue 18,
 * redteam3's #8): a DELETE of a secret used to drop every binding, and a
 * PUT of it again brought back only the stored manifests' rule hosts, so
 * the addresses injected requests had gone to and the declared names
 * were forgotten while a storing service there still held the old key.
 * Now a DELETE keeps the seen and declared bindings (places, not the
 * value): the list leaves the secret out while it does not exist, and
 * has them all again once it does. And an address a proxy tells after
 * the job ended (within 15 minutes) is bound: the address is a fact
 * either way. On sqlite and on PostgreSQL (a
 * private server; skipped with CORDON_TEST_NO_PG=1). No job is spawned
 * (uid base 1396000 reserved).
 */
#include "harness.h"
#include "pg.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct daemon broker;
static char admin[128], launcher[128], verifier[128];

static struct pg_server pg;

static void
keys(void)
{
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
}

static void
setup(void)
{
	ck_assert_int_eq(daemon_start(&broker, "broker",
			     "{\"log_level\": \"info\"}"),
	    0);
	keys();
}

/* The same broker on a fresh PostgreSQL database. */
static void
setup_pg(void)
{
	char name[64], url[400], cfg[600];
	static int n;

	snprintf(name, sizeof(name), "bind%d_%d", (int)getpid(), n++);
	ck_assert_int_eq(pg_create_db(&pg, name, url, sizeof(url)), 0);
	snprintf(cfg, sizeof(cfg),
	    "{\"store\": \"%s\", \"log_level\": \"info\"}", url);
	ck_assert_int_eq(daemon_start(&broker, "broker", cfg), 0);
	keys();
}

static void
teardown(void)
{
	ck_assert_int_eq(daemon_stop(&broker), 0);
}

/* A rule to host (port 8443, GET) that injects secret, or nothing when
 * secret is NULL. */
static json_t *
rule(const char *host, const char *secret)
{
	json_t *r =
	    json_pack("{s:s, s:i, s:[s], s:s, s:s}", "host", host, "port", 8443,
		"methods", "GET", "reason", "the api", "audience", "api");

	if (secret != NULL)
		json_object_set_new(r, "tls", json_string("terminate"));
	if (secret != NULL)
		json_object_set_new(r, "inject",
		    json_pack("{s:s, s:s, s:s, s:s}", "secret", secret,
			"header", "Authorization", "format", "Bearer {secret}",
			"capability", "x.read"));
	return r;
}

/* PUTs manifest name with egress (stolen): the answer, asserted want. */
static json_t *
manifest_put(long want, const char *name, json_t *egress)
{
	char path[200];
	json_t *m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, "
			      "s:s}], s:o}",
	    "name", name, "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress", egress);

	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	return harness_expect(&broker, want, "PUT", path, admin, NULL, m);
}

static void
job_of(const char *manifest, char *job, size_t len)
{
	json_t *j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher,
	    NULL, json_pack("{s:s}", "manifest", manifest));

	snprintf(job, len, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
}

static void
secret_put(long want, const char *name, json_t *body)
{
	char path[200];

	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	json_decref(
	    harness_expect(&broker, want, "PUT", path, admin, NULL, body));
}

/* The entry of secret in list, or NULL. */
static json_t *
binding_in(json_t *list, const char *secret)
{
	json_t *e;
	size_t i;

	json_array_foreach(list, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "secret")),
			secret) == 0)
			return e;
	}
	return NULL;
}

/* The strings of array a joined by commas (a static buffer). */
static const char *
joined(json_t *a)
{
	static char out[1024];
	json_t *v;
	size_t i, n = 0;

	out[0] = '\0';
	json_array_foreach(a, i, v)
	{
		int w = snprintf(out + n, sizeof(out) - n, "%s%s",
		    i > 0 ? "," : "", json_string_value(v));
		if (w < 0 || (size_t)w >= sizeof(out) - n)
			break;
		n += (size_t)w;
	}
	return out;
}

START_TEST(a_deleted_secret_put_again_keeps_its_places)
{
	char a[64];
	json_t *j, *e;

	secret_put(200, "up-key",
	    json_pack("{s:s, s:[s]}", "value", "sk_place_0123456789abcdef",
		"guard_hosts", "www.api.test"));
	json_decref(manifest_put(200, "a",
	    json_pack("[o]", rule("api.test", "up-key"))));
	job_of("a", a, sizeof(a));
	json_decref(
	    harness_expect(&broker, 200, "POST", "/v1/bindings", verifier, NULL,
		json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job", a,
		    "addr", "127.0.0.4:8443")));

	json_decref(harness_expect(&broker, 200, "DELETE", "/v1/secrets/up-key",
	    admin, NULL, NULL));
	json_decref(harness_expect(&broker, 404, "GET", "/v1/secrets/up-key",
	    admin, NULL, NULL));
	j = harness_expect(&broker, 200, "GET", "/v1/bindings", verifier, NULL,
	    NULL);
	ck_assert_ptr_null(
	    binding_in(json_object_get(j, "bindings"), "up-key"));
	json_decref(j);

	/* The same value again, without guard_hosts. */
	secret_put(200, "up-key",
	    json_pack("{s:s}", "value", "sk_place_0123456789abcdef"));
	j = harness_expect(&broker, 200, "GET", "/v1/bindings", verifier, NULL,
	    NULL);
	e = binding_in(json_object_get(j, "bindings"), "up-key");
	ck_assert_ptr_nonnull(e);
	ck_assert_msg(strcmp(joined(json_object_get(e, "addrs")),
			  "127.0.0.4:8443") == 0,
	    "addrs after the deletion and a new PUT: [%s]",
	    joined(json_object_get(e, "addrs")));
	ck_assert_msg(strcmp(joined(json_object_get(e, "hosts")),
			  "api.test,www.api.test") == 0,
	    "hosts after the deletion and a new PUT: [%s]",
	    joined(json_object_get(e, "hosts")));
	json_decref(j);
	j = harness_expect(&broker, 200, "GET", "/v1/secrets/up-key", admin,
	    NULL, NULL);
	ck_assert_str_eq(joined(json_object_get(j, "guard_hosts")),
	    "www.api.test");
	json_decref(j);
}
END_TEST

/* README "Noticed" (redteam3): a proxy's tell that lands after a short
 * job ended used to be 409 job_not_running, and the address was never
 * bound at the broker. */
START_TEST(an_address_told_after_the_job_ended_is_bound)
{
	char a[64], b[64], path[200];
	json_t *j;

	secret_put(200, "up-key",
	    json_pack("{s:s}", "value", "sk_place_0123456789abcdef"));
	json_decref(manifest_put(200, "a",
	    json_pack("[o]", rule("api.test", "up-key"))));
	json_decref(
	    manifest_put(200, "b", json_pack("[o]", rule("other.test", NULL))));
	job_of("a", a, sizeof(a));
	job_of("b", b, sizeof(b));
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", a);
	json_decref(
	    harness_expect(&broker, 200, "POST", path, launcher, NULL, NULL));
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", b);
	json_decref(
	    harness_expect(&broker, 200, "POST", path, launcher, NULL, NULL));

	j = harness_expect(&broker, 200, "POST", "/v1/bindings", verifier, NULL,
	    json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job", a, "addr",
		"127.0.0.4:8443"));
	ck_assert(json_is_true(json_object_get(j, "added")));
	json_decref(j);
	/* Still only for what its manifest injects, and for a real job. */
	j = harness_expect(&broker, 409, "POST", "/v1/bindings", verifier, NULL,
	    json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job", b, "addr",
		"127.0.0.5:8443"));
	ck_assert_str_eq(json_string_value(json_object_get(j, "error")),
	    "not_injected");
	json_decref(j);
	json_decref(
	    harness_expect(&broker, 404, "POST", "/v1/bindings", verifier, NULL,
		json_pack("{s:s, s:s, s:s}", "secret", "up-key", "job",
		    "job_nope", "addr", "127.0.0.5:8443")));
	j = harness_expect(&broker, 200, "GET", "/v1/bindings", verifier, NULL,
	    NULL);
	ck_assert_str_eq(joined(json_object_get(binding_in(json_object_get(j,
							       "bindings"),
						    "up-key"),
			     "addrs")),
	    "127.0.0.4:8443");
	json_decref(j);
}
END_TEST

static TCase *
tests(const char *name, void (*up)(void))
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, up, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_deleted_secret_put_again_keeps_its_places);
	tcase_add_test(tc, an_address_told_after_the_job_ended_is_bound);
	return tc;
}

int
main(void)
{
	Suite *s = suite_create("bindfix_places");
	char err[512];
	bool with_pg = pg_wanted();
	int rc;

	suite_add_tcase(s, tests("sqlite", setup));
	if (with_pg) {
		if (pg_start(&pg, err, sizeof(err)) < 0) {
			fprintf(stderr, "it_bindfix_places: %s\n", err);
			return 1;
		}
		suite_add_tcase(s, tests("pg", setup_pg));
	} else
		printf("it_bindfix_places: CORDON_TEST_NO_PG=1: PostgreSQL "
		       "skipped\n");
	rc = harness_main(s);
	if (with_pg)
		pg_destroy(&pg);
	return rc;
}
