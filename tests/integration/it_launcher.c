/*
 * The launcher end to end, and the day-one list (docs/design.md) as tests: a
 * real broker, proxy and hatch, an upstream on 127.0.0.1, and `cordon
 * run` making real namespaces. Each test runs a shell script inside the
 * sandbox and reads what it printed from the run's JSON result.
 */
#include "harness.h"
#include "upstream.h"

#include "http_client.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct daemon *broker, *proxy, *hatch;
static struct upstream *plain;
static char admin[128], launcher[128], verifier[128];
static char cfgpath[400], inputs[300];

static void
put_manifest(const char *name, int wall)
{
	json_t *m = json_pack("{s:s, s:[s], s:{s:s}, "
			      "s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}], "
			      "s:[{s:s, s:i, s:[s], s:[s], s:s, s:[s], s:s}], "
			      "s:{s:i, s:i, s:i, s:i}, s:{s:[s]}}",
	    "name", name, "command", "/bin/true", "env", "LANG", "C.UTF-8",
	    "capabilities", "name", "x.read", "audience", "api", "params", "t",
	    "1", "ttl_seconds", 900, "reason", "read x", "egress", "host",
	    "api.test", "port", upstream_port(plain), "methods", "GET", "paths",
	    "/ok/", "reason", "the api", "allow_cidrs", "127.0.0.0/8",
	    "audience", "api", "limits", "wall_seconds", wall, "memory_mb", 512,
	    "pids", 64, "output_kb", 256, "return", "protected", ".github/**");
	char path[128];

	if (strcmp(name, "canary-job") == 0)
		json_object_set_new(m, "canaries", json_true());
	snprintf(path, sizeof(path), "/v1/manifests/%s", name);
	json_decref(harness_expect(broker, 200, "PUT", path, admin, NULL, m));
}

/* Copies the job script jobs/launcher/name into the input repository, so
 * that a job runs it as repo/name (as it_boundary does with its probe). */
static void
copy_job(const char *name)
{
	char src[512], dst[512];
	char *text;
	FILE *f;
	long n;

	snprintf(src, sizeof(src),
	    CORDON_SOURCE_DIR "/tests/integration/jobs/launcher/%s", name);
	f = fopen(src, "re");
	ck_assert_msg(f != NULL, "%s", src);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, 0);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	snprintf(dst, sizeof(dst), "%s/repo/%s", inputs, name);
	harness_write_file(dst, text);
	free(text);
}

static void
setup(void)
{
	static struct stack st;
	static const struct stack_options o = { .uid_base = 300000,
		.hosts = "127.0.0.1 api.test\n" };
	char path[400];

	signal(SIGPIPE, SIG_IGN);
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	stack_start(&st, &o);
	/* The tests restart and stop them by these names. */
	broker = &st.broker;
	proxy = &st.proxy;
	hatch = &st.hatch;
	memcpy(admin, st.admin, sizeof(admin));
	memcpy(launcher, st.launcher, sizeof(launcher));
	memcpy(verifier, st.verifier, sizeof(verifier));
	snprintf(cfgpath, sizeof(cfgpath), "%s", st.launcher_cfg);
	snprintf(inputs, sizeof(inputs), "%s", st.inputs);

	/* An input: a small repository. */
	snprintf(path, sizeof(path), "%s/repo", inputs);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/repo/README.md", inputs);
	harness_write_file(path, "hello\n");
	/* The jobs' scripts, files under jobs/launcher/. */
	static const char *const jobs[] = { "egress.sh", "half_close.py",
		"hold_relay.py", "syscalls.py", "hog.py", "forkbomb.py" };
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
		copy_job(jobs[i]);
	put_manifest("job-test", 60);
	put_manifest("short-job", 2);
	put_manifest("canary-job", 60);
}

static void
teardown(void)
{
	upstream_stop(plain);
	daemon_stop(hatch);
	daemon_stop(proxy);
	daemon_stop(broker);
}

/* Runs `cordon run --json` of manifest with script under /bin/sh -c:
 * the result (json_decref it) and the exit status in *ret_status. */
