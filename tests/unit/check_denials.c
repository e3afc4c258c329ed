/*
 * A job's ring of recent denials (proxy/denials.c): what it keeps and
 * forgets, what it never holds (a token, a query, a byte that is not
 * ASCII), the rule it offers for each denial or why none can allow it,
 * and the proxy's own answers for cordon.local.
 */
#include "denials.h"
#include "manifest.h"
#include "testutil.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct decision
denied(const char *kind, const char *method, const char *host, uint16_t port,
    const char *path, const char *reason, const char *detail)
{
	struct decision d = { .job = "job_a",
		.kind = kind,
		.method = method,
		.host = host,
		.port = port,
		.path = path,
		.rule = -1,
		.allow = false,
		.reason = reason,
		.detail = detail };

	return d;
}

/* The first (newest) denial of ring as JSON, and its rule. */
static json_t *
newest(const struct denials *ring)
{
	json_t *j = denials_json(ring, "job_a");
	json_t *e =
	    json_incref(json_array_get(json_object_get(j, "denials"), 0));

	ck_assert_ptr_nonnull(e);
	json_decref(j);
	return e;
}

START_TEST(the_ring_keeps_the_last_denials_newest_first)
{
	struct denials ring = { 0 };
	char host[64];

	for (int i = 0; i < DENIALS_MAX + 10; i++) {
		snprintf(host, sizeof(host), "h%d.example", i);
		struct decision d =
		    denied("http", "GET", host, 80, "/x", "no_rule", NULL);
		ck_assert_int_eq(denials_add(&ring, &d), 0);
	}
	json_t *j = denials_json(&ring, "job_a");
	json_t *list = json_object_get(j, "denials");
	ck_assert_int_eq(json_array_size(list), DENIALS_MAX);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "kept")),
	    DENIALS_MAX);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "total")),
	    DENIALS_MAX + 10);
	ck_assert_str_eq(json_string_value(json_object_get(j, "job")), "job_a");
	snprintf(host, sizeof(host), "h%d.example", DENIALS_MAX + 9);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(list, 0), "host")),
	    host);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list,
							       DENIALS_MAX - 1),
			     "host")),
	    "h10.example");
	json_decref(j);
	denials_clear(&ring);
	ck_assert_ptr_null(ring.ring);
	j = denials_json(&ring, "job_a");
	ck_assert_int_eq(json_array_size(json_object_get(j, "denials")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "total")), 0);
	json_decref(j);
}
END_TEST

START_TEST(allows_and_upstream_errors_are_no_denials)
{
	struct denials ring = { 0 };
	struct decision d =
	    denied("http", "GET", "api.test", 80, "/ok", NULL, NULL);

	d.allow = true;
	ck_assert_int_eq(denials_add(&ring, &d), 0);
	d.allow = false;
	d.error = true;
	d.detail = "connect_failed";
	ck_assert_int_eq(denials_add(&ring, &d), 0);
	ck_assert_int_eq(ring.n, 0);
	ck_assert_ptr_null(ring.ring);
}
END_TEST

START_TEST(it_holds_no_token_no_query_and_only_ascii)
{
	struct denials ring = { 0 };
	struct decision d = denied("http", "GET", "api.test", 80,
	    "/a/crd_0123456789abcdefghijABCDEFGHIJ0123456789/\x01\xc3\xa9"
	    "?secret=crd_0123456789abcdefghijABCDEFGHIJ0123456789",
	    "no_rule", NULL);

	ck_assert_int_eq(denials_add(&ring, &d), 0);
	json_t *j = denials_json(&ring, "job_a");
	char *text = json_dumps(j, JSON_COMPACT);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "crd_0123") == NULL, "%s", text);
	ck_assert_msg(strstr(text, "secret") == NULL, "%s", text);
	json_t *e = json_array_get(json_object_get(j, "denials"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "path")),
	    "/a/crd_****************************************/???");
	free(text);
	json_decref(j);
	denials_clear(&ring);
}
END_TEST

