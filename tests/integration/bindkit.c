/*
 * The bindings tests' broker (bindkit.h).
 */
#include "bindkit.h"

#include <stdio.h>
#include <unistd.h>

struct bindkit bk;

static void
keys(void)
{
	harness_broker_key(&bk.broker, "admin", bk.admin, sizeof(bk.admin));
	harness_broker_key(&bk.broker, "launcher", bk.launcher,
	    sizeof(bk.launcher));
	harness_broker_key(&bk.broker, "verifier", bk.verifier,
	    sizeof(bk.verifier));
}

void
bindkit_setup(void)
{
	ck_assert_int_eq(daemon_start(&bk.broker, "broker",
			     "{\"log_level\": \"info\"}"),
	    0);
	keys();
}

void
bindkit_setup_pg(void)
{
	char name[64], url[400], cfg[600];
	static int n;

	snprintf(name, sizeof(name), "bind%d_%d", (int)getpid(), n++);
	ck_assert_int_eq(pg_create_db(&bk.pg, name, url, sizeof(url)), 0);
	snprintf(cfg, sizeof(cfg),
	    "{\"store\": \"%s\", \"log_level\": \"info\"}", url);
	ck_assert_int_eq(daemon_start(&bk.broker, "broker", cfg), 0);
	keys();
}

void
bindkit_teardown(void)
{
	ck_assert_int_eq(daemon_stop(&bk.broker), 0);
}

json_t *
bindkit_rule(const char *host, const char *secret)
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

json_t *
bindkit_manifest_put(long want, const char *name, json_t *egress)
{
	char path[200];
	json_t *m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, "
			      "s:s}], s:o}",
	    "name", name, "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress", egress);

	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	return harness_expect(&bk.broker, want, "PUT", path, bk.admin, NULL, m);
}

void
bindkit_job_of(const char *manifest, char *job, size_t len)
{
	json_t *j = harness_expect(&bk.broker, 201, "POST", "/v1/jobs",
	    bk.launcher, NULL, json_pack("{s:s}", "manifest", manifest));

	snprintf(job, len, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
}

void
bindkit_secret_put(long want, const char *name, json_t *body)
{
	char path[200];

	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	json_decref(harness_expect(&bk.broker, want, "PUT", path, bk.admin,
	    NULL, body));
}

long long
bindkit_secret_field(const char *name, const char *key)
{
	char path[200];
	json_t *s, *v;
	long long n;

	snprintf(path, sizeof(path), "/v1/secrets/%s", name);
	s = harness_expect(&bk.broker, 200, "GET", path, bk.admin, NULL, NULL);
	v = json_object_get(s, key);
	n = json_is_boolean(v) ? json_is_true(v) : json_integer_value(v);
	json_decref(s);
	return n;
}

int
bindkit_main(const char *prog, const char *name,
    TCase *(*tests)(const char *name, void (*up)(void), bool sqlite))
{
	Suite *s = suite_create(name);
	char err[512];
	bool with_pg = pg_wanted();
	int rc;

	suite_add_tcase(s, tests("sqlite", bindkit_setup, true));
	if (with_pg) {
		if (pg_start(&bk.pg, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s: %s\n", prog, err);
			return 1;
		}
		suite_add_tcase(s, tests("pg", bindkit_setup_pg, false));
	} else
		printf("%s: CORDON_TEST_NO_PG=1: PostgreSQL skipped\n", prog);
	rc = harness_main(s);
	if (with_pg)
		pg_destroy(&bk.pg);
	return rc;
}
