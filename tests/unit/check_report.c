/*
 * The denial report's core (launcher/report.c) and the decision log read
 * back (proxy/decisions.c), as an operator relies on them: denials
 * grouped with counts, first and last seen and their jobs; rules with no
 * hit called stale; proposals only for what was denied twice or more,
 * only for missing rules, never wider than the paths the job asked for,
 * however a hostile job shapes its denials, and never a new host one job
 * alone was denied (each proposal names its manifest and how many jobs
 * asked); the diff a person
 * reviews; and the log's pages across rotated files, oldest first, with
 * a cursor that survives a rotation.
 */
#include "decisions.h"
#include "report.h"
#include "testutil.h"
#include "util.h"

#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *manifest_text =
    "{\"name\": \"triage\", \"description\": \"d\","
    " \"command\": [\"/bin/true\"],"
    " \"egress\": ["
    "  {\"host\": \"api.test\", \"port\": 443, \"methods\": [\"GET\"],"
    "   \"paths\": [\"/v1/ok\"], \"reason\": \"r\"},"
    "  {\"host\": \"old.test\", \"port\": 443, \"methods\": [\"GET\"],"
    "   \"reason\": \"r\"}]}";

/* A decision line as the proxy writes it (the fields the report reads). */
static json_t *
line(const char *job, const char *verdict, const char *reason, const char *kind,
    const char *method, const char *host, int port, const char *path, int rule,
    const char *ts)
{
	json_t *d = json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:i, s:s?, "
			      "s:s, s:s?, s:n}",
	    "ts", ts, "job", job, "kind", kind, "method", method, "host", host,
	    "path", path, "port", port, "sni", NULL, "decision", verdict,
	    "reason", reason, "detail");

	ck_assert_ptr_nonnull(d);
	json_object_set_new(d, "rule",
	    rule >= 0 ? json_integer(rule) : json_null());
	return d;
}

static void
feed(struct report *r, json_t *d)
{
	ck_assert_int_eq(report_decision(r, d), 0);
	json_decref(d);
}

static struct report *
new_report(void)
{
	struct report *r = report_new(INT64_MIN, INT64_MIN);
	json_t *m = testutil_json(manifest_text, 0);

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(report_manifest(r, "triage", 3, m), 0);
	ck_assert_int_eq(report_job(r, "job_a", "triage",
			     json_object_get(m, "egress")),
	    0);
	ck_assert_int_eq(report_job(r, "job_b", "triage",
			     json_object_get(m, "egress")),
	    0);
	json_decref(m);
	return r;
}

/* The group of the document for host and path, or NULL. */
static json_t *
group(json_t *doc, const char *host, const char *path)
{
	json_t *g;
	size_t i;

	json_array_foreach(json_object_get(doc, "denials"), i, g)
	{
		const char *gh = json_string_value(json_object_get(g, "host"));
		const char *gp = json_string_value(json_object_get(g, "path"));
		if ((host == NULL ? gh == NULL
				  : gh != NULL && strcmp(gh, host) == 0) &&
		    (path == NULL ? gp == NULL
				  : gp != NULL && strcmp(gp, path) == 0))
			return g;
	}
	return NULL;
}

static json_t *
proposal(json_t *doc)
{
	json_t *m = json_array_get(json_object_get(doc, "manifests"), 0);

	ck_assert_ptr_nonnull(m);
	return json_object_get(m, "proposal");
}

/* Every path prefix of every rule the proposal adds or changes. */
static json_t *
proposed_paths(json_t *doc)
{
	json_t *out = json_array(), *rule, *p;
	size_t i, k;

	json_array_foreach(json_object_get(proposal(doc), "rules"), i, rule)
	{
		json_array_foreach(json_object_get(rule, "paths"), k, p)
		    json_array_append(out, p);
	}
	return out;
}

