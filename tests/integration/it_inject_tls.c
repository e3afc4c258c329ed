/*
 * The key is nowhere inside (issue 18's "done when"), through terminated
 * TLS: a job of the real launcher calls an HTTPS API on 127.0.0.1 that
 * answers 401 without its key and echoes the request's headers; the
 * proxy (trusting a test CA for the upstream) swaps the job's capability
 * token for the key. The job gets 200 and the echoed key redacted; then
 * it looks for the key in its environment, every file it can read (the
 * host's /usr only where it changed since the key was made), /proc/PID/
 * environ and cmdline, and every readable mapping of every process whose
 * /proc/PID/mem it can open, with a control string it must find in its
 * own memory. After the stop, a new job's channel: the old token gets
 * 403 and nothing upstream; the new job's own token works.
 */
#include "harness.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Made of two halves, so that no argv of the job holds it whole. */
#define HALF1 "sk_live_tls_ups"
#define HALF2 "tream_0123456789abcdef"
static const char value[] = HALF1 HALF2;

static struct stack st;
static struct upstream *tls_up;
static char input[600];

/* Whether the file at path holds needle anywhere. */
static bool
file_holds_text(const char *path, const char *needle)
{
	static char data[8 << 20];
	FILE *f = fopen(path, "rbe");
	size_t n;

	if (f == NULL)
		return false;
	n = fread(data, 1, sizeof(data), f);
	fclose(f);
	return memmem(data, n, needle, strlen(needle)) != NULL;
}

/* Copies jobs/inject/keyless.py into the job's input directory. */
static void
copy_script(void)
{
	char src[512], dst[600], dir[520];
	static char text[64 << 10];
	FILE *f;
	size_t n;

	snprintf(src, sizeof(src),
	    CORDON_SOURCE_DIR "/tests/integration/jobs/inject/keyless.py");
	f = fopen(src, "re");
	ck_assert_msg(f != NULL, "%s", src);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	snprintf(dir, sizeof(dir), "%s/inject", st.inputs);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(dst, sizeof(dst), "%s/keyless.py", dir);
	harness_write_file(dst, text);
	snprintf(input, sizeof(input), "%s:inject", dir);
}

/* One `cordon run` of keyless.py with args: the JSON line it printed. */
static json_t *
run_job(const char *old_token, long start)
{
	static char out[1 << 20], err[1 << 16];
	char url[128], when[32];
	char *argv[] = { (char *)harness_bin("cordon"), "run", "--json",
		"--config", (char *)st.launcher_cfg, "--manifest", "tls-api",
		"--input", input, "--", "/usr/bin/python3",
		"/work/inject/keyless.py", HALF1, HALF2, url, when,
		(char *)old_token, NULL };
	int status;
	json_t *res, *line;
	const char *text;

	snprintf(url, sizeof(url), "https://api.test:%u/v1/echo",
	    upstream_port(tls_up));
	snprintf(when, sizeof(when), "%ld", start);
	status =
	    harness_run_for(argv, 100000, out, sizeof(out), err, sizeof(err));
	res = json_loads(out, 0, NULL);
	ck_assert_msg(res != NULL,
	    "no JSON from cordon run (status %d): %s\n%s", status, out, err);
	text = json_string_value(
	    json_object_get(json_object_get(json_object_get(res, "output"),
				"stdout"),
		"text"));
	ck_assert_msg(text != NULL, "%s", out);
	line = json_loads(text, JSON_DISABLE_EOF_CHECK, NULL);
	ck_assert_msg(line != NULL, "job printed: %s\nstderr: %s\n%s", text,
	    json_string_value(
		json_object_get(json_object_get(json_object_get(res, "output"),
				    "stderr"),
		    "text")),
	    err);
	json_decref(res);
	return line;
}

static long long
num(const json_t *j, const char *key)
{
	return (long long)json_integer_value(json_object_get(j, key));
}

