/*
 * The return path's holes (issue 16, items 5 to 8), as root against the
 * real hatch and, end to end, through `cordon run`: a CI workflow written
 * outside every input comes back flagged, not clean; protected paths
 * match in any case and at any depth; a tree the seal cannot walk whole
 * (deeper than it goes) seals all the same, `refused` with the reason,
 * and leaves nothing mounted; and a path with control, bidi or tag
 * characters is shown escaped in the report and in the launcher's
 * result, as the job's output is cleaned of them.
 */
#include "harness.h"
#include "hatchjob.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define KEY "crk_hatch-test-key-0123456789abcdefghijkl"
#define RLO "\342\200\256" /* U+202E, RIGHT-TO-LEFT OVERRIDE */

static struct daemon hatch;
static struct hatchjob hj;
static char roots[300];

static void
write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* mkdir -p of rel under base. */
static void
mkdirs(const char *base, const char *rel)
{
	char p[PATH_MAX];
	int n = snprintf(p, sizeof(p), "%s/%s", base, rel);

	ck_assert(n > 0 && n < (int)sizeof(p));
	for (char *s = p + strlen(base) + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			ck_assert_msg(mkdir(p, 0755) == 0 || errno == EEXIST,
			    "%s: %s", p, strerror(errno));
			*s = c;
			if (c == '\0')
				break;
		}
	}
}

static void
start(void)
{
	char cfg[2048], keyfile[400];

	hatchjob_start(&hj);
	snprintf(roots, sizeof(roots), "%s", harness_tmpdir());
	snprintf(keyfile, sizeof(keyfile), "%s/launcher.key", harness_tmpdir());
	write_file(keyfile, KEY "\n");
	chmod(keyfile, 0600);
	snprintf(cfg, sizeof(cfg),
	    "{\"input_roots\": [\"%s\"], \"launcher_key_file\": \"%s\", "
	    "%s}",
	    roots, keyfile, hj.hatch_config);
	ck_assert_int_eq(daemon_start(&hatch, "hatch", cfg), 0);
}

static void
stop(void)
{
	ck_assert_int_eq(daemon_stop(&hatch), 0);
	hatchjob_stop(&hj);
}

static json_t *
expect(long want, const char *method, const char *path, json_t *body)
{
	return harness_expect(&hatch, want, method, path, KEY, NULL, body);
}

/* A workspace for job (a tag: the broker names the job, of a manifest
 * with the return policy ret, stolen, may be NULL, and disk_mb 8) over a
 * small repository at dst "repo": the path of its upper directory
 * (static) and, in ws, of the workspace. */
static const char *
workspace_with(const char *job, json_t *ret, char *ws, size_t wslen)
{
	static char upper[PATH_MAX];
	char repo[400], p[500];
	json_t *v, *body;

	snprintf(repo, sizeof(repo), "%s/%s", roots, job);
	ck_assert_int_eq(mkdir(repo, 0755), 0);
	snprintf(p, sizeof(p), "%s/README", repo);
	write_file(p, "hello\n");
	body = json_pack("{s:s, s:[{s:s, s:s}]}", "job",
	    hatchjob_mint(&hj, job, ret, 8), "inputs", "src", repo, "dst",
	    "repo");
	v = expect(201, "POST", "/v1/workspaces", body);
	snprintf(upper, sizeof(upper), "%s",
	    json_string_value(json_object_get(v, "upper")));
	/* upper is <ws>/rw/upper. */
	snprintf(ws, wslen, "%.*s", (int)(strlen(upper) - 9), upper);
	json_decref(v);
	return upper;
}

static const char *
workspace(const char *job, char *ws, size_t wslen)
{
	return workspace_with(job, NULL, ws, wslen);
}

/* Mounts at or under root, as the host's mount namespace sees. */
static size_t
mounts_under(const char *root)
{
	char *mounts[64];
	size_t n = harness_mounts_under(root, mounts, 64);

	for (size_t i = 0; i < n; i++)
		free(mounts[i]);
	return n;
}

static json_t *
seal(const char *job)
{
	char path[200];

	snprintf(path, sizeof(path), "/v1/workspaces/%s/seal",
	    hatchjob_id(&hj, job));
	return expect(200, "POST", path, NULL);
}