START_TEST(denials_grouped_with_counts_times_and_jobs)
{
	struct report *r = new_report();

	feed(r,
	    line("job_a", "deny", "no_rule", "mitm", "GET", "new.test", 443,
		"/x", -1, "2026-12-01T10:00:01.000Z"));
	feed(r,
	    line("job_b", "deny", "no_rule", "mitm", "GET", "new.test", 443,
		"/x", -1, "2026-12-01T09:00:00.000Z"));
	feed(r,
	    line("job_a", "deny", "no_rule", "mitm", "GET", "new.test", 443,
		"/x", -1, "2026-12-01T11:00:00.000Z"));
	feed(r,
	    line("job_a", "deny", "no_rule", "mitm", "POST", "new.test", 443,
		"/x", -1, "2026-12-01T11:00:00.000Z"));
	/* A job of no manifest asked: counted apart. */
	feed(r,
	    line("job_z", "deny", "no_rule", "mitm", "GET", "new.test", 443,
		"/x", -1, "2026-12-01T11:00:00.000Z"));
	json_t *doc = report_document(r);
	json_t *g = json_array_get(json_object_get(doc, "denials"), 0);

	ck_assert_uint_eq(json_array_size(json_object_get(doc, "denials")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(g, "method")),
	    "GET");
	ck_assert_int_eq(json_integer_value(json_object_get(g, "count")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(g, "first_seen")),
	    "2026-12-01T09:00:00.000Z");
	ck_assert_str_eq(json_string_value(json_object_get(g, "last_seen")),
	    "2026-12-01T11:00:00.000Z");
	ck_assert_uint_eq(json_array_size(json_object_get(g, "jobs")), 2);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_object_get(doc, "counts"),
				 "unattributed")),
	    1);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_object_get(doc, "counts"),
				 "denials")),
	    4);
	json_decref(doc);
	report_free(r);
}
END_TEST

START_TEST(a_rule_without_hits_is_stale)
{
	struct report *r = new_report();

	feed(r,
	    line("job_a", "allow", NULL, "mitm", "GET", "api.test", 443,
		"/v1/ok", 0, "2026-12-01T10:00:00.000Z"));
	json_t *doc = report_document(r);
	json_t *m = json_array_get(json_object_get(doc, "manifests"), 0);
	json_t *stale = json_object_get(m, "stale");

	ck_assert_uint_eq(json_array_size(stale), 1);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(stale, 0), "host")),
	    "old.test");
	ck_assert(json_is_false(json_object_get(m, "over_warning")));
	/* Nothing denied twice: nothing proposed, no diff. */
	ck_assert_uint_eq(json_array_size(
			      json_object_get(json_object_get(m, "proposal"),
				  "rules")),
	    0);
	ck_assert(json_is_null(
	    json_object_get(json_object_get(m, "proposal"), "manifest")));
	json_decref(doc);
	report_free(r);
}
END_TEST