START_TEST(the_proxys_own_name_in_every_spelling)
{
	ck_assert(denials_is_local("cordon.local", 12));
	ck_assert(denials_is_local("CORDON.Local", 12));
	ck_assert(denials_is_local("cordon.local.", 13));
	ck_assert(!denials_is_local("cordon.local..", 14));
	ck_assert(!denials_is_local("xcordon.local", 13));
	ck_assert(!denials_is_local("cordon.locals", 13));
	ck_assert(!denials_is_local("cordon.loca", 11));
	ck_assert(!denials_is_local("a.cordon.local", 14));
}
END_TEST

START_TEST(the_rule_offered_is_the_narrowest)
{
	struct denials ring = { 0 };
	struct decision d = denied("http", "POST", "API.test", 8080,
	    "/v2/items/7?x=1", "no_rule", NULL);

	ck_assert_int_eq(denials_add(&ring, &d), 0);
	json_t *e = newest(&ring);
	json_t *want = testutil_json(
	    "{\"host\": \"api.test\", \"port\": 8080, \"methods\": [\"POST\"],"
	    " \"paths\": [\"/v2/items/7\"], \"reason\": \"say why the job "
	    "must reach this\"}",
	    0);
	ck_assert_msg(json_equal(json_object_get(e, "rule"), want), "%s",
	    json_dumps(e, 0));
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(e, "fix")), "add"));
	json_decref(want);
	json_decref(e);

	/* A CONNECT shows no method or path; on 443 the port is the
	 * default; a refused name (name:53) is a rule for the name. */
	d = denied("connect", "CONNECT", "secret.evil.example", 443, NULL,
	    "no_rule", NULL);
	ck_assert_int_eq(denials_add(&ring, &d), 0);
	e = newest(&ring);
	want =
	    testutil_json("{\"host\": \"secret.evil.example\", \"methods\": "
			  "[\"GET\"],"
			  " \"reason\": \"say why the job must reach this\"}",
		0);
	ck_assert_msg(json_equal(json_object_get(e, "rule"), want), "%s",
	    json_dumps(e, 0));
	json_decref(e);
	d = denied("dns", "CONNECT", "secret.evil.example", 53, NULL, "no_rule",
	    NULL);
	ck_assert_int_eq(denials_add(&ring, &d), 0);
	e = newest(&ring);
	ck_assert(json_equal(json_object_get(e, "rule"), want));
	json_decref(want);
	json_decref(e);

	d = denied("mitm", "GET", "ws.test", 443, "/chat", "upgrade", NULL);
	ck_assert_int_eq(denials_add(&ring, &d), 0);
	e = newest(&ring);
	ck_assert(json_is_true(
	    json_object_get(json_object_get(e, "rule"), "upgrade")));
	json_decref(e);
	denials_clear(&ring);
}
END_TEST

START_TEST(what_no_rule_can_allow_says_why)
{
	static const struct {
		const char *kind, *host, *path, *reason, *detail;
	} cases[] = {
		{ "capture", "1.1.1.1", NULL, "ip_literal", NULL },
		{ "http", "api.test", "/x", "private_addr", "loopback" },
		{ "http", "api.test", "/a/%2e%2e/b", "path", "encoded_dot" },
		{ "http", "api.test", "/x", "token", "other_job" },
		{ "http", "api.test", "/x", "malformed", "cl_and_te" },
		{ "http", "api.test", "/x", "tls", "rule_wants_tls" },
		{ "http", "broker.cordon", "/v1/jobs", "broker_path", NULL },
		{ "http", "api.test", "/x", "feed_unavailable", NULL },
	};
	struct denials ring = { 0 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct decision d = denied(cases[i].kind, "GET", cases[i].host,
		    443, cases[i].path, cases[i].reason, cases[i].detail);
		ck_assert_int_eq(denials_add(&ring, &d), 0);
		json_t *e = newest(&ring);
		ck_assert_msg(json_is_null(json_object_get(e, "rule")),
		    "%s: %s", cases[i].reason, json_dumps(e, 0));
		ck_assert_msg(strlen(json_string_value(
				  json_object_get(e, "fix"))) > 10,
		    "%s", cases[i].reason);
		json_decref(e);
	}
	denials_clear(&ring);
}
END_TEST

