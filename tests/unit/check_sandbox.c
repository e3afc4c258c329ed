/*
 * sandbox_workspace_check, the launcher's check that the workspace it was
 * given is the hatch's (by the "DEV:INO" the hatch saw): the same
 * directory passes; a directory made again at the same path, a file, or
 * nothing there does not; an id that is not two decimal numbers is
 * refused. The check across mount namespaces is it_startfail's.
 */
#include "sandbox.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* path's "DEV:INO", as the hatch writes it. */
static void
id_of(const char *path, char *out, size_t len)
{
	struct stat sb;

	ck_assert_int_eq(stat(path, &sb), 0);
	snprintf(out, len, "%ju:%ju", (uintmax_t)sb.st_dev,
	    (uintmax_t)sb.st_ino);
}

START_TEST(test_the_same_directory_passes)
{
	char p[PATH_MAX], id[64];

	ck_assert_int_eq(mkdir(testutil_at(p, "upper"), 0755), 0);
	id_of(p, id, sizeof(id));
	ck_assert_int_eq(sandbox_workspace_check(p, id), 0);
}
END_TEST

START_TEST(test_another_directory_or_none_fails)
{
	char p[PATH_MAX], f[PATH_MAX], id[64], fid[64];

	ck_assert_int_eq(mkdir(testutil_at(p, "upper"), 0755), 0);
	id_of(p, id, sizeof(id));
	/* Kept, so that the new directory cannot get its inode back. */
	ck_assert_int_eq(rename(p, testutil_at(f, "upper.old")), 0);
	ck_assert_int_eq(sandbox_workspace_check(p, id), -ENOENT);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	ck_assert_int_eq(sandbox_workspace_check(p, id), -ESTALE);
	/* A file with the right identity is no directory. */
	testutil_write_text(testutil_at(f, "file"), "x");
	id_of(f, fid, sizeof(fid));
	ck_assert_int_eq(sandbox_workspace_check(f, fid), -ESTALE);
}
END_TEST

START_TEST(test_an_id_that_is_not_dev_ino_is_refused)
{
	static const char *const bad[] = { "", "1", "1:", ":2", "-1:2", "1:-2",
		"1:2x", "x:2", "1:2:3", "99999999999999999999999:1" };
	char p[PATH_MAX];

	ck_assert_int_eq(mkdir(testutil_at(p, "upper"), 0755), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(sandbox_workspace_check(p, bad[i]) == -EINVAL,
		    "\"%s\" taken", bad[i]);
	ck_assert_int_eq(sandbox_workspace_check(p, NULL), -EINVAL);
}
END_TEST

static Suite *
sandbox_suite(void)
{
	Suite *s = suite_create("sandbox");
	TCase *tc = tcase_create("sandbox");

	testutil_tmp_fixture(tc, "sandbox");
	tcase_add_checked_fixture(tc, testutil_dir_setup, NULL);
	tcase_add_test(tc, test_the_same_directory_passes);
	tcase_add_test(tc, test_another_directory_or_none_fails);
	tcase_add_test(tc, test_an_id_that_is_not_dev_ino_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(sandbox_suite());
}
