/*
 * The verdict on a request head (proxy/verdict.c), as a job meets it: each
 * refusal with the reason and detail its decision line carries, in the
 * order docs/egress.md gives (the first that applies wins), and the
 * broker's word on a token read the one way.
 */
#include "testutil.h"
#include "verdict.h"

#include <check.h>
#include <string.h>

static struct egress_rules rules;
static const struct verdict_state open_job = { .feed_ok = true };

static void
setup(void)
{
	char err[256] = "";
	json_t *v = testutil_json(
	    "[{\"host\": \"api.test\", \"port\": 80, \"tls\": \"none\","
	    "  \"methods\": [\"GET\", \"POST\"], \"paths\": [\"/ok/\"],"
	    "  \"audience\": \"api\"},"
	    " {\"host\": \"tls.test\", \"port\": 443, \"methods\": [\"GET\"],"
	    "  \"paths\": [\"/ok/\"], \"upgrade\": true},"
	    " {\"host\": \"*.wild.test\", \"port\": 443, \"tls\": "
	    "  \"passthrough\", \"methods\": [\"POST\"]}]",
	    0);

	ck_assert_msg(egress_rules_load(v, &rules, err, sizeof(err)) == 0, "%s",
	    err);
	json_decref(v);
}

static void
teardown(void)
{
	egress_rules_free(&rules);
}

/* A plain-HTTP GET of path to host:port. */
static struct verdict_request
get(const char *host, uint16_t port, const char *path)
{
	return (struct verdict_request){ .method = "GET",
		.host = host,
		.port = port,
		.path = path };
}

static void
assert_refused(const struct verdict_request *rq, const struct verdict_state *st,
    const char *reason, const char *detail)
{
	struct verdict v;

	verdict_head(rq, &rules, st, &v);
	ck_assert_ptr_nonnull(v.reason);
	ck_assert_str_eq(v.reason, reason);
	if (detail == NULL)
		ck_assert_ptr_null(v.detail);
	else {
		ck_assert_ptr_nonnull(v.detail);
		ck_assert_str_eq(v.detail, detail);
	}
}

START_TEST(an_allowed_request_names_its_rule_and_host)
{
	struct verdict_request rq = get("API.Test.", 80, "/ok/x");
	struct verdict v;

	verdict_head(&rq, &rules, &open_job, &v);
	ck_assert_ptr_null(v.reason);
	ck_assert_int_eq(v.rule, 0);
	ck_assert_str_eq(v.host, "api.test");
	ck_assert(!v.broker_route);
	ck_assert(!v.upgrade_ok);
}
END_TEST

START_TEST(the_feed_and_the_job_come_first)
{
	struct verdict_state silent = { .feed_ok = false, .job_closed = true };
	struct verdict_state closed = { .feed_ok = true, .job_closed = true };
	/* Even a request no rule allows, or an IP literal. */
	struct verdict_request rq = get("127.0.0.1", 80, "/ok/");
	struct verdict v;

	assert_refused(&rq, &silent, "feed_unavailable",
	    "revocation feed not answering");
	assert_refused(&rq, &closed, "revoked", NULL);
	verdict_head(&rq, &rules, &closed, &v);
	ck_assert_int_eq(v.rule, -1);
	ck_assert_str_eq(v.host, ""); /* not normalised: logged as sent */
}
END_TEST

START_TEST(hosts_are_names_in_one_spelling)
{
	static const char *const literals[] = { "127.0.0.1", "2130706433",
		"0x7f.1", "[::1]", "::1" };

	for (size_t i = 0; i < sizeof(literals) / sizeof(literals[0]); i++) {
		struct verdict_request rq = get(literals[i], 80, "/ok/");
		assert_refused(&rq, &open_job, "ip_literal", NULL);
	}
	struct verdict_request bad = get("a..test", 80, "/ok/");
	assert_refused(&bad, &open_job, "malformed", "bad_host");
}
END_TEST

START_TEST(the_rules_say_which_part_did_not_match)
{
	struct verdict_request rq = get("other.test", 80, "/ok/");

	assert_refused(&rq, &open_job, "no_rule", NULL);
	rq = get("api.test", 81, "/ok/");
	assert_refused(&rq, &open_job, "no_rule", NULL);
	rq = get("api.test", 80, "/ok/");
	rq.method = "DELETE";
	assert_refused(&rq, &open_job, "method", NULL);
	rq = get("api.test", 80, "/nope");
	assert_refused(&rq, &open_job, "path", NULL);
}
END_TEST

START_TEST(a_path_with_two_readings_says_its_spelling)
{
	static const struct {
		const char *path, *detail;
	} bad[] = { { "/ok/..;/admin", "semicolon" },
		{ "/ok/%252e", "double_encoding" },
		{ "/ok//x", "empty_segment" },
		{ "/ok/admin./x", "trailing_dot" },
		{ "/ok/%C0%AE", "bad_utf8" } };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct verdict_request rq = get("api.test", 80, bad[i].path);
		struct verdict v;
		assert_refused(&rq, &open_job, "path", bad[i].detail);
		verdict_head(&rq, &rules, &open_job, &v);
		ck_assert_str_eq(v.host, "api.test");
	}
}
END_TEST

