/*
 * The denial report (report.h): jobs, manifests and groups kept as
 * jansson objects under caps, the proposal made from the groups when the
 * document is asked for, and a small line diff (an LCS table) for the
 * proposal's text.
 */
#include "report.h"

#include "buf.h"
#include "manifest.h"
#include "narrow.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIFF_LINES_MAX 4000
#define DIFF_CONTEXT 3

struct report {
	int64_t since_ms, until_ms;
	json_t *manifests; /* name -> {version, body, hits: {"host:port": n}} */
	json_t *jobs; /* job -> {manifest, egress|null} */
	json_t *groups; /* key -> group (below) */
	json_t *order; /* the groups' keys, in the order first seen */
	uint64_t unattributed; /* lines of jobs never given */
	uint64_t other_manifest; /* lines of jobs of manifests not asked */
	uint64_t dropped; /* denials past REPORT_GROUPS_MAX groups */
	uint64_t denials, allowed, errors;
};

struct report *
report_new(int64_t since_ms, int64_t until_ms)
{
	struct report *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->since_ms = since_ms;
	r->until_ms = until_ms;
	r->manifests = json_object();
	r->jobs = json_object();
	r->groups = json_object();
	r->order = json_array();
	if (r->manifests == NULL || r->jobs == NULL || r->groups == NULL ||
	    r->order == NULL) {
		report_free(r);
		return NULL;
	}
	return r;
}

void
report_free(struct report *r)
{
	if (r == NULL)
		return;
	json_decref(r->manifests);
	json_decref(r->jobs);
	json_decref(r->groups);
	json_decref(r->order);
	free(r);
}

int
report_manifest(struct report *r, const char *name, int64_t version,
    const json_t *body)
{
	json_t *egress = json_object_get(body, "egress");

	if (json_object_get(r->manifests, name) != NULL)
		return -EEXIST;
	if (!json_is_array(egress))
		return -EINVAL;
	json_t *m = json_pack("{s:I, s:O, s:{}}", "version",
	    (json_int_t)version, "body", body, "hits");
	if (m == NULL || json_object_set_new(r->manifests, name, m) < 0)
		return -ENOMEM;
	return 0;
}

int
report_job(struct report *r, const char *job, const char *manifest,
    const json_t *egress)
{
	json_t *j = json_pack("{s:s, s:O?}", "manifest", manifest, "egress",
	    json_is_array(egress) ? egress : NULL);

	if (j == NULL || json_object_set_new(r->jobs, job, j) < 0)
		return -ENOMEM;
	return 0;
}

/* A rule's port: its "port", or 443. */
static long long
rule_port(const json_t *rule)
{
	json_t *p = json_object_get(rule, "port");

	return json_is_integer(p) ? json_integer_value(p) : 443;
}

static void
rule_key(const json_t *rule, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%lld",
	    json_string_value(json_object_get(rule, "host")) ?: "",
	    rule_port(rule));
}

/* A string field of d, or "" (a group's key part). */
static const char *
field(const json_t *d, const char *name)
{
	return json_string_value(json_object_get(d, name)) ?: "";
}

/* The hit of an allowed (or failed upstream) request on its rule, as the
 * rule's host and port in the version the job ran. */
static void
count_hit(struct report *r, const json_t *job, json_t *m, const json_t *d)
{
	json_t *idx = json_object_get(d, "rule");
	json_t *rule = json_array_get(json_object_get(job, "egress"),
	    json_is_integer(idx) ? (size_t)json_integer_value(idx) : SIZE_MAX);
	char key[300];

	(void)r;
	if (rule == NULL)
		return;
	rule_key(rule, key, sizeof(key));
	json_t *hits = json_object_get(m, "hits");
	json_t *n = json_object_get(hits, key);
	json_object_set_new(hits, key,
	    json_integer((n != NULL ? json_integer_value(n) : 0) + 1));
}