/* Whether list (flags or changes) has an entry for path with key == v. */
static bool
has(const json_t *report, const char *list, const char *path, const char *key,
    const char *v)
{
	size_t i;
	json_t *f;

	json_array_foreach(json_object_get(report, list), i, f)
	{
		const char *p = json_string_value(json_object_get(f, "path"));
		const char *k = json_string_value(json_object_get(f, key));

		if (p != NULL && k != NULL && strcmp(p, path) == 0 &&
		    strcmp(k, v) == 0)
			return true;
	}
	return false;
}

static bool
flagged(const json_t *report, const char *path, const char *flag)
{
	return has(report, "flags", path, "flag", flag);
}

static bool
any_flag(const json_t *report, const char *flag)
{
	size_t i;
	json_t *f;

	json_array_foreach(json_object_get(report, "flags"), i, f)
	{
		if (strcmp(json_string_value(json_object_get(f, "flag")),
			flag) == 0)
			return true;
	}
	return false;
}

static const char *
verdict(const json_t *report)
{
	return json_string_value(json_object_get(report, "verdict"));
}

/* No string anywhere in v holds ESC, another C0 control but newline and
 * tab, or U+202E: what a terminal or a reader would be fooled by. */
static void
assert_no_raw(const json_t *v, const char *where)
{
	const char *key;
	size_t i;
	json_t *x;

	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		for (const char *c = s; *c != '\0'; c++)
			ck_assert_msg((unsigned char)*c >= 0x20 || *c == '\n' ||
				*c == '\t',
			    "a raw control (0x%02x) in %s: %s",
			    (unsigned char)*c, where, s);
		ck_assert_msg(strstr(s, RLO) == NULL, "a raw U+202E in %s: %s",
		    where, s);
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, x)
		    assert_no_raw(x, where);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x) assert_no_raw(x, where);
	}
}

/* Item 5 and 6: where CI looks, wherever it is and however it is spelt. */
START_TEST(ci_outside_an_input_and_in_any_case)
{
	char ws[PATH_MAX], p[PATH_MAX];
	const char *u = workspace("ci", ws, sizeof(ws));
	json_t *r;

	mkdirs(u, "zz/.github/workflows");
	snprintf(p, sizeof(p), "%s/zz/.github/workflows/evil.yml", u);
	write_file(p, "on: push\n");
	mkdirs(u, "repo/.GITHUB/workflows");
	snprintf(p, sizeof(p), "%s/repo/.GITHUB/workflows/x.yml", u);
	write_file(p, "on: push\n");
	mkdirs(u, "repo/sub");
	snprintf(p, sizeof(p), "%s/repo/sub/.git", u);
	write_file(p, "gitdir: /tmp/elsewhere\n");
	snprintf(p, sizeof(p), "%s/repo/.yarnrc.yml", u);
	write_file(p, "yarnPath: ./evil.cjs\n");
	snprintf(p, sizeof(p), "%s/repo/notes.txt", u);
	write_file(p, "fine\n");
	r = seal("ci");
	ck_assert_str_eq(verdict(r), "needs-review");
	ck_assert(
	    flagged(r, "zz/.github/workflows/evil.yml", "protected_path"));
	ck_assert(
	    flagged(r, "zz/.github/workflows/evil.yml", "outside_inputs"));
	ck_assert(flagged(r, "repo/.GITHUB/workflows/x.yml", "protected_path"));
	ck_assert(flagged(r, "repo/sub/.git", "protected_path"));
	ck_assert(flagged(r, "repo/.yarnrc.yml", "protected_path"));
	ck_assert(!flagged(r, "repo/notes.txt", "protected_path"));
	ck_assert(!flagged(r, "repo/notes.txt", "outside_inputs"));
	json_decref(r);
}
END_TEST

