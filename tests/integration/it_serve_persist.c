/*
 * cordon serve across its own restarts, for real: the records it keeps
 * of its jobs in its state directory. After a SIGTERM (every job stopped
 * through its stop path first) GET /v1/jobs, a job, its patch and its
 * report and its output answer as before, and an
 * Idempotency-Key still replays its job; after a SIGKILL a job that was
 * running is "lost", with what finishes it, and its patch is served once
 * its stop path wrote it; when its cordon run died too, the cordon
 * recover the new serve runs finishes it (revoked, patch out).
 */
#include "harness.h"

#include "http_client.h"

#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct stack st;
static struct daemon serve;
static char inputs[300];

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = 452000 };
	char path[400];

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	snprintf(inputs, sizeof(inputs), "%s", st.inputs);
	snprintf(path, sizeof(path), "%s/repo", inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", inputs);
	harness_write_file(path, "hello\n");
	json_t *m =
	    json_pack("{s:s, s:[s], s:{s:s}, s:{s:i, s:i, s:i}}", "name",
		"persist-job", "command", "/bin/true", "env", "LANG", "C.UTF-8",
		"limits", "wall_seconds", 60, "memory_mb", 512, "pids", 64);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/persist-job", st.admin, NULL, m));

	FILE *f = fopen(st.launcher_cfg, "re");
	static char cfg[8192];
	ck_assert_ptr_nonnull(f);
	size_t n = fread(cfg, 1, sizeof(cfg) - 1, f);
	fclose(f);
	cfg[n] = '\0';
	ck_assert_int_eq(daemon_start(&serve, "launcher", cfg), 0);
}

static void
teardown(void)
{
	daemon_stop(&serve);
	stack_stop(&st);
}

static json_t *
post_job(long want, const char *header, const char *script)
{
	char src[400];

	snprintf(src, sizeof(src), "%s/repo", inputs);
	return harness_expect(&serve, want, "POST", "/v1/jobs", st.launcher,
	    header,
	    json_pack("{s:s, s:[{s:s, s:s}], s:[s,s,s]}", "manifest",
		"persist-job", "inputs", "src", src, "dst", "repo", "command",
		"/bin/sh", "-c", script));
}

static char *
job_id(const json_t *j)
{
	const char *id = json_string_value(json_object_get(j, "job"));

	ck_assert_ptr_nonnull(id);
	return strdup(id);
}

static json_t *
get_job(const char *id, long want)
{
	char path[160];

	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	return harness_expect(&serve, want, "GET", path, st.launcher, NULL,
	    NULL);
}

static const char *
state(const json_t *j)
{
	return json_string_value(json_object_get(j, "state")) ?: "(none)";
}

static json_t *
wait_done(const char *id)
{
	for (int i = 0; i < 400; i++) {
		json_t *j = get_job(id, 200);
		if (strcmp(state(j), "done") == 0)
			return j;
		json_decref(j);
		usleep(50000);
	}
	ck_abort_msg("job %s did not end", id);
	return NULL;
}

/* Waits until the running job id wrote text (its loop runs, so a stop
 * goes through its stop path). */
static void
wait_output(const char *id, const char *text)
{
	char path[300];
	long next = 0;

	for (int i = 0; i < 20; i++) {
		snprintf(path, sizeof(path),
		    "/v1/jobs/%s/output?follow=1&offset=%ld&wait=5", id, next);
		json_t *j = harness_expect(&serve, 200, "GET", path,
			   st.launcher, NULL, NULL),
		       *c;
		size_t k;
		bool seen = false;
		json_array_foreach(json_object_get(j, "chunks"), k, c) seen |=
		    strstr(json_string_value(json_object_get(c, "text")) ?: "",
			text) != NULL;
		next = (long)json_integer_value(json_object_get(j, "next"));
		json_decref(j);
		if (seen)
			return;
	}
	ck_abort_msg("job %s never wrote %s", id, text);
}

/* GET path as text: the body (free it) and the status. */
static char *
get_raw(const char *path, long *ret_status)
{
	struct httpc_answer a;
	char *body;

	ck_assert_int_eq(httpc_request(serve.base, "GET", path, st.launcher,
			     NULL, NULL, 10000, &a),
	    0);
	*ret_status = a.status;
	body = strndup(a.body.data != NULL ? a.body.data : "", a.body.len);
	httpc_answer_free(&a);
	return body;
}

