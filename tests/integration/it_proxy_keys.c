/*
 * The proxy's keys: it parses what jobs send all day, so it should hold
 * nothing the broker takes as a caller's. It knows the launcher's key by
 * its SHA-256 alone (launcher_key_sha256), as the hatch does: the
 * launcher's control calls are answered, any other key refused, and no
 * warning is logged. launcher_key_file still works but says once that it
 * is broader than needed (launcher_key_broad). A hash of another shape
 * stops the proxy, under -n too.
 *
 * The real broker and proxy on loopback; no job runs, no uid is used.
 */
#include "harness.h"

#include <check.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct daemon broker, proxy;
static char admin[128], launcher[128], verifier[128], verifier_file[400];

static void
sha256_of(const char *key, char out[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;

	ck_assert_int_eq(EVP_Digest(key, strlen(key), md, &mdlen, EVP_sha256(),
			     NULL),
	    1);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void
start_broker(void)
{
	ck_assert_int_eq(daemon_start(&broker, "broker", NULL), 0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
	snprintf(verifier_file, sizeof(verifier_file), "%s/verifier.key",
	    harness_tmpdir());
	harness_write_file(verifier_file, verifier);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/manifests/keys",
	    admin, NULL,
	    json_pack("{s:s, s:[s], s:[{s:s, s:i, s:[s], s:[s], s:s}]}", "name",
		"keys", "command", "/bin/true", "egress", "host", "api.test",
		"port", 80, "methods", "GET", "paths", "/", "reason",
		"a test")));
}

/* A job at the broker: its id into job. */
static void
new_job(char *job, size_t len)
{
	json_t *j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher,
	    NULL, json_pack("{s:s}", "manifest", "keys"));

	snprintf(job, len, "%s", json_string_value(json_object_get(j, "job")));
	json_decref(j);
}

/* The proxy's lines with event ev. */
static int
proxy_lines(const char *ev)
{
	json_t *lines = daemon_log_lines(&proxy), *l;
	size_t i;
	int n = 0;

	json_array_foreach(lines, i, l)
	{
		const char *e = json_string_value(json_object_get(l, "event"));
		if (e != NULL && strcmp(e, ev) == 0)
			n++;
	}
	json_decref(lines);
	return n;
}

START_TEST(the_proxy_knows_the_launcher_key_by_its_hash)
{
	char sha[65], cfg[1200], job[64], path[128];
	long status;

	start_broker();
	sha256_of(launcher, sha);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", \"follower\": \"keys\"}",
	    broker.base, verifier_file, sha);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	new_job(job, sizeof(job));
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	/* A wrong key, the admin's and the verifier's are refused. */
	json_decref(harness_call(&proxy, "POST", path,
	    "crk_not_the_launchers_key_0123456789abcdef", NULL, NULL, &status));
	ck_assert_int_eq(status, 401);
	json_decref(
	    harness_call(&proxy, "POST", path, admin, NULL, NULL, &status));
	ck_assert_int_eq(status, 401);
	json_decref(
	    harness_call(&proxy, "POST", path, verifier, NULL, NULL, &status));
	ck_assert_int_eq(status, 401);
	/* The launcher's calls are answered. */
	json_t *j =
	    harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	ck_assert_ptr_nonnull(json_string_value(json_object_get(j, "channel")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s/log", job);
	json_decref(
	    harness_expect(&proxy, 200, "GET", path, launcher, NULL, NULL));
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	json_decref(
	    harness_expect(&proxy, 200, "DELETE", path, launcher, NULL, NULL));
	ck_assert_int_eq(proxy_lines("launcher_key_broad"), 0);
	ck_assert_int_eq(proxy_lines("no_launcher_key"), 0);
	ck_assert_int_eq(daemon_stop(&proxy), 0);
	ck_assert_int_eq(daemon_stop(&broker), 0);
}
END_TEST

START_TEST(the_launcher_key_file_works_and_says_it_is_broad)
{
	char cfg[1200], job[64], path[128];

	start_broker();
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_file\": \"%s/var/broker/keys/launcher.key\", "
	    "\"follower\": \"keys\"}",
	    broker.base, verifier_file, broker.dir);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	new_job(job, sizeof(job));
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	json_decref(
	    harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL));
	ck_assert_int_eq(proxy_lines("launcher_key_broad"), 1);
	ck_assert_int_eq(daemon_stop(&proxy), 0);
	ck_assert_int_eq(daemon_stop(&broker), 0);
}
END_TEST

START_TEST(a_hash_of_another_shape_stops_the_proxy)
{
	char path[400], cfg[300], out[4096], err[4096];
	char *argv[] = { (char *)harness_bin("cordon-proxy"), "-n", "--config",
		path, NULL };
	static const char *const bad[] = { "abc",
		"G123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"
		"ef",
		"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcd"
		"ef" };

	snprintf(path, sizeof(path), "%s/proxy.json", harness_tmpdir());
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(cfg, sizeof(cfg), "{\"launcher_key_sha256\": \"%s\"}",
		    bad[i]);
		harness_write_file(path, cfg);
		ck_assert_int_eq(harness_run(argv, out, sizeof(out), err,
				     sizeof(err)),
		    78);
		ck_assert_msg(strstr(err,
				  "launcher_key_sha256: 64 lowercase "
				  "hex digits") != NULL,
		    "%s", err);
	}
	snprintf(cfg, sizeof(cfg), "{\"launcher_key_sha256\": \"%064d\"}", 0);
	harness_write_file(path, cfg);
	ck_assert_int_eq(harness_run(argv, out, sizeof(out), err, sizeof(err)),
	    0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("proxy_keys");
	TCase *tc = tcase_create("keys");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, the_proxy_knows_the_launcher_key_by_its_hash);
	tcase_add_test(tc, the_launcher_key_file_works_and_says_it_is_broad);
	tcase_add_test(tc, a_hash_of_another_shape_stops_the_proxy);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