static json_t *
run_json(const char *manifest, const char *script, int *ret_status)
{
	static char out[1 << 20], err[1 << 16];
	char input[400];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", cfgpath, "--manifest", (char *)manifest, "--input",
		input, "--", "/bin/sh", "-c", (char *)script, NULL };
	json_t *j;

	/* script NULL: the command is env itself, with nothing between. */
	if (script == NULL) {
		argv[10] = "/usr/bin/env";
		argv[11] = NULL;
	}

	snprintf(input, sizeof(input), "%s/repo:repo", inputs);
	*ret_status = harness_run(argv, out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "no JSON from cordon run (status %d): %s\n%s",
	    *ret_status, out, err);
	return j;
}

static const char *
job_stdout(const json_t *j)
{
	return json_string_value(
	    json_object_get(json_object_get(json_object_get(j, "output"),
				"stdout"),
		"text"));
}

/* Day one, 1: nothing of the launcher's environment inside. */
START_TEST(the_environment_is_empty)
{
	static const char secret_convention[] =
	    "(SECRET|TOKEN|PASSW|PWD|API_?KEY|PRIVATE|CREDENTIAL|AUTH|COOKIE|"
	    "SESSION|_KEY$|^AWS_|^GCP_|^AZURE_|DSN$|DATABASE_URL)";
	regex_t re;
	int status;
	json_t *j;
	char *text, *line, *save;

	setenv("AWS_SECRET_ACCESS_KEY",
	    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 1);
	setenv("DATABASE_URL", "postgres://app:hunter2@db/prod", 1);
	setenv("GITHUB_TOKEN", "ghp_0123456789abcdef0123456789abcdef0123", 1);
	/* What a process inside reads of its own and of PID 1's. */
	j = run_json("job-test",
	    "tr '\\0' '\\n' </proc/self/environ; echo ---; "
	    "tr '\\0' '\\n' </proc/1/environ 2>/dev/null; echo end",
	    &status);
	ck_assert_int_eq(status, 0);
	text = strdup(job_stdout(j));
	ck_assert_ptr_nonnull(strstr(text, "end"));
	ck_assert_ptr_null(strstr(text, "hunter2"));
	ck_assert_ptr_null(strstr(text, "wJalrXUtnFEMI"));
	ck_assert_ptr_null(strstr(text, "ghp_"));
	free(text);
	json_decref(j);
	/* The environment the command starts with, exactly. */
	j = run_json("job-test", NULL, &status);
	ck_assert_int_eq(status, 0);
	text = strdup(job_stdout(j));
	ck_assert_ptr_nonnull(strstr(text, "HTTP_PROXY=http://127.0.0.1:3128"));
	ck_assert_ptr_nonnull(strstr(text, "LANG=C.UTF-8"));
	ck_assert_int_eq(regcomp(&re, secret_convention,
			     REG_EXTENDED | REG_ICASE),
	    0);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[256];
		size_t n = strcspn(line, "=");
		if (line[n] != '=' || n >= sizeof(name))
			continue;
		/* The AWS SDKs' CA bundle, the launcher's: a path to public
		 * certificates, as the drill's env row takes it. */
		if (strcmp(line,
			"AWS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt") ==
		    0)
			continue;
		memcpy(name, line, n);
		name[n] = '\0';
		ck_assert_msg(regexec(&re, name, 0, NULL, 0) != 0,
		    "a variable of the secret convention inside: %s", name);
	}
	regfree(&re);
	free(text);
	json_decref(j);
}
END_TEST

/* Day one, 2 and 3: a capability of at most 15 minutes; default deny,
 * every decision counted; no direct way out. */
