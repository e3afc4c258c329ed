/*
 * The denial report and the decision log over HTTP, against the real
 * services: two `cordon run` jobs go through a real proxy to a real
 * upstream and are refused in every way a report must tell apart (no
 * rule, a method, a path, an address, a token, a hostile spray of paths);
 * then the proxy's GET /v1/decisions (admin key, pages, a rotated file,
 * 400s naming the parameter), `cordon logs` with no decision log file,
 * and `cordon egress-report` in text and --json: the groups, the stale
 * rule, the proposal (narrow, valid, never "/") as a diff, what is not
 * proposable and why, and the manifest at the broker left as it was.
 */
#include "harness.h"
#include "upstream.h"

#include <check.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct stack st;
static char opcfg[400], logdir[400];
static char out[1 << 20], err[1 << 16];
static char admin_file[400];

static int
cordon(const char *const *args)
{
	char *argv[24];
	size_t n = 0;

	argv[n++] = (char *)harness_bin("cordon");
	for (size_t i = 0; args[i] != NULL && n < 20; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	out[0] = err[0] = '\0';
	return harness_run_for(argv, 60000, out, sizeof(out), err, sizeof(err));
}

static char *
read_all(const char *path)
{
	static char text[16384];
	FILE *f = fopen(path, "re");
	size_t n;

	ck_assert_msg(f != NULL, "%s", path);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	return text;
}

/* text with every old replaced by new, into a static buffer. */
static const char *
replaced(const char *text, const char *old, const char *new)
{
	static char buf[16384];
	size_t n = 0;

	for (const char *p = text; *p != '\0';) {
		if (strncmp(p, old, strlen(old)) == 0) {
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s",
			    new);
			p += strlen(old);
		} else if (n + 1 < sizeof(buf))
			buf[n++] = *p++;
	}
	buf[n] = '\0';
	return buf;
}

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = 610000,
		.hosts = "127.0.0.1 api.test\n" };
	char cfg[4096], path[500];

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	/* The proxy again, knowing the admin key by its SHA-256 alone: GET
	 * /v1/decisions is the admin's, and the proxy holds no admin key.
	 * The launcher's configuration follows it. */
	char old_base[96];
	snprintf(old_base, sizeof(old_base), "%s", st.proxy.base);
	snprintf(path, sizeof(path), "%s/config.json", st.proxy.dir);
	snprintf(admin_file, sizeof(admin_file), "%s/var/broker/keys/admin.key",
	    st.broker.dir);
	snprintf(cfg, sizeof(cfg), "%s", read_all(path));
	char *end = strrchr(cfg, '}');
	ck_assert_ptr_nonnull(end);
	char admin[128], hex[65];
	unsigned char md[32];
	unsigned mdlen = 0;
	harness_broker_key(&st.broker, "admin", admin, sizeof(admin));
	ck_assert_int_eq(EVP_Digest(admin, strlen(admin), md, &mdlen,
			     EVP_sha256(), NULL),
	    1);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	snprintf(end, sizeof(cfg) - (size_t)(end - cfg),
	    ", \"admin_key_sha256\": \"%s\"}", hex);
	ck_assert_int_eq(daemon_stop(&st.proxy), 0);
	ck_assert_int_eq(daemon_start(&st.proxy, "proxy", cfg), 0);
	snprintf(logdir, sizeof(logdir), "%s/var/proxy/log", st.proxy.dir);
	const char *lcfg =
	    replaced(read_all(st.launcher_cfg), old_base, st.proxy.base);
	harness_write_file(st.launcher_cfg, lcfg);

	/* The operator's: the launcher's and the admin key; no
	 * decision_log (the file is the proxy's, on its host). */
	snprintf(cfg, sizeof(cfg), "%s", lcfg);
	end = strrchr(cfg, '}');
	snprintf(end, sizeof(cfg) - (size_t)(end - cfg),
	    ", \"admin_key_file\": \"%s\"}", admin_file);
	snprintf(opcfg, sizeof(opcfg), "%s/operator.json", harness_tmpdir());
	harness_write_file(opcfg, cfg);
}

static void
teardown(void)
{
	stack_stop(&st);
}