START_TEST(a_proposal_is_the_paths_seen_twice)
{
	struct report *r = new_report();

	for (int i = 0; i < 2; i++) {
		/* A new host: each path denied to two jobs. */
		feed(r,
		    line(i == 0 ? "job_a" : "job_b", "deny", "no_rule", "mitm",
			"GET", "new.test", 443, "/v1/a", -1,
			"2026-12-01T10:00:00.000Z"));
		feed(r,
		    line(i == 0 ? "job_b" : "job_a", "deny", "no_rule", "mitm",
			"GET", "new.test", 443, "/v1/b", -1,
			"2026-12-01T10:00:00.000Z"));
		/* A path the existing rule lacks, for its method. */
		feed(r,
		    line("job_a", "deny", "path", "mitm", "GET", "api.test",
			443, "/v1/more", -1, "2026-12-01T10:00:00.000Z"));
	}
	/* Once: listed, not proposed. */
	feed(r,
	    line("job_a", "deny", "no_rule", "mitm", "GET", "once.test", 443,
		"/o", -1, "2026-12-01T10:00:00.000Z"));
	json_t *doc = report_document(r);
	json_t *paths = proposed_paths(doc);
	json_t *p = proposal(doc);

	/* Both paths, not their common prefix "/v1/", never "/". */
	ck_assert_uint_eq(json_array_size(paths), 3);
	for (size_t i = 0; i < json_array_size(paths); i++) {
		const char *s = json_string_value(json_array_get(paths, i));
		ck_assert(strcmp(s, "/v1/a") == 0 || strcmp(s, "/v1/b") == 0 ||
		    strcmp(s, "/v1/more") == 0);
	}
	json_t *once = group(doc, "once.test", "/o");
	ck_assert_ptr_nonnull(once);
	ck_assert(json_is_false(json_object_get(once, "proposed")));
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(once, "why")), "2"));
	/* The proposed manifest: api.test's rule gained the path, new.test
	 * is a rule of its own; the broker would take it. */
	json_t *egress =
	    json_object_get(json_object_get(p, "manifest"), "egress");
	ck_assert_uint_eq(json_array_size(egress), 3);
	ck_assert_uint_eq(json_array_size(
			      json_object_get(json_array_get(egress, 0),
				  "paths")),
	    2);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(egress, 2),
				 "host")),
	    "new.test");
	char *problems = json_dumps(json_object_get(p, "problems"), 0);
	ck_assert_msg(json_array_size(json_object_get(p, "problems")) == 0,
	    "the broker would refuse the proposal: %s", problems);
	free(problems);
	const char *diff = json_string_value(json_object_get(p, "diff"));
	ck_assert_ptr_nonnull(diff);
	ck_assert_ptr_nonnull(strstr(diff, "--- triage (version 3"));
	ck_assert_ptr_nonnull(strstr(diff, "+++ triage (proposed"));
	ck_assert_ptr_nonnull(strstr(diff, "\n+        \"/v1/more\""));
	ck_assert_ptr_nonnull(strstr(diff, "\n+      \"host\": \"new.test\""));
	json_decref(paths);
	json_decref(doc);
	report_free(r);
}
END_TEST

/* Hostile jobs deny themselves on purpose to steer the proposal to a wide
 * rule: hundreds of distinct paths under "/", each twice, and "/" itself
 * (two of them, since one alone gets no new host proposed). */
START_TEST(a_hostile_job_cannot_steer_the_proposal_to_slash)
{
	struct report *r = new_report();
	char path[64];

	for (int i = 0; i < 300; i++) {
		snprintf(path, sizeof(path), "/%c%d", 'a' + i % 26, i);
		for (int k = 0; k < 2 + (i % 3); k++)
			feed(r,
			    line(k % 2 ? "job_a" : "job_b", "deny", "no_rule",
				"mitm", "GET", "evil.test", 443, path, -1,
				"2026-12-01T10:00:00.000Z"));
	}
	for (int k = 0; k < 50; k++)
		feed(r,
		    line(k % 2 ? "job_a" : "job_b", "deny", "no_rule", "mitm",
			"GET", "evil.test", 443, "/", -1,
			"2026-12-01T10:00:00.000Z"));
	json_t *doc = report_document(r);
	json_t *paths = proposed_paths(doc), *p = proposal(doc);

	ck_assert_uint_le(json_array_size(paths), REPORT_PATHS_MAX);
	ck_assert_uint_gt(json_array_size(paths), 0);
	for (size_t i = 0; i < json_array_size(paths); i++) {
		const char *s = json_string_value(json_array_get(paths, i));
		/* Each one a path the job asked for exactly: no prefix
		 * shared by several, no "/". */
		ck_assert_str_ne(s, "/");
		ck_assert_uint_gt(strlen(s), 2);
	}
	/* The rest listed, "/" among them with its reason. */
	ck_assert_uint_eq(json_array_size(json_object_get(p, "left_out")),
	    300 + 1 - json_array_size(paths));
	const char *diff = json_string_value(json_object_get(p, "diff"));
	ck_assert_ptr_null(strstr(diff, "\"/\""));
	json_decref(paths);
	json_decref(doc);
	report_free(r);
}
END_TEST

