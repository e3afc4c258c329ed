/*
 * A finished job's output as cordon serve answers it after a restart of
 * its own, read back from <state_dir>/serve-jobs/<job>.output.json: GET
 * /v1/jobs/{job} shows the same result, output included (held to the
 * manifest's output_kb as it was), and the file is read outside serve's
 * main lock: while one client's read of a kept output is held (the test
 * takes a write lease on the file, so serve's open of it waits until the
 * test lets it go, as a slow disk would), another client's GET /v1/jobs
 * is answered, and before that read ends.
 */
#include "harness.h"
#include "servekit.h"

#include "http_client.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct stack st;
static struct daemon serve;

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = 1361000 };

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	servekit_repo(&st);
	/* output_kb 1: the output is cut at 1 KiB a stream. */
	servekit_manifest(&st, "out-job", 1);
	/* serve with the stack's launcher configuration. */
	servekit_start(&serve, &st, NULL);
}

static void
teardown(void)
{
	daemon_stop(&serve);
	stack_stop(&st);
}

/* A finished job that wrote 3000 bytes on stdout and a line on stderr:
 * its id (free it). */
static char *
run_job(void)
{
	char *id = servekit_run(&serve, &st, "out-job",
	    "echo err-line >&2; head -c 3000 /dev/zero | tr '\\0' a");
	char file[600];

	/* Its output on disk (records are written off the request path). */
	servekit_wait_output(&st, id, file, sizeof(file));
	return id;
}

static json_t *
get_job(const char *id)
{
	char path[160];

	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	return harness_expect(&serve, 200, "GET", path, st.launcher, NULL,
	    NULL);
}

START_TEST(a_jobs_output_is_in_its_get_after_a_restart)
{
	char *id = run_job();
	json_t *before = get_job(id), *after;

	json_t *out =
	    json_object_get(json_object_get(before, "result"), "output");
	ck_assert_msg(json_is_object(out), "no output before the restart");
	json_t *so = json_object_get(out, "stdout");
	ck_assert_uint_eq(strlen(json_string_value(json_object_get(so, "text"))
				  ?: ""),
	    1024);
	ck_assert(json_is_true(json_object_get(so, "truncated")));

	ck_assert_int_eq(daemon_stop(&serve), 0);
	ck_assert_int_eq(daemon_restart(&serve), 0);
	after = get_job(id);
	json_t *kept =
	    json_object_get(json_object_get(after, "result"), "output");
	char *a = json_dumps(out, JSON_SORT_KEYS | JSON_COMPACT);
	char *b = kept != NULL ? json_dumps(kept, JSON_SORT_KEYS | JSON_COMPACT)
			       : NULL;
	ck_assert_msg(b != NULL && strcmp(a, b) == 0,
	    "after a restart GET /v1/jobs/%s has output %s, before %s", id,
	    b != NULL ? b : "(none)", a);
	/* The rest of the result as it was. */
	json_object_del(json_object_get(before, "result"), "output");
	json_object_del(json_object_get(after, "result"), "output");
	ck_assert(json_equal(json_object_get(before, "result"),
	    json_object_get(after, "result")));
	free(a);
	free(b);
	json_decref(before);
	json_decref(after);
	free(id);
}
END_TEST

START_TEST(a_kept_output_is_read_outside_the_lock)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	int step = 0;
	struct servekit_call read_out = { .serve = &serve,
		.key = st.launcher,
		.mu = &mu,
		.step = &step,
		.ended_at = -1 };
	struct servekit_call list = read_out;
	char *id = run_job(), file[600];
	int fd, lease = F_WRLCK;

	ck_assert_int_eq(daemon_stop(&serve), 0);
	ck_assert_int_eq(daemon_restart(&serve), 0);
	/* A write lease: an open of the file by another process waits until
	 * the lease is let go (the kernel gives it lease-break-time, 45 s).
	 * Its holder is told by SIGIO, which would end this process. */
	signal(SIGIO, SIG_IGN);
	servekit_wait_output(&st, id, file, sizeof(file));
	fd = open(file, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(fcntl(fd, F_SETLEASE, F_WRLCK) == 0, "F_SETLEASE: %s",
	    strerror(errno));

	snprintf(read_out.path, sizeof(read_out.path), "/v1/jobs/%s/output",
	    id);
	ck_assert_int_eq(pthread_create(&read_out.thread, NULL,
			     servekit_call_run, &read_out),
	    0);
	/* The lease is being broken: serve's open of the output waits. */
	for (int i = 0; i < 400 && lease == F_WRLCK; i++) {
		lease = fcntl(fd, F_GETLEASE);
		if (lease == F_WRLCK)
			usleep(50000);
	}
	ck_assert_msg(lease != F_WRLCK, "serve never opened %s", file);
	servekit_step(&mu, &step, 1); /* serve is reading the output */

	snprintf(list.path, sizeof(list.path), "/v1/jobs");
	ck_assert_int_eq(pthread_create(&list.thread, NULL, servekit_call_run,
			     &list),
	    0);
	/* At most 30 s for the list (under the kernel's 45 s): then the
	 * read is let go whatever came. */
	for (int i = 0; i < 600 && servekit_call_ended(&list) < 0; i++)
		usleep(50000);
	servekit_step(&mu, &step, 2); /* the read let go */
	ck_assert_int_eq(fcntl(fd, F_SETLEASE, F_UNLCK), 0);
	close(fd);
	pthread_join(list.thread, NULL);
	pthread_join(read_out.thread, NULL);
	ck_assert_int_eq(list.status, 200);
	ck_assert_int_eq(read_out.status, 200);
	ck_assert_msg(list.ended_at == 1 && read_out.ended_at == 2,
	    "GET /v1/jobs answered at step %d, the output at step %d: the "
	    "list waited for the read of a kept output (step 1: the read "
	    "held, 2: let go)",
	    list.ended_at, read_out.ended_at);
	free(id);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("serve_output");
	TCase *tc = tcase_create("serve_output");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_jobs_output_is_in_its_get_after_a_restart);
	tcase_add_test(tc, a_kept_output_is_read_outside_the_lock);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
