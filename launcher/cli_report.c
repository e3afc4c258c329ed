/*
 * `cordon egress-report [--manifest NAME] [--since 7d] [--json]`: the
 * denial report. It reads the manifests at the broker (GET /v1/manifests
 * and each one), the proxy's decisions of the period page by page (GET
 * /v1/decisions, oldest first), and for each job met in them its manifest
 * and the rules of the version it ran (GET /v1/jobs/{job}, the manifest at
 * that version), and hands them to report.c. Everything with the admin
 * key. It prints the denials grouped, the stale rules, the manifests over
 * the warning, and the proposal as a unified diff of the manifest's JSON;
 * nothing is applied. What a job chose is printed without control
 * characters.
 */
#include "cli.h"
#include "decisions.h"
#include "manifest.h"
#include "report.h"
#include "util.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPORT_PAGE 1000
#define REPORT_PAGES_MAX 1000000 /* a proxy's next that never ends */

/*
 * --since: "30m", "12h", "7d" before now, or an RFC 3339 time: 0 with the
 * time in ms, or -EINVAL.
 */
static int
parse_since(const char *s, int64_t now_ms, int64_t *ret)
{
	size_t n = strlen(s);
	char *end;

	if (n >= 2 && strchr("mhd", s[n - 1]) != NULL && s[0] >= '0' &&
	    s[0] <= '9') {
		errno = 0;
		long long v = strtoll(s, &end, 10);
		if (errno != 0 || end != s + n - 1 || v < 1 || v > 100000)
			return -EINVAL;
		int64_t unit = s[n - 1] == 'm' ? 60
		    : s[n - 1] == 'h'          ? 3600
					       : 86400;
		*ret = now_ms - (int64_t)v * unit * 1000;
		return 0;
	}
	/* A time, not bare seconds: "7" is a mistake, not 1970. */
	if (strspn(s, "0123456789") == n)
		return -EINVAL;
	return decisions_parse_time(s, ret);
}

/* GET path at the broker (quiet about a 404): 0 with *a, 1 for a 404,
 * or the exit status, with the reason printed. */
static int
broker_get(struct cli *c, const char *path, struct httpc_answer *a)
{
	int r = httpc_request(c->cfg.broker, "GET", path, c->key, NULL, NULL,
	    20000, a);

	if (r < 0) {
		fprintf(stderr, "%s: %s did not answer (%s)\n", c->prog,
		    c->cfg.broker, strerror(-r));
		return EXIT_UNAVAIL;
	}
	if (a->status == 200 && json_is_object(a->json))
		return 0;
	if (a->status == 404) {
		httpc_answer_free(a);
		return 1;
	}
	const char *m = launcher_answer_message(a);
	fprintf(stderr, "%s: the broker answered %ld to %s: ", c->prog,
	    a->status, path);
	cli_print_clean(stderr, m, strlen(m));
	fputc('\n', stderr);
	httpc_answer_free(a);
	return EXIT_UNAVAIL;
}

/* The names of every manifest at the broker, page after page. */
static int
manifest_names(struct cli *c, json_t *names)
{
	char after[80] = "", path[200];
	const char *next;
	json_t *e;
	size_t i;
	int r;

	do {
		struct httpc_answer a;
		snprintf(path, sizeof(path), "/v1/manifests?limit=100%s%s",
		    after[0] != '\0' ? "&after=" : "", after);
		if ((r = broker_get(c, path, &a)) != 0)
			return r == 1 ? EXIT_UNAVAIL : r;
		json_array_foreach(json_object_get(a.json, "manifests"), i, e)
		{
			const char *n =
			    json_string_value(json_object_get(e, "name"));
			if (n != NULL && manifest_name_ok(n))
				json_array_append_new(names, json_string(n));
		}
		next = json_string_value(json_object_get(a.json, "next"));
		if (next != NULL &&
		    (!manifest_name_ok(next) || strcmp(next, after) <= 0))
			next = NULL;
		if (next != NULL)
			snprintf(after, sizeof(after), "%s", next);
		httpc_answer_free(&a);
	} while (next != NULL);
	return 0;
}

/* What the report knows of the jobs met, and the versions fetched. */
struct walk {
	struct cli *c;
	struct report *rep;
	json_t *wanted; /* manifest name -> true */
	json_t *jobs; /* job -> true, once given to the report */
	json_t *versions; /* "name@version" -> egress, or null */
};

