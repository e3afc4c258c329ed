/*
 * The hostile review's second pass at hidden text (hatch/hidden.c, the
 * hidden_text flag): what a reviewer reads in a patch is not only its
 * added lines. The job writes a file whose clean content sits under a NAME
 * holding a bidi control (U+202E: "invoice_\u202Etxt.exe" shows as
 * "invoice_exe.txt") and one whose name holds a zero-width space beside a
 * real file of the same look (config.py and config\u200B.py): each
 * must be flagged hidden_text, the verdict at least needs-review (on the
 * tree before: no flag, verdict clean). A symlink whose target holds
 * U+202E is flagged as its target is a '+' line of the patch. A source
 * file a NUL in its first comment makes binary ("Binary files differ")
 * must be flagged too (on the tree before: verdict clean, no flags).
 */
#include "harness.h"
#include "path.h"
#include "util.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UID_BASE 1100000

static struct stack st;

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = UID_BASE };
	char path[400];

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", st.inputs);
	harness_write_file(path, "hello\n");
	json_t *m = json_pack("{s:s, s:[s], s:{s:i, s:i, s:i}}", "name",
	    "writer", "command", "/bin/true", "limits", "wall_seconds", 30,
	    "memory_mb", 256, "pids", 64);
	ck_assert_ptr_nonnull(m);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/writer", st.admin, NULL, m));
}

static void
teardown(void)
{
	stack_stop(&st);
}

/* The hidden_text flag whose path holds part and is not other, or
 * NULL (a path the report escapes is git's quoted form). */
static json_t *
flag_like(const json_t *flags, const char *part, const char *other)
{
	size_t i;
	json_t *f;

	json_array_foreach(flags, i, f)
	{
		const char *p = json_string_value(json_object_get(f, "path"));
		const char *k = json_string_value(json_object_get(f, "flag"));

		if (p != NULL && strstr(p, part) != NULL &&
		    (other == NULL || strcmp(p, other) != 0) && k != NULL &&
		    strcmp(k, "hidden_text") == 0)
			return f;
	}
	return NULL;
}

/* Printable ASCII alone: the report escapes what it names. */
static bool
printable(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

/* cordon run's --json result of script run in the job's input. */
static json_t *
run_job(const char *script)
{
	static char out[1 << 20], err[1 << 16];
	char input[400], patch_out[400];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", "writer", "--input",
		input, "--patch-out", patch_out, "--", "/bin/sh", "-c",
		(char *)script, NULL };

	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	snprintf(patch_out, sizeof(patch_out), "%s/names.patch",
	    st.launcher_dir);
	int status =
	    harness_run_for(argv, 60000, out, sizeof(out), err, sizeof(err));
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	return j;
}

START_TEST(a_name_that_reads_otherwise_is_flagged)
{
	static const struct {
		const char *part, *other;
	} want[] = {
		{ "invoice_", NULL },
		{ "config", "repo/config.py" },
	};
	json_t *j =
	    run_job("cd /work/repo && "
		    "printf 'clean\\n' > 'invoice_\342\200\256txt.exe' && "
		    "printf 'A = 1\\n' > config.py && "
		    "printf 'A = 2\\n' > 'config\342\200\213.py' && "
		    "echo done");
	json_t *flags = json_object_get(j, "flags");
	const char *verdict = json_string_value(json_object_get(j, "verdict"));
	char *all = json_dumps(flags, 0);
	char *changes = json_dumps(json_object_get(j, "changes"), 0);

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		json_t *f = flag_like(flags, want[i].part, want[i].other);
		const char *reason =
		    json_string_value(json_object_get(f, "reason"));

		ck_assert_msg(f != NULL,
		    "%s: no hidden_text flag; verdict %s; flags %s; changes %s",
		    want[i].part, verdict != NULL ? verdict : "(none)", all,
		    changes);
		ck_assert_str_eq(json_string_value(
				     json_object_get(f, "verdict")),
		    "needs-review");
		ck_assert_msg(reason != NULL && printable(reason),
		    "%s: the reason is not escaped: %s", want[i].part, all);
	}
	ck_assert_msg(flag_like(flags, "repo/config.py", NULL) == NULL,
	    "a plain name flagged: %s", all);
	free(all);
	free(changes);
	ck_assert_msg(verdict != NULL && strcmp(verdict, "clean") != 0,
	    "verdict %s", verdict != NULL ? verdict : "(none)");
	json_decref(j);
}
END_TEST

START_TEST(a_link_target_that_reads_otherwise_is_flagged)
{
	json_t *j =
	    run_job("cd /work/repo && "
		    "ln -s 'README\342\200\256dm.md' link && echo done");
	json_t *flags = json_object_get(j, "flags");
	char *all = json_dumps(flags, 0);

	ck_assert_msg(flag_like(flags, "repo/link", NULL) != NULL,
	    "repo/link: no hidden_text flag: %s", all);
	free(all);
	json_decref(j);
}
END_TEST

START_TEST(text_a_nul_makes_binary_is_flagged)
{
	/* git (and the patch) show app.js as "Binary files differ" for the
	 * NUL in its first comment; node runs the rest. */
	json_t *j =
	    run_job("cd /work/repo && "
		    "printf '// \\000\\nrequire(\\047child_process\\047)"
		    ".exec(\\047id\\047)\\n' > app.js && echo done");
	json_t *flags = json_object_get(j, "flags");
	const char *verdict = json_string_value(json_object_get(j, "verdict"));
	char *all = json_dumps(flags, 0);
	char *changes = json_dumps(json_object_get(j, "changes"), 0);

	ck_assert_msg(verdict != NULL && strcmp(verdict, "clean") != 0,
	    "app.js, text made binary by a NUL: verdict %s; flags %s; changes "
	    "%s",
	    verdict != NULL ? verdict : "(none)", all, changes);
	free(all);
	free(changes);
	json_decref(j);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("redteam2_hidden");
	TCase *tc = tcase_create("names");

	tcase_set_timeout(tc, 90);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_name_that_reads_otherwise_is_flagged);
	tcase_add_test(tc, a_link_target_that_reads_otherwise_is_flagged);
	tcase_add_test(tc, text_a_nul_makes_binary_is_flagged);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