START_TEST(tokens_are_short_and_egress_goes_through_the_proxy)
{
	char script[2048];
	int status;
	json_t *j, *mint;
	const char *out, *p;

	/* The script: jobs/launcher/egress.sh (then half_close.py). */
	snprintf(script, sizeof(script), "sh repo/egress.sh %u %s %s",
	    upstream_port(plain), broker->base, proxy->base);
	j = run_json("job-test", script, &status);
	ck_assert_int_eq(status, 0);
	out = job_stdout(j);
	mint = json_loadb(out, strcspn(out, "\n"), 0, NULL);
	ck_assert_msg(mint != NULL, "no mint answer: %s", out);
	ck_assert_ptr_nonnull(json_object_get(mint, "access_token"));
	ck_assert_int_le(json_integer_value(
			     json_object_get(mint, "expires_in")),
	    900);
	ck_assert_int_gt(json_integer_value(
			     json_object_get(mint, "expires_in")),
	    0);
	json_decref(mint);
	ck_assert_ptr_nonnull(strstr(out, "allowed=200"));
	ck_assert_ptr_nonnull(strstr(out, "denied=403"));
	ck_assert_msg(strstr(out, "half=200") != NULL, "%s", out);
	/* Each direct attempt fails: no route out of the job's netns. */
	for (p = strstr(out, "broker="); p != NULL; p = strchr(p + 1, '=')) {
		if (strncmp(p - 6, "broker", 6) != 0 &&
		    strncmp(p - 5, "proxy", 5) != 0 &&
		    strncmp(p - 8, "upstream", 8) != 0 &&
		    strncmp(p - 7, "outside", 7) != 0)
			continue;
		ck_assert_msg(p[1] != '0', "a direct connection worked: %s",
		    out);
	}
	ck_assert_ptr_nonnull(strstr(out, "outside="));
	json_t *e = json_object_get(j, "egress");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "allowed")), 3);
	/* /admin, and the direct connect to the upstream's port, which the
	 * capture takes (a rule's port) and tells the proxy (ip_literal);
	 * 192.0.2.1:80, where nothing listens in the namespace, told too
	 * (kind direct). The connects to the broker's and the proxy's ports
	 * at 127.0.0.1 reach the job's own loopback, no egress: counted as
	 * local_closed, no denial (docs/egress.md). */
	ck_assert_int_eq(json_integer_value(json_object_get(e, "denied")), 3);
	ck_assert_int_eq(json_integer_value(
			     json_object_get(json_object_get(j, "capture"),
				 "local_closed")),
	    2);
	json_decref(j);
}
END_TEST

/* Whether the broker says tok is active. */
static bool
introspect_active(const char *tok)
{
	return harness_token_active(broker, verifier, tok);
}

/* The token the job printed as TOKEN=... */
static char *
printed_token(const char *out)
{
	const char *t = strstr(out, "TOKEN=crd_");

	ck_assert_msg(t != NULL, "no token printed: %s", out);
	return strndup(t + 6, 42);
}

/* Day one, 4: stopped by the wall clock, its token is dead. */
START_TEST(the_wall_clock_stop_burns_the_token)
{
	int status;
	json_t *j = run_json("short-job",
	    "M=$(curl -s -X POST http://broker.cordon/v1/token "
	    "-d '{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}'); "
	    "T=$(echo \"$M\" | "
	    "sed -n 's/.*access_token\":\"\\([^\"]*\\)\".*/\\1/p'); "
	    "echo EXPIRES=$(echo \"$M\" | "
	    "sed -n 's/.*expires_in\":\\([0-9]*\\).*/\\1/p'); "
	    "echo TOKEN=$T; "
	    /* A connection through the relay still open when the time is
	     * up: the launcher ends it with the rest. */
	    "python3 repo/hold_relay.py",
	    &status);
	char *tok = printed_token(job_stdout(j));
	/* Killed (SIGKILL): its status says so, and nothing else went wrong
	 * in the launcher (a leak would change it under the sanitizers). */
	ck_assert_int_eq(status, 128 + 9);
	/* Asked for 900 s, it got what was left of the job's 2 s. */
	const char *e = strstr(job_stdout(j), "EXPIRES=");
	ck_assert_ptr_nonnull(e);
	ck_assert_int_le(atoi(e + 8), 2);
	ck_assert_int_ge(atoi(e + 8), 0);

	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "wall_clock");
	ck_assert(json_is_true(json_object_get(j, "revoked")));
	ck_assert_int_eq(json_integer_value(
			     json_object_get(j, "tokens_revoked")),
	    1);
	ck_assert(!introspect_active(tok));
	free(tok);
	json_decref(j);
}
END_TEST

/* Day one, 4: an operator's revoke at the broker stops the job, and the
 * token is refused at the broker and through the proxy. */
