/*
 * The verdict on a request head (proxy/verdict.c), as a job meets it: each
 * refusal with the reason and detail its decision line carries, in the
 * order docs/egress.md gives (the first that applies wins), and the
 * broker's word on a token read the one way.
 */
#include "testutil.h"
#include "verdict.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
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
	    "  \"passthrough\", \"methods\": [\"POST\"]},"
	    " {\"host\": \"db.test\", \"port\": 5432, \"tls\": \"none\","
	    "  \"methods\": [\"GET\"], \"allow_cidrs\": [\"10.0.0.0/8\","
	    "  \"127.0.0.0/8\", \"::1/128\"]}]",
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
	rq.upgrade_websocket = true;
	verdict_head(&rq, &rules, &open_job, &v);
	ck_assert_ptr_null(v.reason);
	ck_assert(v.upgrade_ok);
	/* The rule allows websockets, not a second protocol under the
	 * rule's name (h2c: every later stream a request never judged). */
	rq.upgrade_websocket = false;
	assert_refused(&rq, &open_job, "upgrade", "protocol");
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

/* The resolver's answers, as a list: "ip:port" each (IPv4, or an IPv6
 * address in brackets). */
struct answers {
	struct addrinfo ai[4];
	struct sockaddr_storage sa[4];
};

static const struct addrinfo *
answers(struct answers *a, const char *const *addrs, size_t n)
{
	memset(a, 0, sizeof(*a));
	for (size_t i = 0; i < n; i++) {
		char ip[64];
		const char *colon = strrchr(addrs[i], ':');
		unsigned port = (unsigned)strtoul(colon + 1, NULL, 10);
		snprintf(ip, sizeof(ip), "%.*s", (int)(colon - addrs[i]),
		    addrs[i]);
		if (ip[0] == '[') {
			struct sockaddr_in6 *s6 = (void *)&a->sa[i];
			ip[strlen(ip) - 1] = '\0';
			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons((uint16_t)port);
			ck_assert_int_eq(inet_pton(AF_INET6, ip + 1,
					     &s6->sin6_addr),
			    1);
			a->ai[i].ai_addrlen = sizeof(*s6);
		} else {
			struct sockaddr_in *s4 = (void *)&a->sa[i];
			s4->sin_family = AF_INET;
			s4->sin_port = htons((uint16_t)port);
			ck_assert_int_eq(inet_pton(AF_INET, ip, &s4->sin_addr),
			    1);
			a->ai[i].ai_addrlen = sizeof(*s4);
		}
		a->ai[i].ai_family = a->sa[i].ss_family;
		a->ai[i].ai_addr = (struct sockaddr *)&a->sa[i];
		a->ai[i].ai_next = i + 1 < n ? &a->ai[i + 1] : NULL;
	}
	return n > 0 ? &a->ai[0] : NULL;
}

static struct sockaddr_in self4, broker4;

static void
own_ports(const char *self_ip)
{
	memset(&self4, 0, sizeof(self4));
	memset(&broker4, 0, sizeof(broker4));
	self4.sin_family = broker4.sin_family = AF_INET;
	self4.sin_port = htons(7702);
	broker4.sin_port = htons(7701);
	ck_assert_int_eq(inet_pton(AF_INET, self_ip, &self4.sin_addr), 1);
	ck_assert_int_eq(inet_pton(AF_INET, "127.0.0.1", &broker4.sin_addr), 1);
}

/* The address verdict_address chose ("" for none), with reason and
 * detail. */
static void
pick(const char *const *addrs, size_t n, const struct egress_rule *rule,
    char *out, size_t outlen, const char **reason, const char **detail)
{
	struct answers a;
	const struct addrinfo *ai = answers(&a, addrs, n), *got;

	*reason = *detail = "unset";
	got = verdict_address(ai, rule, (const struct sockaddr *)&self4,
	    (const struct sockaddr *)&broker4, reason, detail);
	out[0] = '\0';
	if (got != NULL)
		snprintf(out, outlen, "%zu", (size_t)(got - &a.ai[0]));
}

