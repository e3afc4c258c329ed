/*
 * cordon serve killed between `cordon run` telling it the job's id and
 * its first record of the job being on disk: nothing of the job may be
 * left that no record names. The moment is made for real: the broker is
 * stopped (SIGSTOP) while the job's cordon run asks it for the job, serve
 * is stopped then, the broker let go, and once cordon run has told the
 * id (it waits for serve's word that the job is recorded; a cordon run
 * that does not wait runs the job to its end and writes its patch) serve
 * is killed (SIGKILL). After a restart: no patch, no workspace made at
 * the hatch, no record of cordon run's left, the job revoked at the
 * broker, and a POST again with the same Idempotency-Key starts the job
 * (the first start had no effect).
 */
#include "harness.h"
#include "servekit.h"

#include "http_client.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct stack st;
static struct daemon serve;

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = 1360000 };

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	servekit_repo(&st);
	servekit_manifest(&st, "sweep-job", 0);
	servekit_start(&serve, &st, NULL);
}

static void
teardown(void)
{
	/* Never left stopped, whatever failed. */
	if (st.broker.pid > 1)
		(void)kill(st.broker.pid, SIGCONT);
	if (serve.pid > 1)
		(void)kill(serve.pid, SIGCONT);
	daemon_stop(&serve);
	stack_stop(&st);
}

static json_t *
job_body(void)
{
	return servekit_job(&st, "sweep-job", "echo made > repo/MADE.md", NULL);
}

/* The POST of the job, on a thread: its status (0: no answer). */
struct post {
	pthread_t thread;
	long status;
};

static void *
post_run(void *arg)
{
	struct post *p = arg;
	struct httpc_answer a;
	json_t *body = job_body();

	p->status = 0;
	if (httpc_request(serve.base, "POST", "/v1/jobs", st.launcher,
		"Idempotency-Key: sweep-1", body, 60000, &a) == 0) {
		p->status = a.status;
		httpc_answer_free(&a);
	}
	json_decref(body);
	return NULL;
}