/* The status of an answer, and its body parsed. */
static json_t *
answered(const char *method, const char *path, bool connect, int *status)
{
	struct denials ring = { 0 };
	struct buf out = BUF_INIT(1 << 20);
	struct decision d =
	    denied("http", "GET", "evil.example", 80, "/x", "no_rule", NULL);

	ck_assert_int_eq(denials_add(&ring, &d), 0);
	ck_assert_int_eq(denials_answer(&ring, "job_a", method, path, connect,
			     &out),
	    0);
	ck_assert_int_eq(sscanf(buf_str(&out), "HTTP/1.1 %d", status), 1);
	ck_assert_ptr_nonnull(strstr(buf_str(&out), "Connection: close\r\n"));
	json_t *j = json_loads(strstr(buf_str(&out), "\r\n\r\n") + 4, 0, NULL);
	ck_assert_ptr_nonnull(j);
	buf_free(&out);
	denials_clear(&ring);
	return j;
}

START_TEST(the_proxy_answers_for_cordon_local)
{
	int status = 0;
	json_t *j = answered("GET", "/v1/denials", false, &status);

	ck_assert_int_eq(status, 200);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(json_object_get(j,
								"denials"),
						 0),
				 "host")),
	    "evil.example");
	json_decref(j);
	j = answered("POST", "/v1/denials", false, &status);
	ck_assert_int_eq(status, 405);
	json_decref(j);
	j = answered("GET", "/v1/other", false, &status);
	ck_assert_int_eq(status, 404);
	ck_assert_ptr_null(json_object_get(j, "denials"));
	json_decref(j);
	j = answered("CONNECT", "", true, &status);
	ck_assert_int_eq(status, 403);
	ck_assert_ptr_null(json_object_get(j, "denials"));
	json_decref(j);
}
END_TEST

/* Every rule offered is one the broker takes as it is: put into a
 * manifest, it passes manifest_validate (a registry's says "registry"). */
START_TEST(every_rule_offered_passes_the_brokers_check)
{
	static const struct {
		const char *kind, *method, *host, *path, *reason;
		uint16_t port;
	} cases[] = {
		{ "http", "GET", "api.test", "/v2/items/7", "no_rule", 8080 },
		{ "mitm", "POST", "api.test", "/", "method", 443 },
		{ "mitm", "GET", "api.test", "/a/b%20c/caf%C3%A9", "path",
		    443 },
		{ "connect", "CONNECT", "pypi.org", NULL, "no_rule", 443 },
		{ "dns", "CONNECT", "registry.npmjs.org", NULL, "no_rule", 53 },
		{ "capture", "CONNECT", "files.example", NULL, "no_rule",
		    8443 },
		{ "mitm", "GET", "ws.test", "/chat", "upgrade", 443 },
	};
	struct denials ring = { 0 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct decision d =
		    denied(cases[i].kind, cases[i].method, cases[i].host,
			cases[i].port, cases[i].path, cases[i].reason, NULL);
		ck_assert_int_eq(denials_add(&ring, &d), 0);
		json_t *e = newest(&ring);
		json_t *rule = json_object_get(e, "rule");
		ck_assert_msg(json_is_object(rule), "%s: %s", cases[i].host,
		    json_dumps(e, 0));
		json_t *m = json_pack("{s:s, s:[s], s:[O]}", "name", "asked",
		    "command", "/bin/true", "egress", rule);
		json_t *problems = json_array(), *warnings = json_array();
		ck_assert_msg(manifest_validate(m, "asked", problems, warnings),
		    "%s: %s", json_dumps(rule, 0), json_dumps(problems, 0));
		json_decref(problems);
		json_decref(warnings);
		json_decref(m);
		json_decref(e);
	}
	denials_clear(&ring);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("denials");
	TCase *tc = tcase_create("denials");

	tcase_add_test(tc, the_ring_keeps_the_last_denials_newest_first);
	tcase_add_test(tc, allows_and_upstream_errors_are_no_denials);
	tcase_add_test(tc, it_holds_no_token_no_query_and_only_ascii);
	tcase_add_test(tc, the_proxys_own_name_in_every_spelling);
	tcase_add_test(tc, the_rule_offered_is_the_narrowest);
	tcase_add_test(tc, what_no_rule_can_allow_says_why);
	tcase_add_test(tc, every_rule_offered_passes_the_brokers_check);
	tcase_add_test(tc, the_proxy_answers_for_cordon_local);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
