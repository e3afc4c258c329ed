/*
 * The hostile review's second pass at the method override judge
 * (proxy/override.c, and the head it reads the Content-Type from): bodies
 * a framework reads _method from that the judge read otherwise. Rack
 * reads a body whose media type is empty (";charset=utf-8") as a form;
 * Laravel takes a body as JSON when its whole Content-Type holds "/json"
 * or "+json", parameters too; PHP cuts a parameter's name at a NUL
 * ("_method%00x" is _method); busboy (multer) reads RFC 2231's name*=;
 * body-parser decodes a JSON body in UTF-16 (its charset utf-16); a head
 * with two Content-Types is read by nginx by its first and by the judge
 * by its last. Each case printed what the judge missed on the tree before
 * the fix.
 */
#include "http1.h"
#include "override.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(a_type_a_framework_reads_as_a_form_or_json_is_judged)
{
	static const struct {
		const char *ct;
		enum override_kind kind;
	} cases[] = {
		/* Rack: an empty media type is a form. */
		{ ";charset=utf-8", OVERRIDE_FORM },
		{ " ; x=1", OVERRIDE_FORM },
		{ ",text/plain", OVERRIDE_FORM },
		/* Laravel's isJson: "/json" or "+json" anywhere. */
		{ "text/plain; a=/json", OVERRIDE_JSON },
		{ "text/plain; profile=\"x+json\"", OVERRIDE_JSON },
		/* Still nothing to judge. */
		{ "text/plain", OVERRIDE_NONE },
		{ "application/octet-stream; x=json", OVERRIDE_NONE },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(override_kind_of(cases[i].ct,
				  strlen(cases[i].ct)) == cases[i].kind,
		    "%s: kind %d, want %d", cases[i].ct,
		    (int)override_kind_of(cases[i].ct, strlen(cases[i].ct)),
		    (int)cases[i].kind);
}
END_TEST

START_TEST(a_name_php_cuts_at_a_nul_is_found)
{
	static const char *const yes[] = { "_method%00x=DELETE",
		"a=1&_method%00=PUT", "%5Fmethod%00%00=x" };
	static const char mp[] =
	    "--b\r\nContent-Disposition: form-data; name=\"_method%00\"\r\n";

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ck_assert_msg(override_in_form(yes[i], strlen(yes[i])),
		    "%s: not found", yes[i]);
	ck_assert_msg(override_in_multipart(mp, strlen(mp)), "%s: not found",
	    mp);
	ck_assert_msg(override_in_json("{\"_method\\u0000\":1}", 19),
	    "json \\u0000: not found");
	ck_assert(!override_in_form("x%00_method=1", 13));
}
END_TEST

START_TEST(a_multipart_name_in_rfc2231_is_found)
{
	static const char *const yes[] = {
		"--b\r\nContent-Disposition: form-data; "
		"name*=UTF-8''%5Fmethod\r\n",
		"--b\r\nContent-Disposition: form-data; "
		"name*=utf-8'en'_method\r\n",
		"--b\r\nContent-Disposition: form-data; "
		"name*=\"UTF-8''_METHOD\"\r\n",
	};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ck_assert_msg(override_in_multipart(yes[i], strlen(yes[i])),
		    "%s: not found", yes[i]);
	static const char no[] = "--b\r\nContent-Disposition: form-data; "
				 "name*=UTF-8''_methods\r\n";
	ck_assert(!override_in_multipart(no, sizeof(no) - 1));
}
END_TEST

START_TEST(a_json_body_in_utf16_is_not_passed)
{
	/* {"_method":"DELETE"} in UTF-16LE with its BOM, in UTF-16BE
	 * without, and UTF-32LE: a JSON text in UTF-8 holds no NUL. */
	char le[64], be[64], u32[128];
	static const char text[] = "{\"_method\":\"DELETE\"}";
	size_t n = strlen(text);

	le[0] = (char)0xff;
	le[1] = (char)0xfe;
	for (size_t i = 0; i < n; i++) {
		le[2 + 2 * i] = text[i];
		le[3 + 2 * i] = 0;
		be[2 * i] = 0;
		be[2 * i + 1] = text[i];
		memset(u32 + 4 * i, 0, 4);
		u32[4 * i] = text[i];
	}
	ck_assert_msg(override_in_json(le, 2 + 2 * n), "utf-16le: passed");
	ck_assert_msg(override_in_json(be, 2 * n), "utf-16be: passed");
	ck_assert_msg(override_in_json(u32, 4 * n), "utf-32le: passed");
	/* A BOM before UTF-8 is read (Python's json takes it). */
	static const char bom_yes[] = "\xef\xbb\xbf{\"_method\":1}";
	static const char bom_no[] = "\xef\xbb\xbf{\"a\":1}";
	ck_assert(override_in_json(bom_yes, sizeof(bom_yes) - 1));
	ck_assert(!override_in_json(bom_no, sizeof(bom_no) - 1));
}
END_TEST

START_TEST(a_charset_not_ascii_or_both_readers_are_judged)
{
	/* body-parser decodes utf-7 (iconv-lite): {+ACI-+AF8-method+ACI-:1}
	 * is {"_method":1}. */
	static const char u7[] = "{+ACI-+AF8-method+ACI-:+ACI-DELETE+ACI-}";
	static const char js[] = "{\"_method\":\"DELETE\"}";
	const char *ct = "application/json; charset=utf-7";
	enum override_kind k = override_kind_of(ct, strlen(ct));

	ck_assert_msg(override_in_body(k, u7, sizeof(u7) - 1),
	    "%s: utf-7 passed (kind %d)", ct, (int)k);
	ct = "application/json; charset=\"UTF-8\"";
	k = override_kind_of(ct, strlen(ct));
	ck_assert(!override_in_body(k, u7, sizeof(u7) - 1));
	ck_assert(override_in_body(k, js, sizeof(js) - 1));
	/* Rack reads a form, Laravel JSON: both readers. */
	ct = "application/x-www-form-urlencoded; a=/json";
	k = override_kind_of(ct, strlen(ct));
	ck_assert_msg(override_in_body(k, js, sizeof(js) - 1),
	    "%s: the JSON body passed (kind %d)", ct, (int)k);
	ck_assert(override_in_body(k, "_method=PUT", 11));
	ck_assert(!override_in_body(k, "a=1", 3));
}
END_TEST

START_TEST(a_head_with_two_content_types_is_refused)
{
	static const char req[] =
	    "POST http://api.test/x HTTP/1.1\r\nHost: api.test\r\n"
	    "Content-Type: application/x-www-form-urlencoded\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 14\r\n\r\n";
	struct http1_parser p;
	size_t used = 0;

	http1_parser_init(&p, HTTP1_MODE_PROXY);
	int r = http1_parse(&p, req, strlen(req), &used);
	ck_assert_msg(r == -EBADMSG, "two Content-Types: parsed (%d, %s)", r,
	    p.reason != NULL ? p.reason : "no reason");
	ck_assert_str_eq(p.reason, "duplicate_ct");
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("override");
	TCase *tc = tcase_create("override");

	tcase_add_test(tc,
	    a_type_a_framework_reads_as_a_form_or_json_is_judged);
	tcase_add_test(tc, a_name_php_cuts_at_a_nul_is_found);
	tcase_add_test(tc, a_multipart_name_in_rfc2231_is_found);
	tcase_add_test(tc, a_json_body_in_utf16_is_not_passed);
	tcase_add_test(tc, a_charset_not_ascii_or_both_readers_are_judged);
	tcase_add_test(tc, a_head_with_two_content_types_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
