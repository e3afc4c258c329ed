/*
 * The operator's command line against the real services: `cordon
 * manifest put | get | list | diff` at the broker, `cordon jobs` and
 * `cordon patch` at cordon serve, `cordon logs` from the proxy (and from
 * its decision log once the proxy has forgotten the job), `cordon revoke`
 * at the broker, with keys from the configuration only; and every
 * command's --help, complete.
 */
#include "harness.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct stack st;
static struct daemon serve;
static char cfgpath[400], inputs[300];
static char out[1 << 18], err[1 << 16];

/* A manifest's text, its egress to host. */
static const char *
manifest_text(const char *name, const char *host)
{
	static char text[2048];

	snprintf(text, sizeof(text),
	    "{\"name\": \"%s\", \"command\": [\"/bin/true\"], "
	    "\"env\": {\"LANG\": \"C.UTF-8\"}, "
	    "\"egress\": [{\"host\": \"%s\", \"port\": 9, \"methods\": "
	    "[\"GET\"], \"paths\": [\"/ok/\"], \"reason\": \"the api\", "
	    "\"allow_cidrs\": [\"127.0.0.0/8\"]}], "
	    "\"limits\": {\"wall_seconds\": 60, \"memory_mb\": 512, "
	    "\"pids\": 64, \"output_kb\": 256}, "
	    "\"return\": {\"protected\": [\".github/**\"]}}",
	    name, host);
	return text;
}