/* The egress of name at version (cached), borrowed; NULL when unknown. */
static json_t *
version_egress(struct walk *w, const char *name, long long version)
{
	char key[120], path[200];
	struct httpc_answer a;
	json_t *v;

	snprintf(key, sizeof(key), "%s@%lld", name, version);
	if ((v = json_object_get(w->versions, key)) != NULL)
		return json_is_array(v) ? v : NULL;
	snprintf(path, sizeof(path), "/v1/manifests/%s?version=%lld", name,
	    version);
	v = json_null();
	if (broker_get(w->c, path, &a) == 0) {
		json_t *e = json_object_get(json_object_get(a.json, "manifest"),
		    "egress");
		if (json_is_array(e))
			v = json_incref(e);
		httpc_answer_free(&a);
	}
	json_object_set_new(w->versions, key, v);
	return json_is_array(v) ? v : NULL;
}

/* Tells the report about the job of decision d the first time it is met. */
static void
learn_job(struct walk *w, const json_t *d)
{
	const char *job = json_string_value(json_object_get(d, "job"));
	struct httpc_answer a;
	char path[160];

	if (job == NULL || !name_ok(job, 63, "_-") ||
	    json_object_get(w->jobs, job) != NULL)
		return;
	json_object_set_new(w->jobs, job, json_true());
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	if (broker_get(w->c, path, &a) != 0)
		return; /* unknown at the broker: unattributed */
	const char *m = json_string_value(json_object_get(a.json, "manifest"));
	long long version =
	    json_integer_value(json_object_get(a.json, "manifest_version"));
	if (m != NULL && manifest_name_ok(m)) {
		json_t *egress = json_object_get(w->wanted, m) != NULL
		    ? version_egress(w, m, version)
		    : NULL;
		(void)report_job(w->rep, job, m, egress);
	}
	httpc_answer_free(&a);
}

/* Every decision of the period from the proxy, into the report. */
static int
read_decisions(struct walk *w, int64_t since_ms, int64_t until_ms)
{
	char since[40], until[40], cursor[DECISIONS_CURSOR_MAX] = "";
	struct cli *c = w->c;
	struct buf path = BUF_INIT(512);
	json_t *d;
	size_t i;

	decisions_format_time(since_ms, since, sizeof(since));
	decisions_format_time(until_ms, until, sizeof(until));
	for (long pages = 0; pages < REPORT_PAGES_MAX; pages++) {
		struct httpc_answer a;
		buf_reset(&path);
		(void)buf_printf(&path,
		    "/v1/decisions?since=%s&until=%s&limit=%d%s%s", since,
		    until, REPORT_PAGE, cursor[0] != '\0' ? "&cursor=" : "",
		    cursor);
		int r =
		    cli_call(c, c->cfg.proxy, "GET", buf_str(&path), NULL, &a);
		if (r == 1)
			fprintf(stderr,
			    "cordon egress-report: the proxy reads its "
			    "decision log to the admin's key only: give it "
			    "admin_key_sha256 (or admin_key_file; "
			    "docs/operations.md#keys)\n");
		if (r != 0) {
			buf_free(&path);
			return r;
		}
		json_array_foreach(json_object_get(a.json, "decisions"), i, d)
		{
			learn_job(w, d);
			if (report_decision(w->rep, d) < 0) {
				httpc_answer_free(&a);
				buf_free(&path);
				return EXIT_SOFTWARE;
			}
		}
		const char *next =
		    json_string_value(json_object_get(a.json, "next"));
		bool more = next != NULL && decisions_cursor_ok(next);
		if (more)
			snprintf(cursor, sizeof(cursor), "%s", next);
		httpc_answer_free(&a);
		if (!more)
			break;
	}
	buf_free(&path);
	return 0;
}

/* --- the text ------------------------------------------------------------- */

static void
clean(const char *s)
{
	cli_print_clean(stdout, s, strlen(s));
}

static const char *
str(const json_t *o, const char *name, const char *none)
{
	return json_string_value(json_object_get(o, name)) ?: none;
}