int
report_decision(struct report *r, const json_t *d)
{
	const char *jobid = field(d, "job");
	const char *verdict = field(d, "decision");
	json_t *job = json_object_get(r->jobs, jobid), *m;
	struct buf key = BUF_INIT(1024);
	json_int_t count = json_is_integer(json_object_get(d, "count")) &&
		json_integer_value(json_object_get(d, "count")) > 0
	    ? json_integer_value(json_object_get(d, "count"))
	    : 1;

	if (job == NULL) {
		r->unattributed++;
		return 0;
	}
	m = json_object_get(r->manifests, field(job, "manifest"));
	if (m == NULL) {
		r->other_manifest++;
		return 0;
	}
	if (strcmp(verdict, "deny") != 0) {
		if (strcmp(verdict, "allow") == 0)
			r->allowed++;
		else
			r->errors++;
		count_hit(r, job, m, d);
		return 0;
	}
	r->denials += (uint64_t)count;
	/* The key: every part, with a separator no log field holds
	 * (decision.c escapes control characters). */
	long long port = json_is_integer(json_object_get(d, "port"))
	    ? json_integer_value(json_object_get(d, "port"))
	    : 0;
	if (buf_printf(&key,
		"%s\x1f%s\x1f%lld\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s",
		field(job, "manifest"), field(d, "host"), port,
		field(d, "method"), field(d, "path"), field(d, "reason"),
		field(d, "detail"), field(d, "kind"),
		strcmp(field(d, "reason"), "private_addr") == 0
		    ? field(d, "addr")
		    : "") < 0) {
		buf_free(&key);
		return -ENOMEM;
	}
	const char *ts = field(d, "ts");
	json_t *g = json_object_get(r->groups, buf_str(&key));
	if (g == NULL) {
		if (json_array_size(r->order) >= REPORT_GROUPS_MAX) {
			r->dropped += (uint64_t)count;
			buf_free(&key);
			return 0;
		}
		g = json_pack("{s:s, s:O, s:I, s:O, s:O, s:O, s:O, s:O, s:I, "
			      "s:s, s:s, s:[], s:I}",
		    "manifest", field(job, "manifest"), "host",
		    json_object_get(d, "host") ?: json_null(), "port",
		    (json_int_t)port, "method",
		    json_object_get(d, "method") ?: json_null(), "path",
		    json_object_get(d, "path") ?: json_null(), "reason",
		    json_object_get(d, "reason") ?: json_null(), "detail",
		    json_object_get(d, "detail") ?: json_null(), "kind",
		    json_object_get(d, "kind") ?: json_null(), "count",
		    (json_int_t)0, "first_seen", ts, "last_seen", ts, "jobs",
		    "jobs_more", (json_int_t)0);
		/* The address a private_addr refused: its rule's range. */
		if (g != NULL &&
		    strcmp(field(d, "reason"), "private_addr") == 0 &&
		    json_is_string(json_object_get(d, "addr")))
			(void)json_object_set(g, "addr",
			    json_object_get(d, "addr"));
		if (g == NULL ||
		    json_object_set_new(r->groups, buf_str(&key), g) < 0 ||
		    json_array_append_new(r->order,
			json_string(buf_str(&key))) < 0) {
			buf_free(&key);
			return -ENOMEM;
		}
	}
	buf_free(&key);
	json_object_set_new(g, "count",
	    json_integer(
		json_integer_value(json_object_get(g, "count")) + count));
	if (strcmp(ts, field(g, "first_seen")) < 0)
		json_object_set_new(g, "first_seen", json_string(ts));
	if (strcmp(ts, field(g, "last_seen")) > 0)
		json_object_set_new(g, "last_seen", json_string(ts));
	json_t *jobs = json_object_get(g, "jobs"), *v;
	size_t i;
	bool known = false;
	json_array_foreach(jobs, i, v) known =
	    known || strcmp(json_string_value(v), jobid) == 0;
	if (!known && json_array_size(jobs) < REPORT_JOBS_SHOWN)
		json_array_append_new(jobs, json_string(jobid));
	else if (!known)
		json_object_set_new(g, "jobs_more",
		    json_integer(
			json_integer_value(json_object_get(g, "jobs_more")) +
			1));
	return 0;
}

