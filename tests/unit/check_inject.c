/*
 * Credential injection's pure parts: the header value a rule's format
 * makes (proxy/inject.c), the reflection scanner (the value raw, in hex,
 * percent-encoded and base64 at every offset, in one read or split
 * across reads byte by byte, redacted in place with the length kept;
 * other text left alone), and the manifest's validation of "inject"
 * (common/manifest.c).
 */
#include "forward.h"
#include "inject.h"
#include "manifest.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char secret[] = "sk_live_51Hq/8+zZ=key";

START_TEST(test_format)
{
	char out[64];

	ck_assert_int_eq(inject_format("Bearer {secret}", "abc", 3, out,
			     sizeof(out)),
	    0);
	ck_assert_str_eq(out, "Bearer abc");
	ck_assert_int_eq(inject_format("{secret}", "abc", 3, out, sizeof(out)),
	    0);
	ck_assert_str_eq(out, "abc");
	ck_assert_int_eq(inject_format("token={secret};v=1", "abc", 3, out,
			     sizeof(out)),
	    0);
	ck_assert_str_eq(out, "token=abc;v=1");
	ck_assert_int_eq(inject_format("Bearer {secret}", "abc", 3, out, 10),
	    -EMSGSIZE);
	ck_assert_int_eq(inject_format("Bearer {secret}", "abc", 3, out, 11),
	    0);
	ck_assert_int_eq(inject_format("Bearer", "abc", 3, out, sizeof(out)),
	    -EINVAL);
	ck_assert_int_eq(inject_format("Bearer {secret}", "a\r\nb", 4, out,
			     sizeof(out)),
	    -EINVAL);
}
END_TEST

/* Feeds text through a scanner for secret in pieces of step bytes (0:
 * one piece): the answer, of the same length, and the matches. */
static char *
scan(const char *text, size_t len, size_t step, size_t *ret_found)
{
	struct inject_scanner s;
	struct buf out = BUF_INIT(1 << 20);
	size_t n;

	ck_assert_int_eq(inject_scanner_init(&s, secret, strlen(secret)), 0);
	if (step == 0)
		step = len;
	for (size_t off = 0; off < len; off += n) {
		n = len - off < step ? len - off : step;
		ck_assert_int_eq(inject_scanner_feed(&s, text + off, n, &out,
				     NULL),
		    0);
	}
	ck_assert_int_eq(inject_scanner_flush(&s, &out), 0);
	ck_assert_uint_eq(out.len, len);
	*ret_found = s.found;
	inject_scanner_free(&s);
	return buf_steal(&out, &n);
}

static void
expect_redacted(const char *text, const char *form)
{
	static const size_t steps[] = { 0, 1, 2, 3, 7, 64 };

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		size_t found;
		char *got = scan(text, strlen(text), steps[i], &found);
		ck_assert_msg(strstr(got, form) == NULL,
		    "step %zu: %s still in %s", steps[i], form, got);
		ck_assert_msg(found >= 1, "step %zu: nothing found in %s",
		    steps[i], text);
		/* What is not the value is kept. */
		ck_assert_int_eq(strncmp(got,
				     "HTTP/1.1 200 OK\r\nX-Echo: ", 25),
		    0);
		free(got);
	}
}