START_TEST(the_first_address_the_rule_may_reach_is_used)
{
	const struct egress_rule *api = &rules.rule[0], *db = &rules.rule[3];
	const char *reason, *detail;
	char got[8];

	own_ports("127.0.0.1");
	pick((const char *[]){ "10.1.2.3:80", "8.8.8.8:80" }, 2, api, got,
	    sizeof(got), &reason, &detail);
	ck_assert_str_eq(got, "1");
	pick((const char *[]){ "10.1.2.3:5432", "8.8.8.8:5432" }, 2, db, got,
	    sizeof(got), &reason, &detail);
	ck_assert_str_eq(got, "0"); /* allow_cidrs lists it */
	pick((const char *[]){ "127.0.0.1:80", "10.1.2.3:80" }, 2, api, got,
	    sizeof(got), &reason, &detail);
	ck_assert_str_eq(got, "");
	ck_assert_str_eq(reason, "private_addr");
	ck_assert_str_eq(detail, "loopback"); /* the first that refused */
	pick(NULL, 0, api, got, sizeof(got), &reason, &detail);
	ck_assert_str_eq(got, "");
	ck_assert_str_eq(reason, "private_addr");
	ck_assert_ptr_null(detail);
}
END_TEST

START_TEST(the_proxys_and_the_brokers_ports_are_never_reached)
{
	const struct egress_rule *db = &rules.rule[3];
	const char *reason, *detail;
	char got[8];
	/* Whatever allow_cidrs says: loopback on either port, any IPv6
	 * loopback, and the control port's own address. */
	static const char *const own[] = { "127.0.0.1:7701", "127.0.0.2:7702",
		"[::1]:7701", "[::1]:7702" };

	own_ports("127.0.0.1");
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		pick(&own[i], 1, db, got, sizeof(got), &reason, &detail);
		ck_assert_msg(got[0] == '\0', "%s was chosen", own[i]);
		ck_assert_str_eq(reason, "own_port");
		ck_assert_ptr_null(detail);
	}
	own_ports("10.0.0.5");
	pick((const char *[]){ "10.0.0.5:7702" }, 1, db, got, sizeof(got),
	    &reason, &detail);
	ck_assert_str_eq(reason, "own_port");
	pick((const char *[]){ "10.0.0.6:7702" }, 1, db, got, sizeof(got),
	    &reason, &detail);
	ck_assert_str_eq(got, "0"); /* another host's port 7702 */
	/* One of them among the answers: own_port is the reason. */
	pick((const char *[]){ "10.9.9.9:7701", "127.0.0.1:7701" }, 2,
	    &rules.rule[0], got, sizeof(got), &reason, &detail);
	ck_assert_str_eq(reason, "own_port");
	/* After one the rule may reach, the next is never looked at. */
	pick((const char *[]){ "10.1.1.1:5432", "127.0.0.1:7701" }, 2, db, got,
	    sizeof(got), &reason, &detail);
	ck_assert_str_eq(got, "0");
}
END_TEST

/* What the job reads, byte for byte as docs/egress.md shows it. */
START_TEST(a_refusal_reads_as_the_docs_show_it)
{
	static const char denied[] =
	    "HTTP/1.1 403 Forbidden by cordon: no_rule (GET "
	    "http://cordon.local/v1/denials)\r\n"
	    "X-Cordon-Deny: no_rule\r\n"
	    "Content-Type: application/json\r\n"
	    "Content-Length: 93\r\n"
	    "Connection: close\r\n\r\n"
	    "{\"error\":\"denied\",\"reason\":\"no_rule\",\"message\":"
	    "\"cordon-proxy refused this request: no_rule\"}\n";
	static const char upstream[] =
	    "HTTP/1.1 504 Gateway Timeout\r\n"
	    "X-Cordon-Error: upstream\r\n"
	    "Content-Type: application/json\r\n"
	    "Content-Length: 98\r\n"
	    "Connection: close\r\n\r\n"
	    "{\"error\":\"upstream\",\"reason\":null,\"message\":\"the "
	    "upstream could not be "
	    "reached: connect_timeout\"}\n";
	struct buf out;

	buf_init(&out, 4096);
	ck_assert_int_eq(verdict_refusal(&out, 403, "no_rule", "denied",
			     "cordon-proxy refused this request: no_rule"),
	    0);
	ck_assert_str_eq(buf_str(&out), denied);
	buf_reset(&out);
	ck_assert_int_eq(verdict_refusal(&out, 504, NULL, "upstream",
			     "the upstream could not be reached: "
			     "connect_timeout"),
	    0);
	ck_assert_str_eq(buf_str(&out), upstream);
	buf_reset(&out);
	ck_assert_int_eq(verdict_refusal(&out, 599, NULL, "x", "y"), 0);
	ck_assert_ptr_nonnull(strstr(buf_str(&out), "HTTP/1.1 599 Error\r\n"));
	/* The reason phrase stays one: a reason that is not a plain token
	 * (CR, LF, a byte past ASCII, too long) is not put in it. */
	buf_reset(&out);
	ck_assert_int_eq(verdict_refusal(&out, 403, "a\x7f b", "denied", "m"),
	    0);
	ck_assert_ptr_nonnull(
	    strstr(buf_str(&out), "HTTP/1.1 403 Forbidden by cordon (GET "));
	buf_reset(&out);
	ck_assert_int_eq(verdict_refusal(&out, 408, "timeout", "denied", "m"),
	    0);
	ck_assert_ptr_nonnull(strstr(buf_str(&out),
	    "HTTP/1.1 408 Request Timeout by cordon: timeout (GET "
	    "http://cordon.local/v1/denials)\r\n"));
	buf_free(&out);
}
END_TEST

