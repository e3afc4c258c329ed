/*
 * The return-path policy, judged path by path: the protected globs match
 * at any depth of any path (a CI workflow under a directory that is no
 * input is still a CI workflow), in any case and in the spellings a
 * case-insensitive or Windows file system folds together; the defaults
 * cover the CI systems, hook runners and editor task files in use; a write
 * outside every declared input is flagged; the report shows a path with
 * control, format, bidi, zero-width or tag characters visibly escaped,
 * never raw; and the flags list stays bounded while the verdict still
 * counts every flag.
 */
#include "policy.h"

#include "testutil.h"

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Whether p flagged path with flag at verdict. */
static bool
has_flag(const struct policy *p, const char *path, const char *flag,
    const char *verdict)
{
	size_t i;
	json_t *f;

	json_array_foreach(p->flags, i, f)
	{
		if (strcmp(json_string_value(json_object_get(f, "path")),
			path) == 0 &&
		    strcmp(json_string_value(json_object_get(f, "flag")),
			flag) == 0 &&
		    strcmp(json_string_value(json_object_get(f, "verdict")),
			verdict) == 0)
			return true;
	}
	return false;
}

/* A policy with the defaults, inputs at "repo" and "checkout/lib". */
static void
init(struct policy *p)
{
	json_t *roots = json_pack("[s, s]", "repo", "checkout/lib");

	ck_assert_int_eq(policy_init(p, NULL, roots, 1 << 20), 0);
	json_decref(roots);
}

/* Each must be protected: the list, and what was chosen beside. */
static const char *const protected[] = {
	/* At any depth, not only at the root or an input's root. */
	"zz/.github/workflows/evil.yml",
	"repo/deep/er/.github/workflows/x.yml",
	"repo/.github/workflows/x.yml",
	/* In any case. */
	".GITHUB/workflows/x.yml",
	"repo/.GitHub/Workflows/X.yml",
	"repo/JENKINSFILE",
	"repo/X.SERVICE",
	/* The list. */
	"repo/.gitea/workflows/a.yml",
	"repo/.forgejo/workflows/a.yml",
	"repo/.travis.yml",
	"repo/azure-pipelines.yml",
	"repo/bitbucket-pipelines.yml",
	"repo/.drone.yml",
	"repo/.buildkite/pipeline.yml",
	"repo/.woodpecker/build.yml",
	"repo/.woodpecker.yml",
	"repo/.husky/pre-commit",
	"repo/.pre-commit-config.yaml",
	"repo/.vscode/tasks.json",
	"repo/.devcontainer/devcontainer.json",
	"repo/.yarnrc.yml",
	"repo/sub/.git",
	"repo/sub/.git/hooks/post-checkout",
	/* And the rest of the defaults. */
	"repo/.gitlab-ci.yml",
	"repo/.gitlab/ci/deploy.yml",
	"repo/.circleci/config.yml",
	"repo/Jenkinsfile",
	"repo/action.yml",
	"repo/tools/lint/action.yaml",
	"repo/.gitmodules",
	"repo/.gitattributes",
	"repo/.lfsconfig",
	"repo/.envrc",
	"repo/.npmrc",
	"repo/.yarnrc",
	"repo/.pnpmfile.cjs",
	"repo/.pypirc",
	"repo/lefthook.yml",
	"repo/.lefthook/pre-commit/lint.sh",
	"repo/.githooks/pre-commit",
	"repo/.git-hooks/pre-push",
	"repo/.vscode/settings.json",
	"repo/.vscode/launch.json",
	"repo/.idea/workspace.xml",
	"repo/.cirrus.yml",
	"repo/.semaphore/semaphore.yml",
	"repo/appveyor.yml",
	"repo/codeship-steps.yml",
	"repo/.tekton/pull-request.yaml",
	"repo/.harness/pipeline.yaml",
	"repo/cloudbuild.yaml",
	"repo/buildspec.yml",
	"repo/.github/dependabot.yml",
	"repo/CODEOWNERS",
	"repo/docs/CODEOWNERS",
	"repo/.cargo/config.toml",
	"repo/gradle/wrapper/gradle-wrapper.properties",
	"repo/.mvn/wrapper/maven-wrapper.properties",
	"repo/.claude/settings.json",
	"repo/.mcp.json",
	"repo/x.service",
	/* Spellings a Windows or macOS checkout folds into a protected one:
	 * trailing dots and spaces, an NTFS stream, an HFS+ ignorable code
	 * point, the 8.3 short name, a backslash. */
	"repo/.git./hooks/x",
	"repo/.git /config",
	"repo/.git::$INDEX_ALLOCATION/config",
	"repo/.git\xe2\x80\x8c/hooks/pre-commit",
	"repo/GIT~1/config",
	"repo/.github\\workflows\\x.yml",
};