/* --- what may be proposed ------------------------------------------------- */

static const char *const proposable_methods[] = { "GET", "HEAD", "POST", "PUT",
	"PATCH", "DELETE", "OPTIONS" };

/*
 * The rule narrow_rule offers for the group g (the same the proxy's
 * cordon.local/v1/denials offers for each of its denials), set as g's
 * "rule" (null when none), and whether it may be proposed here: a rule
 * with the method and path seen, no upgrade and no range of addresses
 * (those are for a person to decide); when not, why.
 */
static bool
proposable(json_t *g, char *why_buf, size_t len, const char **ret_why)
{
	struct narrow_denial d = { .kind = field(g, "kind"),
		.method = field(g, "method"),
		.host = field(g, "host"),
		.path = field(g, "path"),
		.reason = field(g, "reason"),
		.detail = field(g, "detail"),
		.addr = field(g, "addr"),
		.port = json_integer_value(json_object_get(g, "port")) };
	struct narrow_rule rule;
	const char *cls = narrow_address_class(d.host);
	int r = narrow_rule(&d, &rule, ret_why);

	json_object_set_new(g, "rule",
	    r == 0 ? narrow_rule_json(&rule) : json_null());
	if (r < 0 && cls != NULL) {
		snprintf(why_buf, len,
		    "an address where a name belongs (%s%s): no rule can "
		    "allow it",
		    cls,
		    strcmp(cls, "public") == 0 || strcmp(cls, "numeric") == 0
			? ""
			: " range");
		*ret_why = why_buf;
	}
	if (r < 0)
		return false;
	if (strcmp(d.kind, "dns") == 0) {
		*ret_why = "a name looked up by the job's resolver, never "
			   "connected to: port, method and path unknown (the "
			   "rule shown allows the whole host: not proposed)";
		return false;
	}
	if (!rule.seen) {
		*ret_why = "refused at CONNECT: the method and path inside "
			   "were never seen (the rule shown allows the whole "
			   "host: not proposed; a rule for the host with the "
			   "narrowest methods and paths you expect shows them "
			   "in the next report)";
		return false;
	}
	if (rule.upgrade) {
		*ret_why = "an upgrade (a WebSocket) was refused: the rule "
			   "shown adds upgrade: true, for a person to decide: "
			   "not proposed";
		return false;
	}
	if (rule.cidr[0] != '\0') {
		*ret_why = "the name resolved only into a refused range: the "
			   "rule shown lets it reach the one address refused "
			   "(allow_cidrs), for a person to decide: not "
			   "proposed";
		return false;
	}
	return true;
}

/* The group's rule's host, first method and first path ("" when none). */
static const char *
rule_part(const json_t *g, const char *key)
{
	const json_t *rule = json_object_get(g, "rule");
	const char *v = strcmp(key, "host") == 0
	    ? json_string_value(json_object_get(rule, "host"))
	    : json_string_value(json_array_get(json_object_get(rule, key), 0));

	return v != NULL ? v : "";
}

/* --- the proposal --------------------------------------------------------- */

/* The index of body's rule for exactly host and port, or -1. */
static long
find_rule(const json_t *egress, const char *host, long long port)
{
	json_t *rule;
	size_t i;

	json_array_foreach(egress, i, rule)
	{
		if (strcmp(field(rule, "host"), host) == 0 &&
		    rule_port(rule) == port)
			return (long)i;
	}
	return -1;
}

static bool
in_strings(const json_t *list, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach(list, i, v)
	{
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	}
	return false;
}