static const char *
write_file(const char *name, const char *text)
{
	static char path[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s/%s", harness_tmpdir(), name);
	harness_write_file(path[k], text);
	return path[k];
}

/* cordon with up to 8 arguments and --config: the exit status; what it
 * printed in out and err. */
static int
cordon(const char *a0, const char *a1, const char *a2, const char *a3,
    const char *a4, const char *a5)
{
	char *argv[16];
	size_t n = 0;

	argv[n++] = (char *)harness_bin("cordon");
	const char *args[] = { a0, a1, a2, a3, a4, a5 };
	for (size_t i = 0; i < 6 && args[i] != NULL; i++)
		argv[n++] = (char *)args[i];
	argv[n++] = "--config";
	argv[n++] = cfgpath;
	argv[n] = NULL;
	return harness_run(argv, out, sizeof(out), err, sizeof(err));
}

static void
setup(void)
{
	static const struct stack_options o = { .uid_base = 420000,
		.hosts = "127.0.0.1 api.test\n" };
	static char cfg[8192];
	char path[400], decisions[600];
	FILE *f;
	size_t n;

	signal(SIGPIPE, SIG_IGN);
	stack_start(&st, &o);
	snprintf(inputs, sizeof(inputs), "%s", st.inputs);
	snprintf(path, sizeof(path), "%s/repo", inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", inputs);
	harness_write_file(path, "hello\n");

	f = fopen(st.launcher_cfg, "re");
	ck_assert_ptr_nonnull(f);
	n = fread(cfg, 1, sizeof(cfg) - 1, f);
	fclose(f);
	cfg[n] = '\0';
	ck_assert_int_eq(daemon_start(&serve, "launcher", cfg), 0);

	/* The operator's configuration: the launcher's, the admin key's
	 * file, where serve is and the proxy's decision log. */
	while (n > 0 && cfg[n - 1] != '}')
		n--;
	snprintf(decisions, sizeof(decisions), "%s/var/proxy/log/decisions.log",
	    st.proxy.dir);
	snprintf(cfg + n - 1, sizeof(cfg) - n + 1,
	    ", \"admin_key_file\": \"%s/var/broker/keys/admin.key\", "
	    "\"serve\": \"%s\", \"decision_log\": \"%s\"}",
	    st.broker.dir, serve.base, decisions);
	snprintf(cfgpath, sizeof(cfgpath), "%s/operator.json",
	    harness_tmpdir());
	harness_write_file(cfgpath, cfg);
}

static void
teardown(void)
{
	daemon_stop(&serve);
	stack_stop(&st);
}

START_TEST(manifests_put_get_list_and_diff)
{
	const char *a =
	    write_file("a.json", manifest_text("alpha", "api.test"));
	const char *b = write_file("b.json", manifest_text("beta", "api.test"));
	json_t *j;

	ck_assert_int_eq(cordon("manifest", "put", a, b, NULL, NULL), 0);
	ck_assert_msg(strstr(out, "alpha: version 1") != NULL, "%s%s", out,
	    err);
	ck_assert_ptr_nonnull(strstr(out, "beta: version 1"));
	/* The same again changes nothing. */
	ck_assert_int_eq(cordon("manifest", "put", a, NULL, NULL, NULL), 0);
	ck_assert_msg(strstr(out, "alpha: version 1, unchanged") != NULL, "%s",
	    out);

	/* A refused one: its problems, one line each, and exit 1. */
	const char *bad = write_file("bad.json",
	    "{\"name\": \"gamma\", \"command\": [\"/bin/true\"], "
	    "\"env\": {\"GITHUB_TOKEN\": \"x\"}}");
	ck_assert_int_eq(cordon("manifest", "put", bad, NULL, NULL, NULL), 1);
	ck_assert_msg(strstr(out, "env.GITHUB_TOKEN") != NULL, "%s%s", out,
	    err);

	ck_assert_int_eq(cordon("manifest", "get", "alpha", NULL, NULL, NULL),
	    0);
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "%s", out);
	ck_assert_str_eq(json_string_value(json_object_get(j, "name")),
	    "alpha");
	json_decref(j);
	ck_assert_int_eq(cordon("manifest", "get", "alpha", "--version", "2",
			     NULL),
	    1);
	ck_assert_int_eq(cordon("manifest", "get", "nope", NULL, NULL, NULL),
	    1);

	/* The egress changes: the diff says the plane and the field. */
	const char *a2 =
	    write_file("a2.json", manifest_text("alpha", "other.test"));
	ck_assert_int_eq(cordon("manifest", "diff", "alpha", a, NULL, NULL), 0);
	ck_assert_msg(strstr(out, "no change") != NULL, "%s", out);
	ck_assert_int_eq(cordon("manifest", "diff", "alpha", a2, NULL, NULL),
	    1);
	ck_assert_msg(strstr(out, "planes: reachability") != NULL, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "other.test"));
	ck_assert_ptr_nonnull(strstr(out, "egress"));
	ck_assert_int_eq(cordon("manifest", "put", a2, NULL, NULL, NULL), 0);
	ck_assert_msg(strstr(out, "alpha: version 2 (planes: reachability)") !=
		NULL,
	    "%s", out);

	ck_assert_int_eq(cordon("manifest", "list", NULL, NULL, NULL, NULL), 0);
	ck_assert_msg(strstr(out, "alpha") != NULL &&
		strstr(out, "beta") != NULL && strstr(out, "gamma") == NULL,
	    "%s", out);
	char *line = strstr(out, "alpha");
	ck_assert_msg(strncmp(line, "alpha", 5) == 0 &&
		strstr(line, " 2 ") != NULL,
	    "%s", out);
	/* From the broker's GET /v1/manifests: created and updated. */
	ck_assert_msg(strstr(out, "CREATED") != NULL &&
		strstr(out, "UPDATED") != NULL,
	    "%s", out);
	ck_assert_int_eq(cordon("manifest", "list", "--json", NULL, NULL, NULL),
	    0);
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "%s", out);
	json_t *ms = json_object_get(j, "manifests");
	ck_assert_uint_eq(json_array_size(ms), 2);
	json_t *m0 = json_array_get(ms, 0);
	ck_assert_str_eq(json_string_value(json_object_get(m0, "name")),
	    "alpha");
	ck_assert_int_eq(json_integer_value(json_object_get(m0, "version")), 2);
	ck_assert_msg(json_integer_value(json_object_get(m0, "created")) > 0,
	    "%s", out);
	ck_assert_int_le(json_integer_value(json_object_get(m0, "created")),
	    json_integer_value(json_object_get(m0, "updated")));
	ck_assert_str_eq(json_string_value(
			     json_object_get(json_array_get(ms, 1), "name")),
	    "beta");
	json_decref(j);

	/* A key is never taken from the command line. */
	ck_assert_int_eq(cordon("manifest", "list", "--key", "crk_x", NULL,
			     NULL),
	    64);
}
END_TEST