/* One job denies itself a host of its choosing, many times: it is no
 * proposal (an operator would add the job's exfiltration host); a second
 * job denied the same path makes it one, which names its manifest and
 * both jobs. */
START_TEST(one_job_cannot_get_its_host_proposed)
{
	struct report *r = new_report();

	for (int k = 0; k < 10; k++)
		feed(r,
		    line("job_a", "deny", "no_rule", "mitm", "POST",
			"exfil.test", 443, "/drop", -1,
			"2026-12-01T10:00:00.000Z"));
	json_t *doc = report_document(r);
	json_t *p = proposal(doc), *v;
	char *text = json_dumps(p, 0);
	size_t i;

	ck_assert_msg(json_array_size(json_object_get(p, "rules")) == 0,
	    "one job's host proposed: %s", text);
	ck_assert(json_is_null(json_object_get(p, "manifest")));
	ck_assert_ptr_null(
	    strstr(json_string_value(json_object_get(p, "diff")) ?: "",
		"exfil.test"));
	free(text);
	v = json_array_get(json_object_get(p, "left_out"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(v, "host")),
	    "exfil.test");
	ck_assert_int_eq(json_integer_value(json_object_get(v, "jobs")), 1);
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(v, "why")), "2 jobs"));
	json_decref(doc);

	for (int k = 0; k < 2; k++)
		feed(r,
		    line("job_b", "deny", "no_rule", "mitm", "POST",
			"exfil.test", 443, "/drop", -1,
			"2026-12-01T10:00:00.000Z"));
	doc = report_document(r);
	p = proposal(doc);
	ck_assert_uint_eq(json_array_size(json_object_get(p, "rules")), 1);
	v = json_array_get(json_object_get(p, "rules"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(v, "manifest")),
	    "triage");
	ck_assert_int_eq(json_integer_value(json_object_get(v, "jobs_count")),
	    2);
	ck_assert(json_is_true(json_object_get(v, "new")));
	json_t *egress =
	    json_object_get(json_object_get(p, "manifest"), "egress");
	json_array_foreach(egress, i, v)
	{
		if (strcmp(json_string_value(json_object_get(v, "host")),
			"exfil.test") != 0)
			continue;
		const char *why =
		    json_string_value(json_object_get(v, "reason"));
		ck_assert_ptr_nonnull(strstr(why, "manifest triage"));
		ck_assert_ptr_nonnull(strstr(why, "by 2 jobs"));
	}
	json_decref(doc);
	report_free(r);
}
END_TEST

/* A path on a host the manifest has a rule for may come from one job:
 * the proposal says that one job asked, and that it can steer it. */
START_TEST(a_known_host_path_from_one_job_says_so)
{
	struct report *r = new_report();

	for (int k = 0; k < 2; k++)
		feed(r,
		    line("job_a", "deny", "path", "mitm", "GET", "api.test",
			443, "/v1/upload", -1, "2026-12-01T10:00:00.000Z"));
	json_t *doc = report_document(r);
	json_t *v = json_array_get(json_object_get(proposal(doc), "rules"), 0);
	char *notes = json_dumps(json_object_get(v, "notes"), 0);

	ck_assert_ptr_nonnull(v);
	ck_assert(json_is_false(json_object_get(v, "new")));
	ck_assert_str_eq(json_string_value(json_object_get(v, "manifest")),
	    "triage");
	ck_assert_int_eq(json_integer_value(json_object_get(v, "jobs_count")),
	    1);
	ck_assert_msg(strstr(notes, "one job") != NULL, "notes: %s", notes);
	free(notes);
	json_decref(doc);
	report_free(r);
}
END_TEST

