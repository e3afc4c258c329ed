/*
 * Safe paths: the lexical checks refuse anything that climbs or hides an
 * empty or dot component; path_is_within does not confuse "/srv/in" with
 * "/srv/input"; directories are made as mkdir -p would; openat2 beneath a
 * directory refuses every escape; whole-file reads stop at the cap; and
 * secrets land in new 0600 files only. Each test works in its own
 * directory made with mkdtemp under /tmp.
 */
#include "path.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool
is_dir(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* --- lexical checks -------------------------------------------------- */

START_TEST(test_safe_relative_table)
{
	static const char *const good[] = { "a", "a/b.txt", "a b/c", "..a",
		"a..", "...", ".a", "a.", "a/.b", "a/b/c/d", "a/..b/c" };
	static const char *const bad[] = { "", "/a", "a//b", "./a", "a/./b",
		"a/../b", "..", "a/", "a/..", ".", "/", "//", "../a", "a/b/",
		"a/b/.", "/..", "a/b/../../.." };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(path_is_safe_relative(good[i]), "\"%s\" refused",
		    good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!path_is_safe_relative(bad[i]), "\"%s\" accepted",
		    bad[i]);
}
END_TEST

START_TEST(test_safe_relative_length)
{
	char p[PATH_MAX + 1];

	memset(p, 'a', sizeof(p));
	p[PATH_MAX - 1] = '\0';
	ck_assert(path_is_safe_relative(p));
	p[PATH_MAX - 1] = 'a';
	p[PATH_MAX] = '\0';
	ck_assert(!path_is_safe_relative(p));
}
END_TEST

START_TEST(test_is_within_table)
{
	static const struct {
		const char *root, *path;
		bool within;
	} rows[] = {
		{ "/srv/in", "/srv/in", true },
		{ "/srv/in", "/srv/in/x", true },
		{ "/srv/in", "/srv/in/x/y.txt", true },
		{ "/srv/in", "/srv/input", false },
		{ "/srv/in", "/srv/input/x", false },
		{ "/srv/in", "/srv/i", false },
		{ "/srv/in", "/srv", false },
		{ "/srv/in", "/", false },
		{ "/srv/in", "/srv/other/in", false },
		{ "/srv/in", "/srv/in2", false },
		{ "/srv/in", "srv/in/x", false },
		{ "srv/in", "srv/in/x", false },
		{ "/", "/", true },
		{ "/", "/srv", true },
		{ "/", "/srv/in/x", true },
		{ "/", "srv", false },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		ck_assert_msg(path_is_within(rows[i].root, rows[i].path) ==
			rows[i].within,
		    "path_is_within(\"%s\", \"%s\") is not %s", rows[i].root,
		    rows[i].path, rows[i].within ? "true" : "false");
}
END_TEST

/* --- directories ----------------------------------------------------- */

START_TEST(test_mkdir_p_nested)
{
	char p[PATH_MAX], q[PATH_MAX];
	struct stat st;

	ck_assert_int_eq(path_mkdir_p(testutil_at(p, "a/b/c/d"), 0700), 0);
	ck_assert(is_dir(testutil_at(q, "a")));
	ck_assert(is_dir(testutil_at(q, "a/b")));
	ck_assert(is_dir(testutil_at(q, "a/b/c")));
	ck_assert(is_dir(testutil_at(q, "a/b/c/d")));
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	/* Again: existing directories are fine. */
	ck_assert_int_eq(path_mkdir_p(p, 0700), 0);
	ck_assert_int_eq(path_mkdir_p(testutil_at(q, "a/b/e/"), 0700), 0);
	ck_assert(is_dir(testutil_at(q, "a/b/e")));
	ck_assert_int_eq(path_mkdir_p(testutil_dir, 0700), 0);
}
END_TEST

START_TEST(test_mkdir_p_relative)
{
	char p[PATH_MAX];
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_int_ge(cwd, 0);
	ck_assert_int_eq(chdir(testutil_dir), 0);
	ck_assert_int_eq(path_mkdir_p("r/s/t", 0755), 0);
	ck_assert_int_eq(path_mkdir_p("u", 0755), 0);
	ck_assert_int_eq(fchdir(cwd), 0);
	close(cwd);
	ck_assert(is_dir(testutil_at(p, "r/s/t")));
	ck_assert(is_dir(testutil_at(p, "u")));
}
END_TEST

START_TEST(test_mkdir_p_through_file)
{
	char p[PATH_MAX], f[PATH_MAX];

	testutil_write_file(testutil_at(f, "file"), "x", 1);
	ck_assert_int_eq(path_mkdir_p(testutil_at(p, "file/sub"), 0700),
	    -ENOTDIR);
	ck_assert_int_eq(path_mkdir_p(testutil_at(p, "file/sub/deeper"), 0700),
	    -ENOTDIR);
	/* The last component itself being a file is as wrong. */
	ck_assert_int_eq(path_mkdir_p(f, 0700), -ENOTDIR);
	ck_assert_int_eq(path_mkdir_p(testutil_at(p, "d/file2"), 0700), 0);
}
END_TEST

START_TEST(test_mkdir_p_empty)
{
	/* Nothing to make: refused, where it once read past the copy. */
	ck_assert_int_eq(path_mkdir_p("", 0700), -EINVAL);
}
END_TEST

START_TEST(test_make_dir_absolute)
{
	char p[PATH_MAX], real[PATH_MAX], want[PATH_MAX + 16];
	char *abs = NULL;
	int cwd;

	ck_assert_ptr_nonnull(realpath(testutil_dir, real));
	ck_assert_int_eq(path_make_dir(testutil_at(p, "x/y"), 0700, &abs), 0);
	ck_assert_ptr_nonnull(abs);
	ck_assert_int_eq(abs[0], '/');
	snprintf(want, sizeof(want), "%s/x/y", real);
	ck_assert_str_eq(abs, want);
	ck_assert(is_dir(abs));
	free(abs);

	/* A relative path, and one with "..", come back resolved. */
	cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(cwd, 0);
	ck_assert_int_eq(chdir(testutil_dir), 0);
	abs = NULL;
	ck_assert_int_eq(path_make_dir("rel/a/../b", 0700, &abs), 0);
	ck_assert_int_eq(fchdir(cwd), 0);
	close(cwd);
	ck_assert_ptr_nonnull(abs);
	snprintf(want, sizeof(want), "%s/rel/b", real);
	ck_assert_str_eq(abs, want);
	ck_assert(is_dir(abs));
	free(abs);
}
END_TEST

START_TEST(test_make_dir_errors)
{
	char p[PATH_MAX];
	char *abs = (char *)"untouched";

	ck_assert_int_eq(path_make_dir("", 0700, &abs), -EINVAL);
	ck_assert_str_eq(abs, "untouched");
	testutil_write_file(testutil_at(p, "f"), "", 0);
	ck_assert_int_eq(path_make_dir(testutil_at(p, "f/x"), 0700, &abs),
	    -ENOTDIR);
	ck_assert_str_eq(abs, "untouched");
}
END_TEST

/* --- open beneath ---------------------------------------------------- */

/*
 * dir/root/inside.txt "hello"      dir/outside.txt "secret"
 * dir/root/sub/deep.txt "deep"
 * dir/root/abs     -> <dir>/outside.txt
 * dir/root/abs_in  -> <dir>/root/inside.txt
 * dir/root/up      -> ../outside.txt
 * dir/root/rel     -> inside.txt
 * dir/root/subl    -> sub
 */
static int
make_tree(void)
{
	char p[PATH_MAX], t[PATH_MAX];
	int fd;

	ck_assert_int_eq(mkdir(testutil_at(p, "root"), 0700), 0);
	ck_assert_int_eq(mkdir(testutil_at(p, "root/sub"), 0700), 0);
	testutil_write_file(testutil_at(p, "root/inside.txt"), "hello", 5);
	testutil_write_file(testutil_at(p, "root/sub/deep.txt"), "deep", 4);
	testutil_write_file(testutil_at(p, "outside.txt"), "secret", 6);
	ck_assert_int_eq(symlink(testutil_at(t, "outside.txt"),
			     testutil_at(p, "root/abs")),
	    0);
	ck_assert_int_eq(symlink(testutil_at(t, "root/inside.txt"),
			     testutil_at(p, "root/abs_in")),
	    0);
	ck_assert_int_eq(symlink("../outside.txt", testutil_at(p, "root/up")),
	    0);
	ck_assert_int_eq(symlink("inside.txt", testutil_at(p, "root/rel")), 0);
	ck_assert_int_eq(symlink("sub", testutil_at(p, "root/subl")), 0);
	fd = open(testutil_at(p, "root"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Reads what fd holds and closes it. */
static void
assert_reads(int fd, const char *want)
{
	char got[64];
	ssize_t n;

	ck_assert_msg(fd >= 0, "open failed: %s", strerror(-fd));
	n = read(fd, got, sizeof(got) - 1);
	ck_assert_int_ge(n, 0);
	got[n] = '\0';
	ck_assert_str_eq(got, want);
	close(fd);
}

START_TEST(test_open_beneath_normal)
{
	int root = make_tree();
	int fd;

	fd = path_open_beneath(root, "inside.txt", O_RDONLY, 0, true);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	assert_reads(fd, "hello");
	assert_reads(path_open_beneath(root, "sub/deep.txt", O_RDONLY, 0, true),
	    "deep");
	/* ".." that stays beneath is allowed. */
	assert_reads(path_open_beneath(root, "sub/../inside.txt", O_RDONLY, 0,
			 false),
	    "hello");
	/* A relative symlink that stays beneath, when symlinks are allowed. */
	assert_reads(path_open_beneath(root, "rel", O_RDONLY, 0, false),
	    "hello");
	assert_reads(path_open_beneath(root, "subl/deep.txt", O_RDONLY, 0,
			 false),
	    "deep");
	ck_assert_int_eq(path_open_beneath(root, "missing", O_RDONLY, 0, false),
	    -ENOENT);
	close(root);
}
END_TEST

START_TEST(test_open_beneath_create)
{
	char p[PATH_MAX];
	int root = make_tree();
	struct stat st;
	int fd;

	umask(022);
	fd = path_open_beneath(root, "sub/new.txt", O_WRONLY | O_CREAT | O_EXCL,
	    0640, true);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	close(fd);
	ck_assert_int_eq(lstat(testutil_at(p, "root/sub/new.txt"), &st), 0);
	/* Creating through an escaping path is refused, and nothing lands
	 * outside. */
	ck_assert_int_eq(path_open_beneath(root, "../created.txt",
			     O_WRONLY | O_CREAT, 0600, false),
	    -EXDEV);
	ck_assert_int_ne(lstat(testutil_at(p, "created.txt"), &st), 0);
	close(root);
}
END_TEST

START_TEST(test_open_beneath_escapes)
{
	int root = make_tree();

	ck_assert_int_eq(path_open_beneath(root, "../outside.txt", O_RDONLY, 0,
			     false),
	    -EXDEV);
	ck_assert_int_eq(path_open_beneath(root, "sub/../../outside.txt",
			     O_RDONLY, 0, false),
	    -EXDEV);
	ck_assert_int_eq(path_open_beneath(root, "../x", O_RDONLY, 0, false),
	    -EXDEV);
	ck_assert_int_eq(path_open_beneath(root, "/etc/passwd", O_RDONLY, 0,
			     false),
	    -EXDEV);
	/* An absolute symlink escapes, even when its target is inside. */
	ck_assert_int_eq(path_open_beneath(root, "abs", O_RDONLY, 0, false),
	    -EXDEV);
	ck_assert_int_eq(path_open_beneath(root, "abs_in", O_RDONLY, 0, false),
	    -EXDEV);
	ck_assert_int_eq(path_open_beneath(root, "up", O_RDONLY, 0, false),
	    -EXDEV);
	close(root);
}
END_TEST

START_TEST(test_open_beneath_no_symlinks)
{
	static const char *const links[] = { "abs", "abs_in", "up", "rel",
		"subl/deep.txt" };
	int root = make_tree();

	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		int fd = path_open_beneath(root, links[i], O_RDONLY, 0, true);

		ck_assert_msg(fd == -ELOOP, "\"%s\" gave %d, not -ELOOP",
		    links[i], fd);
	}
	/* Writing through a link is refused as well. */
	ck_assert_int_eq(path_open_beneath(root, "rel", O_WRONLY, 0, true),
	    -ELOOP);
	close(root);
}
END_TEST

START_TEST(test_open_beneath_directory)
{
	int root = make_tree();
	struct stat st;
	int fd;

	/*
	 * O_DIRECTORY is one of O_TMPFILE's bits; a mode passed along with it
	 * must not make openat2 take the open for a creation and refuse it.
	 */
	fd =
	    path_open_beneath(root, "sub", O_RDONLY | O_DIRECTORY, 0755, false);
	ck_assert_msg(fd >= 0, "opening a directory: %s", strerror(-fd));
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	/* It is the directory asked for: its file opens beneath it. */
	assert_reads(path_open_beneath(fd, "deep.txt", O_RDONLY, 0, true),
	    "deep");
	close(fd);
	/* A file named as a directory is still refused. */
	ck_assert_int_eq(path_open_beneath(root, "inside.txt",
			     O_RDONLY | O_DIRECTORY, 0755, false),
	    -ENOTDIR);
	close(root);
}
END_TEST

/* --- whole-file reads ------------------------------------------------ */

static void
assert_read_exact(size_t size, size_t max)
{
	char p[PATH_MAX];
	char *want = malloc(size + 1), *data = NULL;
	size_t len = 12345;

	ck_assert_ptr_nonnull(want);
	for (size_t i = 0; i < size; i++)
		want[i] = (char)('A' + i % 53);
	testutil_write_file(testutil_at(p, "exact"), want, size);
	ck_assert_int_eq(path_read_file(p, max, &data, &len), 0);
	ck_assert_ptr_nonnull(data);
	ck_assert_uint_eq(len, size);
	ck_assert_mem_eq(data, want, size);
	ck_assert_int_eq(data[size], '\0');
	free(data);
	free(want);
	unlink(p);
}

static void
assert_read_too_big(size_t size, size_t max)
{
	char p[PATH_MAX];
	char *blob = calloc(size + 1, 1), *data = (char *)"untouched";
	size_t len = 12345;

	ck_assert_ptr_nonnull(blob);
	memset(blob, 'z', size);
	testutil_write_file(testutil_at(p, "big"), blob, size);
	ck_assert_int_eq(path_read_file(p, max, &data, &len), -EFBIG);
	ck_assert_str_eq(data, "untouched");
	ck_assert_uint_eq(len, 12345);
	free(blob);
	unlink(p);
}

START_TEST(test_read_file_cap)
{
	assert_read_exact(100, 100);
	assert_read_too_big(101, 100);
	/* Larger than one read(2) chunk. */
	assert_read_exact(50000, 50000);
	assert_read_too_big(50001, 50000);
	assert_read_exact(20000, 1 << 20);
	assert_read_exact(0, 0);
	assert_read_exact(0, 100);
	assert_read_too_big(1, 0);
}
END_TEST

START_TEST(test_read_file_errors)
{
	char p[PATH_MAX];
	char *data = (char *)"untouched";
	size_t len = 12345;

	ck_assert_int_eq(mkdir(testutil_at(p, "d"), 0700), 0);
	ck_assert_int_eq(path_read_file(p, 100, &data, &len), -EINVAL);
	ck_assert_int_eq(path_read_file(testutil_at(p, "missing"), 100, &data,
			     &len),
	    -ENOENT);
	ck_assert_int_eq(path_read_file(testutil_at(p, "d/missing/x"), 100,
			     &data, &len),
	    -ENOENT);
	ck_assert_str_eq(data, "untouched");
	ck_assert_uint_eq(len, 12345);
}
END_TEST

START_TEST(test_read_file_fifo)
{
	char p[PATH_MAX];
	char *data = (char *)"untouched";
	size_t len = 12345;
	int r;

	/*
	 * A fifo with no writer: a blocking open would wait for ever. The
	 * alarm turns a hang into a failure long before Check's timeout.
	 */
	ck_assert_int_eq(mkfifo(testutil_at(p, "fifo"), 0600), 0);
	alarm(5);
	r = path_read_file(p, 100, &data, &len);
	alarm(0);
	ck_assert_msg(r < 0, "a fifo was read as a file (%d)", r);
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_str_eq(data, "untouched");
	ck_assert_uint_eq(len, 12345);
}
END_TEST

/* --- secrets --------------------------------------------------------- */

START_TEST(test_write_secret_mode_and_contents)
{
	char p[PATH_MAX];
	char *data = NULL;
	size_t len = 0;
	struct stat st;

	/* 0600 whatever the umask: a permissive one must not widen it. */
	umask(0);
	ck_assert_int_eq(path_write_secret(testutil_at(p, "s.key"),
			     "top\nsecret", 10),
	    0);
	ck_assert_int_eq(lstat(p, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(path_read_file(p, 100, &data, &len), 0);
	ck_assert_uint_eq(len, 10);
	ck_assert_mem_eq(data, "top\nsecret", 10);
	free(data);
	umask(022);
}
END_TEST

START_TEST(test_write_secret_refuses_overwrite)
{
	char p[PATH_MAX], t[PATH_MAX];
	char *data = NULL;
	size_t len = 0;

	ck_assert_int_eq(path_write_secret(testutil_at(p, "s.key"), "first", 5),
	    0);
	ck_assert_int_eq(path_write_secret(p, "second", 6), -EEXIST);
	ck_assert_int_eq(path_read_file(p, 100, &data, &len), 0);
	ck_assert_str_eq(data, "first");
	free(data);

	/* Nor through a symlink, dangling or not. */
	testutil_write_file(testutil_at(t, "target"), "keep", 4);
	ck_assert_int_eq(symlink(t, testutil_at(p, "link.key")), 0);
	ck_assert_int_eq(path_write_secret(p, "evil", 4), -EEXIST);
	ck_assert_int_eq(path_read_file(t, 100, &data, &len), 0);
	ck_assert_str_eq(data, "keep");
	free(data);
	ck_assert_int_eq(symlink(testutil_at(t, "nowhere"),
			     testutil_at(p, "dangling.key")),
	    0);
	ck_assert_int_eq(path_write_secret(p, "evil", 4), -EEXIST);
	ck_assert_int_ne(access(t, F_OK), 0);
}
END_TEST

START_TEST(test_write_secret_missing_dir)
{
	char p[PATH_MAX];

	ck_assert_int_eq(path_write_secret(testutil_at(p, "no/such.key"), "x",
			     1),
	    -ENOENT);
	ck_assert_int_ne(access(p, F_OK), 0);
}
END_TEST

static Suite *
path_suite(void)
{
	Suite *s = suite_create("path");
	TCase *tc;

	tc = tcase_create("lexical");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_safe_relative_table);
	tcase_add_test(tc, test_safe_relative_length);
	tcase_add_test(tc, test_is_within_table);
	suite_add_tcase(s, tc);

	tc = tcase_create("dirs");
	tcase_set_timeout(tc, 30);
	testutil_tmp_fixture(tc, "path");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_add_test(tc, test_mkdir_p_nested);
	tcase_add_test(tc, test_mkdir_p_relative);
	tcase_add_test(tc, test_mkdir_p_through_file);
	tcase_add_test(tc, test_mkdir_p_empty);
	tcase_add_test(tc, test_make_dir_absolute);
	tcase_add_test(tc, test_make_dir_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("open_beneath");
	tcase_set_timeout(tc, 30);
	testutil_tmp_fixture(tc, "path");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_add_test(tc, test_open_beneath_normal);
	tcase_add_test(tc, test_open_beneath_create);
	tcase_add_test(tc, test_open_beneath_escapes);
	tcase_add_test(tc, test_open_beneath_no_symlinks);
	tcase_add_test(tc, test_open_beneath_directory);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_set_timeout(tc, 30);
	testutil_tmp_fixture(tc, "path");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_add_test(tc, test_read_file_cap);
	tcase_add_test(tc, test_read_file_errors);
	tcase_add_test(tc, test_read_file_fifo);
	tcase_add_test(tc, test_write_secret_mode_and_contents);
	tcase_add_test(tc, test_write_secret_refuses_overwrite);
	tcase_add_test(tc, test_write_secret_missing_dir);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(path_suite());
}