START_TEST(the_scheme_must_be_the_rules)
{
	/* A plain GET to a rule that terminates TLS, a CONNECT to one of
	 * plain HTTP. */
	struct verdict_request rq = get("tls.test", 443, "/ok/");
	struct verdict v;

	assert_refused(&rq, &open_job, "tls", "rule_wants_tls");
	verdict_head(&rq, &rules, &open_job, &v);
	ck_assert_int_eq(v.rule, 1);
	rq = (struct verdict_request){ .method = "CONNECT",
		.host = "api.test",
		.port = 80,
		.connect = true };
	assert_refused(&rq, &open_job, "tls", "rule_is_plain_http");
	/* A CONNECT to a wildcard passthrough rule: no path to check. */
	rq = (struct verdict_request){ .method = "CONNECT",
		.host = "a.b.wild.test",
		.port = 443,
		.connect = true };
	verdict_head(&rq, &rules, &open_job, &v);
	ck_assert_ptr_null(v.reason);
	ck_assert_int_eq(v.rule, 2);
}
END_TEST

START_TEST(inside_a_tunnel_the_host_is_the_tunnels)
{
	struct verdict_request rq = get("tls.test", 443, "/ok/x");
	struct verdict v;

	rq.tunnel_host = "tls.test";
	rq.tunnel_port = 443;
	verdict_head(&rq, &rules, &open_job, &v);
	ck_assert_ptr_null(v.reason);
	ck_assert_int_eq(v.rule, 1);
	rq.host = "api.test";
	assert_refused(&rq, &open_job, "host_mismatch", NULL);
	rq.host = "tls.test";
	rq.tunnel_port = 8443;
	assert_refused(&rq, &open_job, "host_mismatch", NULL);
}
END_TEST

START_TEST(upgrade_only_where_the_rule_allows_it)
{
	struct verdict_request rq = get("api.test", 80, "/ok/ws");
	struct verdict v;

	rq.upgrade = true;
	assert_refused(&rq, &open_job, "upgrade", NULL);
	rq = get("tls.test", 443, "/ok/ws");
	rq.upgrade = true;
	rq.tunnel_host = "tls.test";
	rq.tunnel_port = 443;
	verdict_head(&rq, &rules, &open_job, &v);
	ck_assert_ptr_null(v.reason);
	ck_assert(v.upgrade_ok);
}
END_TEST

START_TEST(broker_cordon_takes_one_request)
{
	struct verdict_request rq = { .method = "POST",
		.host = "broker.cordon",
		.port = 80,
		.path = "/v1/token" };
	struct verdict v;

	verdict_head(&rq, &rules, &open_job, &v);
	ck_assert_ptr_null(v.reason);
	ck_assert(v.broker_route);
	ck_assert_int_eq(v.rule, -1); /* no rule: no token may go there */
	rq.has_query = true;
	assert_refused(&rq, &open_job, "broker_path", NULL);
	rq.has_query = false;
	rq.path = "/v1/token/x";
	assert_refused(&rq, &open_job, "broker_path", NULL);
	rq.path = "/v1/token";
	rq.method = "GET";
	assert_refused(&rq, &open_job, "broker_path", NULL);
	rq.method = "POST";
	rq.port = 8080;
	assert_refused(&rq, &open_job, "broker_path", NULL);
	rq.port = 80;
	rq.tunnel_host = "broker.cordon";
	rq.tunnel_port = 80;
	assert_refused(&rq, &open_job, "broker_path", NULL);
}
END_TEST

static const char *
token(int status, const char *body, const struct egress_rule *rule)
{
	json_t *v = body != NULL ? testutil_json(body, 0) : NULL;
	const char *why = verdict_token(status, v, "job_a", rule);

	json_decref(v);
	return why;
}

START_TEST(a_token_is_good_only_for_its_job_and_audience)
{
	const struct egress_rule *api = &rules.rule[0], *none = &rules.rule[1];
	const char *good = "{\"active\": true, \"job\": \"job_a\", "
			   "\"aud\": \"api\"}";

	ck_assert_ptr_null(token(200, good, api));
	ck_assert_str_eq(token(0, NULL, api), "introspection_failed");
	ck_assert_str_eq(token(503, good, api), "introspection_failed");
	ck_assert_str_eq(token(200, "{\"active\": \"yes\"}", api),
	    "introspection_failed");
	ck_assert_str_eq(token(200, "{\"active\": false}", api), "inactive");
	ck_assert_str_eq(token(200,
			     "{\"active\": true, \"job\": \"job_b\", "
			     "\"aud\": \"api\"}",
			     api),
	    "other_job");
	ck_assert_str_eq(token(200, "{\"active\": true, \"aud\": \"api\"}",
			     api),
	    "other_job");
	ck_assert_str_eq(token(200, good, none), "no_audience");
	ck_assert_str_eq(token(200, good, NULL), "no_audience");
	ck_assert_str_eq(token(200,
			     "{\"active\": true, \"job\": \"job_a\", "
			     "\"aud\": \"other\"}",
			     api),
	    "audience");
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("verdict");
	TCase *tc = tcase_create("verdict");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, an_allowed_request_names_its_rule_and_host);
	tcase_add_test(tc, the_feed_and_the_job_come_first);
	tcase_add_test(tc, hosts_are_names_in_one_spelling);
	tcase_add_test(tc, the_rules_say_which_part_did_not_match);
	tcase_add_test(tc, a_path_with_two_readings_says_its_spelling);
	tcase_add_test(tc, the_scheme_must_be_the_rules);
	tcase_add_test(tc, inside_a_tunnel_the_host_is_the_tunnels);
	tcase_add_test(tc, upgrade_only_where_the_rule_allows_it);
	tcase_add_test(tc, broker_cordon_takes_one_request);
	tcase_add_test(tc, a_token_is_good_only_for_its_job_and_audience);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