START_TEST(finished_jobs_survive_a_restart)
{
	char path[300], *a, *b, *patch, *again;
	json_t *j, *list, *r;
	long status;

	j = post_job(201, "Idempotency-Key: persist-1",
	    "echo new > repo/NEW.md");
	a = job_id(j);
	json_decref(j);
	json_decref(wait_done(a));
	snprintf(path, sizeof(path), "/v1/jobs/%s/patch", a);
	patch = get_raw(path, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_ptr_nonnull(strstr(patch, "+new"));
	/* Running when serve is told to stop: stopped through its stop
	 * path, then recorded as done. */
	j = post_job(201, NULL, "echo started; sleep 60");
	b = job_id(j);
	json_decref(j);
	wait_output(b, "started");

	ck_assert_int_eq(daemon_stop(&serve), 0);
	ck_assert_int_eq(daemon_restart(&serve), 0);

	j = harness_expect(&serve, 200, "GET", "/v1/jobs", st.launcher, NULL,
	    NULL);
	list = json_object_get(j, "jobs");
	ck_assert_msg(json_array_size(list) == 2, "after a restart: %s",
	    json_dumps(j, JSON_COMPACT));
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 0), "job")),
	    b);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 1), "job")),
	    a);
	json_decref(j);

	j = get_job(a, 200);
	ck_assert_str_eq(state(j), "done");
	json_t *res = json_object_get(j, "result");
	ck_assert_int_eq(json_integer_value(json_object_get(res, "exit_code")),
	    0);
	ck_assert_str_eq(json_string_value(json_object_get(res, "stop_reason")),
	    "exit");
	ck_assert_ptr_nonnull(
	    json_string_value(json_object_get(res, "verdict")));
	json_decref(j);
	j = get_job(b, 200);
	ck_assert_str_eq(state(j), "done");
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_object_get(j, "result"),
				 "stop_reason")),
	    "stopped");
	json_decref(j);

	again = get_raw(path, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_str_eq(again, patch);
	snprintf(path, sizeof(path), "/v1/jobs/%s/report", a);
	r = harness_expect(&serve, 200, "GET", path, st.launcher, NULL, NULL);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_object_get(r, "patch"),
				 "bytes")),
	    (json_int_t)strlen(patch));
	ck_assert_int_eq(json_array_size(json_object_get(r, "changes")), 1);
	json_decref(r);
	/* The output too (it_serve_keep has more of it). */
	snprintf(path, sizeof(path), "/v1/jobs/%s/output", a);
	json_decref(
	    harness_expect(&serve, 200, "GET", path, st.launcher, NULL, NULL));
	/* The key still names its job. */
	j = post_job(200, "Idempotency-Key: persist-1",
	    "echo new > repo/NEW.md");
	ck_assert_str_eq(json_string_value(json_object_get(j, "job")), a);
	json_decref(j);
	free(again);
	free(patch);
	free(a);
	free(b);
}
END_TEST