START_TEST(an_operators_revoke_stops_the_job)
{
	char input[400], line[4096] = "", path[128];
	int pipefd[2];
	size_t n = 0;
	pid_t pid;
	char *tok, *jobid;

	snprintf(input, sizeof(input), "%s/repo:repo", inputs);
	ck_assert_int_eq(pipe(pipefd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		execl(harness_bin("cordon"), "cordon", "run", "--config",
		    cfgpath, "--manifest", "job-test", "--input", input, "--",
		    "/bin/sh", "-c",
		    "T=$(curl -s -X POST http://broker.cordon/v1/token "
		    "-d '{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}' "
		    "| "
		    "sed -n 's/.*access_token\":\"\\([^\"]*\\)\".*/\\1/p'); "
		    "echo JOB=$CORDON_JOB TOKEN=$T; sleep 60",
		    (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	/* The job says who it is and what it holds. */
	while (strchr(line, '\n') == NULL && n < sizeof(line) - 1) {
		struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
		ck_assert_msg(poll(&p, 1, 20000) == 1, "the job said nothing");
		ssize_t k = read(pipefd[0], line + n, sizeof(line) - 1 - n);
		ck_assert_int_gt(k, 0);
		n += (size_t)k;
		line[n] = '\0';
	}
	tok = printed_token(line);
	jobid = strndup(strstr(line, "JOB=") + 4,
	    strcspn(strstr(line, "JOB=") + 4, " "));
	ck_assert(introspect_active(tok));

	snprintf(path, sizeof(path), "/v1/jobs/%s/revoke", jobid);
	json_decref(harness_expect(broker, 200, "POST", path, admin, NULL,
	    json_pack("{s:s}", "reason", "operator test")));
	ck_assert(!introspect_active(tok));
	/* The launcher notices and runs its stop path. */
	int st = -1;
	for (int i = 0; i < 100; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	ck_assert_msg(WIFEXITED(st),
	    "cordon run did not stop after the revoke");
	ck_assert_int_ne(WEXITSTATUS(st), 125);
	/* Its channel is gone: the proxy has nothing for the token. */
	snprintf(path, sizeof(path), "/v1/jobs/%s/log", jobid);
	json_t *log =
	    harness_expect(proxy, 200, "GET", path, launcher, NULL, NULL);
	ck_assert_str_ne(json_string_value(json_object_get(log, "state")),
	    "open");
	json_decref(log);
	close(pipefd[0]);
	free(tok);
	free(jobid);
}
END_TEST

/* The sandbox's walls, and the return path. */
START_TEST(the_sandbox_holds_and_writes_come_back_as_a_patch)
{
	int status;
	json_t *j = run_json("job-test",
	    "ls /home /root 2>&1 | head -2; test -e /etc/shadow && echo "
	    "SHADOW; "
	    "mount -t tmpfs x /tmp 2>/dev/null && echo MOUNTED; "
	    "unshare -U true 2>/dev/null && echo USERNS; "
	    "python3 repo/syscalls.py; "
	    "id -u; echo fixed > repo/README.md; "
	    "mkdir -p repo/.github/workflows; echo 'on: push' > "
	    "repo/.github/workflows/ci.yml; echo done",
	    &status);
	const char *out = job_stdout(j);
	FILE *f;
	char patch[8192] = "";

	ck_assert_int_eq(status, 0);
	ck_assert_msg(strstr(out, "done") != NULL, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "No such file"));
	ck_assert_ptr_null(strstr(out, "SHADOW"));
	ck_assert_ptr_null(strstr(out, "MOUNTED"));
	ck_assert_ptr_null(strstr(out, "USERNS"));
	ck_assert_ptr_nonnull(strstr(out, "1000\n"));
	/* Refused by the filter, with EPERM, not merely absent. */
	ck_assert_msg(strstr(out, "ptrace -1 Operation not permitted") != NULL,
	    "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "bpf -1 Operation not permitted"));
	ck_assert_ptr_nonnull(
	    strstr(out, "io_uring -1 Operation not permitted"));
	ck_assert_ptr_nonnull(strstr(out, "keyctl -1 Operation not permitted"));
	ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")),
	    "needs-review");
	/* Each limit says how it was enforced; without a cgroup, why not. */
	json_t *lim = json_object_get(j, "limits");
	const char *mem = json_string_value(json_object_get(lim, "memory"));
	const char *cg = json_string_value(json_object_get(lim, "cgroup"));
	ck_assert_ptr_nonnull(mem);
	ck_assert_ptr_nonnull(cg);
	if (strncmp(mem, "cgroup_", 7) != 0) {
		ck_assert_str_eq(mem, "rlimit_as");
		ck_assert_str_eq(json_string_value(
				     json_object_get(lim, "pids")),
		    "rlimit_nproc");
		ck_assert_msg(strncmp(cg, "none: ", 6) == 0, "%s", cg);
	}
	f = fopen(json_string_value(json_object_get(j, "patch")), "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_gt(fread(patch, 1, sizeof(patch) - 1, f), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(patch, "+fixed"));
	ck_assert_ptr_nonnull(strstr(patch, "repo/.github/workflows/ci.yml"));
	json_decref(j);
}
END_TEST

/* Day one, 4, by cordon stop: a job of cordon serve, stopped, and its
 * token dead. */
START_TEST(cordon_serve_runs_and_cordon_stop_burns)
{
	struct daemon serve;
	char cfg[2048], path[160], out[1 << 16], err[4096], base[128];
	json_t *j, *r;
	const char *id;
	int i;

	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"proxy\": \"%s\", \"hatch\": \"%s\", "
	    "\"launcher_key_file\": \"%s/var/broker/keys/launcher.key\", "
	    "\"uid_base\": 310000}",
	    broker->base, proxy->base, hatch->base, broker->dir);
	ck_assert_int_eq(daemon_start(&serve, "launcher", cfg), 0);
	/* Refused before anything starts. */
	json_decref(harness_expect(&serve, 422, "POST", "/v1/jobs", launcher,
	    NULL, json_pack("{s:i}", "manifest", 3)));
	json_decref(harness_expect(&serve, 404, "GET", "/v1/jobs/job_nope",
	    launcher, NULL, NULL));
	json_decref(harness_expect(&serve, 401, "POST", "/v1/jobs", admin, NULL,
	    json_pack("{s:s}", "manifest", "job-test")));

	snprintf(path, sizeof(path), "%s/repo", inputs);
	j = harness_expect(&serve, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s, s:[{s:s, s:s}], s:[s,s,s]}", "manifest",
		"job-test", "inputs", "src", path, "dst", "repo", "command",
		"/bin/sh", "-c",
		"T=$(curl -s -X POST http://broker.cordon/v1/token "
		"-d '{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}' "
		"| sed -n 's/.*access_token\":\"\\([^\"]*\\)\".*/\\1/p'); "
		"echo TOKEN=$T; sleep 60"));
	id = json_string_value(json_object_get(j, "job"));
	ck_assert_ptr_nonnull(id);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	    "running");
	/* Wait until the job holds its token (the broker lists it). */
	snprintf(path, sizeof(path), "/v1/jobs/%s", id);
	for (i = 0; i < 100; i++) {
		r = harness_expect(broker, 200, "GET", path, launcher, NULL,
		    NULL);
		size_t n = json_array_size(json_object_get(r, "tokens"));
		json_decref(r);
		if (n == 1)
			break;
		usleep(100000);
	}
	ck_assert_int_lt(i, 100);

	snprintf(base, sizeof(base), "%s", serve.base);
	char *argv[] = { (char *)harness_bin("cordon"), "stop", (char *)id,
		"--config", cfgpath, "--serve", base, NULL };
	ck_assert_int_eq(harness_run(argv, out, sizeof(out), err, sizeof(err)),
	    0);
	r = json_loads(out, 0, NULL);
	ck_assert_msg(r != NULL, "cordon stop said: %s %s", out, err);
	json_t *res = json_object_get(r, "result");
	ck_assert_str_eq(json_string_value(json_object_get(res, "stop_reason")),
	    "stopped");
	ck_assert(json_is_true(json_object_get(res, "revoked")));
	char *tok = printed_token(json_string_value(
	    json_object_get(json_object_get(json_object_get(res, "output"),
				"stdout"),
		"text")));
	ck_assert(!introspect_active(tok));
	/* Replayed from a new job, through the proxy: refused there too. */
	char script[512];
	int st;
	snprintf(script, sizeof(script),
	    "curl -s -o /dev/null -w 'replay=%%{http_code}' -H "
	    "'Authorization: Bearer %s' http://api.test:%u/ok/x",
	    tok, upstream_port(plain));
	json_t *again = run_json("job-test", script, &st);
	ck_assert_ptr_nonnull(strstr(job_stdout(again), "replay=403"));
	json_decref(again);
	free(tok);
	json_decref(r);

	snprintf(path, sizeof(path), "/v1/jobs/%s/output", id);
	r = harness_expect(&serve, 200, "GET", path, launcher, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(r, "trust")),
	    "untrusted");
	json_decref(r);
	json_decref(j);
	ck_assert_int_eq(daemon_stop(&serve), 0);
}
END_TEST