/* None of these is protected (Makefile: see return-path.md). */
static const char *const plain[] = { "repo/Makefile", "repo/README.md",
	"repo/src/main.c", "repo/github/workflows/x.yml", "repo/.githubx/y",
	"repo/package.json", "repo/docs/git.md", "repo/my.services",
	"repo/vscode/tasks.json" };

START_TEST(test_protected_defaults)
{
	struct policy p;

	for (size_t i = 0; i < sizeof(protected) / sizeof(protected[0]); i++) {
		init(&p);
		ck_assert_msg(policy_protected_by(&p, protected[i]) != NULL,
		    "not protected: %s", protected[i]);
		policy_check_entry(&p, protected[i], S_IFREG | 0644, NULL);
		ck_assert_msg(p.verdict >= VERDICT_NEEDS_REVIEW, "clean: %s",
		    protected[i]);
		policy_free(&p);
	}
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		init(&p);
		ck_assert_msg(policy_protected_by(&p, plain[i]) == NULL,
		    "protected: %s (by %s)", plain[i],
		    policy_protected_by(&p, plain[i]));
		policy_check_entry(&p, plain[i], S_IFREG | 0644, NULL);
		ck_assert_int_eq(p.verdict, VERDICT_CLEAN);
		policy_free(&p);
	}
}
END_TEST

/* The case: the flag is on the path as the patch carries it. */
/* A letter past ASCII that a case-insensitive checkout reads as an ASCII
 * one (redteam4 hole 3: these came back clean): NTFS's $UpCase table has
 * U+0131 and U+017F as I and S, APFS folds U+212A to k, HFS+ stores
 * U+037E as ';'; the ligatures fold too (full case folding). Each is
 * protected, and a name holding one that folds to one letter is flagged
 * hidden_text, case_confusable, protected or not. */
static const char *const folded[] = {
	"repo/.g\xc4\xb1thub/workflows/ci.yml", /* U+0131 */
	"repo/.G\xc4\xb0THUB/workflows/ci.yml", /* U+0130 */
	"repo/.v\xc5\xbf"
	"code/tasks.json", /* U+017F */
	"repo/AGENT\xc5\xbf.md", /* U+017F */
	"repo/Jenkin\xc5\xbf"
	"file", /* U+017F */
	"repo/.hus\xe2\x84\xaay/pre-commit", /* U+212A */
	"repo/.con\xef\xac\x81g/git/config", /* U+FB01 */
	"repo/.g\xc4\xb1thub./workflows/x.yml", /* and a trailing dot */
	"repo/.g\xc4\xb1t\xe2\x80\x8dhub/x.yml", /* and a ZWJ */
	"repo/.g\xc4\xb1thub::$DATA", /* and an NTFS stream */
};

/* Each does not fold to a protected name on any checkout: an accent is
 * kept by NFC and NFD alike (macOS stores .gi + U+0301 + thub), a
 * combining dot after i is no i. */
static const char *const not_folded[] = {
	"repo/.g\xc3\xadthub/workflows/ci.yml", /* U+00ED, NFC */
	"repo/.gi\xcc\x81thub/workflows/ci.yml", /* i U+0301, NFD */
	"repo/.gi\xcc\x87thub/workflows/ci.yml", /* i U+0307 */
	"repo/.\xef\xbd\x87ithub/x.yml", /* U+FF47: mixed_script only */
	"repo/stra\xc3\x9f"
	"e.md", /* U+00DF */
};