/* Item 7: 130 nested directories made the seal fail with ELOOP. */
START_TEST(a_tree_too_deep_seals_refused_and_unmounts)
{
	char ws[PATH_MAX], rel[400] = "repo", p[PATH_MAX];
	const char *u = workspace("deep", ws, sizeof(ws));
	json_t *r;

	for (int i = 0; i < 130; i++)
		strcat(rel, "/d");
	mkdirs(u, rel);
	snprintf(p, sizeof(p), "%s/%s/bottom.txt", u, rel);
	write_file(p, "down here\n");
	snprintf(p, sizeof(p), "%s/repo/README", u);
	write_file(p, "changed\n");
	/* rw/, the job's writes, and lower/, its inputs. */
	ck_assert_uint_eq(mounts_under(ws), 2);
	r = seal("deep");
	ck_assert_str_eq(verdict(r), "refused");
	ck_assert(any_flag(r, "too_deep"));
	ck_assert(has(r, "changes", "repo/README", "change", "modified"));
	ck_assert(json_is_false(
	    json_object_get(json_object_get(r, "patch"), "complete")));
	json_decref(r);
	/* The evidence is the report and the patch; the job's tmpfs goes
	 * (the inputs' waits for the DELETE). */
	ck_assert_uint_eq(mounts_under(ws), 1);
	char path[200];
	snprintf(path, sizeof(path), "/v1/workspaces/%s/report",
	    hatchjob_id(&hj, "deep"));
	json_decref(expect(200, "GET", path, NULL));
	snprintf(path, sizeof(path), "/v1/workspaces/%s",
	    hatchjob_id(&hj, "deep"));
	json_decref(expect(200, "DELETE", path, NULL));
	ck_assert_uint_eq(mounts_under(ws), 0);
}
END_TEST

/* Item 8: the report's paths, escaped where they would fool a reader. */
START_TEST(report_paths_are_escaped)
{
	char ws[PATH_MAX], p[PATH_MAX];
	const char *u = workspace("names", ws, sizeof(ws));
	json_t *r;

	mkdirs(u, "repo");
	snprintf(p, sizeof(p), "%s/repo/\033[31mred", u);
	write_file(p, "x\n");
	snprintf(p, sizeof(p), "%s/repo/invoice" RLO "fdp.exe", u);
	write_file(p, "x\n");
	/* A symlink, so that the name is in the flags too. */
	snprintf(p, sizeof(p), "%s/repo/l" RLO "nk", u);
	ck_assert_int_eq(symlink("README", p), 0);
	r = seal("names");
	assert_no_raw(r, "the report");
	ck_assert(
	    has(r, "changes", "\"repo/\\033[31mred\"", "change", "added"));
	ck_assert(has(r, "changes", "\"repo/invoice\\u202efdp.exe\"", "change",
	    "added"));
	ck_assert(flagged(r, "\"repo/l\\u202enk\"", "symlink"));
	json_decref(r);
}
END_TEST

/* --- end to end: `cordon run` ------------------------------------------- */

static struct stack st;

static void
stack_setup(void)
{
	static const struct stack_options o = { .uid_base = 430000 };
	char path[400];

	stack_start(&st, &o);
	snprintf(path, sizeof(path), "%s/repo", st.inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", st.inputs);
	harness_write_file(path, "hello\n");
	json_t *m = json_pack("{s:s, s:[s], s:{s:i, s:i, s:i, s:i}}", "name",
	    "holes", "command", "/bin/true", "limits", "wall_seconds", 60,
	    "memory_mb", 512, "pids", 64, "output_kb", 256);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/holes", st.admin, NULL, m));
}

static void
stack_teardown(void)
{
	stack_stop(&st);
}

/* The job of the issue: a deep tree, a workflow outside the input, a
 * name with a bidi override, tag characters in its output. The run ends
 * with the job's status (not 4), the workspace is gone, and the result
 * shows nothing raw. */
START_TEST(cordon_run_seals_what_the_job_left)
{
	static char out[1 << 20], err[1 << 16];
	char input[400], ws[PATH_MAX], real[PATH_MAX];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", "holes", "--input",
		input, "--", "/bin/sh", "-c",
		"d=repo; i=0; while [ $i -lt 130 ]; do d=$d/d; i=$((i+1)); "
		"done; mkdir -p $d && echo x > $d/f; "
		"mkdir -p zz/.github/workflows && echo 'on: push' > "
		"zz/.github/workflows/evil.yml; "
		"echo x > \"repo/a$(printf '\\342\\200\\256')b\"; "
		"printf 'ok\\363\\240\\201\\251\\363\\240\\201\\247\\n'; "
		"echo JOB=$CORDON_JOB",
		NULL };
	int status;
	json_t *j;

	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	status = harness_run(argv, out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	ck_assert_msg(status == 0, "cordon run exited %d: %s\n%s", status, out,
	    err);
	ck_assert_ptr_null(json_object_get(j, "workspace_kept"));
	ck_assert_str_eq(verdict(j), "refused");
	ck_assert(any_flag(j, "too_deep"));
	ck_assert(
	    flagged(j, "zz/.github/workflows/evil.yml", "protected_path"));
	ck_assert(
	    flagged(j, "zz/.github/workflows/evil.yml", "outside_inputs"));
	ck_assert(has(j, "changes", "\"repo/a\\u202eb\"", "change", "added"));
	assert_no_raw(json_object_get(j, "flags"), "the result's flags");
	assert_no_raw(json_object_get(j, "changes"), "the result's changes");
	const char *text = json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strncmp(text, "ok\nJOB=", 7) == 0, "stdout: %s", text);
	/* Nothing of the workspace is left at the hatch, nothing mounted. */
	const char *job = json_string_value(json_object_get(j, "job"));
	ck_assert_ptr_nonnull(realpath(st.hatch.dir, real));
	snprintf(ws, sizeof(ws), "%s/var/hatch/workspaces/%s", real, job);
	ck_assert_uint_eq(mounts_under(ws), 0);
	ck_assert_msg(access(ws, F_OK) < 0, "%s is still there", ws);
	json_decref(j);
}
END_TEST