/* Where a cgroup v2 hierarchy offers memory and pids, the job gets its
 * own, with the manifest's limits. This host's has neither controller, so
 * the hierarchy here is a directory the test lays out as one; what is
 * checked is what the launcher writes into it. */
START_TEST(a_cgroup_of_its_own_where_there_is_one)
{
	char root[400], cfg[1200], path[600], line[128];
	char *keep = strdup(cfgpath);
	int status;
	json_t *j, *lim;
	FILE *f;

	snprintf(root, sizeof(root), "%s", harness_tmpdir());
	snprintf(path, sizeof(path), "%s/cgroup.controllers", root);
	harness_write_file(path, "cpuset cpu io memory hugetlb pids\n");
	snprintf(cfgpath, sizeof(cfgpath), "%s/launcher-cg.json", root);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"proxy\": \"%s\", \"hatch\": \"%s\", "
	    "\"launcher_key_file\": \"%s/var/broker/keys/launcher.key\", "
	    "\"state_dir\": \"%s/state\", \"uid_base\": 320000, "
	    "\"cgroup_root\": \"%s\"}",
	    broker->base, proxy->base, hatch->base, broker->dir, root, root);
	harness_write_file(cfgpath, cfg);
	j = run_json("job-test", "echo in", &status);
	snprintf(cfgpath, sizeof(cfgpath), "%s", keep);
	free(keep);
	ck_assert_int_eq(status, 0);
	lim = json_object_get(j, "limits");
	ck_assert_str_eq(json_string_value(json_object_get(lim, "memory")),
	    "cgroup_v2");
	ck_assert_str_eq(json_string_value(json_object_get(lim, "pids")),
	    "cgroup_v2");
	snprintf(path, sizeof(path), "%s/cordon/%s", root,
	    json_string_value(json_object_get(j, "job")));
	ck_assert_str_eq(json_string_value(json_object_get(lim, "cgroup")),
	    path);
	struct {
		const char *file, *want;
	} files[] = { { "memory.max", "536870912" }, { "pids.max", "64" },
		{ "memory.swap.max", "0" } };
	for (size_t i = 0; i < 3; i++) {
		char p2[700];
		snprintf(p2, sizeof(p2), "%s/%s", path, files[i].file);
		ck_assert_int_eq(harness_read_line(p2, line, sizeof(line)), 0);
		ck_assert_str_eq(line, files[i].want);
	}
	/* The sandbox's init went in before the command was started. */
	snprintf(line, sizeof(line), "%s/cgroup.procs", path);
	f = fopen(line, "r");
	ck_assert_ptr_nonnull(f);
	int pid = 0;
	ck_assert_int_eq(fscanf(f, "%d", &pid), 1);
	ck_assert_int_gt(pid, 1);
	fclose(f);
	snprintf(line, sizeof(line), "%s/cgroup.subtree_control", root);
	char ctl[128];
	ck_assert_int_eq(harness_read_line(line, ctl, sizeof(ctl)), 0);
	ck_assert_str_eq(ctl, "+memory +pids");
	json_decref(j);
}
END_TEST