/* Whether p has a hidden_text flag whose classes hold cls. */
static bool
has_class(const struct policy *p, const char *cls)
{
	size_t i, j;
	json_t *f, *c;

	json_array_foreach(p->flags, i, f)
	{
		if (strcmp(json_string_value(json_object_get(f, "flag")),
			"hidden_text") != 0)
			continue;
		json_array_foreach(json_object_get(f, "classes"), j, c)
		{
			if (strcmp(json_string_value(c), cls) == 0)
				return true;
		}
	}
	return false;
}

START_TEST(test_case_pairs_folded)
{
	struct policy p;

	for (size_t i = 0; i < sizeof(folded) / sizeof(folded[0]); i++) {
		init(&p);
		ck_assert_msg(policy_protected_by(&p, folded[i]) != NULL,
		    "not protected: %s", folded[i]);
		policy_check_name(&p, folded[i]);
		if (strstr(folded[i], "\xef\xac") == NULL)
			ck_assert_msg(has_class(&p, "case_confusable"),
			    "no case_confusable: %s", folded[i]);
		policy_free(&p);
	}
	for (size_t i = 0; i < sizeof(not_folded) / sizeof(not_folded[0]);
	     i++) {
		init(&p);
		ck_assert_msg(policy_protected_by(&p, not_folded[i]) == NULL,
		    "protected: %s", not_folded[i]);
		policy_check_name(&p, not_folded[i]);
		ck_assert_msg(!has_class(&p, "case_confusable"),
		    "case_confusable: %s", not_folded[i]);
		policy_free(&p);
	}
	/* Not protected, still flagged: a reviewer sees the letter. */
	init(&p);
	ck_assert_ptr_null(policy_protected_by(&p, "repo/\xc4\xb1ndex.md"));
	policy_check_name(&p, "repo/\xc4\xb1ndex.md");
	ck_assert(has_class(&p, "case_confusable"));
	ck_assert_int_eq(p.verdict, VERDICT_NEEDS_REVIEW);
	policy_free(&p);
}
END_TEST

START_TEST(test_ci_outside_an_input)
{
	struct policy p;

	init(&p);
	policy_check_entry(&p, "zz/.github/workflows/evil.yml", S_IFREG | 0644,
	    NULL);
	ck_assert(has_flag(&p, "zz/.github/workflows/evil.yml",
	    "protected_path", "needs-review"));
	ck_assert(has_flag(&p, "zz/.github/workflows/evil.yml",
	    "outside_inputs", "needs-review"));
	ck_assert_int_eq(p.verdict, VERDICT_NEEDS_REVIEW);
	policy_free(&p);
}
END_TEST

/* The job's own globs match at any depth and in any case too. */
START_TEST(test_extra_globs_any_depth)
{
	json_t *extra = json_pack("[s, s]", "docs/secret/**", "*.PEM");
	json_t *roots = json_pack("[s]", "repo");
	struct policy p;

	ck_assert_int_eq(policy_init(&p, extra, roots, 1 << 20), 0);
	ck_assert_ptr_nonnull(policy_protected_by(&p, "repo/docs/secret/a"));
	ck_assert_ptr_nonnull(policy_protected_by(&p, "zz/Docs/Secret/a"));
	ck_assert_ptr_nonnull(policy_protected_by(&p, "repo/k/key.pem"));
	ck_assert_ptr_null(policy_protected_by(&p, "repo/docs/public/a"));
	policy_free(&p);
	json_decref(extra);
	json_decref(roots);
}
END_TEST

START_TEST(test_glob_match_rules)
{
	ck_assert(policy_glob_match(".github/**", ".GitHub/x.yml"));
	ck_assert(policy_glob_match(".github/**", ".github"));
	ck_assert(policy_glob_match("*.service", "a/B.SERVICE"));
	ck_assert(policy_glob_match("**/.git/**", "a/.GIT/config"));
	ck_assert(!policy_glob_match(".github/**", "github/x"));
	ck_assert(!policy_glob_match("*.service", "a.services"));
}
END_TEST