/* True when a prefix of paths (NULL: the default "/") allows path. */
static bool
covered(const json_t *paths, const char *path)
{
	json_t *v;
	size_t i;

	if (paths == NULL)
		return true;
	json_array_foreach(paths, i, v)
	{
		const char *p = json_string_value(v);
		if (p != NULL && strncmp(path, p, strlen(p)) == 0)
			return true;
	}
	return false;
}

/* How many jobs a group's denials came from: those named, and those
 * counted past REPORT_JOBS_SHOWN. */
static json_int_t
group_jobs(const json_t *g)
{
	return (json_int_t)json_array_size(json_object_get(g, "jobs")) +
	    json_integer_value(json_object_get(g, "jobs_more"));
}

static int
by_count(const void *a, const void *b)
{
	json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t cx = json_integer_value(json_object_get(x, "count"));
	json_int_t cy = json_integer_value(json_object_get(y, "count"));

	if (cx != cy)
		return cx > cy ? -1 : 1;
	return strcmp(field(x, "path"), field(y, "path"));
}

/*
 * The proposal for one manifest from its proposed groups (an array): a
 * new object {rules: [...], left_out: [...], manifest, diff, problems,
 * warnings}; rules says, per host and port, what is added and why.
 */
static json_t *
propose(const char *name, const json_t *m, json_t *groups)
{
	const json_t *body = json_object_get(m, "body");
	json_t *proposed = json_deep_copy(body);
	json_t *egress = json_object_get(proposed, "egress");
	json_t *targets = json_object(); /* "host:port" -> [groups] */
	json_t *rules = json_array(), *left = json_array(), *g, *list;
	const char *key;
	size_t i;

	json_array_foreach(groups, i, g)
	{
		char k[300], lower[254];
		snprintf(lower, sizeof(lower), "%s", rule_part(g, "host"));
		for (char *p = lower; *p != '\0'; p++)
			*p = (char)tolower((unsigned char)*p);
		snprintf(k, sizeof(k), "%s:%lld", lower,
		    (long long)(json_is_integer(
				    json_object_get(json_object_get(g, "rule"),
					"port"))
			    ? json_integer_value(
				  json_object_get(json_object_get(g, "rule"),
				      "port"))
			    : 443));
		list = json_object_get(targets, k);
		if (list == NULL) {
			list = json_array();
			json_object_set_new(targets, k, list);
		}
		json_array_append(list, g);
	}
	json_object_foreach(targets, key, list)
	{
		/* The paths, most denied first, each once (summing the
		 * methods' groups). */
		size_t n = json_array_size(list);
		json_t **sorted = calloc(n, sizeof(*sorted));
		if (sorted == NULL)
			continue;
		for (i = 0; i < n; i++)
			sorted[i] = json_array_get(list, i);
		qsort(sorted, n, sizeof(*sorted), by_count);
		json_t *methods = json_array(), *paths = json_array();
		json_int_t denials = 0, more = 0;
		json_t *jobs = json_array();
		const char *first = NULL, *last = NULL;
		char host[254], why_new[300];
		const char *colon = strrchr(key, ':');
		snprintf(host, sizeof(host), "%.*s", (int)(colon - key), key);
		long long port = strtoll(colon + 1, NULL, 10);
		long at = find_rule(egress, host, port);
		bool is_new = at < 0;
		for (i = 0; i < n; i++) {
			json_t *s = sorted[i], *j;
			size_t k;
			const char *why = NULL;
			if (strcmp(rule_part(s, "paths"), "/") == 0 ||
			    rule_part(s, "paths")[0] == '\0')
				why =
				    "the path \"/\" as a rule's prefix allows "
				    "every path on the host: not proposed";
			else if (is_new &&
			    group_jobs(s) < REPORT_MIN_JOBS_NEW_HOST) {
				/* A job chooses what it is denied: alone, it
				 * could get its own host proposed. */
				snprintf(why_new, sizeof(why_new),
				    "a host no rule of %s names, asked for by "
				    "%lld job(s): a new host's path is "
				    "proposed only when %d jobs or more were "
				    "denied it (one job could steer it to a "
				    "host of its choosing)",
				    name, (long long)group_jobs(s),
				    REPORT_MIN_JOBS_NEW_HOST);
				why = why_new;
			} else if (!in_strings(paths, rule_part(s, "paths")) &&
			    json_array_size(paths) >= REPORT_PATHS_MAX)
				why = "more than 8 distinct paths on one host: "
				      "listed, not proposed, and never widened "
				      "to a common prefix";
			if (why != NULL) {
				json_array_append_new(left,
				    json_pack("{s:s, s:O, s:O, s:O, s:O, s:I, "
					      "s:s}",
					"manifest", name, "host",
					json_object_get(s, "host"), "method",
					json_object_get(s, "method"), "path",
					json_object_get(s, "path"), "count",
					json_object_get(s, "count"), "jobs",
					group_jobs(s), "why", why));
				continue;
			}
			if (!in_strings(paths, rule_part(s, "paths")))
				json_array_append_new(paths,
				    json_string(rule_part(s, "paths")));
			if (!in_strings(methods, rule_part(s, "methods")))
				json_array_append_new(methods,
				    json_string(rule_part(s, "methods")));
			denials +=
			    json_integer_value(json_object_get(s, "count"));
			json_array_foreach(json_object_get(s, "jobs"), k, j)
			{
				if (!in_strings(jobs, json_string_value(j)))
					json_array_append(jobs, j);
			}
			if (json_integer_value(
				json_object_get(s, "jobs_more")) > more)
				more = json_integer_value(
				    json_object_get(s, "jobs_more"));
			if (first == NULL ||
			    strcmp(field(s, "first_seen"), first) < 0)
				first = field(s, "first_seen");
			if (last == NULL ||
			    strcmp(field(s, "last_seen"), last) > 0)
				last = field(s, "last_seen");
		}
		free(sorted);
		if (json_array_size(paths) == 0) {
			json_decref(methods);
			json_decref(paths);
			json_decref(jobs);
			continue;
		}
		/* Methods in the manifest's usual order. */
		json_t *ordered = json_array();
		for (i = 0; i < ARRAY_SIZE(proposable_methods); i++)
			if (in_strings(methods, proposable_methods[i]))
				json_array_append_new(ordered,
				    json_string(proposable_methods[i]));
		json_decref(methods);
		methods = ordered;
		/* At least: a job past those named in one group may be one
		 * named in another. */
		json_int_t njobs = (json_int_t)json_array_size(jobs) + more;
		json_t *note = json_array();
		bool combine_noted = false;
		if (njobs < REPORT_MIN_JOBS_NEW_HOST)
			json_array_append_new(note,
			    json_string("asked for by one job only: a job "
					"chooses what it is denied, so it can "
					"steer this proposal; check that the "
					"task needs each path and method"));
		if (at < 0) {
			char why[400];
			snprintf(why, sizeof(why),
			    "proposed by cordon egress-report for manifest "
			    "%s: %lld denials by %lld jobs, %s to %s; review "
			    "before use",
			    name, (long long)denials, (long long)njobs, first,
			    last);
			json_t *rule = json_pack("{s:s, s:I, s:O, s:O, s:s}",
			    "host", host, "port", (json_int_t)port, "methods",
			    methods, "paths", paths, "reason", why);
			json_array_append_new(egress, rule);
			at = (long)json_array_size(egress) - 1;
		} else {
			json_t *rule = json_array_get(egress, (size_t)at), *v;
			json_t *rm = json_object_get(rule, "methods");
			json_t *rp = json_object_get(rule, "paths");
			json_array_foreach(methods, i, v)
			{
				if (!in_strings(rm, json_string_value(v)))
					json_array_append(rm, v);
			}
			json_array_foreach(paths, i, v)
			{
				if (!covered(rp, json_string_value(v)))
					json_array_append(rp, v);
			}
			combine_noted = rp == NULL || json_array_size(rm) > 1;
			if (rp == NULL)
				json_array_append_new(note,
				    json_string("the rule has no paths (all "
						"of \"/\"): a method added "
						"is allowed on every path"));
			else if (json_array_size(rm) > 1)
				json_array_append_new(note,
				    json_string("a rule's methods and paths "
						"combine: each method is "
						"allowed on each path"));
		}
		if (at >= 0 && json_array_size(methods) > 1 &&
		    json_array_size(paths) > 1 && !combine_noted)
			json_array_append_new(note,
			    json_string("a rule's methods and paths combine: "
					"each method is allowed on each path"));
		json_array_append_new(rules,
		    json_pack("{s:s, s:s, s:I, s:i, s:b, s:o, s:o, s:I, s:o, "
			      "s:I, s:o}",
			"manifest", name, "host", host, "port",
			(json_int_t)port, "index", (int)at, "new", is_new,
			"methods", methods, "paths", paths, "denials",
			(json_int_t)denials, "jobs", jobs, "jobs_count", njobs,
			"notes", note));
	}
	json_decref(targets);
	json_t *problems = json_array(), *warnings = json_array();
	(void)manifest_validate(proposed, name, problems, warnings);
	char *old_text = json_dumps(body, JSON_INDENT(2));
	char *new_text = json_dumps(proposed, JSON_INDENT(2));
	char la[200], lb[200];
	snprintf(la, sizeof(la), "%s (version %lld, at the broker)", name,
	    (long long)json_integer_value(json_object_get(m, "version")));
	snprintf(lb, sizeof(lb), "%s (proposed, not applied)", name);
	char *diff = old_text != NULL && new_text != NULL
	    ? report_unified_diff(old_text, new_text, la, lb)
	    : NULL;
	json_t *out = json_pack("{s:o, s:o, s:o, s:s?, s:o, s:o}", "rules",
	    rules, "left_out", left, "manifest",
	    json_array_size(rules) > 0 ? proposed : json_null(), "diff", diff,
	    "problems", problems, "warnings", warnings);
	if (json_array_size(rules) == 0)
		json_decref(proposed);
	free(old_text);
	free(new_text);
	free(diff);
	return out;
}

