/*
 * The hidden-text scan (hatch/hidden.c) and its flag (policy_check_text):
 * each class found in a line and named, with the first hit's code point
 * and byte; what other scripts and emoji need left alone (a BOM first, a
 * variation selector after an emoji, a joiner inside an emoji sequence or
 * between Persian letters, CRLF); and over a patch as patch_write_file
 * writes it, only the added lines read, numbered as the new file numbers
 * them, context, removed lines, hunk headers and binary literals not;
 * a malformed or cut section is flagged all the same (fail closed), and
 * the flag's reason holds printable ASCII alone.
 */
#include "buf.h"
#include "hidden.h"
#include "patch.h"
#include "policy.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static unsigned
line_of(const char *s, bool first, struct hidden_hit *hit)
{
	return hidden_line((const unsigned char *)s, strlen(s), first, hit);
}

START_TEST(test_each_class)
{
	static const struct {
		const char *text;
		enum hidden_class cls;
		uint32_t cp;
		size_t col;
	} cases[] = {
		/* Trojan Source's controls, each. */
		{ "x\xe2\x80\xaay", HIDDEN_BIDI, 0x202a, 1 },
		{ "x\xe2\x80\xaby", HIDDEN_BIDI, 0x202b, 1 },
		{ "x\xe2\x80\xacy", HIDDEN_BIDI, 0x202c, 1 },
		{ "x\xe2\x80\xady", HIDDEN_BIDI, 0x202d, 1 },
		{ "\"none\xe2\x80\xae \"", HIDDEN_BIDI, 0x202e, 5 },
		{ "x\xe2\x81\xa6y", HIDDEN_BIDI, 0x2066, 1 },
		{ "x\xe2\x81\xa7y", HIDDEN_BIDI, 0x2067, 1 },
		{ "x\xe2\x81\xa8y", HIDDEN_BIDI, 0x2068, 1 },
		{ "x\xe2\x81\xa9y", HIDDEN_BIDI, 0x2069, 1 },
		{ "x\xe2\x80\x8ey", HIDDEN_BIDI, 0x200e, 1 },
		{ "x\xe2\x80\x8fy", HIDDEN_BIDI, 0x200f, 1 },
		{ "x\xd8\x9cy", HIDDEN_BIDI, 0x061c, 1 },
		/* Invisible. */
		{ "def check\xe2\x80\x8b(x):", HIDDEN_INVISIBLE, 0x200b, 9 },
		{ "a\xe2\x80\x8c"
		  "b",
		    HIDDEN_INVISIBLE, 0x200c, 1 },
		{ "a\xe2\x80\x8d"
		  "b",
		    HIDDEN_INVISIBLE, 0x200d, 1 },
		{ "a\xe2\x81\xa0"
		  "b",
		    HIDDEN_INVISIBLE, 0x2060, 1 },
		{ "a\xe2\x81\xa4"
		  "b",
		    HIDDEN_INVISIBLE, 0x2064, 1 },
		{ "a\xef\xbb\xbf", HIDDEN_INVISIBLE, 0xfeff, 1 },
		{ "soft\xc2\xadhyphen", HIDDEN_INVISIBLE, 0x00ad, 4 },
		{ "ok\xf3\xa0\x81\x81", HIDDEN_INVISIBLE, 0xe0041,
		    2 }, /* tag A */
		{ "var \xe3\x85\xa4 = 1", HIDDEN_INVISIBLE, 0x3164, 4 },
		{ "a\xef\xb8\x8f", HIDDEN_INVISIBLE, 0xfe0f, 1 }, /* after a */
		{ "\xe2\x80\x8d", HIDDEN_INVISIBLE, 0x200d, 0 },
		/* Controls: C0 but tab, LF, FF and a CR at the end; DEL; C1. */
		{ "x)\x1b[1A\x1b[2K", HIDDEN_CONTROL, 0x1b, 2 },
		{ "abc\bX", HIDDEN_CONTROL, 0x08, 3 },
		{ "a\vb", HIDDEN_CONTROL, 0x0b, 1 },
		{ "a\rfake", HIDDEN_CONTROL, '\r', 1 },
		{ "a\x7f", HIDDEN_CONTROL, 0x7f, 1 },
		{ "a\x01", HIDDEN_CONTROL, 0x01, 1 },
		{ "a\xc2\x9b"
		  "2K",
		    HIDDEN_CONTROL, 0x9b, 1 },
		{ "a\xc2\x85", HIDDEN_CONTROL, 0x85, 1 },
		/* Line separators. */
		{ "see\xe2\x80\xa8here", HIDDEN_SEPARATOR, 0x2028, 3 },
		{ "see\xe2\x80\xa9here", HIDDEN_SEPARATOR, 0x2029, 3 },
		/* Not UTF-8: the first byte that is not. */
		{ "c\xc0\xaf", HIDDEN_INVALID, 0xc0, 1 }, /* overlong '/' */
		{ "c\xe0\x80\xaf", HIDDEN_INVALID, 0xe0, 1 }, /* overlong */
		{ "c\xed\xa0\x80", HIDDEN_INVALID, 0xed, 1 }, /* surrogate */
		{ "c\xf4\x90\x80\x80", HIDDEN_INVALID, 0xf4, 1 }, /* > 10FFFF */
		{ "c\x80", HIDDEN_INVALID, 0x80, 1 }, /* stray */
		{ "caf\xe9", HIDDEN_INVALID, 0xe9, 3 }, /* Latin-1 */
		{ "cut \xe2\x80", HIDDEN_INVALID, 0xe2, 4 },
		{ "\xff", HIDDEN_INVALID, 0xff, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hidden_hit hit = { 0 };
		unsigned found = line_of(cases[i].text, false, &hit);

		ck_assert_msg(found == 1u << cases[i].cls,
		    "case %zu: classes %#x, want %s", i, found,
		    hidden_class_name(cases[i].cls));
		ck_assert_msg(hit.cls == cases[i].cls &&
			hit.cp == cases[i].cp && hit.col == cases[i].col,
		    "case %zu: hit %s U+%04X at %zu, want U+%04X at %zu", i,
		    hidden_class_name(hit.cls), (unsigned)hit.cp, hit.col,
		    (unsigned)cases[i].cp, cases[i].col);
	}
}
END_TEST

START_TEST(test_what_text_needs_is_left_alone)
{
	static const char *const ok[] = {
		"plain ASCII, with a tab\tand a form feed\f",
		"a CRLF line\r",
		("caf\xc3\xa9, \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e, "
		 "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82"),
		"\xe2\x9a\xa0\xef\xb8\x8f careful", /* U+26A0 U+FE0F */
		"\xe2\x9d\xa4\xef\xb8\x8f", /* U+2764 U+FE0F */
		/* U+1F468 ZWJ U+1F4BB, and U+1F3F3 U+FE0F ZWJ U+1F308 */
		"\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x92\xbb",
		"\xf0\x9f\x8f\xb3\xef\xb8\x8f\xe2\x80\x8d\xf0\x9f\x8c\x88",
		/* Persian: U+0645 U+06CC ZWNJ U+062E U+0648 U+0627 U+0645 */
		"\xd9\x85\xdb\x8c\xe2\x80\x8c\xd8\xae\xd9\x88\xd8\xa7\xd9\x85",
		"\xc2\xa0no-break space", /* shown: a space */
		"",
	};
	struct hidden_hit hit;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		ck_assert_msg(line_of(ok[i], false, &hit) == 0,
		    "case %zu flagged: %s U+%04X at %zu", i,
		    hidden_class_name(hit.cls), (unsigned)hit.cp, hit.col);
	/* A BOM starts the file; anywhere else it is hidden. */
	ck_assert_uint_eq(line_of("\xef\xbb\xbf# title", true, &hit), 0);
	ck_assert_uint_eq(line_of("\xef\xbb\xbf# title", false, &hit),
	    1u << HIDDEN_INVISIBLE);
	ck_assert_uint_eq(line_of("#\xef\xbb\xbf title", true, &hit),
	    1u << HIDDEN_INVISIBLE);
	/* A joiner at the end, or before ASCII, joins nothing visible. */
	ck_assert_uint_eq(line_of("\xf0\x9f\x91\xa8\xe2\x80\x8d", false, &hit),
	    1u << HIDDEN_INVISIBLE);
	ck_assert_uint_eq(line_of("\xf0\x9f\x91\xa8\xe2\x80\x8dx", false, &hit),
	    1u << HIDDEN_INVISIBLE);
	/* Two joiners: the second follows no visible character. */
	ck_assert_uint_eq(line_of("\xf0\x9f\x91\xa8\xe2\x80\x8d\xe2\x80\x8d\xf0"
				  "\x9f\x92\xbb",
			      false, &hit),
	    1u << HIDDEN_INVISIBLE);
	/* A tag spells out ASCII, after an emoji too. */
	ck_assert_uint_eq(line_of("\xf0\x9f\x8f\xb4\xf3\xa0\x81\xa7", false,
			      &hit),
	    1u << HIDDEN_INVISIBLE);
}
END_TEST

/* A word (letters, digits, underscore) mixing Latin with a script whose
 * letters look Latin, or holding a fullwidth or mathematical look-alike:
 * the first such code point of the word and its byte. */
START_TEST(test_mixed_script_flagged)
{
	static const struct {
		const char *text;
		uint32_t cp;
		size_t col;
	} cases[] = {
		{ "\xd0\xb0"
		  "dmin",
		    0x430, 0 }, /* CYRILLIC SMALL LETTER A */
		{ "adm\xd1\x96n", 0x456, 3 }, /* Cyrillic i */
		{ "if user == \"p\xd0\xb0ypal\":", 0x430, 13 },
		{ "\xd0\x90PI_KEY = 1", 0x410, 0 }, /* Cyrillic A */
		{ "r\xce\xbfot", 0x3bf, 1 }, /* GREEK SMALL LETTER OMICRON */
		{ "ope\xd5\xb8", 0x578, 3 }, /* ARMENIAN SMALL LETTER VO */
		{ "user_\xd0\xb0"
		  "dmin",
		    0x430, 5 },
		{ "v1\xd0\xb0", 0x430, 2 },
		{ "10\xce\xbcs", 0x3bc,
		    2 }, /* a Greek mu, not the micro sign */
		{ "caf\xc3\xa9\xd0\xb0", 0x430, 5 }, /* Latin past ASCII */
		{ "e\xcc\x81\xd0\xb0", 0x430, 3 }, /* a combining acute */
		/* Cyrillic first, Latin a and o in it: the first letter that
		 * is not Latin is named. */
		{ "\xd0\xbf"
		  "a\xd1\x80"
		  "ol",
		    0x43f, 0 },
		{ "\xd0\xbf\xd1\x80\xd0\xb8 \xd0\xb0"
		  "dmin",
		    0x430, 7 }, /* a Russian word before it is its own */
		/* Fullwidth letters, alone or in a word; a fullwidth digit in
		 * a Latin word. */
		{ "\xef\xbd\x81\xef\xbd\x84\xef\xbd\x8d\xef\xbd\x89\xef\xbd"
		  "\x8e",
		    0xff41, 0 },
		{ "role=\xef\xbc\xa1"
		  "dmin",
		    0xff21, 5 },
		{ "v\xef\xbc\x91", 0xff11, 1 },
		{ "\xef\xbc\x91x", 0xff11, 0 },
		/* Mathematical alphanumerics (bold a, U+1D41A). */
		{ "p\xf0\x9d\x90\x9ass", 0x1d41a, 1 },
		{ "\xf0\x9d\x90\x9a", 0x1d41a, 0 },
		/* In a path's name too. */
		{ "repo/\xd0\xb0"
		  "dmin.py",
		    0x430, 5 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hidden_hit hit = { 0 };
		unsigned found = line_of(cases[i].text, false, &hit);

		ck_assert_msg(found == 1u << HIDDEN_MIXED_SCRIPT,
		    "case %zu: classes %#x, want mixed_script", i, found);
		ck_assert_msg(hit.cls == HIDDEN_MIXED_SCRIPT &&
			hit.cp == cases[i].cp && hit.col == cases[i].col,
		    "case %zu: hit %s U+%04X at %zu, want U+%04X at %zu", i,
		    hidden_class_name(hit.cls), (unsigned)hit.cp, hit.col,
		    (unsigned)cases[i].cp, cases[i].col);
	}
}
END_TEST

/* A word wholly in one script, whatever the script, and words of
 * different scripts side by side, are text. */
START_TEST(test_mixed_script_not_flagged)
{
	static const char *const ok[] = {
		/* # Проверка доступа */
		"# \xd0\x9f\xd1\x80\xd0\xbe\xd0\xb2\xd0\xb5\xd1\x80\xd0\xba"
		"\xd0\xb0 \xd0\xb4\xd0\xbe\xd1\x81\xd1\x82\xd1\x83\xd0\xbf"
		"\xd0\xb0",
		"\xce\xbb\xcf\x8c\xce\xb3\xce\xbf\xcf\x82", /* Greek */
		"\xd4\xb2\xd5\xa1\xd6\x80\xd5\xa5\xd6\x82", /* Armenian */
		/* admin админ, user=пользователь, msg("Ошибка") */
		"admin \xd0\xb0\xd0\xb4\xd0\xbc\xd0\xb8\xd0\xbd",
		"user=\xd0\xbf\xd0\xbe\xd0\xbb\xd1\x8c\xd0\xb7\xd0\xbe\xd0\xb2"
		"\xd0\xb0\xd1\x82\xd0\xb5\xd0\xbb\xd1\x8c",
		"msg(\"\xd0\x9e\xd1\x88\xd0\xb8\xd0\xb1\xd0\xba\xd0\xb0\")",
		"a.\xd0\xb0 a-\xd0\xb0 a/\xd0\xb0", /* punctuation between */
		"_\xd0\xbf"
		"1 \xd0\xbf_2", /* digits and underscore have no script */
		"na\xc3\xafve \xc3\x85ngstr\xc3\xb6m", /* Latin past ASCII */
		"\xce\xb1 = alpha",
		"10\xc2\xb5s", /* the micro sign is Latin-1's */
		/* CJK punctuation and digits in their fullwidth forms. */
		"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xef\xbc\x88\xe3\x83\x86"
		"\xe3\x82\xb9\xe3\x83\x88\xef\xbc\x89\xe3\x80\x81\xef\xbc\x9a",
		"\xe7\xac\xac\xef\xbc\x91\xe7\xab\xa0", /* 第１章 */
		"\xef\xbc\x91\xef\xbc\x92\xef\xbc\x93",
		"x \xef\xbc\x9d y", /* a fullwidth '=' is no letter */
	};
	struct hidden_hit hit;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		ck_assert_msg(line_of(ok[i], false, &hit) == 0,
		    "case %zu flagged: %s U+%04X at %zu", i,
		    hidden_class_name(hit.cls), (unsigned)hit.cp, hit.col);
}
END_TEST

START_TEST(test_every_class_of_a_line)
{
	struct hidden_hit hit;
	unsigned found =
	    line_of("a\xe2\x80\x8b\x1b\xe2\x80\xae\xe2\x80\xa8\xff", false,
		&hit);

	ck_assert_uint_eq(found,
	    1u << HIDDEN_INVISIBLE | 1u << HIDDEN_CONTROL | 1u << HIDDEN_BIDI |
		1u << HIDDEN_SEPARATOR | 1u << HIDDEN_INVALID);
	ck_assert_int_eq(hit.cls, HIDDEN_INVISIBLE);
	ck_assert_uint_eq(hit.col, 1);
	ck_assert_str_eq(hidden_class_name(HIDDEN_BIDI), "bidi_control");
	ck_assert_str_eq(hidden_class_name(HIDDEN_SEPARATOR), "line_separator");
	ck_assert_str_eq(hidden_class_name(HIDDEN_INVALID), "invalid_utf8");
	ck_assert_str_eq(hidden_class_name(HIDDEN_MIXED_SCRIPT),
	    "mixed_script");
}
END_TEST

/* The patch of old -> new at "f" (old NULL: added), into out. */
static void
section(struct buf *out, const char *old, const char *new, unsigned mode)
{
	struct patch_file f = {
		.old_path = old != NULL ? "f" : NULL,
		.new_path = "f",
		.old_mode = old != NULL ? mode : 0,
		.new_mode = mode,
		.old_data = (const unsigned char *)old,
		.old_len = old != NULL ? strlen(old) : 0,
		.new_data = (const unsigned char *)new,
		.new_len = strlen(new),
	};

	buf_init(out, 1 << 20);
	ck_assert_int_eq(patch_write_file(out, &f), 0);
}

START_TEST(test_patch_added_lines_only)
{
	/* The old file's line 2 holds a bidi control (a context line, and
	 * the function text of the second hunk's header); its line 9 an
	 * ESC, which the new file removes; the new file adds U+200B at its
	 * line 8 and U+2028 at line 20. */
	static const char old[] = "a\n"
				  "bidi \xe2\x80\xae here\n"
				  "c\nd\ne\nf\ng\nh\n"
				  "esc \x1b[2K\n"
				  "j\nk\nl\nm\nn\no\np\nq\nr\ns\nt\n";
	static const char new[] = "a\n"
				  "bidi \xe2\x80\xae here\n"
				  "c\nd\ne\nf\ng\n"
				  "zero\xe2\x80\x8bwidth\n"
				  "h\n"
				  "j\nk\nl\nm\nn\no\np\nq\nr\ns\n"
				  "line\xe2\x80\xa8sep\n";
	struct hidden_text t;
	struct buf b;

	section(&b, old, new, PATCH_MODE_FILE);
	ck_assert_int_eq(hidden_scan_patch(buf_str(&b), b.len, &t), 0);
	ck_assert_msg(t.lines == 2, "%llu lines in\n%s",
	    (unsigned long long)t.lines, buf_str(&b));
	ck_assert_uint_eq(t.first_line, 8);
	ck_assert_int_eq(t.first.cls, HIDDEN_INVISIBLE);
	ck_assert_uint_eq(t.first.cp, 0x200b);
	ck_assert_uint_eq(t.classes,
	    1u << HIDDEN_INVISIBLE | 1u << HIDDEN_SEPARATOR);
	buf_free(&b);

	/* Removing hidden text is no hidden text. */
	section(&b, old, "a\n", PATCH_MODE_FILE);
	ck_assert_int_eq(hidden_scan_patch(buf_str(&b), b.len, &t), 0);
	ck_assert_uint_eq(t.lines, 0);
	buf_free(&b);

	/* Added, without a newline at its end: the last line counts. */
	section(&b, NULL, "one\ntwo\nthree\x1b]0;title\x07", PATCH_MODE_FILE);
	ck_assert_int_eq(hidden_scan_patch(buf_str(&b), b.len, &t), 0);
	ck_assert_uint_eq(t.lines, 1);
	ck_assert_uint_eq(t.first_line, 3);
	ck_assert_uint_eq(t.first.col, 5);
	buf_free(&b);

	/* A BOM on line 1 of a new file is where it belongs. */
	section(&b, NULL, "\xef\xbb\xbfhello\n", PATCH_MODE_FILE);
	ck_assert_int_eq(hidden_scan_patch(buf_str(&b), b.len, &t), 0);
	ck_assert_uint_eq(t.lines, 0);
	buf_free(&b);

	/* A symlink's target is text a reviewer reads. */
	section(&b, NULL, "../evil\xe2\x80\xaetxt.sh", PATCH_MODE_SYMLINK);
	ck_assert_int_eq(hidden_scan_patch(buf_str(&b), b.len, &t), 0);
	ck_assert_uint_eq(t.lines, 1);
	buf_free(&b);
}
END_TEST

START_TEST(test_patch_binary_not_read)
{
	static const char data[] = "\0\x1b[2K\xe2\x80\xae";
	struct patch_file f = {
		.new_path = "bin",
		.new_mode = PATCH_MODE_FILE,
		.new_data = (const unsigned char *)data,
		.new_len = sizeof(data) - 1,
	};
	struct hidden_text t;
	struct buf b;

	buf_init(&b, 1 << 20);
	ck_assert_int_eq(patch_write_file(&b, &f), 0);
	ck_assert_ptr_nonnull(strstr(buf_str(&b), "GIT binary patch"));
	ck_assert_int_eq(hidden_scan_patch(buf_str(&b), b.len, &t), 0);
	ck_assert_uint_eq(t.lines, 0);
	buf_free(&b);
}
END_TEST

START_TEST(test_patch_malformed)
{
	static const char *const bad[] = {
		"@@ -1 +1 @@\n-a\n", /* cut short */
		"@@ -0,0 +1,2 @@\n+a\n", /* cut short */
		"@@ -1 +x @@\n", /* no number */
		"@@ -1 +1\n-a\n+b\n", /* no closing @@ */
		"@@ -0,0 +1 @@\n+a\n+b\n@@ -0,0 +1 @@\nzz\n", /* no prefix */
		"@@ -0,0 +1 @@\n a\n", /* context past the old side */
		"@@ -0,0 +1 @@\n+a\n+b\n", /* a line past the hunk */
		"-\x1b\n", /* a line outside any hunk */
		"@@ -99999999999999999999 +1 @@\n",
	};
	struct hidden_text t;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(hidden_scan_patch(bad[i], strlen(bad[i]), &t) ==
			-EINVAL,
		    "case %zu read", i);
	/* Before the bad hunk, what was found is kept. */
	static const char kept[] = "@@ -0,0 +1 @@\n+\x1b\n@@ -1 +1";
	ck_assert_int_eq(hidden_scan_patch(kept, sizeof(kept) - 1, &t),
	    -EINVAL);
	ck_assert_uint_eq(t.lines, 1);
	/* Headers and literals are not hunks. */
	static const char heads[] =
	    "diff --git a/\x1b b/\x1b\n"
	    "--- a/\xe2\x80\xae\n"
	    "+++ b/\xe2\x80\xae\n"
	    "GIT binary patch\nliteral 3\nHc$@<O00001\n\n";
	ck_assert_int_eq(hidden_scan_patch(heads, sizeof(heads) - 1, &t), 0);
	ck_assert_uint_eq(t.lines, 0);
}
END_TEST

/* Every patch the writer writes is read whole: random versions of a text
 * file made of lines that look like a patch's own (hunk headers, "+++",
 * "\\ No newline"), empty lines and lines without a newline at the end,
 * each pair written and scanned; and the added lines found are exactly
 * those holding an ESC, numbered as the new version numbers them. */
START_TEST(test_patch_every_section_read)
{
	static const char *const vocab[] = { "a", "b", "@@ -1,2 +1,2 @@",
		"+++ b/x", "--- a/x", "\\ No newline at end of file",
		"diff --git a/x b/x", " lead", "-minus", "+plus", "",
		"GIT binary patch", "esc\x1b[2K", "c" };
	unsigned seed = 12345;

	for (int round = 0; round < 400; round++) {
		char old[2048], new[2048];
		size_t on = 0, nn = 0;
		uint64_t esc_lines = 0, first_esc = 0, line = 0;
		int lines_old, lines_new;

		seed = seed * 1103515245u + 12345u;
		lines_old = (int)(seed >> 16) % 30;
		seed = seed * 1103515245u + 12345u;
		lines_new = (int)(seed >> 16) % 30;
		for (int i = 0; i < lines_old; i++) {
			seed = seed * 1103515245u + 12345u;
			on +=
			    (size_t)snprintf(old + on, sizeof(old) - on, "%s\n",
				vocab[(seed >> 16) % 12]); /* no ESC in old */
		}
		for (int i = 0; i < lines_new; i++) {
			seed = seed * 1103515245u + 12345u;
			const char *w = vocab[(seed >> 16) %
			    (sizeof(vocab) / sizeof(vocab[0]))];
			nn += (size_t)snprintf(new + nn, sizeof(new) - nn,
			    "%s\n", w);
			line++;
			if (strchr(w, 0x1b) != NULL && esc_lines++ == 0)
				first_esc = line;
		}
		/* Now and then no newline at the end of either. */
		if (round % 3 == 1 && on > 0)
			old[--on] = '\0';
		if (round % 4 == 2 && nn > 0)
			new[--nn] = '\0';
		struct patch_file f = {
			.old_path = "f",
			.new_path = "f",
			.old_mode = PATCH_MODE_FILE,
			.new_mode = PATCH_MODE_FILE,
			.old_data = (const unsigned char *)old,
			.old_len = on,
			.new_data = (const unsigned char *)new,
			.new_len = nn,
		};
		struct hidden_text t;
		struct buf b;

		buf_init(&b, 1 << 20);
		ck_assert_int_eq(patch_write_file(&b, &f), 0);
		ck_assert_msg(hidden_scan_patch(buf_str(&b), b.len, &t) == 0,
		    "round %d: the writer's patch not read:\n%s", round,
		    buf_str(&b));
		/* Each new line holding an ESC is added (old has none). */
		ck_assert_msg(t.lines == esc_lines &&
			(esc_lines == 0 || t.first_line == first_esc),
		    "round %d: %llu lines from %llu, want %llu from %llu:\n%s",
		    round, (unsigned long long)t.lines,
		    (unsigned long long)t.first_line,
		    (unsigned long long)esc_lines,
		    (unsigned long long)first_esc, buf_str(&b));
		buf_free(&b);
	}
}
END_TEST

static bool
printable(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

START_TEST(test_policy_flag)
{
	struct policy p;
	struct buf b;
	json_t *roots = json_pack("[s]", "repo"), *f;

	ck_assert_int_eq(policy_init(&p, NULL, roots, 1 << 20), 0);
	section(&b, NULL, "ok\nif x \xe2\x80\xae/* admin */\n\x1b[1A\xff\n",
	    PATCH_MODE_FILE);
	policy_check_text(&p, "repo/a.py", buf_str(&b), b.len);
	buf_free(&b);
	section(&b, NULL, "nothing hidden \xe2\x9c\x85\n", PATCH_MODE_FILE);
	policy_check_text(&p, "repo/b.md", buf_str(&b), b.len);
	buf_free(&b);

	ck_assert_uint_eq(json_array_size(p.flags), 1);
	ck_assert_int_eq(p.verdict, VERDICT_NEEDS_REVIEW);
	f = json_array_get(p.flags, 0);
	ck_assert_str_eq(json_string_value(json_object_get(f, "path")),
	    "repo/a.py");
	ck_assert_str_eq(json_string_value(json_object_get(f, "flag")),
	    "hidden_text");
	ck_assert_str_eq(json_string_value(json_object_get(f, "verdict")),
	    "needs-review");
	ck_assert_int_eq(json_integer_value(json_object_get(f, "line")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(f, "lines")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(f, "char")),
	    "U+202E");
	char *classes = json_dumps(json_object_get(f, "classes"), JSON_COMPACT);
	ck_assert_str_eq(classes,
	    "[\"bidi_control\",\"control\","
	    "\"invalid_utf8\"]");
	free(classes);
	const char *reason = json_string_value(json_object_get(f, "reason"));
	ck_assert_msg(printable(reason), "raw bytes in %s", reason);
	ck_assert_ptr_nonnull(strstr(reason, "line 2"));
	ck_assert_ptr_nonnull(strstr(reason, "bidi control"));
	ck_assert_int_eq(json_integer_value(
			     json_object_get(p.flag_counts, "hidden_text")),
	    1);

	/* An invalid byte is named as a byte. */
	section(&b, NULL, "x\xc0\xaf\n", PATCH_MODE_FILE);
	policy_check_text(&p, "repo/c.txt", buf_str(&b), b.len);
	buf_free(&b);
	f = json_array_get(p.flags, 1);
	ck_assert_str_eq(json_string_value(json_object_get(f, "char")), "0xC0");

	/* Hunks it cannot read: flagged all the same. */
	policy_check_text(&p, "repo/d.txt", "@@ -1 +1 @@\n", 12);
	f = json_array_get(p.flags, 2);
	ck_assert_str_eq(json_string_value(json_object_get(f, "path")),
	    "repo/d.txt");
	ck_assert_str_eq(json_string_value(json_object_get(f, "flag")),
	    "hidden_text");

	/* A look-alike letter, in a line and in a name. */
	section(&b, NULL,
	    "role = \"\xd0\xb0"
	    "dmin\"\n",
	    PATCH_MODE_FILE);
	policy_check_text(&p, "repo/e.py", buf_str(&b), b.len);
	buf_free(&b);
	f = json_array_get(p.flags, 3);
	ck_assert_str_eq(json_string_value(json_object_get(f, "path")),
	    "repo/e.py");
	ck_assert_str_eq(json_string_value(json_object_get(f, "char")),
	    "U+0430");
	classes = json_dumps(json_object_get(f, "classes"), JSON_COMPACT);
	ck_assert_str_eq(classes, "[\"mixed_script\"]");
	free(classes);
	reason = json_string_value(json_object_get(f, "reason"));
	ck_assert_msg(printable(reason) &&
		strstr(reason, "look-alike") != NULL &&
		strstr(reason, "at byte 8") != NULL,
	    "%s", reason);
	policy_check_name(&p,
	    "repo/\xd0\xb0"
	    "dmin.py");
	f = json_array_get(p.flags, 4);
	ck_assert_str_eq(json_string_value(json_object_get(f, "in")), "name");
	ck_assert_str_eq(json_string_value(json_object_get(f, "char")),
	    "U+0430");
	policy_free(&p);
	json_decref(roots);
}
END_TEST

/* The patch writer and the binary-text flag draw the line git draws at
 * one place: a NUL at byte PATCH_BINARY_SCAN - 1 makes a file binary for
 * both, one at PATCH_BINARY_SCAN for neither. */
START_TEST(test_binary_scan_one_rule)
{
	static unsigned char data[PATCH_BINARY_SCAN + 1000];
	static const size_t at[] = { 0, 7999, 8000, PATCH_BINARY_SCAN - 1,
		PATCH_BINARY_SCAN, sizeof(data) - 1 };
	json_t *roots = json_pack("[s]", "repo");

	ck_assert_int_eq(PATCH_BINARY_SCAN, 8000); /* git's FIRST_FEW_BYTES */
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		struct patch_file f = {
			.new_path = "f",
			.new_mode = PATCH_MODE_FILE,
			.new_data = data,
			.new_len = sizeof(data),
		};
		struct policy p;
		struct buf b;

		memset(data, 'x', sizeof(data));
		data[at[i]] = '\0';
		ck_assert_int_eq(policy_init(&p, NULL, roots, 1 << 20), 0);
		buf_init(&b, 1 << 20);
		ck_assert_int_eq(patch_write_file(&b, &f), 0);
		bool binary = at[i] < PATCH_BINARY_SCAN;
		bool written_binary =
		    strstr(buf_str(&b), "GIT binary patch") != NULL;
		policy_check_binary_text(&p, "repo/f", data, sizeof(data));
		bool flagged = json_array_size(p.flags) == 1;

		ck_assert_msg(patch_is_binary(data, sizeof(data)) == binary &&
			written_binary == binary && flagged == binary,
		    "NUL at %zu: is_binary %d, written binary %d, flagged %d, "
		    "want %d",
		    at[i], patch_is_binary(data, sizeof(data)), written_binary,
		    flagged, binary);
		buf_free(&b);
		policy_free(&p);
	}
	json_decref(roots);
}
END_TEST

static Suite *
hidden_suite(void)
{
	Suite *s = suite_create("hidden");
	TCase *tc = tcase_create("hidden");

	tcase_add_test(tc, test_each_class);
	tcase_add_test(tc, test_what_text_needs_is_left_alone);
	tcase_add_test(tc, test_mixed_script_flagged);
	tcase_add_test(tc, test_mixed_script_not_flagged);
	tcase_add_test(tc, test_every_class_of_a_line);
	tcase_add_test(tc, test_patch_added_lines_only);
	tcase_add_test(tc, test_patch_binary_not_read);
	tcase_add_test(tc, test_patch_malformed);
	tcase_add_test(tc, test_patch_every_section_read);
	tcase_add_test(tc, test_policy_flag);
	tcase_add_test(tc, test_binary_scan_one_rule);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(hidden_suite());
}