/* Issue 20: return.exclude leaves tool caches out of the patch, counted
 * in the report with a sample, and never hides a protected path. */
START_TEST(exclude_counted_never_hides_protected)
{
	char ws[PATH_MAX], p[PATH_MAX];
	const char *u = workspace_with("excl",
	    json_pack("{s:[s, s, s, s]}", "exclude", ".cache", "*.pyc",
		".github", "README"),
	    ws, sizeof(ws));
	json_t *r, *ex;

	mkdirs(u, "repo/.cache/pip");
	for (int i = 0; i < 25; i++) {
		snprintf(p, sizeof(p), "%s/repo/.cache/pip/w%02d.whl", u, i);
		write_file(p, "0123456789");
	}
	mkdirs(u, "repo/src");
	snprintf(p, sizeof(p), "%s/repo/src/m.PYC", u);
	write_file(p, "abc");
	/* Excluded and protected: stays, flagged. */
	mkdirs(u, "repo/.github/workflows");
	snprintf(p, sizeof(p), "%s/repo/.github/workflows/ci.yml", u);
	write_file(p, "on: push\n");
	snprintf(p, sizeof(p), "%s/repo/notes.txt", u);
	write_file(p, "kept\n");
	/* The deletion of an excluded file of lower: counted too. */
	snprintf(p, sizeof(p), "%s/repo/README", u);
	ck_assert_int_eq(mknod(p, S_IFCHR | 0600, makedev(0, 0)), 0);
	r = seal("excl");
	ck_assert(has(r, "changes", "repo/notes.txt", "change", "added"));
	ck_assert(has(r, "changes", "repo/.github/workflows/ci.yml", "change",
	    "added"));
	ck_assert(
	    flagged(r, "repo/.github/workflows/ci.yml", "protected_path"));
	ck_assert_str_eq(verdict(r), "needs-review");
	ck_assert(!has(r, "changes", "repo/src/m.PYC", "change", "added"));
	ck_assert(!has(r, "changes", "repo/README", "change", "deleted"));
	ck_assert(
	    !has(r, "changes", "repo/.cache/pip/w00.whl", "change", "added"));
	ck_assert_uint_eq(json_array_size(json_object_get(r, "changes")), 2);
	ex = json_object_get(r, "excluded");
	ck_assert_msg(json_is_object(ex), "no excluded in the report");
	ck_assert_int_eq(json_integer_value(json_object_get(ex, "count")), 27);
	ck_assert_int_eq(json_integer_value(json_object_get(ex, "bytes")),
	    25 * 10 + 3 + 6);
	ck_assert_uint_eq(json_array_size(json_object_get(ex, "sample")), 20);
	json_decref(r);
}
END_TEST

static Suite *
holes_suite(void)
{
	Suite *s = suite_create("return_holes");
	TCase *tc = tcase_create("hatch");

	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, ci_outside_an_input_and_in_any_case);
	tcase_add_test(tc, a_tree_too_deep_seals_refused_and_unmounts);
	tcase_add_test(tc, report_paths_are_escaped);
	tcase_add_test(tc, exclude_counted_never_hides_protected);
	suite_add_tcase(s, tc);

	tc = tcase_create("run");
	tcase_add_checked_fixture(tc, stack_setup, stack_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, cordon_run_seals_what_the_job_left);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(holes_suite());
}
