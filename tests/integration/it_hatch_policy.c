/*
 * The hatch reads a job's return policy and disk cap from the broker, as
 * the proxy reads its egress rules: the launcher that asks for the
 * workspace holds no policy and cannot say one. The real broker and hatch
 * on loopback (root: the hatch mounts). What each side must see: a
 * workspace with the manifest's disk_mb and its protected globs applied
 * at the seal; a request that carries return or disk_mb refused; no
 * workspace for a job the broker does not know, one it revoked, or when
 * the broker cannot be asked (fail closed, with the reason).
 */
#include "harness.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct daemon broker, hatch;
static char launcher[200], roots[300], repo[400];

/* A hatch that asks the broker (or, broker_down, an address no one
 * answers). */
static void
start_hatch(bool with_broker)
{
	char cfg[1400];

	snprintf(cfg, sizeof(cfg),
	    "{\"input_roots\": [\"%s\"], \"launcher_key_file\": "
	    "\"%s/var/broker/keys/launcher.key\"%s%s%s%s%s}",
	    roots, broker.dir, with_broker ? ", \"broker\": \"" : "",
	    with_broker ? broker.base : "",
	    with_broker ? "\", \"broker_key_file\": \"" : "",
	    with_broker ? broker.dir : "",
	    with_broker ? "/var/broker/keys/hatch.key\"" : "");
	ck_assert_int_eq(daemon_start(&hatch, "hatch", cfg), 0);
}

static void
start(void)
{
	char p[500];

	ck_assert_int_eq(daemon_start(&broker, "broker", NULL), 0);
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	char admin[200];
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/manifests/pol",
	    admin, NULL,
	    json_pack("{s:s, s:[s], s:{s:i, s:i}, s:{s:[s]}}", "name", "pol",
		"command", "/bin/true", "limits", "wall_seconds", 60, "disk_mb",
		8, "return", "protected", "secret/**")));
	snprintf(roots, sizeof(roots), "%s", harness_tmpdir());
	snprintf(repo, sizeof(repo), "%s/repo", roots);
	ck_assert_int_eq(mkdir(repo, 0755), 0);
	snprintf(p, sizeof(p), "%s/README", repo);
	harness_write_file(p, "hello\n");
}

static void
stop(void)
{
	ck_assert_int_eq(daemon_stop(&hatch), 0);
	ck_assert_int_eq(daemon_stop(&broker), 0);
}

/* A new job of the manifest "pol": its id (static). */
static const char *
new_job(void)
{
	static char id[128];
	json_t *j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher,
	    NULL, json_pack("{s:s}", "manifest", "pol"));

	snprintf(id, sizeof(id), "%s",
	    json_string_value(json_object_get(j, "job")));
	/* The launcher's answer carries what the launcher needs, no
	 * policy of the other planes. */
	ck_assert_ptr_null(json_object_get(j, "return"));
	ck_assert_ptr_null(json_object_get(j, "egress"));
	ck_assert_ptr_null(json_object_get(j, "capabilities"));
	ck_assert_ptr_nonnull(json_object_get(j, "limits"));
	json_decref(j);
	return id;
}

static json_t *
ask_workspace(long want, const char *job, json_t *extra)
{
	json_t *body = json_pack("{s:s, s:[{s:s, s:s}]}", "job", job, "inputs",
	    "src", repo, "dst", "repo");

	if (extra != NULL) {
		json_object_update(body, extra);
		json_decref(extra);
	}
	return harness_expect(&hatch, want, "POST", "/v1/workspaces", launcher,
	    NULL, body);
}

static void
assert_no_workspace(const char *job)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/var/hatch/workspaces/%s", hatch.dir, job);
	ck_assert_msg(access(p, F_OK) < 0, "%s exists", p);
}

START_TEST(the_policy_comes_from_the_broker)
{
	const char *job;
	char p[700];
	json_t *ws, *r, *f;
	size_t i;
	bool flagged = false;

	start();
	start_hatch(true);
	job = new_job();
	ws = ask_workspace(201, job, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(ws, "disk_mb")), 8);
	snprintf(p, sizeof(p), "%s/repo",
	    json_string_value(json_object_get(ws, "upper")));
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "/secret");
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "/key");
	harness_write_file(p, "planted\n");
	json_decref(ws);
	snprintf(p, sizeof(p), "/v1/workspaces/%s/seal", job);
	r = harness_expect(&hatch, 200, "POST", p, launcher, NULL, NULL);
	json_array_foreach(json_object_get(r, "flags"), i, f) flagged =
	    flagged ||
	    (strcmp(json_string_value(json_object_get(f, "path")),
		 "repo/secret/key") == 0 &&
		strcmp(json_string_value(json_object_get(f, "flag")),
		    "protected_path") == 0);
	ck_assert_msg(flagged, "the manifest's glob was not applied: %s",
	    json_dumps(r, JSON_COMPACT));
	json_decref(r);
	snprintf(p, sizeof(p), "/v1/workspaces/%s", job);
	json_decref(
	    harness_expect(&hatch, 200, "DELETE", p, launcher, NULL, NULL));
	stop();
}
END_TEST

START_TEST(the_launcher_cannot_say_the_policy)
{
	const char *job;

	start();
	start_hatch(true);
	job = new_job();
	json_decref(
	    ask_workspace(422, job, json_pack("{s:i}", "disk_mb", 4096)));
	json_decref(ask_workspace(422, job,
	    json_pack("{s:{s:[]}}", "return", "protected")));
	assert_no_workspace(job);
	stop();
}
END_TEST

START_TEST(no_workspace_without_the_brokers_word)
{
	char path[200], admin[200];
	const char *job;
	json_t *e;

	start();
	start_hatch(true);
	/* A job the broker never made. */
	e = ask_workspace(404, "job_nobodyMadeThis00000", NULL);
	ck_assert_str_eq(json_string_value(json_object_get(e, "error")),
	    "unknown_job");
	json_decref(e);
	assert_no_workspace("job_nobodyMadeThis00000");
	/* A job it revoked. */
	job = new_job();
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", job);
	json_decref(harness_expect(&broker, 200, "POST", path, admin, NULL,
	    json_pack("{s:s}", "reason", "test")));
	e = ask_workspace(409, job, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(e, "error")),
	    "job_not_running");
	json_decref(e);
	assert_no_workspace(job);
	/* A broker that does not answer. */
	job = new_job();
	ck_assert_int_eq(daemon_stop(&broker), 0);
	e = ask_workspace(503, job, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(e, "error")),
	    "policy_unavailable");
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(e, "message")),
		"did not answer"));
	json_decref(e);
	assert_no_workspace(job);
	ck_assert_int_eq(daemon_stop(&hatch), 0);
}
END_TEST

START_TEST(a_hatch_without_a_broker_makes_none)
{
	const char *job;
	json_t *e;

	start();
	start_hatch(false);
	job = new_job();
	e = ask_workspace(503, job, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(e, "error")),
	    "policy_unavailable");
	json_decref(e);
	assert_no_workspace(job);
	stop();
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("hatch_policy");
	TCase *tc = tcase_create("hatch_policy");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, the_policy_comes_from_the_broker);
	tcase_add_test(tc, the_launcher_cannot_say_the_policy);
	tcase_add_test(tc, no_workspace_without_the_brokers_word);
	tcase_add_test(tc, a_hatch_without_a_broker_makes_none);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