/* The `cordon run` whose spawner is serve's child, or -1. */
static pid_t
find_run(pid_t serve_pid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = -1;

	ck_assert_ptr_nonnull(d);
	while (found < 0 && (e = readdir(d)) != NULL) {
		char *end, path[64], argv[256];
		long pid = strtol(e->d_name, &end, 10);
		if (*end != '\0' || pid <= 1)
			continue;
		pid_t pp = servekit_parent_of((pid_t)pid, NULL);
		if (pp <= 1 || servekit_parent_of(pp, NULL) != serve_pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
		FILE *f = fopen(path, "re");
		if (f == NULL)
			continue;
		size_t n = fread(argv, 1, sizeof(argv) - 1, f);
		fclose(f);
		argv[n] = '\0';
		/* argv[0] "cordon", argv[1] "run" */
		if (n > strlen(argv) + 4 &&
		    strcmp(argv + strlen(argv) + 1, "run") == 0)
			found = (pid_t)pid;
	}
	closedir(d);
	return found;
}

/* The id of the job whose cordon run record is in <state>/running, into
 * id; false when there is none. */
static bool
running_job(char *id, size_t len)
{
	char dir[400];
	struct dirent *e;
	DIR *d;
	bool found = false;

	snprintf(dir, sizeof(dir), "%s/state/running", st.launcher_dir);
	if ((d = opendir(dir)) == NULL)
		return false;
	while (!found && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.') {
			snprintf(id, len, "%s", e->d_name);
			found = true;
		}
	closedir(d);
	return found;
}

/* Whether pid sleeps in read(2) on descriptor 3 (/proc/PID/syscall: the
 * call's number, then its arguments): cordon run waiting for serve's
 * word. */
static bool
reads_fd3(pid_t pid)
{
	char path[64], buf[256] = "";
	long nr = -1;
	unsigned long fd = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	if (fgets(buf, sizeof(buf), f) == NULL)
		buf[0] = '\0';
	fclose(f);
	return sscanf(buf, "%ld 0x%lx", &nr, &fd) == 2 && nr == SYS_read &&
	    fd == 3;
}

START_TEST(a_kill_before_the_first_record_leaves_nothing)
{
	struct post p = { 0 };
	char id[128] = "", patch[600], rec[600];
	struct stat sb;
	pid_t run = -1;

	ck_assert_int_gt(st.broker.pid, 1);
	ck_assert_int_gt(serve.pid, 1);
	ck_assert_int_eq(kill(st.broker.pid, SIGSTOP), 0);
	ck_assert_int_eq(pthread_create(&p.thread, NULL, post_run, &p), 0);
	for (int i = 0; i < 400 && (run = find_run(serve.pid)) < 0; i++)
		usleep(25000);
	ck_assert_msg(run > 1, "no cordon run under serve");
	/* cordon run waits at the broker; serve for the id it will tell. */
	ck_assert_int_eq(kill(serve.pid, SIGSTOP), 0);
	ck_assert_int_eq(kill(st.broker.pid, SIGCONT), 0);
	/* Told: its record names the job. Then it waits for serve, or goes
	 * on to run the job and write the patch. */
	for (int i = 0; i < 400 && !running_job(id, sizeof(id)); i++)
		usleep(25000);
	ck_assert_msg(id[0] != '\0', "cordon run never made its record");
	snprintf(patch, sizeof(patch), "%s/state/%s.patch", st.launcher_dir,
	    id);
	bool waits = false, patched = false;
	for (int i = 0; i < 1200 && !waits && !patched; i++) {
		waits = reads_fd3(run);
		patched = stat(patch, &sb) == 0;
		if (!waits && !patched)
			usleep(25000);
	}
	ck_assert_msg(waits || patched, "cordon run neither waits nor ends");
	daemon_kill(&serve);
	pthread_join(p.thread, NULL);
	ck_assert_int_eq(p.status, 0);

	ck_assert_int_eq(daemon_restart(&serve), 0);
	/* Its cordon run ends (or recover, run at serve's start, ends the
	 * job): no record of its is left. */
	snprintf(rec, sizeof(rec), "%s/state/running/%s", st.launcher_dir, id);
	for (int i = 0; i < 600 && (kill(run, 0) == 0 || stat(rec, &sb) == 0);
	     i++)
		usleep(50000);
	ck_assert_msg(stat(rec, &sb) < 0, "%s left", rec);
	ck_assert_msg(stat(patch, &sb) < 0,
	    "%s left, and no record of serve's names it", patch);
	/* Nothing was made for it at the hatch. */
	json_t *lines = daemon_log_lines(&st.hatch), *l;
	size_t k, at_hatch = 0;
	json_array_foreach(lines, k, l)
	{
		const char *job = json_string_value(json_object_get(l, "job"));
		at_hatch += job != NULL && strcmp(job, id) == 0;
	}
	json_decref(lines);
	ck_assert_msg(at_hatch == 0, "the hatch logged %zu lines of job %s",
	    at_hatch, id);
	/* The broker tells it: revoked. */
	char path[200];
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	json_t *b =
	    harness_expect(&st.broker, 200, "GET", path, st.admin, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(b, "state")) ?: "",
	    "revoked");
	json_decref(b);
	/* serve never answered with it, nor knows it. */
	json_decref(
	    harness_expect(&serve, 404, "GET", path, st.launcher, NULL, NULL));
	/* The client asks again with its key: a job that runs. */
	json_t *j = harness_expect(&serve, 201, "POST", "/v1/jobs", st.launcher,
	    "Idempotency-Key: sweep-1", job_body());
	char *again = servekit_job_id(j);
	ck_assert_str_ne(again, id);
	json_decref(j);
	/* It ends (asserted by the wait). */
	json_decref(servekit_wait_state(&serve, &st, again, "done"));
	free(again);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("serve_sweep");
	TCase *tc = tcase_create("serve_sweep");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_kill_before_the_first_record_leaves_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
