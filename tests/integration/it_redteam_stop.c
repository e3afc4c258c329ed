/*
 * A hostile review of the stop path: a job that tries to outlive its stop
 * (jobs/redteam/linger.py: a double-forked daemon in a session of its own
 * ignoring every catchable signal, a stopped process, a traced one, a
 * process that re-forks itself every 10 ms, an interval timer that forks
 * a new daemon, a zombie) and then exits 0 at once, so that the stop path
 * runs with all of them alive (the daemons' files are in the patch).
 * Once `cordon run` returns, no process of the job's uid is left on the
 * host, nor a second later.
 */
#include "harness.h"

#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UID_BASE 870000

static struct stack st;

/* The processes on the host whose real or effective uid is in the
 * launcher's job range: how many, their pids and names in what. */
static int
job_processes(char *what, size_t cap)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	what[0] = '\0';
	while ((e = readdir(d)) != NULL) {
		char path[300], line[256], name[64] = "?";
		long ruid = -1, euid = -1;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL) {
			if (strncmp(line, "Name:", 5) == 0)
				sscanf(line + 5, " %63s", name);
			if (strncmp(line, "Uid:", 4) == 0)
				sscanf(line + 4, " %ld %ld", &ruid, &euid);
		}
		fclose(f);
		if ((ruid >= UID_BASE && ruid < UID_BASE + 1000) ||
		    (euid >= UID_BASE && euid < UID_BASE + 1000)) {
			size_t l = strlen(what);
			snprintf(what + l, cap - l, "%s(%s uid %ld) ",
			    e->d_name, name, ruid);
			n++;
		}
	}
	closedir(d);
	return n;
}

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = UID_BASE,
		.hosts = "127.0.0.1 api.test\n" };
	char path[400], src[512], *text;
	FILE *f;
	long n;

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(src, sizeof(src), "%s",
	    CORDON_SOURCE_DIR "/tests/integration/jobs/redteam/linger.py");
	f = fopen(src, "re");
	ck_assert_msg(f != NULL, "%s", src);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, 0);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	snprintf(path, sizeof(path), "%s/repo/linger.py", st.inputs);
	harness_write_file(path, text);
	free(text);
	json_t *m =
	    json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:[s], s:s}],"
		      " s:{s:i, s:i, s:i}}",
		"name", "linger", "command", "/bin/true", "capabilities",
		"name", "x.read", "audience", "api", "params", "t", "1",
		"ttl_seconds", 900, "reason", "read x", "egress", "host",
		"api.test", "port", 80, "methods", "GET", "paths", "/ok/",
		"reason", "the api", "limits", "wall_seconds", 30, "memory_mb",
		512, "pids", 64);
	ck_assert_ptr_nonnull(m);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/linger", st.admin, NULL, m));
}

static void
teardown(void)
{
	stack_stop(&st);
}

START_TEST(nothing_of_the_job_outlives_its_stop)
{
	static char out[1 << 20], err[1 << 16];
	char input[400], left[4096];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", "linger", "--input",
		input, "--", "/usr/bin/python3", "-B", "/work/repo/linger.py",
		NULL };
	json_t *j;
	int status;

	ck_assert_int_eq(job_processes(left, sizeof(left)), 0);
	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	status =
	    harness_run_for(argv, 60000, out, sizeof(out), err, sizeof(err));
	/* Before anything else: what is left of the job on the host. */
	int alive = job_processes(left, sizeof(left));
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	const char *stdout_text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	ck_assert_msg(stdout_text != NULL && strstr(stdout_text, "ready"),
	    "the job did not get going: %s\n%s", out, err);
	ck_assert_msg(alive == 0, "alive after cordon run returned: %s", left);
	/* The daemons did run while the job did: their files are in the
	 * patch. */
	const char *patch = json_string_value(json_object_get(j, "patch"));
	ck_assert_ptr_nonnull(patch);
	FILE *pf = fopen(patch, "re");
	static char ptext[1 << 16];
	ck_assert_msg(pf != NULL, "%s", patch);
	ptext[fread(ptext, 1, sizeof(ptext) - 1, pf)] = '\0';
	fclose(pf);
	ck_assert_msg(strstr(ptext, "repo/late-daemon.txt") != NULL, "%s",
	    ptext);
	ck_assert_msg(strstr(ptext, "repo/late-timer.txt") != NULL, "%s",
	    ptext);
	/* Nor one that was on its way out (a fork in flight). */
	sleep(1);
	ck_assert_msg(job_processes(left, sizeof(left)) == 0,
	    "alive a second after: %s", left);
	json_decref(j);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("redteam_stop");
	TCase *tc = tcase_create("stop");

	tcase_set_timeout(tc, 90);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, nothing_of_the_job_outlives_its_stop);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