static void
print_group(const json_t *g)
{
	printf("  %6lld  ",
	    (long long)json_integer_value(json_object_get(g, "count")));
	clean(str(g, "host", "?"));
	printf(":%lld ",
	    (long long)json_integer_value(json_object_get(g, "port")));
	clean(str(g, "method", "-"));
	printf(" ");
	clean(str(g, "path", "-"));
	printf("  reason=");
	clean(str(g, "reason", "-"));
	if (json_is_string(json_object_get(g, "detail"))) {
		printf(" detail=");
		clean(str(g, "detail", ""));
	}
	printf("  %s .. %s  ", str(g, "first_seen", "-"),
	    str(g, "last_seen", "-"));
	json_t *j;
	size_t i;
	json_array_foreach(json_object_get(g, "jobs"), i, j)
	{
		printf("%s", i > 0 ? "," : "");
		clean(json_string_value(j));
	}
	json_int_t more = json_integer_value(json_object_get(g, "jobs_more"));
	if (more > 0)
		printf(" (+%lld)", (long long)more);
	printf("\n");
}

static void
print_report(const json_t *doc)
{
	const json_t *counts = json_object_get(doc, "counts");
	json_t *g, *m;
	size_t i;

	printf("cordon egress-report: %s to %s: %lld denials, %lld allowed, "
	       "%lld upstream errors",
	    str(doc, "since", "-"), str(doc, "until", "-"),
	    (long long)json_integer_value(json_object_get(counts, "denials")),
	    (long long)json_integer_value(json_object_get(counts, "allowed")),
	    (long long)json_integer_value(json_object_get(counts, "errors")));
	json_int_t un =
	    json_integer_value(json_object_get(counts, "unattributed"));
	if (un > 0)
		printf("; %lld lines of jobs the broker does not know",
		    (long long)un);
	printf("\n\ndenials by host, method and path (count, host:port "
	       "method path, reason, first .. last seen, jobs):\n");
	json_array_foreach(json_object_get(doc, "denials"), i, g)
	    print_group(g);
	if (json_array_size(json_object_get(doc, "denials")) == 0)
		printf("  none\n");
	if (json_array_size(json_object_get(doc, "not_proposable")) > 0) {
		printf("\nnot proposable (no rule would be right to allow "
		       "them):\n");
		json_array_foreach(json_object_get(doc, "not_proposable"), i, g)
		{
			printf("  ");
			clean(str(g, "host", "?"));
			printf(" ");
			clean(str(g, "method", "-"));
			printf(" ");
			clean(str(g, "path", "-"));
			printf(" (%s, %lld): ", str(g, "reason", "-"),
			    (long long)json_integer_value(
				json_object_get(g, "count")));
			clean(str(g, "why", ""));
			printf("\n");
		}
	}
	json_array_foreach(json_object_get(doc, "manifests"), i, m)
	{
		json_t *prop = json_object_get(m, "proposal"), *v;
		size_t k;
		printf("\nmanifest %s (version %lld): %lld job(s) in the "
		       "period, "
		       "%lld rule(s)",
		    str(m, "name", "?"),
		    (long long)json_integer_value(
			json_object_get(m, "version")),
		    (long long)json_integer_value(json_object_get(m, "jobs")),
		    (long long)json_integer_value(
			json_object_get(m, "rules_count")));
		if (json_is_true(json_object_get(m, "over_warning")))
			printf(": over the warning of %d (is each one still "
			       "needed?)",
			    MANIFEST_WARN_EGRESS);
		printf("\n");
		json_array_foreach(json_object_get(m, "stale"), k, v)
		{
			printf("  stale: egress[%lld] ",
			    (long long)json_integer_value(
				json_object_get(v, "index")));
			clean(str(v, "host", "?"));
			printf(":%lld had no hit in the period\n",
			    (long long)json_integer_value(
				json_object_get(v, "port")));
		}
		json_t *rules = json_object_get(prop, "rules");
		if (json_array_size(rules) == 0) {
			printf("  proposal: none (no missing rule was denied "
			       "%d times or more)\n",
			    REPORT_MIN_REPEATS);
		} else {
			printf("  proposal, from requests denied %d times or "
			       "more (not applied: review it, then cordon "
			       "manifest put):\n",
			    REPORT_MIN_REPEATS);
			json_array_foreach(rules, k, v)
			{
				json_t *n;
				size_t q;
				printf("    %s ",
				    json_is_true(json_object_get(v, "new"))
					? "new rule"
					: "changed rule");
				clean(str(v, "host", "?"));
				printf(":%lld: %lld denials by %lld job(s) of "
				       "%s\n",
				    (long long)json_integer_value(
					json_object_get(v, "port")),
				    (long long)json_integer_value(
					json_object_get(v, "denials")),
				    (long long)json_integer_value(
					json_object_get(v, "jobs_count")),
				    str(m, "name", "?"));
				json_array_foreach(json_object_get(v, "notes"),
				    q, n)
				{
					printf("      note: %s\n",
					    json_string_value(n));
				}
			}
		}
		json_array_foreach(json_object_get(prop, "left_out"), k, v)
		{
			printf("  left out: ");
			clean(str(v, "host", "?"));
			printf(" ");
			clean(str(v, "method", "-"));
			printf(" ");
			clean(str(v, "path", "-"));
			printf(": ");
			clean(str(v, "why", ""));
			printf("\n");
		}
		json_array_foreach(json_object_get(prop, "problems"), k, v)
		{
			printf("  the broker would refuse it: %s: ",
			    str(v, "field", "?"));
			clean(str(v, "problem", ""));
			printf("\n");
		}
		json_array_foreach(json_object_get(prop, "warnings"), k, v)
		{
			printf("  warning: %s: ", str(v, "field", "?"));
			clean(str(v, "problem", ""));
			printf("\n");
		}
		const char *diff = str(prop, "diff", "");
		if (diff[0] != '\0') {
			printf("\n");
			clean(diff);
		}
	}
}

