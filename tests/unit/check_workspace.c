/*
 * Workspaces as the hatch makes them (needs root: it mounts tmpfs): the
 * inputs are copied to a lower layer on a tmpfs of its own, so that a
 * copy-in makes no inode on the disk (each cost a third of a millisecond
 * there); inputs too big for that tmpfs are copied to the disk instead,
 * whole; and the workspace goes, mounts and all, when it is deleted.
 */
#include "workspace.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

/* A source tree src/ with n small files in two directories, and big
 * (bytes of 'x', 0 for none) in src/big. */
static void
make_source(int n, size_t big)
{
	char p[PATH_MAX], rel[64];

	ck_assert_int_eq(mkdir(testutil_at(p, "src"), 0755), 0);
	ck_assert_int_eq(mkdir(testutil_at(p, "src/a"), 0755), 0);
	ck_assert_int_eq(mkdir(testutil_at(p, "src/b"), 0755), 0);
	for (int i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "src/%c/f%d.txt", i % 2 ? 'a' : 'b',
		    i);
		testutil_write_text(testutil_at(p, rel), "line\n");
	}
	if (big > 0) {
		char *data = malloc(big);

		ck_assert_ptr_nonnull(data);
		memset(data, 'x', big);
		testutil_write_file(testutil_at(p, "src/big"), data, big);
		free(data);
	}
}

/* Makes the workspace of job "j1" from src/ at repo: its answer. */
static json_t *
create(long lower_mb)
{
	char src[PATH_MAX], root[PATH_MAX];
	struct workspace_input in = { .src = testutil_at(src, "src"),
		.dst = "repo" };
	json_t *problems = json_array(), *ws = NULL;
	int r = workspace_create(testutil_at(root, "ws"), "j1", &in, 1, 16,
	    lower_mb, NULL, problems, &ws);

	ck_assert_msg(r == 0, "workspace_create: %s, %zu problems",
	    strerror(-r), json_array_size(problems));
	json_decref(problems);
	return ws;
}

/* The filesystem type of path. */
static long
fs_type(const char *path)
{
	struct statfs fs;

	ck_assert_int_eq(statfs(path, &fs), 0);
	return (long)fs.f_type;
}

static void
delete_ws(void)
{
	char root[PATH_MAX], dir[PATH_MAX];

	ck_assert_int_eq(workspace_delete(testutil_at(root, "ws"), "j1"), 0);
	ck_assert_int_eq(access(testutil_at(dir, "ws/j1"), F_OK), -1);
	ck_assert_int_eq(access(testutil_at(dir, "ws/.j1.deleting"), F_OK), -1);
}

START_TEST(lower_on_tmpfs)
{
	char p[PATH_MAX];
	json_t *ws;

	make_source(100, 0);
	ws = create(WORKSPACE_DEFAULT_LOWER_MB);
	const char *lower = json_string_value(json_object_get(ws, "lower"));
	ck_assert_ptr_nonnull(lower);
	ck_assert_msg(fs_type(lower) == TMPFS_MAGIC,
	    "the lower layer is not on a tmpfs: 0x%lx", fs_type(lower));
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_array_get(json_object_get(ws,
								"inputs"),
						 0),
				 "files")),
	    100);
	ck_assert_int_eq(access(testutil_at(p, "ws/j1/lower/repo/a/f99.txt"),
			     R_OK),
	    0);
	/* What must outlive a crash stays on the workspaces' filesystem. */
	ck_assert_msg(fs_type(testutil_at(p, "ws/j1")) != TMPFS_MAGIC ||
		fs_type(testutil_at(p, "ws")) == TMPFS_MAGIC,
	    "meta.json is on a tmpfs");
	ck_assert_int_eq(access(testutil_at(p, "ws/j1/meta.json"), R_OK), 0);
	json_decref(ws);
	delete_ws();
}
END_TEST

START_TEST(too_big_for_tmpfs_goes_to_disk)
{
	char p[PATH_MAX];
	struct stat st;
	json_t *ws;

	/* 3 MiB does not fit a 1 MiB tmpfs: the copy starts again on the
	 * disk and is whole there. */
	make_source(10, 3 << 20);
	ws = create(1);
	const char *lower = json_string_value(json_object_get(ws, "lower"));
	ck_assert_int_ne(fs_type(lower), TMPFS_MAGIC);
	ck_assert_int_eq(stat(testutil_at(p, "ws/j1/lower/repo/big"), &st), 0);
	ck_assert_int_eq(st.st_size, 3 << 20);
	json_t *in = json_array_get(json_object_get(ws, "inputs"), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(in, "files")), 11);
	ck_assert_int_eq(json_integer_value(json_object_get(in, "bytes")),
	    (3 << 20) + 10 * 5);
	ck_assert_int_eq(json_array_size(json_object_get(ws, "inputs")), 1);
	json_decref(ws);
	delete_ws();
}
END_TEST

START_TEST(lower_mb_zero_is_the_disk)
{
	json_t *ws;

	make_source(3, 0);
	ws = create(0);
	ck_assert_int_ne(fs_type(
			     json_string_value(json_object_get(ws, "lower"))),
	    TMPFS_MAGIC);
	json_decref(ws);
	delete_ws();
}
END_TEST

static Suite *
workspace_suite(void)
{
	Suite *s = suite_create("workspace");
	TCase *tc = tcase_create("workspace");

	testutil_tmp_fixture(tc, "workspace");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_add_test(tc, lower_on_tmpfs);
	tcase_add_test(tc, too_big_for_tmpfs_goes_to_disk);
	tcase_add_test(tc, lower_mb_zero_is_the_disk);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(workspace_suite());
}