json_t *
report_document(struct report *r)
{
	json_t *out = json_object(), *groups = json_array();
	json_t *apart = json_array(), *mans = json_array(), *key;
	json_t *per = json_object(); /* manifest -> [proposed groups] */
	char since[40] = "", until[40] = "";
	size_t i;

	json_array_foreach(r->order, i, key)
	{
		json_t *g = json_deep_copy(
		    json_object_get(r->groups, json_string_value(key)));
		char buf[300];
		const char *why = NULL;
		bool ok = proposable(g, buf, sizeof(buf), &why);
		json_int_t count =
		    json_integer_value(json_object_get(g, "count"));
		json_object_set_new(g, "proposable", json_boolean(ok));
		if (ok && count < REPORT_MIN_REPEATS) {
			snprintf(buf, sizeof(buf),
			    "denied %lld time: a proposal needs %d or more",
			    (long long)count, REPORT_MIN_REPEATS);
			why = buf;
		}
		json_object_set_new(g, "proposed",
		    json_boolean(ok && count >= REPORT_MIN_REPEATS));
		if (why != NULL)
			json_object_set_new(g, "why", json_string(why));
		if (!ok)
			json_array_append(apart, g);
		else if (count >= REPORT_MIN_REPEATS) {
			const char *mn = field(g, "manifest");
			json_t *list = json_object_get(per, mn);
			if (list == NULL) {
				list = json_array();
				json_object_set_new(per, mn, list);
			}
			json_array_append(list, g);
		}
		json_array_append_new(groups, g);
	}
	const char *name;
	json_t *m;
	json_object_foreach(r->manifests, name, m)
	{
		json_t *egress =
		    json_object_get(json_object_get(m, "body"), "egress");
		json_t *hits = json_object_get(m, "hits"), *rule;
		json_t *rules = json_array(), *stale = json_array();
		size_t n = json_array_size(egress);
		json_int_t jobs = 0;
		const char *jid;
		json_t *j;
		json_object_foreach(r->jobs, jid, j)
		{
			if (strcmp(field(j, "manifest"), name) == 0)
				jobs++;
		}
		json_array_foreach(egress, i, rule)
		{
			char k[300];
			rule_key(rule, k, sizeof(k));
			json_int_t h =
			    json_integer_value(json_object_get(hits, k));
			json_t *one =
			    json_pack("{s:i, s:O?, s:I, s:I, s:b}", "index",
				(int)i, "host", json_object_get(rule, "host"),
				"port", (json_int_t)rule_port(rule), "hits", h,
				"stale", h == 0);
			json_array_append(rules, one);
			if (h == 0)
				json_array_append(stale, one);
			json_decref(one);
		}
		json_t *list = json_object_get(per, name);
		json_t *none = json_array();
		json_t *prop = propose(name, m, list != NULL ? list : none);
		json_decref(none);
		json_array_append_new(mans,
		    json_pack("{s:s, s:O, s:I, s:i, s:i, s:i, s:b, s:o, s:o, "
			      "s:o}",
			"name", name, "version", json_object_get(m, "version"),
			"jobs", jobs, "rules_count", (int)n, "warn_over",
			MANIFEST_WARN_EGRESS, "refused_over",
			MANIFEST_MAX_EGRESS, "over_warning",
			n > MANIFEST_WARN_EGRESS, "rules", rules, "stale",
			stale, "proposal", prop));
	}
	json_decref(per);
	if (r->since_ms != INT64_MIN) {
		time_t t = (time_t)(r->since_ms / 1000);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	if (r->until_ms != INT64_MIN) {
		time_t t = (time_t)(r->until_ms / 1000);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	json_object_set_new(out, "since",
	    since[0] != '\0' ? json_string(since) : json_null());
	json_object_set_new(out, "until",
	    until[0] != '\0' ? json_string(until) : json_null());
	json_object_set_new(out, "min_repeats",
	    json_integer(REPORT_MIN_REPEATS));
	json_object_set_new(out, "counts",
	    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "denials",
		(json_int_t)r->denials, "allowed", (json_int_t)r->allowed,
		"errors", (json_int_t)r->errors, "unattributed",
		(json_int_t)r->unattributed, "other_manifests",
		(json_int_t)r->other_manifest, "dropped",
		(json_int_t)r->dropped));
	json_object_set_new(out, "denials", groups);
	json_object_set_new(out, "not_proposable", apart);
	json_object_set_new(out, "manifests", mans);
	return out;
}

/* --- the diff ------------------------------------------------------------- */

/* Splits text into lines (pointers into a copy): how many, or -1. */
static long
split_lines(const char *text, char **ret_copy, char ***ret_lines)
{
	char *copy = strdup(text), **lines = NULL;
	long n = 0, cap = 0;

	if (copy == NULL)
		return -1;
	for (char *p = copy; *p != '\0';) {
		char *nl = strchr(p, '\n');
		if (n == cap) {
			cap = cap == 0 ? 64 : cap * 2;
			char **l = realloc(lines, (size_t)cap * sizeof(*l));
			if (l == NULL || cap > DIFF_LINES_MAX * 2) {
				free(l != NULL ? l : lines);
				free(copy);
				return -1;
			}
			lines = l;
		}
		lines[n++] = p;
		if (nl == NULL)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	if (n > DIFF_LINES_MAX) {
		free(lines);
		free(copy);
		return -1;
	}
	*ret_copy = copy;
	*ret_lines = lines;
	return n;
}

char *
report_unified_diff(const char *old_text, const char *new_text,
    const char *old_label, const char *new_label)
{
	char *ca = NULL, *cb = NULL, **a = NULL, **b = NULL;
	long na = split_lines(old_text, &ca, &a);
	long nb = na >= 0 ? split_lines(new_text, &cb, &b) : -1;
	unsigned *lcs = NULL;
	char *ops = NULL; /* '=', '-', '+' in order */
	long nops = 0;
	struct buf out = BUF_INIT(1024 * 1024);
	char *ret = NULL;

	if (na < 0 || nb < 0)
		goto out;
	lcs = calloc((size_t)(na + 1) * (size_t)(nb + 1), sizeof(*lcs));
	ops = malloc((size_t)(na + nb + 1));
	if (lcs == NULL || ops == NULL)
		goto out;
#define L(i, j) lcs[(size_t)(i) * (size_t)(nb + 1) + (size_t)(j)]
	for (long i = na - 1; i >= 0; i--)
		for (long j = nb - 1; j >= 0; j--)
			L(i, j) = strcmp(a[i], b[j]) == 0
			    ? L(i + 1, j + 1) + 1
			    : (L(i + 1, j) >= L(i, j + 1) ? L(i + 1, j)
							  : L(i, j + 1));
	for (long i = 0, j = 0; i < na || j < nb;) {
		if (i < na && j < nb && strcmp(a[i], b[j]) == 0) {
			ops[nops++] = '=';
			i++, j++;
		} else if (i < na && (j == nb || L(i + 1, j) >= L(i, j + 1))) {
			ops[nops++] = '-';
			i++;
		} else {
			ops[nops++] = '+';
			j++;
		}
	}
#undef L
	bool any = false;
	for (long k = 0; k < nops; k++)
		any = any || ops[k] != '=';
	if (!any) {
		ret = strdup("");
		goto out;
	}
	if (buf_printf(&out, "--- %s\n+++ %s\n", old_label, new_label) < 0)
		goto out;
	/* Hunks: each change with DIFF_CONTEXT lines around it, joined
	 * when their contexts touch. */
	long k = 0, ia = 0, ib = 0;
	while (k < nops) {
		long c = k;
		while (c < nops && ops[c] == '=')
			c++;
		if (c == nops)
			break;
		long start = c - DIFF_CONTEXT > k ? c - DIFF_CONTEXT : k;
		/* Line numbers at start. */
		long sa = ia, sb = ib;
		for (long t = k; t < start; t++)
			sa++, sb++;
		long end = c, eq = 0;
		for (long t = c; t < nops; t++) {
			if (ops[t] == '=') {
				if (++eq > 2 * DIFF_CONTEXT)
					break;
			} else
				eq = 0, end = t + 1;
		}
		long stop =
		    end + DIFF_CONTEXT < nops ? end + DIFF_CONTEXT : nops;
		long la = 0, lb = 0;
		for (long t = start; t < stop; t++) {
			la += ops[t] != '+';
			lb += ops[t] != '-';
		}
		if (buf_printf(&out, "@@ -%ld,%ld +%ld,%ld @@\n",
			la > 0 ? sa + 1 : sa, la, lb > 0 ? sb + 1 : sb, lb) < 0)
			goto out;
		long xa = sa, xb = sb;
		for (long t = start; t < stop; t++) {
			int w;
			if (ops[t] == '=')
				w = buf_printf(&out, " %s\n", a[xa++]), xb++;
			else if (ops[t] == '-')
				w = buf_printf(&out, "-%s\n", a[xa++]);
			else
				w = buf_printf(&out, "+%s\n", b[xb++]);
			if (w < 0)
				goto out;
		}
		ia = xa;
		ib = xb;
		k = stop;
	}
	ret = buf_steal(&out, NULL);
out:
	buf_free(&out);
	free(lcs);
	free(ops);
	free(a);
	free(b);
	free(ca);
	free(cb);
	return ret;
}