START_TEST(only_missing_rules_are_proposable)
{
	static const char *const refused[] = { "token", "malformed",
		"secret_reflected", "private_addr", "tls", "upgrade",
		"sni_mismatch", "broker_path", "revoked", "inject" };
	struct report *r = new_report();

	for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
		for (int k = 0; k < 3; k++)
			feed(r,
			    line("job_a", "deny", refused[i], "mitm", "GET",
				"api.test", 443, "/v1/ok", -1,
				"2026-12-01T10:00:00.000Z"));
	for (int k = 0; k < 3; k++) {
		/* An address, a lookup, a refused CONNECT, a path with
		 * two readings, a line held past the budget. */
		feed(r,
		    line("job_a", "deny", "ip_literal", "http", "GET",
			"10.1.2.3", 80, "/x", -1, "2026-12-01T10:00:00.000Z"));
		feed(r,
		    line("job_a", "deny", "no_rule", "http", "GET", "10.1.2.3",
			80, "/x", -1, "2026-12-01T10:00:00.000Z"));
		feed(r,
		    line("job_a", "deny", "no_rule", "dns", "CONNECT",
			"lookup.test", 53, NULL, -1,
			"2026-12-01T10:00:00.000Z"));
		feed(r,
		    line("job_a", "deny", "no_rule", "connect", "CONNECT",
			"tunnel.test", 443, NULL, -1,
			"2026-12-01T10:00:00.000Z"));
		json_t *d = line("job_a", "deny", "path", "mitm", "GET",
		    "api.test", 443, "/v1/ok/..;/admin", -1,
		    "2026-12-01T10:00:00.000Z");
		json_object_set_new(d, "detail", json_string("semicolon"));
		feed(r, d);
		d = line("job_a", "deny", "no_rule", "mitm", NULL, NULL, 0,
		    NULL, -1, "2026-12-01T10:00:00.000Z");
		json_object_set_new(d, "detail",
		    json_string("held_past_budget"));
		json_object_set_new(d, "count", json_integer(40));
		feed(r, d);
	}
	json_t *doc = report_document(r);
	json_t *apart = json_object_get(doc, "not_proposable"), *g;
	size_t i;

	ck_assert_uint_eq(json_array_size(apart), ARRAY_SIZE(refused) + 6);
	json_array_foreach(apart, i, g)
	{
		ck_assert(json_is_false(json_object_get(g, "proposable")));
		ck_assert(json_string_length(json_object_get(g, "why")) > 0);
	}
	json_t *ip = group(doc, "10.1.2.3", "/x");
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(ip, "why")), "private"));
	ck_assert_uint_eq(json_array_size(
			      json_object_get(proposal(doc), "rules")),
	    0);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_object_get(doc, "counts"),
				 "denials")),
	    (json_int_t)(ARRAY_SIZE(refused) * 3 + 5 * 3 + 40 * 3));
	json_decref(doc);
	report_free(r);
}
END_TEST

START_TEST(over_the_warning_said)
{
	struct report *r = report_new(INT64_MIN, INT64_MIN);
	json_t *m = testutil_json(manifest_text, 0);
	json_t *egress = json_object_get(m, "egress");

	for (int i = 0; i < 5; i++) {
		char host[32];
		snprintf(host, sizeof(host), "h%d.test", i);
		json_array_append_new(egress,
		    json_pack("{s:s, s:[s], s:s}", "host", host, "methods",
			"GET", "reason", "r"));
	}
	ck_assert_int_eq(report_manifest(r, "wide", 1, m), 0);
	json_t *doc = report_document(r);
	json_t *one = json_array_get(json_object_get(doc, "manifests"), 0);
	ck_assert(json_is_true(json_object_get(one, "over_warning")));
	ck_assert_int_eq(json_integer_value(
			     json_object_get(one, "rules_count")),
	    7);
	ck_assert_uint_eq(json_array_size(json_object_get(one, "stale")), 7);
	json_decref(doc);
	json_decref(m);
	report_free(r);
}
END_TEST

