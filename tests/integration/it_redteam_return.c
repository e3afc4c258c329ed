/*
 * A hostile review of the return path: a job writes, inside its input,
 * the files that run, merge or instruct once its patch is applied and
 * someone works in the checkout (jobs/redteam/protected.txt: Mercurial's
 * .hg as git's .git, the files a debugger or an interpreter runs from the
 * current directory, auto-merge bots, the CI and deploy systems that read
 * their steps from the repository, coding agents' rules, and the dotfiles
 * of an input that is a home). Each must come back flagged
 * protected_path, so the verdict is needs-review.
 */
#include "harness.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UID_BASE 871000
#define LIST CORDON_SOURCE_DIR "/tests/integration/jobs/redteam/protected.txt"

static struct stack st;

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *text;
	long n;

	ck_assert_msg(f != NULL, "%s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, 0);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = UID_BASE };
	char path[400], *text;

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	text = slurp(LIST);
	snprintf(path, sizeof(path), "%s/repo/protected.txt", st.inputs);
	harness_write_file(path, text);
	free(text);
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

/* Whether flags has protected_path on path. */
static bool
flagged(const json_t *flags, const char *path)
{
	size_t i;
	json_t *f;

	json_array_foreach(flags, i, f)
	{
		const char *p = json_string_value(json_object_get(f, "path"));
		const char *k = json_string_value(json_object_get(f, "flag"));
		if (p != NULL && k != NULL && strcmp(p, path) == 0 &&
		    strcmp(k, "protected_path") == 0)
			return true;
	}
	return false;
}

START_TEST(what_runs_in_a_checkout_needs_review)
{
	static char out[1 << 20], err[1 << 16];
	static const char script[] =
	    "cd /work/repo && grep -v '^#' protected.txt | while read -r p; "
	    "do mkdir -p \"$(dirname \"$p\")\" && echo x > \"$p\" || "
	    "echo FAILED \"$p\"; done; echo done";
	char input[400], missing[8192] = "", *list, *line, *save;
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", "writer", "--input",
		input, "--", "/bin/sh", "-c", (char *)script, NULL };
	int status, n = 0, miss = 0;
	json_t *j;

	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	status =
	    harness_run_for(argv, 60000, out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	ck_assert_msg(text != NULL && strstr(text, "done") != NULL &&
		strstr(text, "FAILED") == NULL,
	    "%s", out);
	json_t *flags = json_object_get(j, "flags");
	list = slurp(LIST);
	for (line = strtok_r(list, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char path[300];
		if (line[0] == '#' || line[0] == '\0')
			continue;
		snprintf(path, sizeof(path), "repo/%s", line);
		n++;
		if (!flagged(flags, path)) {
			size_t l = strlen(missing);
			snprintf(missing + l, sizeof(missing) - l, " %s", line);
			miss++;
		}
	}
	free(list);
	ck_assert_int_gt(n, 2);
	ck_assert_msg(miss == 0, "%d of %d not flagged protected_path:%s", miss,
	    n, missing);
	ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")),
	    "needs-review");
	json_decref(j);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("redteam_return");
	TCase *tc = tcase_create("return");

	tcase_set_timeout(tc, 90);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, what_runs_in_a_checkout_needs_review);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
