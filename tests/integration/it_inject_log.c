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
#include "harness.h"
#include "upstream.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct daemon broker, proxy;
static struct upstream *plain;
static char admin[128], launcher[128], verifier[128], channel[300];

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

static char *
send_on(const char *req)
{
	int fd = unix_connect(channel);
	char *out;

	if (fd < 0)
		return strdup("");
	out = http_exchange(fd, req, strlen(req), 5000);
	close(fd);
	return out != NULL ? out : strdup("");
}

static char *
mint(void)
{
	static const char body[] =
	    "{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}";
	char req[512], *resp, *tok, *end;

	snprintf(req, sizeof(req),
	    "POST http://broker.cordon/v1/token HTTP/1.1\r\nHost: "
	    "broker.cordon\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s",
	    strlen(body), body);
	resp = send_on(req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	tok = strstr(resp, "crd_");
	ck_assert_ptr_nonnull(tok);
	end = strchr(tok, '"');
	ck_assert_ptr_nonnull(end);
	*end = '\0';
	tok = strdup(tok);
	free(resp);
	return tok;
}

START_TEST(one_info_line_a_release_one_decision_line_a_use)
{
	char cfg[2048], path[400], hostsf[400], job[64], req[512], jobq[80];
	char *tok, *resp;
	json_t *m, *j;

	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(daemon_start(&broker, "broker",
			     "{\"log_level\": \"info\"}"),
	    0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
	plain = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf, "127.0.0.1 api.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", \"hosts_file\": \"%s\", "
	    "\"log_level\": \"info\", \"inject_cache_seconds\": 600}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/secrets/up-key",
	    admin, NULL, json_pack("{s:s}", "value", value)));
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}]}",
	    "name", "logged", "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress", "host", "api.test", "port",
	    upstream_port(plain), "methods", "GET", "reason", "the api",
	    "allow_cidrs", "127.0.0.0/8", "audience", "api", "inject", "secret",
	    "up-key", "header", "X-Api-Key", "format", "Key {secret}",
	    "capability", "x.read");
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/manifests/logged",
	    admin, NULL, m));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "logged"));
	snprintf(job, sizeof(job), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(channel, sizeof(channel), "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);
	tok = mint();

	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/echo HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
	    upstream_port(plain), upstream_port(plain), tok);
	for (int i = 0; i < 5; i++) {
		resp = send_on(req);
		ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
		/* The echo of the credential is redacted as before. */
		ck_assert_ptr_null(strstr(resp, value));
		free(resp);
	}
	ck_assert_int_eq(daemon_stop(&proxy), 0);
	snprintf(jobq, sizeof(jobq), "\"%s\"", job);
	ck_assert_uint_eq(lines_with(broker.log, "\"secret_released\"", jobq),
	    1);
	/* Every use: its decision line with the secret and version. */
	ck_assert_uint_eq(lines_with(proxy.log, "\"secret\":\"up-key\"",
			      "\"secret_version\":1"),
	    5);
	/* The release's info line, and none for the four cached uses. */
	unsigned info = lines_with(proxy.log, "\"secret_injected\"", jobq);
	ck_assert_msg(info == 1,
	    "%u secret_injected lines at info for 5 requests and 1 release",
	    info);
	ck_assert_uint_eq(lines_with(proxy.log, "\"secret_injected\"",
			      "\"cached\":false"),
	    1);
	free(tok);
	upstream_stop(plain);
	ck_assert_int_eq(daemon_stop(&broker), 0);
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