START_TEST(unified_diff_shape)
{
	char *d = report_unified_diff("a\nb\nc\nd\ne\nf\ng\nh\n",
	    "a\nb\nc\nd\nX\ne\nf\ng\nh\n", "old", "new");

	ck_assert_str_eq(d,
	    "--- old\n+++ new\n@@ -2,6 +2,7 @@\n b\n c\n d\n+X\n e\n f\n g\n");
	free(d);
	d = report_unified_diff("same\n", "same\n", "a", "b");
	ck_assert_str_eq(d, "");
	free(d);
	d = report_unified_diff("x\n", "y\n", "a", "b");
	ck_assert_str_eq(d, "--- a\n+++ b\n@@ -1,1 +1,1 @@\n-x\n+y\n");
	free(d);
}
END_TEST

START_TEST(times)
{
	int64_t ms;
	char buf[40];

	ck_assert_int_eq(decisions_parse_time("2026-12-01T09:50:00Z", &ms), 0);
	ck_assert_int_eq(ms, 1796118600000LL);
	ck_assert_int_eq(decisions_parse_time("2026-12-01T10:50:00.250+01:00",
			     &ms),
	    0);
	ck_assert_int_eq(ms, 1796118600250LL);
	ck_assert_int_eq(decisions_parse_time("1796118600", &ms), 0);
	ck_assert_int_eq(ms, 1796118600000LL);
	decisions_format_time(1796118600250LL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2026-12-01T09:50:00.250Z");
	ck_assert_int_eq(decisions_parse_time("2026-02-31T00:00:00Z", &ms),
	    -EINVAL);
	ck_assert_int_eq(decisions_parse_time("7d", &ms), -EINVAL);
	ck_assert_int_eq(decisions_parse_time("2026-12-01T09:50:00", &ms),
	    -EINVAL);
	ck_assert_int_eq(decisions_parse_time("", &ms), -EINVAL);
}
END_TEST

/* n lines, one a second from t0 (Unix seconds), of job. */
static void
write_log(const char *path, long t0, int n, const char *job)
{
	FILE *f = fopen(path, "we");
	char ts[40];

	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < n; i++) {
		decisions_format_time((int64_t)(t0 + i) * 1000, ts, sizeof(ts));
		fprintf(f,
		    "{\"ts\":\"%s\",\"job\":\"%s\",\"decision\":\"%s\","
		    "\"seq\":%ld}\n",
		    ts, i % 5 == 0 ? "job_other" : job,
		    i % 2 == 0 ? "deny" : "allow", t0 + i);
	}
	fclose(f);
}

/* Every line q selects, page after page: how many, and the seqs in
 * order must rise. */
static size_t
scan_all(int dirfd, struct decisions_query *q, long *ret_first)
{
	struct decisions_page page;
	char cursor[DECISIONS_CURSOR_MAX] = "";
	size_t n = 0;
	long last = -1;

	*ret_first = -1;
	for (int pages = 0; pages < 10000; pages++) {
		q->cursor = cursor[0] != '\0' ? cursor : NULL;
		ck_assert_int_eq(decisions_scan(dirfd, "decisions.log", q,
				     &page),
		    0);
		json_t *d;
		size_t i;
		json_array_foreach(page.decisions, i, d)
		{
			long seq =
			    (long)json_integer_value(json_object_get(d, "seq"));
			ck_assert_int_gt(seq, last);
			if (*ret_first < 0)
				*ret_first = seq;
			last = seq;
			n++;
		}
		json_decref(page.decisions);
		if (page.next[0] == '\0')
			return n;
		snprintf(cursor, sizeof(cursor), "%s", page.next);
	}
	ck_abort_msg("the pages never ended");
	return n;
}

