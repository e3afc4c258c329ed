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

/* Writes text as a chunked body of pieces of size step (with an
 * extension on every other size line) into out: its length. */
static size_t
chunked(const char *text, size_t step, char *out, size_t cap)
{
	size_t n = 0, len = strlen(text);

	for (size_t off = 0, k = 0; off < len; off += step, k++) {
		size_t m = len - off < step ? len - off : step;
		n += (size_t)snprintf(out + n, cap - n, "%zx%s\r\n", m,
		    k % 2 ? ";ext=1" : "");
		memcpy(out + n, text + off, m);
		n += m;
		n += (size_t)snprintf(out + n, cap - n, "\r\n");
	}
	n += (size_t)snprintf(out + n, cap - n, "0\r\nTrailer: x\r\n\r\n");
	return n;
}

/* De-frames a chunked body (as chunked() writes it): the data. */
static void
unchunk(const char *in, size_t len, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < len;) {
		size_t size = strtoul(in + i, NULL, 16);
		i = (size_t)(strstr(in + i, "\r\n") - in) + 2;
		if (size == 0)
			break;
		memcpy(out + n, in + i, size);
		n += size;
		i += size + 2;
	}
	out[n] = '\0';
}

START_TEST(test_scan_across_chunked_framing)
{
	static const size_t steps[] = { 1, 2, 5, 9, 1000 };
	static const size_t reads[] = { 0, 1, 3, 17 };
	char text[256], body[4096], got_data[4096], want_data[4096];

	snprintf(text, sizeof(text), "{\"echo\": \"Bearer %s\", \"n\": 1}",
	    secret);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		for (size_t k = 0; k < sizeof(reads) / sizeof(reads[0]); k++) {
			size_t len =
			    chunked(text, steps[i], body, sizeof(body));
			struct inject_scanner s;
			struct buf out = BUF_INIT(1 << 20);
			size_t step = reads[k] == 0 ? len : reads[k], n;

			ck_assert_int_eq(inject_scanner_init(&s, secret,
					     strlen(secret)),
			    0);
			inject_scanner_chunked(&s);
			for (size_t off = 0; off < len; off += n) {
				n = len - off < step ? len - off : step;
				ck_assert_int_eq(inject_scanner_feed(&s,
						     body + off, n, &out, NULL),
				    0);
			}
			ck_assert_int_eq(inject_scanner_flush(&s, &out), 0);
			/* The framing as it was, the value's bytes filler. */
			ck_assert_uint_eq(out.len, len);
			unchunk(out.data, out.len, got_data);
			ck_assert_msg(strstr(got_data, secret) == NULL,
			    "chunks of %zu, reads of %zu: %s", steps[i],
			    reads[k], got_data);
			ck_assert_uint_ge(s.found, 1);
			unchunk(body, len, want_data);
			ck_assert_uint_eq(strlen(got_data), strlen(want_data));
			ck_assert_int_eq(strncmp(got_data,
					     "{\"echo\": \"Bearer ", 17),
			    0);
			ck_assert_ptr_nonnull(
			    strstr(got_data, "\", \"n\": 1}"));
			inject_scanner_free(&s);
			buf_free(&out);
		}
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
				  "Accept: application/json\r\n"
				  "Accept-Encoding: gzip, br\r\n\r\n";
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
	/* An answer the scanner can read: no compression asked for. */
	ck_assert_ptr_null(strstr(s, "gzip"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nAccept-Encoding: identity\r\n"));
	buf_free(&out);
	/* Without an injection the head is the job's, as before. */
	t.inject_header = NULL;
	buf_init(&out, HTTP1_HEAD_MAX + 1024);
	ck_assert_int_eq(forward_head(&parser.req, req, &t, &out), 0);
	ck_assert_ptr_nonnull(strstr(buf_str(&out), "crd_job_token_here"));
	buf_free(&out);
}
END_TEST

/* A token in the query goes too: the parameter holding it is dropped,
 * the others kept in order; no query is left when none remains. */
START_TEST(test_forward_drops_a_token_in_the_query)
{
	static const char *const in[] = {
		"GET /r?access_token=crd_job_token_here&page=2 HTTP/1.1\r\n",
		"GET /r?page=2&t=xcrd_glued&per=5 HTTP/1.1\r\n",
		"GET /r?access_token=crd_job_token_here HTTP/1.1\r\n",
		"GET /r?page=2 HTTP/1.1\r\n",
	};
	static const char *const want[] = { "GET /r?page=2 HTTP/1.1\r\n",
		"GET /r?page=2&per=5 HTTP/1.1\r\n", "GET /r HTTP/1.1\r\n",
		"GET /r?page=2 HTTP/1.1\r\n" };
	struct forward_target t = { .host = "api.github.com",
		.port = 443,
		.tunnel = true,
		.inject_header = "X-Api-Key",
		.inject_value = "Key upstream-secret" };

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		char req[512];
		struct http1_parser parser;
		struct buf out = BUF_INIT(HTTP1_HEAD_MAX + 1024);
		size_t used = 0;

		snprintf(req, sizeof(req),
		    "%sHost: api.github.com\r\nAccept: */*\r\n\r\n", in[i]);
		http1_parser_init(&parser, HTTP1_MODE_ORIGIN);
		ck_assert_int_eq(http1_parse(&parser, req, strlen(req), &used),
		    0);
		ck_assert_int_eq(forward_head(&parser.req, req, &t, &out), 0);
		ck_assert_msg(strncmp(buf_str(&out), want[i],
				  strlen(want[i])) == 0,
		    "%s", buf_str(&out));
		ck_assert_ptr_null(strstr(buf_str(&out), "crd_"));
		ck_assert_ptr_nonnull(
		    strstr(buf_str(&out), "\r\nAccept: */*\r\n"));
		buf_free(&out);
	}
}
END_TEST

/* The per-job cache of released values: kept for its window, replaced
 * by a new version, ended by its expiry, forgotten at clear. */
START_TEST(test_cache)
{
	struct inject_cache c;
	const struct inject_cached *e;

	memset(&c, 0, sizeof(c));
	ck_assert_ptr_null(inject_cache_get(&c, "k", 100, 30));
	ck_assert_int_eq(inject_cache_put(&c, "k", 1, "v-one", 5, 100, 0), 0);
	e = inject_cache_get(&c, "k", 129, 30);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->value, "v-one");
	ck_assert_int_eq(e->version, 1);
	ck_assert_ptr_null(inject_cache_get(&c, "k", 130, 30)); /* window */
	ck_assert_ptr_null(inject_cache_get(&c, "k", 100, 0)); /* disabled */
	ck_assert_ptr_null(inject_cache_get(&c, "other", 100, 30));
	ck_assert_int_eq(inject_cache_put(&c, "k", 2, "v-two", 5, 130, 0), 0);
	e = inject_cache_get(&c, "k", 131, 30);
	ck_assert_str_eq(e->value, "v-two");
	ck_assert_int_eq(e->version, 2);
	ck_assert_uint_eq(c.n, 1);
	/* An issuer's credential ends at its expiry, before the window. */
	ck_assert_int_eq(inject_cache_put(&c, "o", 1, "tok", 3, 130, 140), 0);
	ck_assert_ptr_nonnull(inject_cache_get(&c, "o", 139, 30));
	ck_assert_ptr_null(inject_cache_get(&c, "o", 140, 30));
	ck_assert_int_eq(inject_cache_put(&c, "o", 1, "", 0, 130, 0), -EINVAL);
	inject_cache_clear(&c);
	ck_assert_uint_eq(c.n, 0);
	ck_assert_ptr_null(inject_cache_get(&c, "k", 131, 30));
	for (int i = 0; i < INJECT_CACHE_MAX; i++) {
		char name[16];
		snprintf(name, sizeof(name), "s%d", i);
		ck_assert_int_eq(inject_cache_put(&c, name, 1, "x", 1, 1, 0),
		    0);
	}
	ck_assert_int_eq(inject_cache_put(&c, "more", 1, "x", 1, 1, 0),
	    -ENOMEM);
	inject_cache_clear(&c);
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
	tcase_add_test(tc, test_scan_across_chunked_framing);
	tcase_add_test(tc, test_scanner_init_refuses);
	tcase_add_test(tc, test_manifest_inject);
	tcase_add_test(tc, test_forward_swaps_the_token);
	tcase_add_test(tc, test_forward_drops_a_token_in_the_query);
	tcase_add_test(tc, test_cache);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(inject_suite());
}