START_TEST(a_job_running_when_serve_died_is_lost)
{
	char path[300], *id, *patch = NULL;
	json_t *j;
	long status = 0;

	j = post_job(201, NULL,
	    "echo was-here > repo/LOST.md; echo written; sleep 60");
	id = job_id(j);
	json_decref(j);
	/* Its file written before serve dies. */
	wait_output(id, "written");
	daemon_kill(&serve);
	ck_assert_int_eq(daemon_restart(&serve), 0);

	j = get_job(id, 200);
	ck_assert_msg(strcmp(state(j), "lost") == 0, "state %s", state(j));
	const char *e = json_string_value(json_object_get(j, "error"));
	ck_assert_msg(e != NULL && strstr(e, "cordon recover") != NULL, "%s",
	    e != NULL ? e : "(no error)");
	json_decref(j);
	j = harness_expect(&serve, 200, "GET", "/v1/jobs?state=lost",
	    st.launcher, NULL, NULL);
	ck_assert_int_eq(json_array_size(json_object_get(j, "jobs")), 1);
	json_decref(j);

	/* The old spawner stopped it through its stop path: the patch comes
	 * once written. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/patch", id);
	for (int i = 0; i < 300; i++) {
		free(patch);
		patch = get_raw(path, &status);
		if (status == 200)
			break;
		ck_assert_msg(status == 404, "%ld: %s", status, patch);
		usleep(100 * 1000);
	}
	ck_assert_msg(status == 200 && strstr(patch, "+was-here") != NULL,
	    "%ld: %s", status, patch);
	free(patch);
	free(id);
}
END_TEST

/* serve and the job's own cordon run both die (the whole service killed):
 * the job is lost, and the cordon recover the restarted serve runs
 * finishes it, revoked at the broker and its patch served. */
START_TEST(a_job_whose_launcher_died_too_is_finished_by_recover)
{
	char path[600], *id, *patch = NULL;
	json_t *j, *rec;
	long status = 0;

	j = post_job(201, NULL,
	    "echo was-here > repo/LOST.md; echo written; sleep 60");
	id = job_id(j);
	json_decref(j);
	wait_output(id, "written");
	/* Its cordon run, held still so that nothing of its stop path runs,
	 * then killed with serve. */
	snprintf(path, sizeof(path), "%s/state/running/%s", st.launcher_dir,
	    id);
	rec = json_load_file(path, 0, NULL);
	ck_assert_msg(rec != NULL, "no record at %s", path);
	pid_t pid = (pid_t)json_integer_value(json_object_get(rec, "pid"));
	json_decref(rec);
	ck_assert_int_gt(pid, 1);
	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	daemon_kill(&serve);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(daemon_restart(&serve), 0);

	j = get_job(id, 200);
	ck_assert_msg(strcmp(state(j), "lost") == 0, "state %s", state(j));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s/patch", id);
	for (int i = 0; i < 400; i++) {
		free(patch);
		patch = get_raw(path, &status);
		if (status == 200)
			break;
		ck_assert_msg(status == 404, "%ld: %s", status, patch);
		usleep(100 * 1000);
	}
	ck_assert_msg(status == 200 && strstr(patch, "+was-here") != NULL,
	    "%ld: %s", status, patch);
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	j = harness_expect(&st.broker, 200, "GET", path, st.admin, NULL, NULL);
	ck_assert_msg(strcmp(state(j), "running") != 0,
	    "recover left it running at the broker");
	json_decref(j);
	free(patch);
	free(id);
}
END_TEST

/* A forgotten job's patch goes with its record (serve_keep_jobs 1,
 * serve_keep_seconds 0): the older job's <state_dir>/<job>.patch is
 * removed once its record is, the newer's, still named, stays, also
 * across a restart. */
START_TEST(patches_go_with_their_records)
{
	char path[600], pa[600], pb[600], *a, *b, *patch;
	json_t *cfg, *j;
	struct stat sb;
	long status;
	int i;

	ck_assert_int_eq(daemon_stop(&serve), 0);
	cfg = json_load_file(st.launcher_cfg, 0, NULL);
	ck_assert_ptr_nonnull(cfg);
	json_object_set_new(cfg, "serve_keep_jobs", json_integer(1));
	json_object_set_new(cfg, "serve_keep_seconds", json_integer(0));
	char *text = json_dumps(cfg, JSON_COMPACT);
	json_decref(cfg);
	ck_assert_int_eq(daemon_start(&serve, "launcher", text), 0);
	free(text);

	j = post_job(201, NULL, "echo a > repo/A.md");
	a = job_id(j);
	json_decref(j);
	json_decref(wait_done(a));
	snprintf(pa, sizeof(pa), "%s/state/%s.patch", st.launcher_dir, a);
	ck_assert_msg(stat(pa, &sb) == 0, "no patch at %s", pa);
	j = post_job(201, NULL, "echo b > repo/B.md");
	b = job_id(j);
	json_decref(j);
	json_decref(wait_done(b));
	snprintf(pb, sizeof(pb), "%s/state/%s.patch", st.launcher_dir, b);
	/* The older one forgotten (a second after it ended, at most). */
	snprintf(path, sizeof(path), "/v1/jobs/%s", a);
	for (i = 0; i < 100; i++) {
		free(get_raw(path, &status));
		if (status == 404)
			break;
		usleep(100 * 1000);
	}
	ck_assert_int_eq(status, 404);
	for (i = 0; i < 50 && stat(pa, &sb) == 0; i++)
		usleep(100 * 1000);
	ck_assert_msg(stat(pa, &sb) < 0, "%s outlived its job's record", pa);
	ck_assert_msg(stat(pb, &sb) == 0, "%s, still named, removed", pb);
	/* Kept across a restart, and still served. */
	ck_assert_int_eq(daemon_stop(&serve), 0);
	ck_assert_int_eq(daemon_restart(&serve), 0);
	ck_assert_msg(stat(pb, &sb) == 0, "%s removed at a restart", pb);
	snprintf(path, sizeof(path), "/v1/jobs/%s/patch", b);
	patch = get_raw(path, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_ptr_nonnull(strstr(patch, "+b"));
	free(patch);
	free(a);
	free(b);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("serve_persist");
	TCase *tc = tcase_create("serve_persist");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, finished_jobs_survive_a_restart);
	tcase_add_test(tc, a_job_running_when_serve_died_is_lost);
	tcase_add_test(tc,
	    a_job_whose_launcher_died_too_is_finished_by_recover);
	tcase_add_test(tc, patches_go_with_their_records);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