/* --- param binding (credentials.md) -------------------------------------- */

static struct egress_rules bound;

static void
load_bound(void)
{
	char err[256] = "";
	json_t *v = testutil_json(
	    "[{\"host\": \"api.github.com\", \"port\": 443,"
	    "  \"methods\": [\"GET\"], \"audience\": \"github\","
	    "  \"paths\": [\"/repos/acme/{repo}/\", \"/orgs/acme/{org}\","
	    "   \"/meta\"],"
	    "  \"inject\": {\"secret\": \"gh\", \"header\": \"Authorization\","
	    "   \"format\": \"Bearer {secret}\", \"capability\": "
	    "\"repo.read\"}}]",
	    0);

	ck_assert_msg(egress_rules_load(v, &bound, err, sizeof(err)) == 0, "%s",
	    err);
	json_decref(v);
}

/* The verdict on GET path for a token with params (JSON text, may be
 * NULL): NULL when allowed. */
static const char *
bound_get(const char *path, const char *params)
{
	struct verdict_request rq = { .method = "GET",
		.host = "api.github.com",
		.port = 443,
		.path = path,
		.tunnel_host = "api.github.com",
		.tunnel_port = 443 };
	struct verdict v;
	json_t *p = params != NULL ? testutil_json(params, 0) : NULL;
	const char *why;

	verdict_head(&rq, &bound, &open_job, &v);
	if (v.reason != NULL) {
		json_decref(p);
		return v.reason;
	}
	why = verdict_params(&bound.rule[v.rule], path, p);
	json_decref(p);
	return why;
}

START_TEST(a_templated_path_takes_the_tokens_value_only)
{
	static const char w[] = "{\"repo\": \"widgets\", \"org\": \"acme\"}";

	load_bound();
	ck_assert_ptr_null(bound_get("/repos/acme/widgets/", w));
	ck_assert_ptr_null(bound_get("/repos/acme/widgets/issues?page=2", w));
	ck_assert_ptr_null(bound_get("/orgs/acme/acme", w));
	ck_assert_ptr_null(bound_get("/orgs/acme/acme/members", w));
	ck_assert_ptr_null(bound_get("/meta", w));
	/* Beside it: another repository, a longer name, another case, an
	 * escape of the same letters, a prefix of the value. */
	ck_assert_str_eq(bound_get("/repos/acme/secrets/", w),
	    "param_mismatch");
	ck_assert_str_eq(bound_get("/repos/acme/widgets-evil/", w),
	    "param_mismatch");
	ck_assert_str_eq(bound_get("/orgs/acme/acme-evil", w),
	    "param_mismatch");
	ck_assert_str_eq(bound_get("/orgs/acme/acmeX/members", w),
	    "param_mismatch");
	ck_assert_str_eq(bound_get("/repos/acme/WIDGETS/", w),
	    "param_mismatch");
	ck_assert_str_eq(bound_get("/repos/acme/widget%73/", w),
	    "param_mismatch");
	ck_assert_str_eq(bound_get("/repos/acme/widget/", w), "param_mismatch");
	ck_assert_str_eq(bound_get("/repos/acme/widgets", w), "param_mismatch");
	/* Shapes with a second reading never get that far. */
	ck_assert_str_eq(bound_get("/repos/acme/widgets/../secrets/", w),
	    "path");
	ck_assert_str_eq(bound_get("/repos/acme/widgets%2f..%2fsecrets/", w),
	    "path");
	ck_assert_str_eq(bound_get("/repos/acme/widgets;x/", w), "path");
	ck_assert_str_eq(bound_get("/repos/acme/widgets%252f/", w), "path");
	ck_assert_str_eq(bound_get("/repos/other/widgets/", w), "path");
	/* No token params, or not the placeholder's. */
	ck_assert_str_eq(bound_get("/repos/acme/widgets/", NULL),
	    "param_missing");
	ck_assert_str_eq(bound_get("/repos/acme/widgets/", "{\"org\": \"a\"}"),
	    "param_missing");
	egress_rules_free(&bound);
}
END_TEST