START_TEST(the_key_is_nowhere_inside_through_terminated_tls)
{
	const char *hosts[] = { "api.test", NULL };
	char ca[400], cert[400], key[400], want[128];
	const char *cadir = harness_tmpdir();
	struct stack_options o = { .uid_base = 472000,
		.hosts = "127.0.0.1 api.test\n",
		.upstream_ca_file = ca };
	long start = (long)time(NULL) - 1;
	json_t *m, *j, *echo;
	char *head, *old;

	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(test_ca_make(cadir, hosts), 0);
	snprintf(ca, sizeof(ca), "%s/ca.pem", cadir);
	snprintf(cert, sizeof(cert), "%s/api.test.pem", cadir);
	snprintf(key, sizeof(key), "%s/api.test.key", cadir);
	tls_up = upstream_start(cert, key);
	ck_assert_ptr_nonnull(tls_up);
	snprintf(want, sizeof(want), "Key %s", value);
	ck_assert_int_eq(upstream_require(tls_up, "X-Api-Key", want), 0);
	stack_start(&st, &o);
	copy_script();

	json_decref(
	    harness_expect(&st.broker, 200, "PUT", "/v1/secrets/api-key",
		st.admin, NULL, json_pack("{s:s}", "value", value)));
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:[s], s:s, s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}], s:{s:i}}",
	    "name", "tls-api", "command", "/bin/true", "capabilities", "name",
	    "api.read", "audience", "api", "params", "t", "1", "ttl_seconds",
	    600, "reason", "call the api", "egress", "host", "api.test", "port",
	    upstream_port(tls_up), "methods", "GET", "paths", "/v1/", "tls",
	    "terminate", "reason", "the api", "allow_cidrs", "127.0.0.0/8",
	    "audience", "api", "inject", "secret", "api-key", "header",
	    "X-Api-Key", "format", "Key {secret}", "capability", "api.read",
	    "limits", "wall_seconds", 90);
	json_decref(harness_expect(&st.broker, 200, "PUT",
	    "/v1/manifests/tls-api", st.admin, NULL, m));

	j = run_job(NULL, start);
	{
		char *t = json_dumps(j, JSON_COMPACT);
		printf("job 1: %s\n", t);
		free(t);
	}
	/* The key went upstream over TLS; the job read its echo redacted. */
	ck_assert_msg(num(j, "status") == 200, "%s", json_dumps(j, 0));
	head = upstream_last_head(tls_up);
	ck_assert_ptr_nonnull(head);
	ck_assert_ptr_nonnull(strstr(head, value));
	ck_assert_ptr_null(strstr(head, "crd_"));
	free(head);
	echo = json_object_get(j, "echo_key");
	ck_assert_uint_eq(json_array_size(echo), 1);
	ck_assert_ptr_nonnull(json_string_value(json_array_get(echo, 0)));
	ck_assert_ptr_null(
	    strstr(json_string_value(json_array_get(echo, 0)), value));
	ck_assert_int_eq(num(j, "echo_hits"), 0);
	/* Nowhere inside, and the scans saw what they claim. */
	ck_assert_int_eq(num(j, "env"), 0);
	ck_assert_int_eq(num(j, "files"), 0);
	ck_assert_int_ge(num(j, "files_scanned"), 5);
	ck_assert_int_eq(num(j, "proc"), 0);
	ck_assert_int_eq(num(j, "mem_hits"), 0);
	ck_assert_int_ge(num(j, "mem_pids"), 1);
	ck_assert_int_gt(num(j, "mem_bytes"), 1 << 20);
	ck_assert_int_ge(num(j, "control_seen"), 1);
	ck_assert(file_holds_text(st.proxy.log, "secret_reflected"));
	ck_assert(!file_holds_text(st.proxy.log, value));
	old = strdup(json_string_value(json_object_get(j, "token")));
	ck_assert_ptr_nonnull(old);
	json_decref(j);

	/* After the stop: a new job's channel, the old token refused (and
	 * nothing upstream for it), the new job's own token good. */
	unsigned before = upstream_requests(tls_up);
	j = run_job(old, start);
	ck_assert_msg(num(j, "old_status") == 403, "%s", json_dumps(j, 0));
	ck_assert_int_eq(num(j, "new_status"), 200);
	ck_assert_uint_eq(upstream_requests(tls_up), before + 1);
	json_decref(j);
	free(old);
	stack_stop(&st);
	upstream_stop(tls_up);
}
END_TEST

static Suite *
inject_tls_suite(void)
{
	Suite *s = suite_create("inject_tls");
	TCase *tc = tcase_create("job");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, the_key_is_nowhere_inside_through_terminated_tls);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(inject_tls_suite());
}