/* Bad input on the command line: one line and the documented status. */
START_TEST(refusals_on_the_command_line)
{
	char out[4096], err[4096];
	char *unknown[] = { (char *)harness_bin("cordon"), "run", "--config",
		cfgpath, "--manifest", "no-such-manifest", "--", "/bin/true",
		NULL };
	char *noflag[] = { (char *)harness_bin("cordon"), "run", "--bogus",
		NULL };
	char *nomanifest[] = { (char *)harness_bin("cordon"), "run", "--json",
		NULL };

	ck_assert_int_eq(harness_run(unknown, out, sizeof(out), err,
			     sizeof(err)),
	    125);
	ck_assert_msg(strstr(err, "cordon run: the broker:") != NULL, "%s",
	    err);
	ck_assert_ptr_null(strchr(strchr(err, '\n') + 1, '\n'));
	ck_assert_int_eq(harness_run(noflag, out, sizeof(out), err,
			     sizeof(err)),
	    64);
	ck_assert_int_eq(harness_run(nomanifest, out, sizeof(out), err,
			     sizeof(err)),
	    64);
	ck_assert_ptr_nonnull(strstr(err, "--manifest is required"));
	char *recover_extra[] = { (char *)harness_bin("cordon"), "recover",
		"job_x", NULL };
	char *recover_badcfg[] = { (char *)harness_bin("cordon"), "recover",
		"--config", "/nonexistent/launcher.json", NULL };
	ck_assert_int_eq(harness_run(recover_extra, out, sizeof(out), err,
			     sizeof(err)),
	    64);
	ck_assert_int_eq(harness_run(recover_badcfg, out, sizeof(out), err,
			     sizeof(err)),
	    78);
	ck_assert_msg(strncmp(err, "cordon recover: ", 16) == 0 &&
		strchr(err, '\n') == err + strlen(err) - 1,
	    "%s", err);

	/* The hatch refuses the input while the proxy made the channel: the
	 * stop path still revokes, and closes the channel. */
	char *badinput[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", cfgpath, "--manifest", "job-test", "--input",
		"/etc:etc", "--", "/bin/true", NULL };
	char path[160];
	ck_assert_int_eq(harness_run(badinput, out, sizeof(out), err,
			     sizeof(err)),
	    125);
	ck_assert_msg(strstr(err, "cordon run: the hatch:") != NULL, "%s", err);
	json_t *j = json_loads(out, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "launcher_error");
	ck_assert(json_is_true(json_object_get(j, "revoked")));
	snprintf(path, sizeof(path), "/v1/jobs/%s/log",
	    json_string_value(json_object_get(j, "job")));
	json_t *log =
	    harness_expect(proxy, 200, "GET", path, launcher, NULL, NULL);
	ck_assert_str_ne(json_string_value(json_object_get(log, "state")),
	    "open");
	json_decref(log);
	json_decref(j);
}
END_TEST

