/*
 * A job that never ran never comes back as a patch. The hatch runs in a
 * mount namespace of its own whose mounts do not reach the launcher's (a
 * slave of this test's, as systemd gives a unit with ProtectSystem= and
 * the like: docs/operations.md#the-hatchs-mounts), so the workspace tmpfs
 * it mounts is an empty directory where `cordon run` looks. `cordon run`
 * must see that before the spawn and stop there: exit 125, one line that
 * names the workspace, the cause and what to do, a result with no patch
 * and no verdict ("started": false), the job's token revoked at the
 * broker, and the workspace released at the hatch (closed: no seal of an
 * empty view). Before, it printed "the job's uid: No such file or
 * directory" and named an empty patch "clean". And a launcher killed
 * before its sandbox was told to go leaves `cordon recover` a record that
 * says the job never ran: recover releases the workspace, no patch.
 */
#include "harness.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char self[PATH_MAX]; /* this program, the hatch's wrapper */
static struct stack st;

/* --own-ns PROGRAM ARGS...: PROGRAM in a new mount namespace whose mounts
 * are slaves of this one's: what it mounts stays its own. */
static void __attribute__((noreturn)) own_ns(char **argv)
{
	if (argv[0] == NULL) {
		fprintf(stderr, "own-ns: no program\n");
		_exit(64);
	}
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0) {
		fprintf(stderr, "own-ns: %s\n", strerror(errno));
		_exit(71);
	}
	execv(argv[0], argv);
	fprintf(stderr, "own-ns: exec %s: %s\n", argv[0], strerror(errno));
	_exit(71);
}

static void
setup(void)
{
	static const char *wrap[] = { self, "--own-ns", NULL };
	static const struct stack_options o = { .uid_base = 960000,
		.hatch_wrap = wrap };
	char path[400];

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", st.inputs);
	harness_write_file(path, "hello\n");
	json_t *m = json_pack("{s:s, s:[s], "
			      "s:[{s:s, s:s, s:{s:[s]}, s:i, s:s, s:b}], "
			      "s:{s:i, s:i, s:i}}",
	    "name", "startfail-job", "command", "/bin/true", "capabilities",
	    "name", "x.read", "audience", "api", "params", "t", "1",
	    "ttl_seconds", 900, "reason", "read x", "mint_at_start", 1,
	    "limits", "wall_seconds", 60, "disk_mb", 16, "memory_mb", 512);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/startfail-job", st.admin, NULL, m));
}

static void
teardown(void)
{
	stack_stop(&st);
}

START_TEST(a_workspace_the_launcher_cannot_see_is_no_clean_patch)
{
	static char out[1 << 16], err[1 << 16];
	char input[400], patch[400], path[200];
	struct stat sb;

	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	snprintf(patch, sizeof(patch), "%s/job.patch", st.launcher_dir);
	char *run[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", "startfail-job",
		"--input", input, "--patch-out", patch, "--", "/bin/sh", "-c",
		"echo ran >repo/NEW.txt", NULL };
	int rc =
	    harness_run_for(run, 60000, out, sizeof(out), err, sizeof(err));
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no result (status %d): %s\n%s", rc, out, err);
	const char *id = json_string_value(json_object_get(j, "job"));
	ck_assert_ptr_nonnull(id);

	/* One line: what is wrong, where, and what to do. */
	const char *line = strstr(err, "cordon run: the hatch's workspace ");
	ck_assert_msg(rc == 125 && line != NULL &&
		strstr(line, "is not the one the hatch made") != NULL &&
		strstr(line, "operations.md#the-hatchs-mounts") != NULL &&
		strstr(err, "the job's uid") == NULL,
	    "status %d (want 125), stderr: %s", rc, err);
	/* Nothing claimed of a job that never ran. */
	ck_assert_msg(json_string_value(json_object_get(j, "patch")) == NULL &&
		json_string_value(json_object_get(j, "verdict")) == NULL &&
		json_is_false(json_object_get(j, "started")) &&
		stat(patch, &sb) < 0 && errno == ENOENT,
	    "a result for a job that never ran: %s", out);
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason"))
		?: "",
	    "launcher_error");
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(j, "start_error")) ?: "",
		"is not the one the hatch made"));
	/* Its token died at the broker, and the broker says revoked. */
	ck_assert_msg(json_is_true(json_object_get(j, "revoked")) &&
		json_integer_value(json_object_get(j, "tokens_revoked")) == 1,
	    "not revoked: %s", out);
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	json_t *b =
	    harness_expect(&st.broker, 200, "GET", path, st.admin, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(b, "state")) ?: "",
	    "revoked");
	json_decref(b);
	/* Released at the hatch, never sealed: gone, and closed for good. */
	snprintf(path, sizeof(path), "/v1/workspaces/%s/report", id);
	json_decref(harness_expect(&st.hatch, 404, "GET", path, st.launcher,
	    NULL, NULL));
	json_decref(harness_expect(&st.hatch, 409, "POST", "/v1/workspaces",
	    st.launcher, NULL, json_pack("{s:s, s:[]}", "job", id, "inputs")));
	json_t *lines = daemon_log_lines(&st.hatch), *l;
	size_t k, deleted = 0, sealed = 0;
	json_array_foreach(lines, k, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));
		const char *job = json_string_value(json_object_get(l, "job"));
		if (ev == NULL || job == NULL || strcmp(job, id) != 0)
			continue;
		deleted += strcmp(ev, "workspace_deleted") == 0;
		sealed += strcmp(ev, "workspace_sealed") == 0;
	}
	json_decref(lines);
	ck_assert_msg(deleted == 1 && sealed == 0,
	    "the hatch: %zu workspace_deleted (want 1), %zu workspace_sealed "
	    "(want 0) for a job that never ran",
	    deleted, sealed);
	json_decref(j);
}
END_TEST