static void
put_manifest(uint16_t port)
{
	char text[2048];

	snprintf(text, sizeof(text),
	    "{\"name\": \"rep\", \"description\": \"the report's job\", "
	    "\"limits\": {\"wall_seconds\": 120}, \"egress\": ["
	    "{\"host\": \"api.test\", \"port\": %u, \"methods\": [\"GET\"], "
	    "\"paths\": [\"/v1/ok\"], \"reason\": \"the api\", "
	    "\"allow_cidrs\": [\"127.0.0.0/8\"]}, "
	    "{\"host\": \"old.test\", \"port\": %u, \"methods\": [\"GET\"], "
	    "\"reason\": \"an api nobody calls now\", "
	    "\"allow_cidrs\": [\"127.0.0.0/8\"]}]}",
	    port, port);
	json_t *m = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(m);
	json_decref(harness_expect(&st.broker, 200, "PUT", "/v1/manifests/rep",
	    st.admin, NULL, m));
}

/* A job of manifest rep running script: its id, from the result. */
static char *
run_job(const char *script)
{
	const char *args[] = { "run", "--json", "--config", st.launcher_cfg,
		"--manifest", "rep", "--", "/bin/sh", "-c", script, NULL };
	int status = cordon(args);
	json_t *j = json_loads(out, 0, NULL);

	ck_assert_msg(j != NULL, "status %d: %.500s %.2000s", status, out, err);
	const char *id = json_string_value(json_object_get(j, "job"));
	const char *why = json_string_value(json_object_get(j, "stop_reason"));
	ck_assert_msg(id != NULL && why != NULL &&
		strcmp(why, "launcher_error") != 0,
	    "%.1000s %.2000s", out, err);
	char *ret = strdup(id);
	json_decref(j);
	return ret;
}

/* The script: each refusal twice (some once), a hostile spray at the end. */
static const char *
script(uint16_t port, bool once)
{
	static char s[4096];

	snprintf(s, sizeof(s),
	    "P=%u; c() { curl -s -o /dev/null --max-time 10 \"$@\"; }; "
	    "for i in 1 2; do "
	    "c http://api.test:$P/v1/ok; "
	    "c http://new.test:$P/v1/a; "
	    "c http://api.test:$P/v1/more; "
	    "c -X POST http://api.test:$P/v1/ok; "
	    "c http://10.1.2.3:$P/x; "
	    "c -H 'Authorization: Bearer "
	    "crd_0000000000000000000000000000000000000A' "
	    "http://api.test:$P/v1/ok; "
	    "done; "
	    "%s"
	    "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do "
	    "c http://evil.test:$P/e$i; c http://evil.test:$P/e$i; done; "
	    "c http://evil.test:$P/; c http://evil.test:$P/; true",
	    port, once ? "c http://once.test:$P/o; " : "");
	return s;
}

static json_t *
find_group(json_t *groups, const char *host, const char *method,
    const char *path, const char *reason)
{
	json_t *g;
	size_t i;

	json_array_foreach(groups, i, g)
	{
		const char *h = json_string_value(json_object_get(g, "host"));
		const char *m = json_string_value(json_object_get(g, "method"));
		const char *p = json_string_value(json_object_get(g, "path"));
		const char *r = json_string_value(json_object_get(g, "reason"));
		if (h != NULL && strcmp(h, host) == 0 && m != NULL &&
		    strcmp(m, method) == 0 && p != NULL &&
		    strcmp(p, path) == 0 && r != NULL && strcmp(r, reason) == 0)
			return g;
	}
	return NULL;
}

