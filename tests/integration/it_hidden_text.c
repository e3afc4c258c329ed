/*
 * Text that reads otherwise than it applies (redteam's it_redteam_hidden,
 * with its own uid range): the job writes, inside its input, source files
 * whose content holds Trojan Source's bidi controls (CVE-2021-42574: an
 * "early return" that reads as a comment), a zero-width space in an
 * identifier, and terminal escapes that erase the line before them when
 * the patch is shown with cat, and a Cyrillic a in "admin". The patch
 * carries them byte for byte, as it must; the report must flag each file
 * (hidden_text, naming the line and the class, the character escaped) and
 * the verdict be at least needs-review. A file the job wrote with plain
 * text and emoji sequences is not flagged, nor one with a Russian comment.
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

#define UID_BASE 940000

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

/* The hidden_text flag on path, or NULL. */
static json_t *
flag_of(const json_t *flags, const char *path)
{
	size_t i;
	json_t *f;

	json_array_foreach(flags, i, f)
	{
		const char *p = json_string_value(json_object_get(f, "path"));
		const char *k = json_string_value(json_object_get(f, "flag"));

		if (p != NULL && strcmp(p, path) == 0 && k != NULL &&
		    strcmp(k, "hidden_text") == 0)
			return f;
	}
	return NULL;
}

static bool
has_class(const json_t *f, const char *cls)
{
	size_t i;
	json_t *c;

	json_array_foreach(json_object_get(f, "classes"), i, c)
	{
		if (strcmp(json_string_value(c), cls) == 0)
			return true;
	}
	return false;
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

START_TEST(text_that_reads_otherwise_than_it_applies_is_flagged)
{
	static char out[1 << 20], err[1 << 16];
	/* printf's octal: U+202E is \342\200\256, U+2066 \342\201\246,
	 * U+2069 \342\201\251, U+200B \342\200\213, ESC \033, U+2028
	 * \342\200\250, an overlong '/' \300\257; ok.md has a BOM first,
	 * U+26A0 U+FE0F (an emoji's variation selector), U+1F468 U+200D
	 * U+1F4BB (a joined emoji), CRLF line ends and a tab. */
	static const char script[] =
	    "cd /work/repo && "
	    "printf 'def is_admin(user):\\n"
	    "    access = \"user\"\\n"
	    "    if access != \"none\\342\\200\\256 \\342\\201\\246# admin "
	    "only\\342\\201\\251 \\342\\201\\246\":\\n"
	    "        return True\\n"
	    "    return False\\n' > trojan.py && "
	    "printf 'ALLOWED = [\"alice\", \"bob\"]\\n"
	    "ALLOWED.append(\"mallory\")\\033[1A\\033[2K\\n' > users.py && "
	    "printf 'def check\\342\\200\\213(x):\\n    return True\\n' > "
	    "zw.py && "
	    "printf 'see\\342\\200\\250here\\n' >> README.md && "
	    "printf 'a\\nb\\nc\\300\\257\\n' > overlong.txt && "
	    "printf 'role = \"\\320\\260dmin\"\\n' > config.py && "
	    "printf '# \\320\\237\\321\\200\\320\\276\\320\\262"
	    "\\320\\265\\321\\200\\320\\272\\320\\260\\nrole = "
	    "\"admin\"\\n' > ru.py && "
	    "printf '\\357\\273\\277# "
	    "Notes\\r\\n\\342\\232\\240\\357\\270\\217 "
	    "careful "
	    "\\360\\237\\221\\250\\342\\200\\215\\360\\237\\222\\273\\r\\n"
	    "\\tindented caf\\303\\251\\r\\n' > ok.md && "
	    "echo done";
	char input[400], patch_out[400];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", st.launcher_cfg, "--manifest", "writer", "--input",
		input, "--patch-out", patch_out, "--", "/bin/sh", "-c",
		(char *)script, NULL };
	static const struct {
		const char *path, *cls;
		long line;
	} want[] = {
		{ "repo/trojan.py", "bidi_control", 3 },
		{ "repo/users.py", "control", 2 },
		{ "repo/zw.py", "invisible", 1 },
		{ "repo/README.md", "line_separator", 2 },
		{ "repo/overlong.txt", "invalid_utf8", 3 },
		{ "repo/config.py", "mixed_script", 1 },
	};
	_cleanup_free_ char *patch = NULL;
	size_t patch_len = 0;
	int status;
	json_t *j;

	snprintf(input, sizeof(input), "%s/repo:repo", st.inputs);
	snprintf(patch_out, sizeof(patch_out), "%s/hidden.patch",
	    st.launcher_dir);
	status =
	    harness_run_for(argv, 60000, out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    status, out, err);
	json_t *flags = json_object_get(j, "flags");
	const char *verdict = json_string_value(json_object_get(j, "verdict"));
	char *all = json_dumps(flags, 0);
	char *changes = json_dumps(json_object_get(j, "changes"), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		json_t *f = flag_of(flags, want[i].path);
		const char *reason =
		    json_string_value(json_object_get(f, "reason"));

		ck_assert_msg(f != NULL,
		    "%s: no hidden_text flag; verdict %s; flags %s; changes %s",
		    want[i].path, verdict != NULL ? verdict : "(none)", all,
		    changes);
		ck_assert_msg(has_class(f, want[i].cls) &&
			json_integer_value(json_object_get(f, "line")) ==
			    want[i].line,
		    "%s: want %s at line %ld: %s", want[i].path, want[i].cls,
		    want[i].line, all);
		ck_assert_str_eq(json_string_value(
				     json_object_get(f, "verdict")),
		    "needs-review");
		ck_assert_msg(reason != NULL && printable(reason),
		    "%s: the reason is not escaped: %s", want[i].path, all);
	}
	ck_assert_msg(flag_of(flags, "repo/ok.md") == NULL,
	    "plain text with emoji, a BOM, CRLF and a tab flagged: %s", all);
	ck_assert_msg(flag_of(flags, "repo/ru.py") == NULL,
	    "a Russian comment over a Latin line flagged: %s", all);
	free(all);
	free(changes);
	ck_assert_msg(verdict != NULL && strcmp(verdict, "clean") != 0,
	    "verdict %s", verdict != NULL ? verdict : "(none)");
	/* The patch carries them byte for byte: it must apply as written. */
	ck_assert_int_eq(path_read_file(patch_out, 1 << 20, &patch, &patch_len),
	    0);
	ck_assert_ptr_nonnull(memmem(patch, patch_len, "\342\200\256", 3));
	ck_assert_ptr_nonnull(memmem(patch, patch_len, "\033[1A", 4));
	json_decref(j);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("hidden_text");
	TCase *tc = tcase_create("hidden");

	tcase_set_timeout(tc, 90);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc,
	    text_that_reads_otherwise_than_it_applies_is_flagged);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
