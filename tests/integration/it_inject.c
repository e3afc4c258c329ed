/*
 * Credentials injected at the proxy (issue 18), the broker's half, on the
 * real daemon: a secret PUT is sealed (the value is in no answer, no log
 * and not in the database in clear), listed and read as metadata only,
 * rotated by a new PUT (the next version), deleted; a manifest whose
 * egress injects a secret the broker lacks is refused; a verifier
 * releases the current version for a running job whose manifest names
 * it (audited: name, version, job), and nothing for a stopped job, a
 * secret the manifest does not name, or another role.
 */
#include "harness.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct daemon broker;
static char admin[128], launcher[128], verifier[128];

static const char value1[] = "sk_live_upstream_0123456789abcdef";
static const char value2[] = "sk_live_rotated_fedcba9876543210";

static const char manifest[] =
    "{\"name\": \"gh-reader\", \"command\": [\"/bin/true\"],"
    " \"capabilities\": [{\"name\": \"repo.read\", \"audience\": \"github\","
    "   \"params\": {\"repo\": [\"widgets\"]}, \"ttl_seconds\": 300,"
    "   \"reason\": \"read a repository\"}],"
    " \"egress\": [{\"host\": \"api.github.com\", \"methods\": [\"GET\"],"
    "   \"paths\": [\"/repos/acme/\"], \"tls\": \"terminate\","
    "   \"audience\": \"github\", \"reason\": \"read the repository\","
    "   \"inject\": {\"secret\": \"github-ro\", \"header\": "
    "\"Authorization\","
    "    \"format\": \"Bearer {secret}\", \"capability\": \"repo.read\"}}]}";

static void
start(void)
{
	ck_assert_int_eq(daemon_start(&broker, "broker",
			     "{\"log_level\": \"info\"}"),
	    0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
}

static void
stop(void)
{
	ck_assert_int_eq(daemon_stop(&broker), 0);
}

/* Whether file path holds needle anywhere. */
static bool
file_holds(const char *path, const char *needle)
{
	FILE *f = fopen(path, "rbe");
	static char data[8 << 20];
	size_t n;

	if (f == NULL)
		return false;
	n = fread(data, 1, sizeof(data), f);
	fclose(f);
	return memmem(data, n, needle, strlen(needle)) != NULL;
}

static json_t *
put_secret(const char *name, const char *value, long want)
{
	return harness_expect(&broker, want, "PUT", name, admin, NULL,
	    json_pack("{s:s}", "value", value));
}

START_TEST(secrets_are_sealed_metadata_only_and_rotate)
{
	json_t *j;
	char *text;

	j = put_secret("/v1/secrets/github-ro", value1, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 1);
	ck_assert_ptr_null(json_object_get(j, "value"));
	json_decref(j);
	j = put_secret("/v1/secrets/github-ro", value2, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 2);
	json_decref(j);

	j = harness_expect(&broker, 200, "GET", "/v1/secrets/github-ro", admin,
	    NULL, NULL);
	text = json_dumps(j, 0);
	ck_assert_ptr_null(strstr(text, value1));
	ck_assert_ptr_null(strstr(text, value2));
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "last_used")),
	    0);
	free(text);
	json_decref(j);
	j = harness_expect(&broker, 200, "GET", "/v1/secrets", admin, NULL,
	    NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "secrets")), 1);
	text = json_dumps(j, 0);
	ck_assert_ptr_null(strstr(text, value2));
	free(text);
	json_decref(j);

	/* Only the admin, and only values fit for a header. */
	json_decref(harness_expect(&broker, 403, "GET", "/v1/secrets", verifier,
	    NULL, NULL));
	json_decref(harness_expect(&broker, 403, "PUT", "/v1/secrets/x",
	    launcher, NULL, json_pack("{s:s}", "value", value1)));
	json_decref(put_secret("/v1/secrets/x", "two\r\nlines", 422));
	json_decref(put_secret("/v1/secrets/Bad_Name", value1, 422));
	json_decref(harness_expect(&broker, 422, "PUT", "/v1/secrets/x", admin,
	    NULL, json_pack("{s:s, s:s}", "value", value1, "extra", "no")));

	json_decref(harness_expect(&broker, 200, "DELETE",
	    "/v1/secrets/github-ro", admin, NULL, NULL));
	json_decref(harness_expect(&broker, 404, "GET", "/v1/secrets/github-ro",
	    admin, NULL, NULL));
	json_decref(harness_expect(&broker, 404, "DELETE",
	    "/v1/secrets/github-ro", admin, NULL, NULL));

	/* Neither the log nor the database holds a value in clear. */
	char path[400];
	ck_assert(!file_holds(broker.log, value1));
	ck_assert(!file_holds(broker.log, value2));
	snprintf(path, sizeof(path), "%s/var/broker/broker.db", broker.dir);
	ck_assert(!file_holds(path, value1));
	snprintf(path, sizeof(path), "%s/var/broker/broker.db-wal", broker.dir);
	ck_assert(!file_holds(path, value1));
}
END_TEST