START_TEST(report_of_real_denials)
{
	struct upstream *up = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(up);
	uint16_t port = upstream_port(up);
	put_manifest(port);
	char *job1 = run_job(script(port, true));
	char *job2 = run_job(script(port, false));

	/* The JSON document. */
	const char *json_args[] = { "egress-report", "--config", opcfg,
		"--manifest", "rep", "--since", "1h", "--json", NULL };
	ck_assert_msg(cordon(json_args) == 0, "%s", err);
	json_t *doc = json_loads(out, 0, NULL);
	ck_assert_msg(doc != NULL, "%.2000s", out);
	json_t *groups = json_object_get(doc, "denials");
	json_t *g = find_group(groups, "new.test", "GET", "/v1/a", "no_rule");
	ck_assert_msg(g != NULL, "%.4000s", out);
	ck_assert_int_eq(json_integer_value(json_object_get(g, "count")), 4);
	ck_assert_uint_eq(json_array_size(json_object_get(g, "jobs")), 2);
	ck_assert(json_is_true(json_object_get(g, "proposed")));
	ck_assert_ptr_nonnull(
	    json_string_value(json_object_get(g, "first_seen")));
	ck_assert_ptr_nonnull(
	    find_group(groups, "api.test", "GET", "/v1/more", "path"));
	ck_assert_ptr_nonnull(
	    find_group(groups, "api.test", "POST", "/v1/ok", "method"));
	/* Refusals no rule should lift: apart, with why. */
	json_t *ip = find_group(groups, "10.1.2.3", "GET", "/x", "ip_literal");
	ck_assert_msg(ip != NULL, "%.4000s", out);
	ck_assert(json_is_false(json_object_get(ip, "proposable")));
	ck_assert_ptr_nonnull(
	    strstr(json_string_value(json_object_get(ip, "why")),
		"private range"));
	json_t *tok = find_group(groups, "api.test", "GET", "/v1/ok", "token");
	ck_assert_msg(tok != NULL, "%.4000s", out);
	ck_assert(json_is_false(json_object_get(tok, "proposable")));
	json_t *once = find_group(groups, "once.test", "GET", "/o", "no_rule");
	ck_assert_ptr_nonnull(once);
	ck_assert(json_is_false(json_object_get(once, "proposed")));

	json_t *m = json_array_get(json_object_get(doc, "manifests"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(m, "name")), "rep");
	ck_assert_int_eq(json_integer_value(json_object_get(m, "jobs")), 2);
	json_t *stale = json_object_get(m, "stale");
	ck_assert_msg(json_array_size(stale) == 1 &&
		strcmp(json_string_value(
			   json_object_get(json_array_get(stale, 0), "host")),
		    "old.test") == 0,
	    "%.4000s", out);
	/* The proposal: exactly the paths asked for, at most 8 on the
	 * sprayed host and never "/". */
	json_t *prop = json_object_get(m, "proposal"), *rule;
	size_t i;
	bool saw_new = false, saw_api = false;
	json_array_foreach(json_object_get(prop, "rules"), i, rule)
	{
		const char *h =
		    json_string_value(json_object_get(rule, "host"));
		json_t *paths = json_object_get(rule, "paths"), *p;
		size_t k;
		ck_assert_uint_le(json_array_size(paths), 8);
		json_array_foreach(paths, k, p)
		    ck_assert_str_ne(json_string_value(p), "/");
		if (strcmp(h, "new.test") == 0) {
			saw_new = true;
			ck_assert(json_is_true(json_object_get(rule, "new")));
			ck_assert_uint_eq(json_array_size(paths), 1);
			ck_assert_str_eq(json_string_value(
					     json_array_get(paths, 0)),
			    "/v1/a");
		}
		if (strcmp(h, "api.test") == 0) {
			saw_api = true;
			ck_assert(json_is_false(json_object_get(rule, "new")));
		}
	}
	ck_assert_msg(saw_new && saw_api, "%.4000s", out);
	ck_assert_uint_ge(json_array_size(json_object_get(prop, "left_out")),
	    5);
	const char *diff = json_string_value(json_object_get(prop, "diff"));
	ck_assert_ptr_nonnull(diff);
	ck_assert_ptr_nonnull(strstr(diff, "+++ rep (proposed, not applied)"));
	ck_assert_ptr_null(strstr(diff, "\"/\""));
	/* The proposed manifest passes lint as the broker would check it. */
	char *text = json_dumps(json_object_get(prop, "manifest"), 0);
	char file[400];
	snprintf(file, sizeof(file), "%s/proposed.json", harness_tmpdir());
	harness_write_file(file, text);
	free(text);
	const char *lint[] = { "lint", file, NULL };
	ck_assert_msg(cordon(lint) == 0, "%s%s", out, err);
	json_decref(doc);

	/* The text: the same, for a person. */
	const char *text_args[] = { "egress-report", "--config", opcfg,
		"--since", "1h", NULL };
	ck_assert_msg(cordon(text_args) == 0, "%s", err);
	ck_assert_msg(strstr(out, "new.test:") != NULL &&
		strstr(out, "stale: egress[1] old.test") != NULL &&
		strstr(out, "not proposable") != NULL &&
		strstr(out, "+++ rep (proposed, not applied)") != NULL &&
		strstr(out, "+        \"/v1/more\"") != NULL,
	    "%s", out);

	/* Nothing applied: the broker still has version 1. */
	json_t *cur = harness_expect(&st.broker, 200, "GET",
	    "/v1/manifests/rep", st.admin, NULL, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(cur, "version")),
	    1);
	json_decref(cur);

	/* A bad --since: one line, 64. */
	const char *bad[] = { "egress-report", "--config", opcfg, "--since",
		"7x", NULL };
	ck_assert_int_eq(cordon(bad), 64);
	ck_assert_msg(strchr(err, '\n') == strrchr(err, '\n') &&
		strstr(err, "--since") != NULL,
	    "%s", err);
	const char *bad2[] = { "egress-report", "--config", opcfg, "--since",
		"2026-13-01T00:00:00Z", NULL };
	ck_assert_int_eq(cordon(bad2), 64);

	/* cordon logs from the proxy's decisions over HTTP, no file. */
	const char *logs[] = { "logs", job1, "--config", opcfg, NULL };
	ck_assert_msg(cordon(logs) == 0, "%s", err);
	ck_assert_msg(strstr(out, "new.test") != NULL &&
		strstr(out, "job_created") != NULL && strstr(out, job2) == NULL,
	    "%s%s", out, err);
	const char *logs_json[] = { "logs", job1, "--json", "--config", opcfg,
		NULL };
	ck_assert_int_eq(cordon(logs_json), 0);
	json_t *lj = json_loads(out, 0, NULL);
	ck_assert_ptr_nonnull(lj);
	ck_assert_uint_ge(json_array_size(json_object_get(lj, "decisions")),
	    30);
	json_decref(lj);
	free(job1);
	free(job2);
	upstream_stop(up);
}
END_TEST

