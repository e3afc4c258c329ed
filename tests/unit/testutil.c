/*
 * The unit tests' shared helpers (testutil.h): scratch directories under
 * /tmp, small files, test JSON, problem lists and the runner, written
 * once for every check_*.c program.
 */
#include "testutil.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char testutil_dir[PATH_MAX];

static const char *base_name;
static char base[PATH_MAX];

static int
remove_entry(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(p);
}

void
testutil_remove_tree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void
base_setup(void)
{
	int n = snprintf(base, sizeof(base), "/tmp/cordon-check-%s-XXXXXX",
	    base_name);

	ck_assert(n > 0 && (size_t)n < sizeof(base));
	ck_assert_ptr_nonnull(mkdtemp(base));
}

static void
base_teardown(void)
{
	testutil_remove_tree(base);
}

void
testutil_tmp_fixture(TCase *tc, const char *name)
{
	base_name = name;
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
}

void
testutil_dir_setup(void)
{
	int n =
	    snprintf(testutil_dir, sizeof(testutil_dir), "%s/tXXXXXX", base);

	ck_assert(n > 0 && (size_t)n < sizeof(testutil_dir));
	ck_assert_ptr_nonnull(mkdtemp(testutil_dir));
}

void
testutil_dir_teardown(void)
{
	testutil_remove_tree(testutil_dir);
}

const char *
testutil_at(char out[PATH_MAX], const char *rel)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", testutil_dir, rel);

	ck_assert(n > 0 && n < PATH_MAX);
	return out;
}

void
testutil_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "we");

	ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

void
testutil_write_text(const char *path, const char *text)
{
	testutil_write_file(path, text, strlen(text));
}

size_t
testutil_read_file(const char *path, void *out, size_t max)
{
	FILE *f = fopen(path, "re");
	size_t n;

	ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
	n = fread(out, 1, max, f);
	fclose(f);
	return n;
}

json_t *
testutil_json(const char *text, size_t flags)
{
	json_error_t err;
	json_t *v = json_loads(text, flags, &err);

	ck_assert_msg(v != NULL, "test JSON \"%s\": %s", text, err.text);
	return v;
}

size_t
testutil_count_field(const json_t *list, const char *field)
{
	size_t i, n = 0;
	json_t *p;

	json_array_foreach(list, i, p)
	{
		const char *f = json_string_value(json_object_get(p, "field"));
		const char *why =
		    json_string_value(json_object_get(p, "problem"));

		ck_assert_ptr_nonnull(f);
		ck_assert_msg(why != NULL && why[0] != '\0',
		    "a problem without a reason at %s", f);
		if (strcmp(f, field) == 0)
			n++;
	}
	return n;
}

int
testutil_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