START_TEST(jobs_patch_logs_and_revoke)
{
	char src[400], path[300];
	json_t *j;
	char *done, *running;

	const char *m =
	    write_file("m.json", manifest_text("ops-job", "api.test"));
	ck_assert_int_eq(cordon("manifest", "put", m, NULL, NULL, NULL), 0);
	snprintf(src, sizeof(src), "%s/repo", inputs);
	j = harness_expect(&serve, 201, "POST", "/v1/jobs", st.launcher, NULL,
	    json_pack("{s:s, s:[{s:s, s:s}], s:[s,s,s]}", "manifest", "ops-job",
		"inputs", "src", src, "dst", "repo", "command", "/bin/sh", "-c",
		"echo new > repo/NEW.md; curl -s -o /dev/null "
		"http://denied.test/x; curl -s -o /dev/null "
		"http://api.test:9/nope"));
	done = strdup(json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", done);
	for (int i = 0; i < 400; i++) {
		j = harness_expect(&serve, 200, "GET", path, st.launcher, NULL,
		    NULL);
		bool over =
		    strcmp(json_string_value(json_object_get(j, "state")),
			"done") == 0;
		json_decref(j);
		if (over)
			break;
		usleep(50000);
	}
	j = harness_expect(&serve, 201, "POST", "/v1/jobs", st.launcher, NULL,
	    json_pack("{s:s, s:[{s:s, s:s}], s:[s,s,s]}", "manifest", "ops-job",
		"inputs", "src", src, "dst", "repo", "command", "/bin/sh", "-c",
		"sleep 60"));
	running = strdup(json_string_value(json_object_get(j, "job")));
	json_decref(j);

	ck_assert_int_eq(cordon("jobs", NULL, NULL, NULL, NULL, NULL), 0);
	char *r = strstr(out, running), *d = strstr(out, done);
	ck_assert_msg(r != NULL && d != NULL && r < d, "%s%s", out, err);
	ck_assert_ptr_nonnull(strstr(d, "done"));
	ck_assert_ptr_nonnull(strstr(r, "running"));
	ck_assert_int_eq(cordon("jobs", "--state", "running", NULL, NULL, NULL),
	    0);
	ck_assert_msg(strstr(out, done) == NULL && strstr(out, running) != NULL,
	    "%s", out);

	ck_assert_int_eq(cordon("patch", done, NULL, NULL, NULL, NULL), 0);
	ck_assert_msg(strstr(out, "+new") != NULL, "%s%s", out, err);
	ck_assert_int_eq(cordon("patch", running, NULL, NULL, NULL, NULL), 1);

	ck_assert_int_eq(cordon("logs", done, NULL, NULL, NULL, NULL), 0);
	ck_assert_msg(strstr(out, "deny") != NULL &&
		strstr(out, "denied.test") != NULL,
	    "%s%s", out, err);
	ck_assert_msg(strstr(out, "job_created") != NULL, "%s", out);

	ck_assert_int_eq(cordon("revoke", running, "--reason",
			     "suspicious egress", NULL, NULL),
	    0);
	ck_assert_msg(strstr(out, "revoked") != NULL, "%s%s", out, err);
	snprintf(path, sizeof(path), "/v1/jobs/%s", running);
	j = harness_expect(&st.broker, 200, "GET", path, st.admin, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "suspicious egress");
	json_decref(j);
	ck_assert_int_eq(cordon("revoke", running, NULL, NULL, NULL, NULL), 64);

	/* A proxy that does not answer (or has forgotten the job): the
	 * decision log file still has it. */
	static char cfg[8192], cut[8192];
	FILE *f = fopen(cfgpath, "re");
	ck_assert_ptr_nonnull(f);
	size_t n = fread(cfg, 1, sizeof(cfg) - 1, f);
	fclose(f);
	cfg[n] = '\0';
	char *p = strstr(cfg, st.proxy.base);
	ck_assert_ptr_nonnull(p);
	snprintf(cut, sizeof(cut), "%.*shttp://127.0.0.1:1%s", (int)(p - cfg),
	    cfg, p + strlen(st.proxy.base));
	harness_write_file(cfgpath, cut);
	ck_assert_int_eq(cordon("logs", done, NULL, NULL, NULL, NULL), 0);
	ck_assert_msg(strstr(out, "denied.test") != NULL, "%s%s", out, err);
	ck_assert_ptr_nonnull(strstr(out, "reason=path"));
	ck_assert_int_eq(cordon("logs", "job_nope", NULL, NULL, NULL, NULL), 1);
	free(done);
	free(running);
}
END_TEST

/* Each command's --help: exit 0, on stdout, naming every flag. */
START_TEST(every_help_is_complete)
{
	static const struct {
		const char *cmd;
		const char *flags[8];
	} cmds[] = {
		{ "run",
		    { "--manifest", "--input", "--patch-out", "--canaries",
			"--json", "--config", "--id-fd", NULL } },
		{ "stop", { "--config", "--serve", NULL } },
		{ "serve", { "--config", "--listen", "-n", NULL } },
		{ "drill", { "--manifest", "--json", "--config", NULL } },
		{ "lint", { NULL } },
		{ "recover", { "--json", "--log", "--config", NULL } },
		{ "manifest",
		    { "put", "get", "list", "diff", "--version", NULL } },
		{ "jobs",
		    { "--state", "--manifest", "--limit", "--after", "--json",
			"--serve", NULL } },
		{ "logs", { "--json", "--config", NULL } },
		{ "patch", { "--output", "--serve", NULL } },
		{ "revoke", { "--reason", "--json", NULL } },
	};
	char bin[512], usage[64];

	snprintf(bin, sizeof(bin), "%s", harness_bin("cordon"));
	char *top[] = { bin, "--help", NULL };
	ck_assert_int_eq(harness_run(top, out, sizeof(out), err, sizeof(err)),
	    0);
	char all[sizeof(out)];
	memcpy(all, out, sizeof(out));
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char *argv[] = { bin, (char *)cmds[i].cmd, "--help", NULL };
		ck_assert_msg(strstr(all, cmds[i].cmd) != NULL,
		    "cordon --help does not name %s", cmds[i].cmd);
		ck_assert_msg(harness_run(argv, out, sizeof(out), err,
				  sizeof(err)) == 0,
		    "cordon %s --help: %s", cmds[i].cmd, err);
		snprintf(usage, sizeof(usage), "usage: cordon %s", cmds[i].cmd);
		ck_assert_msg(strncmp(out, usage, strlen(usage)) == 0,
		    "cordon %s --help: %s", cmds[i].cmd, out);
		for (size_t k = 0; cmds[i].flags[k] != NULL; k++)
			ck_assert_msg(strstr(out, cmds[i].flags[k]) != NULL,
			    "cordon %s --help says nothing of %s:\n%s",
			    cmds[i].cmd, cmds[i].flags[k], out);
		/* More than a usage line: what it does, and its exits. */
		ck_assert_msg(strstr(out, "exit") != NULL ||
			strstr(out, "Exit") != NULL,
		    "cordon %s --help gives no exit statuses:\n%s", cmds[i].cmd,
		    out);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("cli_ops");
	TCase *tc = tcase_create("cli_ops");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, manifests_put_get_list_and_diff);
	tcase_add_test(tc, jobs_patch_logs_and_revoke);
	tcase_add_test(tc, every_help_is_complete);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