START_TEST(decisions_over_http)
{
	char admin[128];
	long status;
	json_t *j;

	harness_broker_key(&st.broker, "admin", admin, sizeof(admin));
	/* A rotated file beside the current one, older. */
	char path[600];
	snprintf(path, sizeof(path), "%s/decisions.log.1", logdir);
	harness_write_file(path,
	    "{\"ts\":\"2026-11-01T10:00:00.000Z\",\"job\":\"job_rotated\","
	    "\"decision\":\"deny\",\"reason\":\"no_rule\",\"host\":\"a.test\"}"
	    "\n"
	    "{\"ts\":\"2026-11-01T10:00:01.000Z\",\"job\":\"job_rotated\","
	    "\"decision\":\"allow\",\"host\":\"b.test\"}\n"
	    "{\"ts\":\"2026-11-01T10:00:02.000Z\",\"job\":\"job_rotated\","
	    "\"decision\":\"deny\",\"reason\":\"no_rule\",\"host\":\"c.test\"}"
	    "\n"
	    "not json\n"
	    "{\"ts\":\"2026-11-01T10:00:03.000Z\",\"job\":\"job_other\","
	    "\"decision\":\"deny\",\"reason\":\"no_rule\",\"host\":\"d.test\"}"
	    "\n");
	j = harness_expect(&st.proxy, 200, "GET",
	    "/v1/decisions?job=job_rotated&verdict=deny&limit=1", admin, NULL,
	    NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "order")),
	    "oldest_first");
	json_t *d = json_object_get(j, "decisions");
	ck_assert_uint_eq(json_array_size(d), 1);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(d, 0), "host")),
	    "a.test");
	char next[200];
	snprintf(next, sizeof(next),
	    "/v1/decisions?job=job_rotated&verdict=deny&limit=1&cursor=%s",
	    json_string_value(json_object_get(j, "next")));
	json_decref(j);
	j = harness_expect(&st.proxy, 200, "GET", next, admin, NULL, NULL);
	d = json_object_get(j, "decisions");
	ck_assert_uint_eq(json_array_size(d), 1);
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(d, 0), "host")),
	    "c.test");
	json_decref(j);
	/* since and until select by time; until stops the scan. */
	j = harness_expect(&st.proxy, 200, "GET",
	    "/v1/"
	    "decisions?since=2026-11-01T10:00:01Z&until=2026-11-01T10:00:02Z",
	    admin, NULL, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "decisions")), 2);
	ck_assert_ptr_null(json_object_get(j, "next"));
	json_decref(j);

	/* The admin's, not the launcher's. */
	j = harness_call(&st.proxy, "GET", "/v1/decisions", st.launcher, NULL,
	    NULL, &status);
	ck_assert_int_eq(status, 403);
	json_decref(j);
	j = harness_call(&st.proxy, "GET", "/v1/decisions", NULL, NULL, NULL,
	    &status);
	ck_assert_int_eq(status, 401);
	json_decref(j);

	/* A rotation by renaming, then SIGHUP: the proxy writes a new
	 * decisions.log (what it wrote after goes there, not into the
	 * renamed file), and the renamed one is read as older. */
	char from[600], to[600];
	snprintf(from, sizeof(from), "%s/decisions.log.1", logdir);
	snprintf(to, sizeof(to), "%s/decisions.log.2", logdir);
	ck_assert_int_eq(rename(from, to), 0);
	snprintf(to, sizeof(to), "%s/decisions.log", logdir);
	ck_assert_int_eq(rename(to, from), 0);
	ck_assert_int_eq(kill(st.proxy.pid, SIGHUP), 0);
	struct stat sb;
	bool reopened = false;
	for (int i = 0; i < 200 && !reopened; i++) {
		reopened = stat(to, &sb) == 0;
		if (!reopened)
			usleep(20000);
	}
	ck_assert_msg(reopened, "no new %s after SIGHUP", to);
	j = harness_expect(&st.proxy, 200, "GET",
	    "/v1/decisions?job=job_rotated&verdict=deny", admin, NULL, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "decisions")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "files")), 3);
	json_decref(j);

	/* The report with a key the proxy refuses: 1 and the setting to
	 * give it, not "did not answer". */
	char lcfg[4096], file[400];
	snprintf(lcfg, sizeof(lcfg), "%s", read_all(opcfg));
	snprintf(file, sizeof(file), "%s/wrong-key.json", harness_tmpdir());
	char launcher_file[400];
	snprintf(launcher_file, sizeof(launcher_file),
	    "%s/var/broker/keys/launcher.key", st.broker.dir);
	harness_write_file(file, replaced(lcfg, admin_file, launcher_file));
	const char *wrong[] = { "egress-report", "--config", file, NULL };
	ck_assert_int_eq(cordon(wrong), 1);
	ck_assert_msg(strstr(err, "admin_key_file") != NULL, "%s", err);

	/* A hash of another shape stops the proxy's -n, 78, saying so. */
	char bad_cfg[400];
	snprintf(bad_cfg, sizeof(bad_cfg), "%s/bad-proxy.json",
	    harness_tmpdir());
	harness_write_file(bad_cfg, "{\"admin_key_sha256\": \"ABC\"}");
	char *n_argv[] = { (char *)harness_bin("cordon-proxy"), "-n",
		"--config", bad_cfg, NULL };
	ck_assert_int_eq(harness_run(n_argv, out, sizeof(out), err,
			     sizeof(err)),
	    78);
	ck_assert_msg(strstr(err, "admin_key_sha256") != NULL, "%s", err);

	/* A bad parameter: 400 naming it. */
	static const char *const bad[][2] = {
		{ "since=yesterday", "since" },
		{ "until=2026-02-30T00:00:00Z", "until" },
		{ "verdict=maybe", "verdict" },
		{ "limit=0", "limit" },
		{ "limit=1001", "limit" },
		{ "cursor=..%2F..%2Fetc", "cursor" },
		{ "job=a%20b", "job" },
		{ "manifest=rep", "manifest" },
		{ "since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z",
		    "until" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(path, sizeof(path), "/v1/decisions?%s", bad[i][0]);
		j = harness_expect(&st.proxy, 400, "GET", path, admin, NULL,
		    NULL);
		ck_assert_msg(json_is_string(json_object_get(j, "parameter")) &&
			strcmp(json_string_value(
				   json_object_get(j, "parameter")),
			    bad[i][1]) == 0,
		    "%s", bad[i][0]);
		json_decref(j);
	}
}
END_TEST

static Suite *
report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("report");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, report_of_real_denials);
	tcase_add_test(tc, decisions_over_http);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(report_suite());
}