START_TEST(release_to_a_running_job_only)
{
	json_t *m = json_loads(manifest, 0, NULL), *j, *list, *r;
	char path[256], *job;
	size_t i;
	bool audited = false;

	ck_assert_ptr_nonnull(m);
	/* Refused until the secret exists. */
	j = harness_expect(&broker, 422, "PUT", "/v1/manifests/gh-reader",
	    admin, NULL, json_incref(m));
	char *probs = json_dumps(json_object_get(j, "problems"), 0);
	ck_assert_ptr_nonnull(strstr(probs, "egress[0].inject.secret"));
	free(probs);
	json_decref(j);
	json_decref(put_secret("/v1/secrets/github-ro", value1, 200));
	json_decref(put_secret("/v1/secrets/other", value2, 200));
	json_decref(harness_expect(&broker, 200, "PUT",
	    "/v1/manifests/gh-reader", admin, NULL, m));
	/* Which manifests name each secret. */
	j = harness_expect(&broker, 200, "GET", "/v1/secrets/github-ro", admin,
	    NULL, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "manifests")), 1);
	ck_assert_str_eq(json_string_value(
			     json_array_get(json_object_get(j, "manifests"),
				 0)),
	    "gh-reader");
	json_decref(j);
	j = harness_expect(&broker, 200, "GET", "/v1/secrets/other", admin,
	    NULL, NULL);
	ck_assert(json_is_array(json_object_get(j, "manifests")));
	ck_assert_uint_eq(json_array_size(json_object_get(j, "manifests")), 0);
	json_decref(j);
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "gh-reader"));
	job = strdup(json_string_value(json_object_get(j, "job")));
	json_decref(j);

	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/github-ro/release",
	    job);
	json_decref(
	    harness_expect(&broker, 403, "POST", path, launcher, NULL, NULL));
	json_decref(
	    harness_expect(&broker, 403, "POST", path, admin, NULL, NULL));
	j = harness_expect(&broker, 200, "POST", path, verifier, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "value")),
	    value1);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(j, "source")),
	    "static");
	json_decref(j);
	/* Rotation: the next release is the new version. */
	json_decref(put_secret("/v1/secrets/github-ro", value2, 200));
	j = harness_expect(&broker, 200, "POST", path, verifier, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "value")),
	    value2);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 2);
	json_decref(j);
	j = harness_expect(&broker, 200, "GET", "/v1/secrets/github-ro", admin,
	    NULL, NULL);
	ck_assert_int_gt(json_integer_value(json_object_get(j, "last_used")),
	    0);
	json_decref(j);

	/* A secret the manifest does not name: nothing. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/other/release", job);
	json_decref(
	    harness_expect(&broker, 403, "POST", path, verifier, NULL, NULL));

	/* Audited with name, version and job; never the value. */
	snprintf(path, sizeof(path), "/v1/audit?job=%s", job);
	list = harness_expect(&broker, 200, "GET", path, admin, NULL, NULL);
	char *text = json_dumps(list, 0);
	ck_assert_ptr_null(strstr(text, value1));
	ck_assert_ptr_null(strstr(text, value2));
	free(text);
	json_array_foreach(json_object_get(list, "records"), i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "event")),
			"secret_released") == 0 &&
		    json_integer_value(
			json_object_get(json_object_get(r, "detail"),
			    "version")) == 2)
			audited = true;
	}
	json_decref(list);
	ck_assert(audited);

	/* A stopped job: nothing. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	json_decref(harness_expect(&broker, 200, "POST", path, launcher, NULL,
	    json_pack("{s:s}", "reason", "done")));
	snprintf(path, sizeof(path), "/v1/jobs/%s/secrets/github-ro/release",
	    job);
	json_decref(
	    harness_expect(&broker, 409, "POST", path, verifier, NULL, NULL));
	ck_assert(!file_holds(broker.log, value1));
	ck_assert(!file_holds(broker.log, value2));
	free(job);
}
END_TEST

static Suite *
inject_suite(void)
{
	Suite *s = suite_create("inject");
	TCase *tc = tcase_create("broker");

	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, secrets_are_sealed_metadata_only_and_rotate);
	tcase_add_test(tc, release_to_a_running_job_only);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(inject_suite());
}