/* A job that goes looking for credentials finds canaries; using one
 * revokes it, and the launcher stops it. */
START_TEST(a_canary_found_and_used_stops_the_job)
{
	char script[512], path[160];
	int status;
	json_t *j, *st;

	snprintf(script, sizeof(script),
	    "cat /etc/cordon/credentials; "
	    "T=$(sed -n 's/^CORDON_DEPLOY_TOKEN=//p' /etc/cordon/credentials); "
	    "curl -s -o /dev/null -H \"Authorization: Bearer $T\" "
	    "http://api.test:%u/ok/x; sleep 20; echo survived",
	    upstream_port(plain));
	j = run_json("canary-job", script, &status);
	ck_assert_ptr_nonnull(
	    strstr(job_stdout(j), "CORDON_DEPLOY_TOKEN=crd_"));
	ck_assert_ptr_null(strstr(job_stdout(j), "survived"));
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "tripwire");
	snprintf(path, sizeof(path), "/v1/jobs/%s",
	    json_string_value(json_object_get(j, "job")));
	st = harness_expect(broker, 200, "GET", path, launcher, NULL, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(st, "stop_reason")),
	    "tripwire");
	json_decref(st);
	json_decref(j);
}
END_TEST

/* A memory hog and a fork bomb hit the job's limits (512 MB, 64
 * processes), and nothing of the job outlives it on the host. */
START_TEST(a_hog_and_a_fork_bomb_hit_their_limits)
{
	int status;
	/* The hog: a MemoryError under an rlimit, the OOM killer under a
	 * cgroup; alive under neither. */
	json_t *j = run_json("job-test",
	    "python3 repo/hog.py; echo hog_exit=$?; python3 repo/forkbomb.py",
	    &status);
	const char *out = job_stdout(j);
	const char *f = strstr(out, "forked=");

	ck_assert_int_eq(status, 0);
	ck_assert_msg(strstr(out, "hog=alive") == NULL, "%s", out);
	ck_assert_msg(strstr(out, "hog=stopped") != NULL ||
		strstr(out, "hog_exit=137") != NULL,
	    "%s", out);
	ck_assert_msg(f != NULL, "%s", out);
	ck_assert_int_lt(atoi(f + 7), 64);
	ck_assert_int_gt(atoi(f + 7), 0);
	json_decref(j);
	/* Every process of the job is gone with it: none of its uids. */
	DIR *d = opendir("/proc");
	struct dirent *e;
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		char path[300], line[256];
		unsigned uid = 0;
		FILE *st;
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		st = fopen(path, "r");
		if (st == NULL)
			continue;
		while (fgets(line, sizeof(line), st) != NULL)
			if (sscanf(line, "Uid: %u", &uid) == 1)
				break;
		fclose(st);
		ck_assert_msg(uid < 300000 || uid >= 310000,
		    "process %s of a job's uid %u outlived the job", e->d_name,
		    uid);
	}
	closedir(d);
}
END_TEST

