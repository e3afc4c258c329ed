/*
 * The upper-directory walker on trees a job can make to break the seal:
 * deeper than the walk goes, paths longer than PATH_MAX, more entries
 * than the walk takes, names that look like a patch's own lines. Each
 * must come back as a verdict, never as an error: the walk is cut where
 * it must be, the cut is flagged `refused` with its reason, and what was
 * read before is still listed. And one it can make to lie about itself:
 * an opaque mark in the xattr namespace the job may write. The trees are
 * made under the test's own directory, lower and upper side by side.
 */
#include "policy.h"
#include "upper.h"

#include "testutil.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

struct walked {
	struct policy p;
	struct buf patch;
	json_t *changes;
	struct upper_stats st;
	int r;
};

/* lower/repo and upper/repo under the test's directory: upper/repo's fd. */
static int
make_dirs(int *ret_lower, int *ret_upper)
{
	char p[PATH_MAX];
	int repo;

	ck_assert_int_eq(mkdir(testutil_at(p, "lower"), 0755), 0);
	ck_assert_int_eq(mkdir(testutil_at(p, "lower/repo"), 0755), 0);
	ck_assert_int_eq(mkdir(testutil_at(p, "upper"), 0755), 0);
	ck_assert_int_eq(mkdir(testutil_at(p, "upper/repo"), 0755), 0);
	testutil_write_text(testutil_at(p, "upper/repo/ok.txt"), "fine\n");
	*ret_lower =
	    open(testutil_at(p, "lower"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*ret_upper =
	    open(testutil_at(p, "upper"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	repo = open(testutil_at(p, "upper/repo"),
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(*ret_lower, 0);
	ck_assert_int_ge(*ret_upper, 0);
	ck_assert_int_ge(repo, 0);
	return repo;
}

/* Walks upper over lower with the defaults, the input at "repo". */
static void
walk(struct walked *w, int lower, int upper, uint64_t max_entries)
{
	json_t *roots = json_pack("[s]", "repo");

	ck_assert_int_eq(policy_init(&w->p, NULL, roots, 1 << 20), 0);
	json_decref(roots);
	if (max_entries > 0)
		w->p.max_entries = max_entries;
	buf_init(&w->patch, 1 << 20);
	w->changes = json_array();
	w->st = (struct upper_stats){ 0 };
	w->r = upper_walk(lower, upper, &w->p, &w->patch, w->changes, &w->st);
	close(lower);
	close(upper);
}

static void
walked_free(struct walked *w)
{
	policy_free(&w->p);
	buf_free(&w->patch);
	json_decref(w->changes);
}

/* How many of w's flags are flag, each at verdict. */
static size_t
count_flag(const struct walked *w, const char *flag, const char *verdict)
{
	size_t i, n = 0;
	json_t *f;

	json_array_foreach(w->p.flags, i, f)
	{
		if (strcmp(json_string_value(json_object_get(f, "flag")),
			flag) != 0)
			continue;
		ck_assert_str_eq(json_string_value(
				     json_object_get(f, "verdict")),
		    verdict);
		ck_assert_ptr_nonnull(
		    json_string_value(json_object_get(f, "reason")));
		n++;
	}
	return n;
}

static bool
listed(const struct walked *w, const char *path)
{
	size_t i;
	json_t *c;

	json_array_foreach(w->changes, i, c)
	{
		if (strcmp(json_string_value(json_object_get(c, "path")),
			path) == 0)
			return true;
	}
	return false;
}

/* Makes depth directories named name below dir (an fd, closed): the fd
 * of the deepest. */
static int
nest(int dir, const char *name, int depth)
{
	for (int i = 0; i < depth; i++) {
		int next;

		ck_assert_int_eq(mkdirat(dir, name, 0755), 0);
		next = openat(dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ck_assert_int_ge(next, 0);
		close(dir);
		dir = next;
	}
	return dir;
}

/* Removes name under dir and all below it by fds, for trees deeper than
 * a path can name (nftw cannot). */
static void
remove_at(int dir, const char *name)
{
	int fd =
	    openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *e;
	DIR *d;

	if (fd < 0) {
		unlinkat(dir, name, 0);
		return;
	}
	d = fdopendir(fd);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			remove_at(fd, e->d_name);
	closedir(d);
	unlinkat(dir, name, AT_REMOVEDIR);
}

static void
write_at(int dir, const char *name, const char *text)
{
	int fd =
	    openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The issue's tree: 130 nested directories made the seal fail (ELOOP). */
START_TEST(test_too_deep_is_refused)
{
	struct walked w;
	int lower, upper, deep;

	deep = nest(make_dirs(&lower, &upper), "d", 130);
	write_at(deep, "f.txt", "at the bottom\n");
	close(deep);
	walk(&w, lower, upper, 0);
	ck_assert_msg(w.r == -E2BIG, "the walk answered %d (%s)", w.r,
	    strerror(-w.r));
	ck_assert_uint_eq(count_flag(&w, "too_deep", "refused"), 1);
	ck_assert_int_eq(w.p.verdict, VERDICT_REFUSED);
	ck_assert(listed(&w, "repo/ok.txt"));
	walked_free(&w);
}
END_TEST

/* Past PATH_MAX, made with relative mkdirat as a job can. */
START_TEST(test_path_too_long_is_refused)
{
	char name[201];
	struct walked w;
	int lower, upper, deep;

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	deep = nest(make_dirs(&lower, &upper), name, 25);
	write_at(deep, "f.txt", "far down\n");
	close(deep);
	walk(&w, lower, upper, 0);
	ck_assert_msg(w.r == -E2BIG, "the walk answered %d (%s)", w.r,
	    strerror(-w.r));
	ck_assert_uint_eq(count_flag(&w, "path_too_long", "refused"), 1);
	ck_assert_int_eq(w.p.verdict, VERDICT_REFUSED);
	ck_assert(listed(&w, "repo/ok.txt"));
	walked_free(&w);
	char p[PATH_MAX];
	int top =
	    open(testutil_at(p, "upper"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(top, 0);
	remove_at(top, "repo");
	close(top);
}
END_TEST

/* More entries than the walk takes: the rest is refused, not read. */
START_TEST(test_too_many_entries_is_refused)
{
	struct walked w;
	char name[32];
	int lower, upper, repo;

	repo = make_dirs(&lower, &upper);
	for (int i = 0; i < 150; i++) {
		snprintf(name, sizeof(name), "f%03d", i);
		write_at(repo, name, "x\n");
	}
	close(repo);
	walk(&w, lower, upper, 100);
	ck_assert_msg(w.r == -E2BIG, "the walk answered %d (%s)", w.r,
	    strerror(-w.r));
	ck_assert_uint_eq(count_flag(&w, "too_many_entries", "refused"), 1);
	ck_assert_uint_le(json_array_size(w.changes), 100);
	ck_assert_int_eq(w.p.verdict, VERDICT_REFUSED);
	walked_free(&w);
}
END_TEST

/* Names that look like the patch's own lines stay inside their quotes:
 * one "diff --git" line per file, whatever the names hold. */
START_TEST(test_names_like_patch_lines)
{
	static const char *const names[] = { "x\ndiff --git a b",
		"--- a\n+++ b", "@@ -1 +1 @@", "\\ No newline at end of file",
		"x b", "\342\200\256txt.exe", "\033]0;title\007" };
	struct walked w;
	int lower, upper, repo, lines = 0;
	size_t n = sizeof(names) / sizeof(names[0]);

	repo = make_dirs(&lower, &upper);
	for (size_t i = 0; i < n; i++)
		write_at(repo, names[i], "data\n");
	close(repo);
	walk(&w, lower, upper, 0);
	ck_assert_int_eq(w.r, 0);
	ck_assert_uint_eq(json_array_size(w.changes), n + 1);
	for (const char *s = buf_str(&w.patch); s != NULL;) {
		if (strncmp(s, "diff --git ", 11) == 0)
			lines++;
		s = strchr(s, '\n');
		s = s != NULL ? s + 1 : NULL;
	}
	ck_assert_int_eq(lines, (int)n + 1);
	ck_assert(listed(&w, "\"repo/\\u202etxt.exe\""));
	ck_assert(listed(&w, "\"repo/\\033]0;title\\a\""));
	walked_free(&w);
}
END_TEST

/*
 * The launcher mounts the overlay in the host's user namespace, where the
 * kernel reads trusted.overlay.* alone, and a job may set any user.*
 * xattr: a user.overlay.opaque it planted on a directory hides nothing in
 * the job's tree, so it must not turn into deletions in the patch.
 */
START_TEST(test_forged_user_opaque_is_not_opaque)
{
	char p[PATH_MAX];
	struct walked w;
	int lower, upper, repo;

	repo = make_dirs(&lower, &upper);
	ck_assert_int_eq(mkdir(testutil_at(p, "lower/repo/d"), 0755), 0);
	testutil_write_text(testutil_at(p, "lower/repo/d/keep.txt"), "kept\n");
	ck_assert_int_eq(mkdirat(repo, "d", 0755), 0);
	ck_assert_int_eq(setxattr(testutil_at(p, "upper/repo/d"),
			     "user.overlay.opaque", "y", 1, 0),
	    0);
	testutil_write_text(testutil_at(p, "upper/repo/d/new.txt"), "new\n");
	close(repo);
	walk(&w, lower, upper, 0);
	ck_assert_int_eq(w.r, 0);
	ck_assert(listed(&w, "repo/d/new.txt"));
	ck_assert_msg(!listed(&w, "repo/d/keep.txt"),
	    "a deletion the job never made");
	ck_assert_uint_eq(json_array_size(w.changes), 2);
	walked_free(&w);
}
END_TEST

static Suite *
upper_suite(void)
{
	Suite *s = suite_create("upper");
	TCase *tc = tcase_create("upper");

	tcase_set_timeout(tc, 60);
	testutil_tmp_fixture(tc, "upper");
	tcase_add_checked_fixture(tc, testutil_dir_setup,
	    testutil_dir_teardown);
	tcase_add_test(tc, test_too_deep_is_refused);
	tcase_add_test(tc, test_path_too_long_is_refused);
	tcase_add_test(tc, test_too_many_entries_is_refused);
	tcase_add_test(tc, test_names_like_patch_lines);
	tcase_add_test(tc, test_forged_user_opaque_is_not_opaque);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(upper_suite());
}