START_TEST(test_scan_forms)
{
	char text[1024], hex[128], pct[128], b64[128];
	size_t n = strlen(secret);

	snprintf(text, sizeof(text),
	    "HTTP/1.1 200 OK\r\nX-Echo: Bearer %s\r\n\r\n", secret);
	expect_redacted(text, secret);

	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)secret[i]);
	snprintf(text, sizeof(text), "HTTP/1.1 200 OK\r\nX-Echo: %s\r\n", hex);
	expect_redacted(text, hex);
	for (size_t i = 0; hex[i] != '\0'; i++)
		hex[i] = (char)(hex[i] >= 'a' ? hex[i] - 32 : hex[i]);
	snprintf(text, sizeof(text), "HTTP/1.1 200 OK\r\nX-Echo: %s\r\n", hex);
	expect_redacted(text, hex);

	for (size_t i = 0; i < n; i++)
		snprintf(pct + 3 * i, 4, "%%%02X", (unsigned char)secret[i]);
	snprintf(text, sizeof(text), "HTTP/1.1 200 OK\r\nX-Echo: q=%s&x\r\n",
	    pct);
	expect_redacted(text, pct);
	/* The usual form: only the reserved bytes escaped, lowercase. */
	snprintf(text, sizeof(text),
	    "HTTP/1.1 200 OK\r\nX-Echo: "
	    "q=sk_live_51Hq%%2f8%%2bzZ%%3dkey&x\r\n");
	expect_redacted(text, "sk_live_51Hq%2f8%2bzZ%3dkey");

	/* base64 of the header as echoed, so the value sits at each of the
	 * three offsets. */
	for (size_t k = 0; k < 3; k++) {
		char plain[128];
		int pl = snprintf(plain, sizeof(plain), "%.*sBearer %s", (int)k,
		    "ab", secret);
		int bl = EVP_EncodeBlock((unsigned char *)b64,
		    (const unsigned char *)plain, pl);
		ck_assert_int_gt(bl, 0);
		snprintf(text, sizeof(text),
		    "HTTP/1.1 200 OK\r\nX-Echo: %s\r\n", b64);
		size_t found;
		char *got = scan(text, strlen(text), 1, &found);
		ck_assert_uint_ge(found, 1);
		/* The encoded value's middle is gone. */
		ck_assert_ptr_null(
		    strstr(got, b64 + (pl - (int)n) * 4 / 3 + 4));
		free(got);
	}
}
END_TEST

START_TEST(test_scan_leaves_other_text)
{
	static const char text[] =
	    "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world";
	size_t found;
	char *got = scan(text, strlen(text), 1, &found);

	ck_assert_str_eq(got, text);
	ck_assert_uint_eq(found, 0);
	free(got);
}
END_TEST

START_TEST(test_scanner_init_refuses)
{
	struct inject_scanner s;
	static char big[INJECT_VALUE_MAX + 1];

	ck_assert_int_eq(inject_scanner_init(&s, "", 0), -EINVAL);
	ck_assert_int_eq(inject_scanner_init(&s, big, sizeof(big)), -EINVAL);
	inject_scanner_free(&s);
}
END_TEST

static size_t
problems_of(const char *rule)
{
	char text[2048];
	json_t *m, *problems = json_array(), *warnings = json_array();
	size_t n;

	snprintf(text, sizeof(text),
	    "{\"name\": \"j\", \"command\": [\"/bin/true\"],"
	    " \"capabilities\": [{\"name\": \"repo.read\", \"audience\": "
	    "\"gh\", \"params\": {\"repo\": [\"w\"]}, \"ttl_seconds\": 60,"
	    " \"reason\": \"r\"}], \"egress\": [%s]}",
	    rule);
	m = testutil_json(text, 0);
	manifest_validate(m, NULL, problems, warnings);
	n = 0;
	for (size_t i = 0; i < json_array_size(problems); i++) {
		const char *f = json_string_value(
		    json_object_get(json_array_get(problems, i), "field"));
		n += f != NULL && strncmp(f, "egress[0].inject", 16) == 0;
	}
	char *all = json_dumps(problems, 0);
	ck_assert_msg(json_array_size(problems) == n, "%s: %s", rule, all);
	free(all);
	json_decref(m);
	json_decref(problems);
	json_decref(warnings);
	return n;
}

#define RULE(tail)                                                             \
	"{\"host\": \"api.example.com\", \"methods\": [\"GET\"], "             \
	"\"reason\": \"r\", " tail "}"

