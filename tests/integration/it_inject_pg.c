/*
 * Secrets on PostgreSQL (issue 18): two brokers on one private database
 * (tests/integration/pg.c) sharing a keys directory, as docs/fleet.md
 * sets a fleet up. A secret PUT at one is metadata at the other, sealed
 * in the database (the value in no row in clear); a job made at one has
 * its secret released by the other (audited in the one chain, last_used
 * stamped); a rotation at either is the next release at both; a delete
 * at one is a 404 at the other; a stopped job gets nothing.
 *
 * Without PostgreSQL it fails and says so, unless CORDON_TEST_NO_PG=1.
 */
#include "harness.h"
#include "pg.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct pg_server pg;
static char url[400], dir[300];
static struct daemon a, b;
static char admin[128], launcher[128], verifier[128];

static const char value1[] = "sk_live_fleet_0123456789abcdef";
static const char value2[] = "sk_live_fleet_rotated_fedcba98";

static void
read_key(const char *role, char *out, size_t len)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/keys/%s.key", dir, role);
	ck_assert_int_eq(harness_read_line(path, out, len), 0);
}

static void
fleet_up(void)
{
	char name[64], cfg[1500];

	snprintf(name, sizeof(name), "inj%d", (int)getpid());
	ck_assert_int_eq(pg_create_db(&pg, name, url, sizeof(url)), 0);
	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(cfg, sizeof(cfg),
	    "{\"store\": \"%s\", \"keys_dir\": \"%s/keys\", \"pepper\": "
	    "\"%s/pepper\", \"log_level\": \"info\"}",
	    url, dir, dir);
	ck_assert_int_eq(daemon_start(&a, "broker", cfg), 0);
	ck_assert_int_eq(daemon_start(&b, "broker", cfg), 0);
	read_key("admin", admin, sizeof(admin));
	read_key("launcher", launcher, sizeof(launcher));
	read_key("verifier", verifier, sizeof(verifier));
}

static void
fleet_down(void)
{
	ck_assert_int_eq(daemon_stop(&a), 0);
	ck_assert_int_eq(daemon_stop(&b), 0);
}

static long long
num(const json_t *j, const char *key)
{
	return (long long)json_integer_value(json_object_get(j, key));
}

START_TEST(secrets_are_one_fleets)
{
	static const char manifest[] =
	    "{\"name\": \"gh-reader\", \"command\": [\"/bin/true\"],"
	    " \"capabilities\": [{\"name\": \"repo.read\", \"audience\": "
	    "\"github\", \"params\": {\"repo\": [\"widgets\"]},"
	    "   \"reason\": \"read a repository\"}],"
	    " \"egress\": [{\"host\": \"api.github.com\", \"methods\": "
	    "[\"GET\"], \"paths\": [\"/repos/acme/{repo}/\"], \"audience\": "
	    "\"github\", \"reason\": \"read\", \"inject\": {\"secret\": "
	    "\"github-ro\", \"header\": \"Authorization\", \"format\": "
	    "\"Bearer {secret}\", \"capability\": \"repo.read\"}}]}";
	char path[256], out[4096], job[64];
	json_t *j, *list, *r;
	size_t i;
	bool audited = false;

	j = harness_expect(&a, 200, "PUT", "/v1/secrets/github-ro", admin, NULL,
	    json_pack("{s:s}", "value", value1));
	ck_assert_int_eq(num(j, "version"), 1);
	ck_assert_ptr_null(json_object_get(j, "value"));
	json_decref(j);
	/* Sealed in the database: no row holds the value in clear. */
	ck_assert_int_eq(pg_sql(url,
			     "SELECT count(*) FROM secrets WHERE "
			     "position(convert_to('sk_live_fleet', 'UTF8') "
			     "in sealed) > 0",
			     out, sizeof(out)),
	    0);
	ck_assert_str_eq(out, "0");

	/* The manifest names it, at the other broker. */
	json_decref(harness_expect(&b, 200, "PUT", "/v1/manifests/gh-reader",
	    admin, NULL, json_loads(manifest, 0, NULL)));
	j = harness_expect(&b, 200, "GET", "/v1/secrets/github-ro", admin, NULL,
	    NULL);
	ck_assert_int_eq(num(j, "version"), 1);
	ck_assert_str_eq(json_string_value(
			     json_array_get(json_object_get(j, "manifests"),
				 0)),
	    "gh-reader");
	json_decref(j);
	j = harness_expect(&b, 200, "GET", "/v1/secrets", admin, NULL, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "secrets")), 1);
	json_decref(j);

	/* A job at A, the release at B: B opens what A sealed. */
	j = harness_expect(&a, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "gh-reader"));
	snprintf(job, sizeof(job), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/github-ro/release",
	    job);
	j = harness_expect(&b, 200, "POST", path, verifier, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "value")),
	    value1);
	ck_assert_int_eq(num(j, "version"), 1);
	json_decref(j);
	/* Rotated at B: A's next release is the new version. */
	json_decref(harness_expect(&b, 200, "PUT", "/v1/secrets/github-ro",
	    admin, NULL, json_pack("{s:s}", "value", value2)));
	j = harness_expect(&a, 200, "POST", path, verifier, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "value")),
	    value2);
	ck_assert_int_eq(num(j, "version"), 2);
	json_decref(j);
	j = harness_expect(&a, 200, "GET", "/v1/secrets/github-ro", admin, NULL,
	    NULL);
	ck_assert_int_gt(num(j, "last_used"), 0);
	json_decref(j);

	/* Audited in the one chain, never the value. */
	snprintf(path, sizeof(path), "/v1/audit?job=%s", job);
	list = harness_expect(&b, 200, "GET", path, admin, NULL, NULL);
	char *text = json_dumps(list, 0);
	ck_assert_ptr_null(strstr(text, value1));
	ck_assert_ptr_null(strstr(text, value2));
	free(text);
	json_array_foreach(json_object_get(list, "records"), i, r)
	{
		audited |=
		    strcmp(json_string_value(json_object_get(r, "event")),
			"secret_released") == 0 &&
		    num(json_object_get(r, "detail"), "version") == 2;
	}
	json_decref(list);
	ck_assert(audited);

	/* A stopped job: nothing, at either. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	json_decref(harness_expect(&a, 200, "POST", path, launcher, NULL,
	    json_pack("{s:s}", "reason", "done")));
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/github-ro/release",
	    job);
	json_decref(
	    harness_expect(&b, 409, "POST", path, verifier, NULL, NULL));

	/* Deleted at A: gone at B. */
	json_decref(harness_expect(&a, 200, "DELETE", "/v1/secrets/github-ro",
	    admin, NULL, NULL));
	json_decref(harness_expect(&b, 404, "GET", "/v1/secrets/github-ro",
	    admin, NULL, NULL));
}
END_TEST

static Suite *
inject_pg_suite(void)
{
	Suite *s = suite_create("inject_pg");
	TCase *tc = tcase_create("fleet");

	tcase_add_checked_fixture(tc, fleet_up, fleet_down);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, secrets_are_one_fleets);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	char err[512];
	int rc;

	if (!pg_wanted()) {
		printf("it_inject_pg: CORDON_TEST_NO_PG=1: skipped\n");
		return 0;
	}
	if (pg_start(&pg, err, sizeof(err)) < 0) {
		fprintf(stderr, "it_inject_pg: %s\n", err);
		return 1;
	}
	rc = harness_main(inject_pg_suite());
	pg_destroy(&pg);
	return rc;
}