/* Without --json, the summary line says so too. */
START_TEST(the_summary_says_the_job_never_ran)
{
	static char out[1 << 16], err[1 << 16];
	char input[400];

	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	char *run[] = { (char *)harness_bin("cordon"), "run", "--config",
		st.launcher_cfg, "--manifest", "startfail-job", "--input",
		input, "--", "/bin/true", NULL };
	int rc =
	    harness_run_for(run, 60000, out, sizeof(out), err, sizeof(err));
	ck_assert_msg(rc == 125 &&
		strstr(err, "cordon run: the hatch's workspace ") != NULL &&
		strstr(err, "1 token(s) revoked") != NULL &&
		strstr(err, "patch none (the job never ran)") != NULL,
	    "status %d, stderr: %s", rc, err);
}
END_TEST

/* Whether the hatch logged event for job (count). */
static size_t
hatch_logged(const char *event, const char *job)
{
	json_t *lines = daemon_log_lines(&st.hatch), *l;
	size_t k, n = 0;

	json_array_foreach(lines, k, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));
		const char *j = json_string_value(json_object_get(l, "job"));
		n += ev != NULL && j != NULL && strcmp(ev, event) == 0 &&
		    (job == NULL || strcmp(j, job) == 0);
	}
	json_decref(lines);
	return n;
}

/*
 * A launcher killed after its workspace was made and before its sandbox
 * was told to go (held there: the proxy is stopped, so the channel's
 * answer does not come): `cordon recover` revokes the job and releases
 * its workspace, and names no patch.
 */
START_TEST(recover_releases_the_workspace_of_a_job_that_never_ran)
{
	static char out[1 << 16], err[1 << 16];
	char input[400], patch[400], job[64] = "";
	struct stat sb;
	int status;

	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	snprintf(patch, sizeof(patch), "%s/job.patch", st.launcher_dir);
	ck_assert_int_gt(st.proxy.pid, 1);
	ck_assert_int_eq(kill(st.proxy.pid, SIGSTOP), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execl(harness_bin("cordon"), "cordon", "run", "--json",
		    "--config", st.launcher_cfg, "--manifest", "startfail-job",
		    "--input", input, "--patch-out", patch, "--", "/bin/true",
		    (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 1);
	for (int i = 0; i < 200 && hatch_logged("workspace_created", NULL) == 0;
	     i++)
		usleep(50000);
	json_t *lines = daemon_log_lines(&st.hatch), *l;
	size_t k;
	json_array_foreach(lines, k, l)
	{
		const char *ev = json_string_value(json_object_get(l, "event"));
		if (ev != NULL && strcmp(ev, "workspace_created") == 0)
			snprintf(job, sizeof(job), "%s",
			    json_string_value(json_object_get(l, "job")) ?: "");
	}
	json_decref(lines);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(kill(st.proxy.pid, SIGCONT), 0);
	ck_assert_msg(job[0] != '\0', "the hatch made no workspace");

	char *rec[] = { (char *)harness_bin("cordon"), "recover", "--json",
		"--config", st.launcher_cfg, NULL };
	int rc =
	    harness_run_for(rec, 60000, out, sizeof(out), err, sizeof(err));
	json_t *j = json_loads(out, 0, NULL);
	json_t *e = json_array_get(json_object_get(j, "jobs"), 0);
	ck_assert_msg(rc == 0 &&
		strcmp(json_string_value(json_object_get(e, "job")) ?: "",
		    job) == 0 &&
		json_is_string(json_object_get(e, "workspace")) &&
		strcmp(json_string_value(json_object_get(e, "workspace")),
		    "released: the job never ran") == 0,
	    "recover (status %d): %s\n%s", rc, out, err);
	ck_assert_msg(stat(patch, &sb) < 0 && errno == ENOENT,
	    "a patch of a job that never ran at %s", patch);
	ck_assert_msg(hatch_logged("workspace_sealed", job) == 0 &&
		hatch_logged("workspace_deleted", job) == 1,
	    "the hatch sealed the workspace of a job that never ran, or did "
	    "not remove it");
	json_decref(j);
}
END_TEST

int
main(int argc, char **argv)
{
	Suite *s = suite_create("startfail");
	TCase *tc = tcase_create("startfail");

	if (argc > 1 && strcmp(argv[1], "--own-ns") == 0)
		own_ns(argv + 2);
	if (readlink("/proc/self/exe", self, sizeof(self) - 1) < 0) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc,
	    a_workspace_the_launcher_cannot_see_is_no_clean_patch);
	tcase_add_test(tc, the_summary_says_the_job_never_ran);
	tcase_add_test(tc,
	    recover_releases_the_workspace_of_a_job_that_never_ran);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