START_TEST(test_manifest_inject)
{
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"Authorization\", \"format\": \"Bearer "
			      "{secret}\", \"capability\": \"repo.read\"}")),
	    0);
	/* Passthrough and plain HTTP to the world cannot carry it. */
	ck_assert_uint_eq(problems_of(RULE(
			      "\"tls\": \"passthrough\", \"inject\": "
			      "{\"secret\": \"gh\", \"header\": \"X-Key\", "
			      "\"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(
			      RULE("\"port\": 8080, \"inject\": {\"secret\": "
				   "\"gh\", \"header\": \"X-Key\", "
				   "\"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"port\": 8080, \"allow_cidrs\": "
			      "[\"127.0.0.0/8\"], \"inject\": {\"secret\": "
			      "\"gh\", \"header\": \"X-Key\", "
			      "\"capability\": \"repo.read\"}")),
	    0);
	ck_assert_uint_eq(problems_of(
			      RULE("\"port\": 8080, \"allow_cidrs\": "
				   "[\"10.0.0.0/8\"], \"inject\": {\"secret\": "
				   "\"gh\", \"header\": \"X-Key\", "
				   "\"capability\": \"repo.read\"}")),
	    1);
	/* Headers, formats, the capability, the audience, unknown keys. */
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"Host\", \"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"X-Cordon-Job\", \"capability\": "
			      "\"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"Bad Header\", \"capability\": "
			      "\"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"X-Key\", \"format\": \"{secret}{secret}\", "
			      "\"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"X-Key\", \"format\": \"{other}\", "
			      "\"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"inject\": {\"secret\": \"gh\", \"header\": "
			      "\"X-Key\", \"capability\": \"nope\"}")),
	    1);
	ck_assert_uint_eq(problems_of(RULE(
			      "\"audience\": \"other\", \"inject\": "
			      "{\"secret\": \"gh\", \"header\": \"X-Key\", "
			      "\"capability\": \"repo.read\"}")),
	    1);
	ck_assert_uint_eq(problems_of(
			      RULE("\"inject\": {\"secret\": \"Bad Name\", "
				   "\"header\": \"X-Key\", \"capability\": "
				   "\"repo.read\", \"value\": \"x\"}")),
	    2);
	ck_assert_uint_eq(problems_of(RULE("\"inject\": \"gh\"")), 1);
	ck_assert(manifest_inject_format_ok("Bearer {secret}"));
	ck_assert(!manifest_inject_format_ok("Bearer {secret"));
	ck_assert(!manifest_inject_format_ok("Bearer\n{secret}"));
	ck_assert(manifest_inject_header_ok("Authorization"));
	ck_assert(!manifest_inject_header_ok("content-length"));
}
END_TEST

START_TEST(test_forward_swaps_the_token)
{
	static const char req[] = "GET /repos/acme/widgets HTTP/1.1\r\n"
				  "Host: api.github.com\r\n"
				  "Authorization: Bearer crd_job_token_here\r\n"
				  "x-api-key: job-chosen\r\n"
				  "X-Cordon-Job: job_other\r\n"
				  "X-Other: crd_elsewhere\r\n"
				  "Accept: application/json\r\n\r\n";
	struct http1_parser parser;
	struct forward_target t = { .host = "api.github.com",
		.port = 443,
		.tunnel = true,
		.inject_header = "X-Api-Key",
		.inject_value = "Key upstream-secret" };
	struct buf out = BUF_INIT(HTTP1_HEAD_MAX + 1024);
	size_t used = 0;

	http1_parser_init(&parser, HTTP1_MODE_ORIGIN);
	ck_assert_int_eq(http1_parse(&parser, req, strlen(req), &used), 0);
	ck_assert_int_eq(forward_head(&parser.req, req, &t, &out), 0);
	const char *s = buf_str(&out);
	ck_assert_ptr_nonnull(
	    strstr(s, "\r\nX-Api-Key: Key upstream-secret\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nAccept: application/json\r\n"));
	ck_assert_ptr_null(strstr(s, "crd_"));
	ck_assert_ptr_null(strstr(s, "job-chosen"));
	ck_assert_ptr_null(strstr(s, "X-Cordon"));
	ck_assert_ptr_null(strstr(s, "Authorization"));
	buf_free(&out);
	/* Without an injection the head is the job's, as before. */
	t.inject_header = NULL;
	buf_init(&out, HTTP1_HEAD_MAX + 1024);
	ck_assert_int_eq(forward_head(&parser.req, req, &t, &out), 0);
	ck_assert_ptr_nonnull(strstr(buf_str(&out), "crd_job_token_here"));
	buf_free(&out);
}
END_TEST

static Suite *
inject_suite(void)
{
	Suite *s = suite_create("inject");
	TCase *tc = tcase_create("inject");

	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_scan_forms);
	tcase_add_test(tc, test_scan_leaves_other_text);
	tcase_add_test(tc, test_scanner_init_refuses);
	tcase_add_test(tc, test_manifest_inject);
	tcase_add_test(tc, test_forward_swaps_the_token);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(inject_suite());
}
