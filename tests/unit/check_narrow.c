/*
 * "The narrowest rule that would allow this denial" (common/narrow.c):
 * the rule itself for each shape of denial (a path cut to a prefix, a
 * tunnel, a refused name, a registry, the one address a private_addr
 * refused as allow_cidrs) or none, and the same rule from both places
 * that offer one: the proxy's cordon.local/v1/denials (proxy/denials.c)
 * and cordon egress-report (launcher/report.c), fed the same denial.
 */
#include "decision.h"
#include "denials.h"
#include "narrow.h"
#include "report.h"
#include "testutil.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One denial and the rule wanted (NULL: none). */
static const struct {
	const char *kind, *method, *host, *path, *reason, *detail, *addr;
	int port;
	const char *want;
} cases[] = {
	{ "http", "POST", "API.test", "/v2/items/7?x=1", "no_rule", NULL, NULL,
	    8080,
	    "{\"host\": \"api.test\", \"port\": 8080, \"methods\": [\"POST\"], "
	    "\"paths\": [\"/v2/items/7\"]}" },
	{ "mitm", "GET", "api.test", "/a/b%20c", "path", NULL, NULL, 443,
	    "{\"host\": \"api.test\", \"methods\": [\"GET\"], \"paths\": "
	    "[\"/a/b\"]}" },
	{ "mitm", "GET", "ws.test", "/chat", "upgrade", NULL, NULL, 443,
	    "{\"host\": \"ws.test\", \"methods\": [\"GET\"], \"paths\": "
	    "[\"/chat\"], \"upgrade\": true}" },
	{ "connect", "CONNECT", "pypi.org", NULL, "no_rule", NULL, NULL, 443,
	    "{\"host\": \"pypi.org\", \"methods\": [\"GET\"], \"registry\": "
	    "true}" },
	{ "dns", "CONNECT", "lookup.test", NULL, "no_rule", NULL, NULL, 53,
	    "{\"host\": \"lookup.test\", \"methods\": [\"GET\"]}" },
	{ "direct", "CONNECT", "db.test", NULL, "no_rule", "tcp", NULL, 5432,
	    "{\"host\": \"db.test\", \"port\": 5432, \"methods\": [\"GET\"]}" },
	{ "http", "GET", "db.test", "/x", "private_addr", "private",
	    "10.1.2.3:8080", 8080,
	    "{\"host\": \"db.test\", \"port\": 8080, \"methods\": [\"GET\"], "
	    "\"paths\": [\"/x\"], \"allow_cidrs\": [\"10.1.2.3/32\"]}" },
	{ "connect", "CONNECT", "v6.test", NULL, "private_addr", "private",
	    "[fd00:0::5]:443", 443,
	    "{\"host\": \"v6.test\", \"methods\": [\"GET\"], "
	    "\"allow_cidrs\": [\"fd00::5/128\"]}" },
	/* No address kept: no range to offer. */
	{ "http", "GET", "db.test", "/x", "private_addr", "loopback", NULL, 80,
	    NULL },
	{ "http", "GET", "10.1.2.3", "/x", "no_rule", NULL, NULL, 80, NULL },
	{ "capture", "CONNECT", "1.1.1.1", NULL, "ip_literal", NULL, NULL, 443,
	    NULL },
	{ "http", "GET", "api.test", "/x", "token", "other_job", NULL, 80,
	    NULL },
	{ "http", "PROPFIND", "api.test", "/x", "method", NULL, NULL, 80,
	    NULL },
	{ "mitm", "GET", "api.test", "/v1/ok/..;/admin", "path", "semicolon",
	    NULL, 443, NULL },
	{ "http", "GET", "api.test", "/x", "tls", "rule_wants_tls", NULL, 80,
	    NULL },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* The wanted rule with the reason every offered rule carries. */
static json_t *
wanted(size_t i)
{
	json_t *w = testutil_json(cases[i].want, 0);

	json_object_set_new(w, "reason",
	    json_string("say why the job must reach this"));
	return w;
}

START_TEST(each_denial_gets_its_narrowest_rule_or_why_not)
{
	for (size_t i = 0; i < NCASES; i++) {
		struct narrow_denial d = { .kind = cases[i].kind,
			.method = cases[i].method,
			.host = cases[i].host,
			.path = cases[i].path,
			.reason = cases[i].reason,
			.detail = cases[i].detail,
			.addr = cases[i].addr,
			.port = cases[i].port };
		struct narrow_rule rule;
		const char *fix = NULL;
		int r = narrow_rule(&d, &rule, &fix);

		ck_assert_msg(fix != NULL && strlen(fix) > 10, "%zu", i);
		if (cases[i].want == NULL) {
			ck_assert_msg(r < 0, "%zu %s: a rule", i,
			    cases[i].host);
			continue;
		}
		ck_assert_msg(r == 0, "%zu %s: %s", i, cases[i].host, fix);
		json_t *got = narrow_rule_json(&rule), *w = wanted(i);
		char *text = json_dumps(got, JSON_SORT_KEYS);
		ck_assert_msg(json_equal(got, w), "%zu: %s", i, text);
		free(text);
		json_decref(got);
		json_decref(w);
	}
}
END_TEST

/* The report's group for host (the first one), or NULL. */
static json_t *
group_of(json_t *doc, const char *host)
{
	json_t *g;
	size_t i;

	json_array_foreach(json_object_get(doc, "denials"), i, g)
	{
		if (strcmp(json_string_value(json_object_get(g, "host")),
			host) == 0)
			return g;
	}
	return NULL;
}

START_TEST(the_endpoint_and_the_report_offer_the_same_rule)
{
	for (size_t i = 0; i < NCASES; i++) {
		struct decision d = { .job = "job_a",
			.kind = cases[i].kind,
			.method = cases[i].method,
			.host = cases[i].host,
			.port = (uint16_t)cases[i].port,
			.path = cases[i].path,
			.rule = -1,
			.reason = cases[i].reason,
			.detail = cases[i].detail,
			.addr = cases[i].addr != NULL ? cases[i].addr : "" };
		struct denials ring = { 0 };

		/* The endpoint's. */
		ck_assert_int_eq(denials_add(&ring, &d), 0);
		json_t *j = denials_json(&ring, "job_a");
		json_t *at_proxy =
		    json_object_get(json_array_get(json_object_get(j,
						       "denials"),
					0),
			"rule");

		/* The report's, from the same line in the decision log. */
		struct report *r = report_new(INT64_MIN, INT64_MIN);
		json_t *m =
		    testutil_json("{\"name\": \"m\", \"description\": "
				  "\"d\", \"command\": [\"/bin/true\"], "
				  "\"egress\": []}",
			0);
		ck_assert_int_eq(report_manifest(r, "m", 1, m), 0);
		ck_assert_int_eq(report_job(r, "job_a", "m",
				     json_object_get(m, "egress")),
		    0);
		json_t *line = json_pack("{s:s, s:s, s:s, s:s?, s:s, s:s?, "
					 "s:i, s:s, s:s, s:s?, s:s, s:n}",
		    "ts", "2026-12-01T10:00:00.000Z", "job", "job_a", "kind",
		    cases[i].kind, "method", cases[i].method, "host",
		    cases[i].host, "path", cases[i].path, "port", cases[i].port,
		    "decision", "deny", "reason", cases[i].reason, "detail",
		    cases[i].detail, "addr",
		    cases[i].addr != NULL ? cases[i].addr : "", "rule");
		ck_assert_int_eq(report_decision(r, line), 0);
		json_decref(line);
		json_t *doc = report_document(r);
		json_t *g = group_of(doc, cases[i].host);
		ck_assert_ptr_nonnull(g);
		json_t *at_report = json_object_get(g, "rule");

		char *a =
		    json_dumps(at_proxy, JSON_ENCODE_ANY | JSON_SORT_KEYS);
		char *b =
		    json_dumps(at_report, JSON_ENCODE_ANY | JSON_SORT_KEYS);
		ck_assert_msg(at_report != NULL &&
			json_equal(at_proxy, at_report),
		    "%zu %s: the endpoint offers %s, the report %s", i,
		    cases[i].host, a, b);
		free(a);
		free(b);
		json_decref(doc);
		json_decref(m);
		report_free(r);
		json_decref(j);
		denials_clear(&ring);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("narrow");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, each_denial_gets_its_narrowest_rule_or_why_not);
	tcase_add_test(tc, the_endpoint_and_the_report_offer_the_same_rule);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