int
launcher_egress_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "manifest", required_argument, NULL, 'm' },
		{ "since", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *manifest = NULL, *since_arg = "7d";
	bool json = false;
	struct timespec now;
	int64_t since_ms, now_ms;
	int ch, r;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'm':
			manifest = optarg;
			break;
		case 's':
			since_arg = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'c':
			config = optarg;
			break;
		case 'h':
			return launcher_help("egress-report", stdout);
		default:
			launcher_help("egress-report", stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		launcher_help("egress-report", stderr);
		return EXIT_USAGE;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	if (parse_since(since_arg, now_ms, &since_ms) < 0 ||
	    since_ms > now_ms) {
		fprintf(stderr,
		    "cordon egress-report: --since: 30m, 12h, 7d or an RFC "
		    "3339 time in the past (2026-12-01T09:00:00Z), not "
		    "\"");
		cli_print_clean(stderr, since_arg, strlen(since_arg));
		fprintf(stderr, "\"\n");
		return EXIT_USAGE;
	}
	if (manifest != NULL && !manifest_name_ok(manifest)) {
		fprintf(stderr,
		    "cordon egress-report: --manifest: not a manifest name\n");
		return EXIT_USAGE;
	}
	struct cli c;
	if ((r = cli_open(&c, "cordon egress-report", config, CLI_KEY_ADMIN)) !=
	    0)
		return r;
	struct walk w = { .c = &c,
		.rep = report_new(since_ms, now_ms),
		.wanted = json_object(),
		.jobs = json_object(),
		.versions = json_object() };
	json_t *names = json_array(), *n;
	size_t i;
	if (manifest != NULL)
		json_array_append_new(names, json_string(manifest));
	else if ((r = manifest_names(&c, names)) != 0)
		goto out;
	json_array_foreach(names, i, n)
	{
		char path[200];
		struct httpc_answer a;
		snprintf(path, sizeof(path), "/v1/manifests/%s",
		    json_string_value(n));
		r = broker_get(&c, path, &a);
		if (r == 1 && manifest != NULL) {
			fprintf(stderr,
			    "cordon egress-report: the broker has no manifest "
			    "%s\n",
			    manifest);
			goto out;
		}
		if (r == 1)
			continue;
		if (r != 0)
			goto out;
		json_t *body = json_object_get(a.json, "manifest");
		json_int_t version =
		    json_integer_value(json_object_get(a.json, "version"));
		if (report_manifest(w.rep, json_string_value(n), version,
			body) == 0)
			json_object_set_new(w.wanted, json_string_value(n),
			    json_true());
		httpc_answer_free(&a);
	}
	if ((r = read_decisions(&w, since_ms, now_ms)) != 0)
		goto out;
	json_t *doc = report_document(w.rep);
	if (doc == NULL) {
		r = EXIT_SOFTWARE;
		goto out;
	}
	if (json) {
		char *text = json_dumps(doc, JSON_INDENT(2));
		if (text != NULL)
			printf("%s\n", text);
		r = text != NULL ? 0 : EXIT_SOFTWARE;
		free(text);
	} else
		print_report(doc);
	json_decref(doc);
out:
	json_decref(names);
	json_decref(w.wanted);
	json_decref(w.jobs);
	json_decref(w.versions);
	report_free(w.rep);
	cli_close(&c);
	return r;
}
