/*
 * What the unit test programs (tests/unit/check_*.c) share, so that each
 * keeps only its own tests: a scratch directory tree under /tmp for a
 * test case and a fresh directory in it for each test, small files
 * written and read back, test JSON parsed, problem lists counted, and a
 * program's main. Every helper fails the running test with ck_assert
 * when it cannot do its part; none of them is a test of the code under
 * test.
 */
#ifndef CORDON_TESTUTIL_H
#define CORDON_TESTUTIL_H

#include <check.h>
#include <jansson.h>
#include <limits.h>
#include <stddef.h>

/* The running test's own directory, made by testutil_dir_setup. */
extern char testutil_dir[PATH_MAX];

/*
 * Gives tc a base directory, /tmp/cordon-check-<name>-XXXXXX, made with
 * mkdtemp before its first test and removed with all it holds after its
 * last. It is an unchecked fixture, run in the runner process, so the
 * tree goes even when a test fails or crashes. name is kept, not copied
 * (a string literal), and is the same for every test case of a program.
 */
void testutil_tmp_fixture(TCase *tc, const char *name);

/*
 * Makes testutil_dir, a fresh directory <base>/tXXXXXX, under the base
 * of testutil_tmp_fixture. A checked fixture, or called from one.
 */
void testutil_dir_setup(void);

/* Removes testutil_dir with all it holds. A checked fixture's teardown. */
void testutil_dir_teardown(void);

/* Removes path and, if it is a directory, all below it, not following
 * symbolic links. Quietly does nothing for a path that is not there. */
void testutil_remove_tree(const char *path);

/* testutil_dir/rel, written into out, which it returns. */
const char *testutil_at(char out[PATH_MAX], const char *rel);

/* Creates or truncates path and writes the len bytes of data to it. */
void testutil_write_file(const char *path, const void *data, size_t len);

/* testutil_write_file with the string text, without its NUL. */
void testutil_write_text(const char *path, const char *text);

/* Reads path, which must exist, into out: at most max bytes, no NUL
 * added. Returns how many bytes it read. */
size_t testutil_read_file(const char *path, void *out, size_t max);

/* text as JSON, decoded with json_loads flags; never NULL. The caller
 * owns the result. */
json_t *testutil_json(const char *text, size_t flags);

/*
 * How many entries of list (an array of {"field", "problem"} objects, as
 * the validators fill their problems and warnings) are about field.
 * Every entry must name its field and give a non-empty reason.
 */
size_t testutil_count_field(const json_t *list, const char *field);

/* Runs s, with Check's defaults and its normal output, and frees it.
 * Returns main's exit status: EXIT_SUCCESS when every test passed. */
int testutil_run(Suite *s);

#endif