/* The broker gone at the stop: the job is killed all the same, and the
 * stop is a failure (exit 3), never a success. */
START_TEST(a_failed_revoke_is_reported)
{
	pid_t bpid = broker->pid, killer;
	int status;
	json_t *j;

	ck_assert_int_gt(bpid, 0);
	killer = fork();
	ck_assert_int_ge(killer, 0);
	if (killer == 0) {
		sleep(1);
		kill(bpid, SIGKILL);
		_exit(0);
	}
	j = run_json("short-job", "sleep 30", &status);
	waitpid(killer, NULL, 0);
	daemon_kill(broker); /* dead already: reaped and forgotten */
	ck_assert_int_eq(status, 3);
	ck_assert(!json_is_true(json_object_get(j, "revoked")));
	ck_assert_ptr_nonnull(
	    json_string_value(json_object_get(j, "revoke_error")));
	/* Killed: not the 30 s of its sleep. */
	ck_assert_str_eq(json_string_value(json_object_get(j, "stop_reason")),
	    "wall_clock");
	json_decref(j);
}
END_TEST

/*
 * A patch the launcher cannot write out (here: --patch-out in a directory
 * that does not exist) is not lost with the workspace: cordon run exits 4
 * and says why, and the workspace stays at the hatch, sealed, its patch
 * there to fetch.
 */
START_TEST(a_patch_not_saved_keeps_the_workspace)
{
	static char out[1 << 16], err[1 << 14];
	char input[400], dest[400], path[200];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", cfgpath, "--manifest", "job-test", "--input", input,
		"--patch-out", dest, "--", "/bin/sh", "-c",
		"echo kept > repo/NEW.md", NULL };
	struct httpc_answer a;
	const char *job, *why;
	int status;
	json_t *j;

	snprintf(input, sizeof(input), "%s/repo:repo", inputs);
	snprintf(dest, sizeof(dest), "%s/no-such-dir/out.patch",
	    harness_tmpdir());
	status = harness_run(argv, out, sizeof(out), err, sizeof(err));
	j = json_loads(out, 0, NULL);
	ck_assert_msg(j != NULL, "%s %s", out, err);
	ck_assert_int_eq(status, 4);
	ck_assert(json_is_true(json_object_get(j, "revoked")));
	ck_assert_ptr_null(json_string_value(json_object_get(j, "patch")));
	why = json_string_value(json_object_get(j, "workspace_kept"));
	ck_assert_msg(why != NULL &&
		strstr(why, "could not be written") != NULL,
	    "%s", out);
	job = json_string_value(json_object_get(j, "job"));

	/* Still at the hatch, sealed: the patch holds the job's write. */
	snprintf(path, sizeof(path), "/v1/workspaces/%s/patch", job);
	ck_assert_int_eq(httpc_request(hatch->base, "GET", path, launcher, NULL,
			     NULL, 10000, &a),
	    0);
	ck_assert_int_eq(a.status, 200);
	ck_assert_ptr_nonnull(a.body.data);
	ck_assert_ptr_nonnull(strstr(a.body.data, "+kept"));
	httpc_answer_free(&a);
	snprintf(path, sizeof(path), "/v1/workspaces/%s", job);
	json_decref(
	    harness_expect(hatch, 200, "DELETE", path, launcher, NULL, NULL));
	json_decref(j);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("launcher");
	TCase *tc = tcase_create("launcher");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, the_environment_is_empty);
	tcase_add_test(tc, tokens_are_short_and_egress_goes_through_the_proxy);
	tcase_add_test(tc, the_wall_clock_stop_burns_the_token);
	tcase_add_test(tc, an_operators_revoke_stops_the_job);
	tcase_add_test(tc, the_sandbox_holds_and_writes_come_back_as_a_patch);
	tcase_add_test(tc, cordon_serve_runs_and_cordon_stop_burns);
	tcase_add_test(tc, a_failed_revoke_is_reported);
	tcase_add_test(tc, a_patch_not_saved_keeps_the_workspace);
	tcase_add_test(tc, refusals_on_the_command_line);
	tcase_add_test(tc, a_canary_found_and_used_stops_the_job);
	tcase_add_test(tc, a_hog_and_a_fork_bomb_hit_their_limits);
	tcase_add_test(tc, a_cgroup_of_its_own_where_there_is_one);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