START_TEST(the_log_read_back_across_rotated_files)
{
	char path[PATH_MAX];
	long first;
	int dirfd;

	testutil_dir_setup();
	/* Oldest in .2, then .1, then the current file. */
	write_log(testutil_at(path, "decisions.log.2"), 1796110000, 1000,
	    "job_a");
	write_log(testutil_at(path, "decisions.log.1"), 1796111000, 1000,
	    "job_a");
	write_log(testutil_at(path, "decisions.log"), 1796112000, 1000,
	    "job_a");
	dirfd = open(testutil_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dirfd, 0);

	struct decisions_query q = { .since_ms = DECISIONS_NO_TIME,
		.until_ms = DECISIONS_NO_TIME,
		.limit = 7,
		.scan_max = 10000 };
	ck_assert_uint_eq(scan_all(dirfd, &q, &first), 3000);
	ck_assert_int_eq(first, 1796110000);
	q.job = "job_a";
	q.verdict = "deny";
	/* Even seconds not a multiple of 5 out of 10: 4 of every 10. */
	ck_assert_uint_eq(scan_all(dirfd, &q, &first), 1200);
	/* since found by bisection, inside the middle file; until stops. */
	q.job = NULL;
	q.verdict = NULL;
	q.since_ms = 1796111500LL * 1000;
	q.until_ms = 1796112099LL * 1000;
	ck_assert_uint_eq(scan_all(dirfd, &q, &first), 600);
	ck_assert_int_eq(first, 1796111500);

	/* A page, then a rotation (each file one up, a new current one):
	 * the cursor goes on where it was, in the file now named .2. */
	struct decisions_page page;
	struct decisions_query one = { .since_ms = 1796111990LL * 1000,
		.until_ms = DECISIONS_NO_TIME,
		.limit = 5 };
	ck_assert_int_eq(decisions_scan(dirfd, "decisions.log", &one, &page),
	    0);
	ck_assert_uint_eq(json_array_size(page.decisions), 5);
	json_decref(page.decisions);
	char a[PATH_MAX], b[PATH_MAX];
	ck_assert_int_eq(rename(testutil_at(a, "decisions.log.2"),
			     testutil_at(b, "decisions.log.3")),
	    0);
	ck_assert_int_eq(rename(testutil_at(a, "decisions.log.1"),
			     testutil_at(b, "decisions.log.2")),
	    0);
	ck_assert_int_eq(rename(testutil_at(a, "decisions.log"),
			     testutil_at(b, "decisions.log.1")),
	    0);
	write_log(testutil_at(path, "decisions.log"), 1796113000, 10, "job_a");
	char cursor[DECISIONS_CURSOR_MAX];
	snprintf(cursor, sizeof(cursor), "%s", page.next);
	one.cursor = cursor;
	one.limit = 20;
	ck_assert_int_eq(decisions_scan(dirfd, "decisions.log", &one, &page),
	    0);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_array_get(page.decisions, 0),
				 "seq")),
	    1796111995);
	json_decref(page.decisions);
	/* A cursor of another shape is refused. */
	one.cursor = "../../etc/passwd";
	ck_assert_int_eq(decisions_scan(dirfd, "decisions.log", &one, &page),
	    -EINVAL);
	close(dirfd);
	testutil_dir_teardown();
}
END_TEST

static Suite *
report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("core");

	testutil_tmp_fixture(tc, "report");
	tcase_add_test(tc, denials_grouped_with_counts_times_and_jobs);
	tcase_add_test(tc, a_rule_without_hits_is_stale);
	tcase_add_test(tc, a_proposal_is_the_paths_seen_twice);
	tcase_add_test(tc, a_hostile_job_cannot_steer_the_proposal_to_slash);
	tcase_add_test(tc, one_job_cannot_get_its_host_proposed);
	tcase_add_test(tc, a_known_host_path_from_one_job_says_so);
	tcase_add_test(tc, only_missing_rules_are_proposable);
	tcase_add_test(tc, over_the_warning_said);
	tcase_add_test(tc, unified_diff_shape);
	tcase_add_test(tc, times);
	tcase_add_test(tc, the_log_read_back_across_rotated_files);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(report_suite());
}
