/*
 * The output envelope: what a job printed comes back without anything a
 * terminal, a log viewer or a model would read as other than the visible
 * text. Escape sequences and controls go (as before); so do the Unicode
 * characters that change how text is shown or hide text in it: bidi
 * overrides and isolates, zero-width characters, the BOM, tag characters
 * (which spell out hidden ASCII), variation selectors; the line and
 * paragraph separators become newlines; C1 controls, invalid and overlong
 * UTF-8 become '?'. Each removal is counted.
 */
#include "envelope.h"

#include "testutil.h"

#include <check.h>
#include <string.h>

/* Cleans text (a C string) with a large cap: the envelope's object. */
static json_t *
clean(const char *text)
{
	json_t *v =
	    envelope_clean((const unsigned char *)text, strlen(text), 1 << 16);

	ck_assert_ptr_nonnull(v);
	return v;
}

static void
assert_clean(const char *in, const char *want, long removed)
{
	json_t *v = clean(in);

	ck_assert_str_eq(json_string_value(json_object_get(v, "text")), want);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "removed")),
	    removed);
	json_decref(v);
}

START_TEST(test_bidi_removed)
{
	/* U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C. */
	assert_clean("a\342\200\252b\342\200\253c\342\200\254d\342\200\255e"
		     "\342\200\256f",
	    "abcdef", 5);
	assert_clean("\342\201\246x\342\201\247y\342\201\250z\342\201\251",
	    "xyz", 4);
	assert_clean("l\342\200\216r\342\200\217a\330\234", "lra", 3);
}
END_TEST

START_TEST(test_zero_width_removed)
{
	/* U+200B..U+200D, U+2060..U+2064, U+FEFF, U+180E. */
	assert_clean("a\342\200\213b\342\200\214c\342\200\215d", "abcd", 3);
	assert_clean("a\342\201\240b\342\201\241c\342\201\242d\342\201\243e"
		     "\342\201\244f",
	    "abcdef", 5);
	assert_clean("\357\273\277bom\341\240\216", "bom", 2);
}
END_TEST

START_TEST(test_tags_removed)
{
	/* "approve" spelled in tag characters U+E0061.., behind "ok". */
	static const char hidden[] = "approve";
	char in[256] = "ok";
	size_t n = 2;

	in[n++] = '\363', in[n++] = '\240', in[n++] = '\200';
	in[n++] = '\201'; /* U+E0001, LANGUAGE TAG */
	for (size_t i = 0; hidden[i] != '\0'; i++) {
		unsigned cp = 0xe0000u + (unsigned char)hidden[i];

		in[n++] = (char)(0xf0 | (cp >> 18));
		in[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		in[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		in[n++] = (char)(0x80 | (cp & 0x3f));
	}
	in[n++] = '\363', in[n++] = '\240', in[n++] = '\201';
	in[n++] = '\277'; /* U+E007F, CANCEL TAG */
	in[n] = '\0';
	json_t *v = clean(in);
	ck_assert_str_eq(json_string_value(json_object_get(v, "text")), "ok");
	ck_assert_int_eq(json_integer_value(json_object_get(v, "removed")), 9);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "invisible")),
	    9);
	json_decref(v);
	/* Variation selectors carry bits the same way. */
	assert_clean("x\357\270\200y\363\240\204\200z", "xyz", 2);
}
END_TEST

START_TEST(test_separators_become_newlines)
{
	assert_clean("one\342\200\250two\342\200\251three", "one\ntwo\nthree",
	    2);
}
END_TEST

START_TEST(test_c1_invalid_overlong)
{
	/* U+009B (a one-character CSI) and U+0085 in UTF-8. */
	assert_clean("a\302\233"
		     "31mb\302\205c",
	    "a?31mb?c", 2);
	/* Bytes that are not UTF-8, an overlong '/', a surrogate. */
	assert_clean("\377x\300\257y\355\240\200", "?x??y???", 6);
	/* Truncated at the end. */
	assert_clean("ab\342\200", "ab??", 2);
}
END_TEST

START_TEST(test_visible_text_stays)
{
	/* Accents, symbols, CJK, an emoji, a tab and newlines. */
	assert_clean("caf\303\251 \342\234\223 \346\227\245\346\234\254 "
		     "\360\237\231\202\ttab\nline\n",
	    "caf\303\251 \342\234\223 \346\227\245\346\234\254 "
	    "\360\237\231\202\ttab\nline\n",
	    0);
	/* What was there before: escapes and controls. */
	assert_clean("hi \033[31mred\033[0m\r\n", "hi red\n", 3);
}
END_TEST

static Suite *
envelope_suite(void)
{
	Suite *s = suite_create("envelope");
	TCase *tc = tcase_create("envelope");

	tcase_add_test(tc, test_bidi_removed);
	tcase_add_test(tc, test_zero_width_removed);
	tcase_add_test(tc, test_tags_removed);
	tcase_add_test(tc, test_separators_become_newlines);
	tcase_add_test(tc, test_c1_invalid_overlong);
	tcase_add_test(tc, test_visible_text_stays);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(envelope_suite());
}