START_TEST(a_param_value_that_is_not_one_segment_is_refused_at_match)
{
	static const char *const bad[] = { "{\"repo\": \"a/b\"}",
		"{\"repo\": \"..\"}", "{\"repo\": \".\"}", "{\"repo\": \"\"}",
		"{\"repo\": \"a%2fb\"}", "{\"repo\": \"a%252fb\"}",
		"{\"repo\": \"a;b\"}", "{\"repo\": \"a\\u0000b\"}",
		"{\"repo\": \"widgets.\"}", "{\"repo\": \"a b\"}",
		"{\"repo\": \"a?b\"}", "{\"repo\": \"a#b\"}",
		"{\"repo\": \"a\\\\b\"}", "{\"repo\": \"w\\u00e9\"}",
		"{\"repo\": [\"widgets\"]}", "{\"repo\": true}",
		"{\"repo\": null}" };

	load_bound();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *p = json_loads(bad[i], JSON_ALLOW_NUL, NULL);
		ck_assert_msg(p != NULL, "%s", bad[i]);
		const char *why =
		    verdict_params(&bound.rule[0], "/repos/acme/a/b/", p);
		ck_assert_msg(why != NULL && strcmp(why, "param_value") == 0,
		    "%s: %s", bad[i], why != NULL ? why : "allowed");
		json_decref(p);
	}
	/* An integer is its decimal text. */
	ck_assert_ptr_null(bound_get("/repos/acme/4182/", "{\"repo\": 4182}"));
	ck_assert_ptr_null(
	    bound_get("/repos/acme/a.b_c-d~e/", "{\"repo\": \"a.b_c-d~e\"}"));
	egress_rules_free(&bound);
}
END_TEST

START_TEST(the_proxy_loads_a_template_only_where_a_token_binds_it)
{
	static const char *const bad[] = {
		/* no inject: nothing binds it */
		"[{\"host\": \"a.test\", \"port\": 443, \"methods\": [\"GET\"],"
		" \"paths\": [\"/r/{repo}/\"]}]",
		/* not a whole segment, unclosed, a stray brace */
		"[{\"host\": \"a.test\", \"port\": 443, \"methods\": [\"GET\"],"
		" \"paths\": [\"/r/x{repo}/\"], \"inject\": {\"secret\": \"s\","
		" \"header\": \"X-K\", \"capability\": \"c\"}}]",
		"[{\"host\": \"a.test\", \"port\": 443, \"methods\": [\"GET\"],"
		" \"paths\": [\"/r/{repo}x/\"], \"inject\": {\"secret\": \"s\","
		" \"header\": \"X-K\", \"capability\": \"c\"}}]",
		"[{\"host\": \"a.test\", \"port\": 443, \"methods\": [\"GET\"],"
		" \"paths\": [\"/r/{repo/\"], \"inject\": {\"secret\": \"s\","
		" \"header\": \"X-K\", \"capability\": \"c\"}}]",
		"[{\"host\": \"a.test\", \"port\": 443, \"methods\": [\"GET\"],"
		" \"paths\": [\"/r/repo}/\"], \"inject\": {\"secret\": \"s\","
		" \"header\": \"X-K\", \"capability\": \"c\"}}]",
		"[{\"host\": \"a.test\", \"port\": 443, \"methods\": [\"GET\"],"
		" \"paths\": [\"/r/{}/\"], \"inject\": {\"secret\": \"s\","
		" \"header\": \"X-K\", \"capability\": \"c\"}}]",
	};
	struct egress_rules r;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *v = testutil_json(bad[i], 0);
		ck_assert_msg(egress_rules_load(v, &r, err, sizeof(err)) < 0,
		    "%s", bad[i]);
		json_decref(v);
	}
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
	tcase_add_test(tc, the_first_address_the_rule_may_reach_is_used);
	tcase_add_test(tc, the_proxys_and_the_brokers_ports_are_never_reached);
	tcase_add_test(tc, a_refusal_reads_as_the_docs_show_it);
	tcase_add_test(tc, a_templated_path_takes_the_tokens_value_only);
	tcase_add_test(tc,
	    a_param_value_that_is_not_one_segment_is_refused_at_match);
	tcase_add_test(tc,
	    the_proxy_loads_a_template_only_where_a_token_binds_it);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
