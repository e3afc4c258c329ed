/*
 * launcher_output_tee, the live copy of a job's output that cordon run
 * writes for cordon serve: one JSON line per chunk on the pipe that
 * CORDON_OUTPUT_FD names, its escape sequences removed; nothing without
 * the variable, or on a descriptor that is not a pipe; and never a wait
 * when serve does not read: a full pipe ends the copy. Each test runs in
 * a child of its own (Check's fork), so the copy's state starts fresh.
 */
#include "launcher.h"
#include "testutil.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A pipe whose write end is fd 9, named by CORDON_OUTPUT_FD: its read
 * end, non-blocking. */
static int
tee_pipe(void)
{
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_eq(dup2(p[1], 9), 9);
	close(p[1]);
	ck_assert_int_eq(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(setenv("CORDON_OUTPUT_FD", "9", 1), 0);
	return p[0];
}

START_TEST(a_chunk_is_one_clean_json_line)
{
	int r = tee_pipe();
	char buf[4096];
	const char out[] = "first \033[31mred\033[0m\n";
	ssize_t n;

	launcher_output_tee(false, out, sizeof(out) - 1);
	launcher_output_tee(true, "oops\n", 5);
	n = read(r, buf, sizeof(buf) - 1);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_str_eq(buf,
	    "{\"stream\":\"stdout\",\"text\":\"first red\\n\"}\n"
	    "{\"stream\":\"stderr\",\"text\":\"oops\\n\"}\n");
	close(r);
}
END_TEST

START_TEST(nothing_without_a_pipe_named)
{
	int r = tee_pipe();
	char buf[16];

	/* No variable: nothing, though fd 9 is a pipe. */
	ck_assert_int_eq(unsetenv("CORDON_OUTPUT_FD"), 0);
	launcher_output_tee(false, "x\n", 2);
	ck_assert_int_eq(read(r, buf, sizeof(buf)), -1);
	close(r);
}
END_TEST

START_TEST(nothing_on_a_descriptor_that_is_not_a_pipe)
{
	char path[] = "/tmp/cordon-check-tee-XXXXXX";
	int fd = mkstemp(path);
	struct stat st;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(dup2(fd, 9), 9);
	ck_assert_int_eq(setenv("CORDON_OUTPUT_FD", "9", 1), 0);
	launcher_output_tee(false, "x\n", 2);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	close(fd);
	/* Nor a standard descriptor, nor a number that is not one. */
	ck_assert_int_eq(setenv("CORDON_OUTPUT_FD", "1x", 1), 0);
	launcher_output_tee(false, "x\n", 2);
}
END_TEST

START_TEST(a_full_pipe_ends_the_copy_without_waiting)
{
	int r = tee_pipe();
	static char chunk[16384];
	char buf[65536];
	size_t got = 0;
	ssize_t n;

	memset(chunk, 'a', sizeof(chunk));
	/* Far more than a pipe holds, and nobody reads: had a write waited,
	 * the test's timeout would say so. */
	for (int i = 0; i < 64; i++)
		launcher_output_tee(false, chunk, sizeof(chunk));
	/* Read what went in; then the copy is off: nothing more comes. */
	while ((n = read(r, buf, sizeof(buf))) > 0)
		got += (size_t)n;
	ck_assert_uint_gt(got, 0);
	ck_assert_uint_lt(got, 64 * sizeof(chunk));
	launcher_output_tee(false, "late\n", 5);
	ck_assert_int_eq(read(r, buf, sizeof(buf)), 0); /* closed: EOF */
	close(r);
}
END_TEST

static Suite *
tee_suite(void)
{
	Suite *s = suite_create("tee");
	TCase *tc = tcase_create("tee");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, a_chunk_is_one_clean_json_line);
	tcase_add_test(tc, nothing_without_a_pipe_named);
	tcase_add_test(tc, nothing_on_a_descriptor_that_is_not_a_pipe);
	tcase_add_test(tc, a_full_pipe_ends_the_copy_without_waiting);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(tee_suite());
}