START_TEST(test_outside_inputs)
{
	static const char *const inside[] = { "repo/a.c", "repo/x/y/z",
		"checkout/lib/y" };
	static const char *const outside[] = { "zz/x.c", "top.txt",
		"checkout/x", "repository/x", "checkout/library/x" };
	struct policy p;

	for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++) {
		init(&p);
		policy_check_entry(&p, inside[i], S_IFREG | 0644, NULL);
		ck_assert_msg(p.verdict == VERDICT_CLEAN, "flagged: %s",
		    inside[i]);
		policy_free(&p);
	}
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
		init(&p);
		policy_check_entry(&p, outside[i], S_IFREG | 0644, NULL);
		ck_assert_msg(has_flag(&p, outside[i], "outside_inputs",
				  "needs-review"),
		    "not flagged: %s", outside[i]);
		policy_free(&p);
	}
	/* No inputs at all: every write is outside them. */
	ck_assert_int_eq(policy_init(&p, NULL, NULL, 1 << 20), 0);
	policy_check_entry(&p, "out.txt", S_IFREG | 0644, NULL);
	ck_assert(has_flag(&p, "out.txt", "outside_inputs", "needs-review"));
	policy_free(&p);
}
END_TEST

/* path in the report's form must be want. */
static void
assert_path_json(const char *path, const char *want)
{
	json_t *j = policy_path_json(path);

	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(j), want);
	json_decref(j);
}

START_TEST(test_path_json_escapes)
{
	/* Plain UTF-8 stays as it is. */
	assert_path_json("repo/a b.txt", "repo/a b.txt");
	assert_path_json("repo/\303\251t\303\251", "repo/\303\251t\303\251");
	/* ESC and the other controls: git's escapes. */
	assert_path_json("repo/\033[31mx", "\"repo/\\033[31mx\"");
	assert_path_json("repo/a\nb\tc", "\"repo/a\\nb\\tc\"");
	assert_path_json("repo/q\"x\\y", "\"repo/q\\\"x\\\\y\"");
	/* Bidi overrides and isolates, zero-width, BOM, the others. */
	assert_path_json("repo/a\342\200\256b", "\"repo/a\\u202eb\"");
	assert_path_json("repo/\342\201\246x\342\201\251",
	    "\"repo/\\u2066x\\u2069\"");
	assert_path_json("repo/a\342\200\213b", "\"repo/a\\u200bb\"");
	assert_path_json("repo/\357\273\277x", "\"repo/\\ufeffx\"");
	assert_path_json("repo/\330\234x", "\"repo/\\u061cx\"");
	assert_path_json("repo/\341\240\216x", "\"repo/\\u180ex\"");
	assert_path_json("repo/a\342\200\250b", "\"repo/a\\u2028b\"");
	/* A C1 control in UTF-8 (U+009B, the one-byte CSI). */
	assert_path_json("repo/\302\233x", "\"repo/\\u009bx\"");
	/* Tag characters: U+E0069 U+E0067. */
	assert_path_json("repo/x\363\240\201\251\363\240\201\247",
	    "\"repo/x\\U000e0069\\U000e0067\"");
	/* Not UTF-8, and an overlong '/': bytes in octal, as git. */
	assert_path_json("repo/\377x", "\"repo/\\377x\"");
	assert_path_json("repo/\300\257x", "\"repo/\\300\\257x\"");
	/* A printable character beside an escaped one stays itself. */
	assert_path_json("repo/\303\251\342\200\256",
	    "\"repo/\303\251\\u202e\"");
}
END_TEST

/* A flag's path and a change's path come out through the same form. */
START_TEST(test_flag_path_escaped)
{
	struct policy p;
	const char *path = "zz/\342\200\256lmy.exe";

	init(&p);
	policy_check_entry(&p, path, S_IFREG | 0644, NULL);
	ck_assert(has_flag(&p, "\"zz/\\u202elmy.exe\"", "outside_inputs",
	    "needs-review"));
	policy_free(&p);
}
END_TEST

