/*
 * cordon serve's spawner (launcher/spawner.c), with a stand-in for
 * cordon: a shell script that prints its argv and, asked to, holds. The
 * spawner builds the argv itself from a run request's fields, tells each
 * child's exit, stops only on request or when the HTTP part's end
 * closes, and opens <state_dir>/<job>.patch only for a job name, not a
 * path nor a symbolic link.
 */
#include "spawner.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct spawner sp;
static char cordon[PATH_MAX], cfg[PATH_MAX];

/* The stand-in, and a spawner for it with state_dir testutil_dir. */
static void
start(void)
{
	testutil_at(cordon, "cordon");
	testutil_write_text(cordon,
	    "#!/bin/sh\n"
	    "printf '%s\\n' \"$@\"\n"
	    "case \"$*\" in *hold*) exec sleep 60;; esac\n");
	ck_assert_int_eq(chmod(cordon, 0755), 0);
	testutil_at(cfg, "launcher.json");
	ck_assert_int_eq(spawner_start(&sp, cordon, cfg, testutil_dir), 0);
}

/* Runs a job of the given command words: its pid, its stdout's read end
 * in *out. */
static pid_t
run(const char *const *command, size_t n, int *out)
{
	static const char *const inputs[] = { "/src/repo:repo" };
	int p[2], null = open("/dev/null", O_RDWR | O_CLOEXEC);
	pid_t pid;

	ck_assert_int_ge(null, 0);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	const int fds[4] = { p[1], null, null, null };
	pid = spawner_run(&sp, "m1", inputs, 1, command, n, fds);
	close(p[1]);
	close(null);
	*out = p[0];
	return pid;
}

START_TEST(the_spawner_builds_the_argv_and_tells_the_exit)
{
	static const char *const command[] = { "echo", "--config", "/evil" };
	char got[1024] = "";
	int out, st = -1;
	size_t len = 0;
	ssize_t k;

	start();
	pid_t pid = run(command, 3, &out);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(spawner_reaped(&sp, pid, &st, 30000), 1);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	while ((k = read(out, got + len, sizeof(got) - 1 - len)) > 0)
		len += (size_t)k;
	close(out);
	got[len] = '\0';
	char want[8192];
	snprintf(want, sizeof(want),
	    "run\n--json\n--id-fd\n3\n--config\n%s\n--manifest\nm1\n"
	    "--input\n/src/repo:repo\n--\necho\n--config\n/evil\n",
	    cfg);
	ck_assert_str_eq(got, want);
	/* Told once. */
	ck_assert_int_eq(spawner_reaped(&sp, pid, &st, 0), 0);
	ck_assert_int_eq(spawner_close(&sp), 0);
}
END_TEST

START_TEST(a_child_stops_on_request_and_with_the_http_part)
{
	static const char *const hold[] = { "hold" };
	int out, out2, st = -1;

	start();
	/* Their stdout kept open: a closed one would end them (SIGPIPE). */
	pid_t a = run(hold, 1, &out);
	pid_t b = run(hold, 1, &out2);
	ck_assert_int_gt(a, 0);
	ck_assert_int_gt(b, 0);
	ck_assert_int_eq(spawner_reaped(&sp, a, &st, 0), 0);
	ck_assert_int_eq(spawner_stop(&sp, a), 0);
	ck_assert_int_eq(spawner_reaped(&sp, a, &st, 30000), 1);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x",
	    st);
	/* Its end closed: b is stopped, waited for, and the spawner ends. */
	ck_assert_int_eq(spawner_close(&sp), 0);
	ck_assert_int_eq(kill(b, 0), -1);
	ck_assert_int_eq(errno, ESRCH);
	close(out);
	close(out2);
}
END_TEST

/* The HTTP part's handler (serve's, check's runner's: killpg of the
 * test's group), as a child runs it if it keeps it until its exec: it
 * tells the test process, which keeps SIGTERM blocked to count it. */
static pid_t http_part;

static void
tell_http_part(int sig)
{
	(void)sig;
	if (getpid() != http_part)
		(void)kill(http_part, SIGTERM);
}

/* A job stopped the moment it starts gets the signal before its exec:
 * it must die of it (SIGTERM's default), not run the HTTP part's handler,
 * which under check killed the test process ("Received signal 15"). */
START_TEST(a_child_stopped_at_once_runs_no_handler_of_ours)
{
	static const char *const hold[] = { "hold" };
	struct sigaction sa = { .sa_handler = tell_http_part };
	struct timespec zero = { 0, 0 };
	sigset_t term;
	siginfo_t si;
	int out, st;

	http_part = getpid();
	ck_assert_int_gt(http_part, 1);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	ck_assert_int_eq(sigprocmask(SIG_BLOCK, &term, NULL), 0);
	ck_assert_int_eq(sigaction(SIGTERM, &sa, NULL), 0);
	start();
	for (int i = 0; i < 40; i++) {
		pid_t pid = run(hold, 1, &out);

		ck_assert_int_gt(pid, 1);
		ck_assert_int_eq(spawner_stop(&sp, pid), 0);
		ck_assert_int_eq(spawner_reaped(&sp, pid, &st, 30000), 1);
		close(out);
		ck_assert_msg(sigtimedwait(&term, &si, &zero) < 0,
		    "job %d of 40 (pid %d) ran our handler: SIGTERM from %d",
		    i + 1, (int)pid, (int)si.si_pid);
	}
	ck_assert_int_eq(spawner_close(&sp), 0);
}
END_TEST

START_TEST(a_patch_is_opened_for_a_job_name_only)
{
	char path[PATH_MAX], link[PATH_MAX], text[16] = "";
	int fd;

	start();
	testutil_write_text(testutil_at(path, "job_a.patch"), "diff\n");
	ck_assert_int_eq(chmod(path, 0600), 0);
	fd = spawner_open_patch(&sp, "job_a");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, text, sizeof(text) - 1), 5);
	ck_assert_str_eq(text, "diff\n");
	close(fd);
	ck_assert_int_eq(spawner_open_patch(&sp, "job_none"), -ENOENT);
	ck_assert_int_eq(spawner_open_patch(&sp, "../job_a"), -EINVAL);
	ck_assert_int_eq(spawner_open_patch(&sp, "job_a.patch"), -EINVAL);
	/* A link to a good patch is no patch. */
	ck_assert_int_eq(symlink(path, testutil_at(link, "job_l.patch")), 0);
	ck_assert_int_eq(spawner_open_patch(&sp, "job_l"), -ELOOP);
	ck_assert_int_eq(mkdir(testutil_at(path, "job_d.patch"), 0700), 0);
	ck_assert_int_eq(spawner_open_patch(&sp, "job_d"), -EINVAL);
	ck_assert_int_eq(spawner_close(&sp), 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("spawner");
	TCase *tc = tcase_create("spawner");

	testutil_tmp_fixture(tc, "spawner");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_add_test(tc, the_spawner_builds_the_argv_and_tells_the_exit);
	tcase_add_test(tc, a_child_stops_on_request_and_with_the_http_part);
	tcase_add_test(tc, a_child_stopped_at_once_runs_no_handler_of_ours);
	tcase_add_test(tc, a_patch_is_opened_for_a_job_name_only);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
