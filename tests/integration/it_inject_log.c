/*
 * What the proxy logs of an injected request, per request and per
 * release (issue 18's bench target: an injected request costs what a
 * plain one does). Each use of a credential is one decision line naming
 * the secret and its version, as any request's line; the info line
 * secret_injected is written when the value came from the broker (a
 * release, once per job and cache window), not again for each request
 * the job's cache serves (that line at debug: a JSON line and a write of
 * the proxy's log for every injected request, which the decision line
 * already says).
 */
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char value[] = "sk_live_logged_0123456789abcdef";

/* Lines of file path holding both a and b. */
static unsigned
lines_with(const char *path, const char *a, const char *b)
{
	FILE *f = fopen(path, "re");
	char line[4096];
	unsigned n = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, a) != NULL && strstr(line, b) != NULL;
	fclose(f);
	return n;
}

START_TEST(one_info_line_a_release_one_decision_line_a_use)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *plain;
	char req[1024], jobq[80];
	char *resp;

	injectkit_stack_start(&k, "127.0.0.1 api.test\n", "proxy-inject-log",
	    "\"log_level\": \"info\", \"inject_cache_seconds\": 600, "
	    "\"reflect_limit\": 1000000");
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	k.up_port = upstream_port(plain);
	injectkit_secret(&k, "up-key", value);
	/* Every path of api.test, GET alone: the echo's. */
	injectkit_job_start(&k, "logged",
	    injectkit_manifest("logged",
		json_pack("[{s:s, s:i, s:[s], s:s, s:[s], s:s,"
			  " s:{s:s, s:s, s:s, s:s}}]",
		    "host", "api.test", "port", k.up_port, "methods", "GET",
		    "reason", "the api", "allow_cidrs", "127.0.0.0/8",
		    "audience", "api", "inject", "secret", "up-key", "header",
		    "X-Api-Key", "format", "Key {secret}", "capability",
		    "x.read")));

	injectkit_request_to(&k, req, sizeof(req), "api.test", "GET", "/echo",
	    true, "close");
	for (int i = 0; i < 5; i++) {
		resp = injectkit_send(&k, req);
		ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
		/* The echo of the credential is redacted as before. */
		ck_assert_ptr_null(strstr(resp, value));
		free(resp);
	}
	ck_assert_int_eq(daemon_stop(&k.proxy), 0);
	snprintf(jobq, sizeof(jobq), "\"%s\"", k.job);
	ck_assert_uint_eq(lines_with(k.broker.log, "\"secret_released\"", jobq),
	    1);
	/* Every use: its decision line with the secret and version. */
	ck_assert_uint_eq(lines_with(k.proxy.log, "\"secret\":\"up-key\"",
			      "\"secret_version\":1"),
	    5);
	/* The release's info line, and none for the four cached uses. */
	unsigned info = lines_with(k.proxy.log, "\"secret_injected\"", jobq);
	ck_assert_msg(info == 1,
	    "%u secret_injected lines at info for 5 requests and 1 release",
	    info);
	ck_assert_uint_eq(lines_with(k.proxy.log, "\"secret_injected\"",
			      "\"cached\":false"),
	    1);
	upstream_stop(plain);
	ck_assert_int_eq(daemon_stop(&k.broker), 0);
}
END_TEST

static Suite *
inject_log_suite(void)
{
	Suite *s = suite_create("inject_log");
	TCase *tc = tcase_create("log");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, one_info_line_a_release_one_decision_line_a_use);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(inject_log_suite());
}