/* The list stays bounded; the verdict and the counts still see them all,
 * and a flood of one kind hides no flag of another. */
START_TEST(test_flags_bounded)
{
	struct policy p;
	char path[64];

	init(&p);
	for (int i = 0; i < POLICY_MAX_FLAGS + 500; i++) {
		snprintf(path, sizeof(path), "repo/f%d", i);
		policy_flag(&p, path, "symlink", "a test",
		    VERDICT_NEEDS_REVIEW);
	}
	policy_flag(&p, "repo/.github/workflows/x.yml", "protected_path",
	    "a test", VERDICT_NEEDS_REVIEW);
	policy_flag(&p, "repo/last", "setuid", "a test", VERDICT_REFUSED);
	ck_assert_uint_le(json_array_size(p.flags), POLICY_MAX_FLAGS);
	ck_assert(has_flag(&p, "repo/.github/workflows/x.yml", "protected_path",
	    "needs-review"));
	ck_assert(has_flag(&p, "repo/last", "setuid", "refused"));
	ck_assert_uint_eq(p.flags_omitted + json_array_size(p.flags),
	    POLICY_MAX_FLAGS + 502);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(p.flag_counts, "symlink")),
	    POLICY_MAX_FLAGS + 500);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(p.flag_counts, "setuid")),
	    1);
	ck_assert_int_eq(p.verdict, VERDICT_REFUSED);
	policy_free(&p);
}
END_TEST

/* return.exclude: matched as protected globs are, counted with a capped
 * sample, and never over a protected path. */
START_TEST(test_exclude)
{
	struct policy p;
	json_t *ex = json_pack("[s, s, s]", ".cache", "*.pyc", ".github"), *j;
	char path[64];

	init(&p);
	ck_assert_int_eq(policy_set_exclude(&p, ex), 0);
	json_decref(ex);
	ck_assert(policy_exclude(&p, "repo/.cache/pip/a.whl", 10));
	ck_assert(policy_exclude(&p, "repo/src/M.PYC", 3));
	ck_assert(!policy_exclude(&p, "repo/src/m.py", 3));
	ck_assert(!policy_exclude(&p, "repo/.github/workflows/ci.yml", 5));
	ck_assert(!policy_exclude(&p, "repo/.GitHub/Workflows/ci.yml", 5));
	for (int i = 0; i < 30; i++) {
		snprintf(path, sizeof(path), "repo/.cache/f%d", i);
		ck_assert(policy_exclude(&p, path, 1));
	}
	ck_assert(policy_exclude(&p, "repo/.cache/\033x", 1));
	j = policy_excluded_json(&p);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "count")), 33);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "bytes")), 44);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "sample")),
	    POLICY_EXCLUDED_SAMPLE);
	ck_assert_str_eq(json_string_value(
			     json_array_get(json_object_get(j, "sample"), 0)),
	    "repo/.cache/pip/a.whl");
	json_decref(j);
	policy_free(&p);

	/* No exclude list: nothing excluded, an empty sample. */
	init(&p);
	ck_assert(!policy_exclude(&p, "repo/.cache/x", 1));
	j = policy_excluded_json(&p);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "count")), 0);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "sample")), 0);
	json_decref(j);
	policy_free(&p);
}
END_TEST

static Suite *
policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("policy");

	tcase_add_test(tc, test_protected_defaults);
	tcase_add_test(tc, test_case_pairs_folded);
	tcase_add_test(tc, test_ci_outside_an_input);
	tcase_add_test(tc, test_extra_globs_any_depth);
	tcase_add_test(tc, test_glob_match_rules);
	tcase_add_test(tc, test_outside_inputs);
	tcase_add_test(tc, test_path_json_escapes);
	tcase_add_test(tc, test_flag_path_escaped);
	tcase_add_test(tc, test_flags_bounded);
	tcase_add_test(tc, test_exclude);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(policy_suite());
}
