/*
 * Request smuggling through a body the upstream does not read (the
 * hostile review's it_redteam_smuggle). The upstream jobs/redteam/reflect.py
 * reads no body on GET or HEAD, as many servers do not, and takes it as
 * its next request: a DELETE the rule (GET and HEAD under /open/) never
 * allowed, never judged, on no decision line. The proxy refuses a body on
 * GET, HEAD and TRACE, in a Content-Length or chunked (malformed,
 * body_on_get / body_on_head / body_on_trace), before anything goes
 * upstream; OPTIONS is not on that rule: refused as method. A body on
 * DELETE or OPTIONS (which some APIs use) goes on, with Connection: close
 * to the upstream and its connection never reused: python's http.server
 * (jobs/smuggle/upstream.py), which reads no body there either, then
 * reads nothing after it. The set-up is it_redteam_inject.c's.
 */
#include "harness.h"
#include "upstream.h"

#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static struct daemon broker, proxy;
static char admin[128], launcher[128], verifier[128], channel[300];
static char tok[512];
static pid_t up_pid = -1, up2_pid = -1;
static unsigned up_port, up2_port;

static const char value[] = "sk_live_redteam_0123456789abcdef";

/* Starts script (under tests/integration/jobs/) on a free port. */
static void
upstream_run(const char *script, pid_t *pid, unsigned *port)
{
	char portf[400], line[32], path[600];

	snprintf(portf, sizeof(portf), "%s/%s.port", harness_tmpdir(),
	    strchr(script, '/') + 1);
	snprintf(path, sizeof(path), "%s/tests/integration/jobs/%s",
	    CORDON_SOURCE_DIR, script);
	unlink(portf);
	*pid = fork();
	ck_assert_int_ge(*pid, 0);
	if (*pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/usr/bin/python3", "python3", "-B", path, "--port-file",
		    portf, (char *)NULL);
		_exit(127);
	}
	for (int i = 0;
	     i < 200 && harness_read_line(portf, line, sizeof(line)) != 0; i++)
		usleep(50000);
	ck_assert_int_eq(harness_read_line(portf, line, sizeof(line)), 0);
	*port = (unsigned)strtoul(line, NULL, 10);
	ck_assert_uint_gt(*port, 0);
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

/* The job's request line for method path, its token when with_token. */
static void
request_to(char *out, size_t cap, const char *host, const char *method,
    const char *path, bool with_token, const char *conn)
{
	char auth[600] = "";

	if (with_token)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n",
		    tok);
	snprintf(out, cap,
	    "%s http://%s:%u%s HTTP/1.1\r\nHost: %s:%u\r\n%s"
	    "Connection: %s\r\n\r\n",
	    method, host, up_port, path, host, up_port, auth, conn);
}

static void
setup(void)
{
	char cfg[2048], path[400], hostsf[400], job[64], req[1024], *resp;
	json_t *m, *j;

	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(daemon_start(&broker, "broker",
			     "{\"log_level\": \"info\"}"),
	    0);
	harness_broker_key(&broker, "admin", admin, sizeof(admin));
	harness_broker_key(&broker, "launcher", launcher, sizeof(launcher));
	harness_broker_key(&broker, "verifier", verifier, sizeof(verifier));
	upstream_run("redteam/reflect.py", &up_pid, &up_port);
	upstream_run("smuggle/upstream.py", &up2_pid, &up2_port);
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf,
	    "127.0.0.1 api.test\n127.0.0.1 www.api.test\n"
	    "127.0.0.1 del.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"proxy-redteam\", "
	    "\"inject_cache_seconds\": 0}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/secrets/up-key",
	    admin, NULL, json_pack("{s:s}", "value", value)));
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s,s], s:[s], s:s, s:[s], s:s,"
		      "     s:{s:s, s:s, s:s, s:s}},"
		      "    {s:s, s:i, s:[s,s], s:[s], s:s, s:[s]},"
		      "    {s:s, s:i, s:[s,s,s,s], s:[s], s:s, s:[s]}]}",
	    "name", "redteam", "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress",
	    /* rule 0: injects up-key */
	    "host", "api.test", "port", up_port, "methods", "GET", "HEAD",
	    "paths", "/case/", "reason", "the api", "allow_cidrs",
	    "127.0.0.0/8", "audience", "api", "inject", "secret", "up-key",
	    "header", "X-Api-Key", "format", "Key {secret}", "capability",
	    "x.read",
	    /* rule 1: the same service under another name, nothing
                 * injected (its answers are not scanned) */
	    "host", "www.api.test", "port", up_port, "methods", "GET", "HEAD",
	    "paths", "/open/", "reason", "the public part", "allow_cidrs",
	    "127.0.0.0/8",
	    /* rule 2: python's http.server, DELETE and OPTIONS allowed */
	    "host", "del.test", "port", up2_port, "methods", "GET", "POST",
	    "DELETE", "OPTIONS", "paths", "/", "reason", "a small service",
	    "allow_cidrs", "127.0.0.0/8");
	ck_assert_ptr_nonnull(m);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/manifests/redteam",
	    admin, NULL, m));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "redteam"));
	snprintf(job, sizeof(job), "%s",
	    json_string_value(json_object_get(j, "job")));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	j = harness_expect(&proxy, 201, "POST", path, launcher, NULL, NULL);
	snprintf(channel, sizeof(channel), "%s",
	    json_string_value(json_object_get(j, "channel")));
	json_decref(j);

	static const char b[] =
	    "{\"capability\":\"x.read\",\"params\":{\"t\":\"1\"}}";
	snprintf(req, sizeof(req),
	    "POST http://broker.cordon/v1/token HTTP/1.1\r\nHost: "
	    "broker.cordon\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s",
	    strlen(b), b);
	resp = send_on(req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	char *t = strstr(resp, "crd_"),
	     *end = t != NULL ? strchr(t, '"') : NULL;
	ck_assert_ptr_nonnull(end);
	snprintf(tok, sizeof(tok), "%.*s", (int)(end - t), t);
	free(resp);
}

static void
teardown(void)
{
	daemon_stop(&proxy);
	if (up_pid > 1) {
		kill(up_pid, SIGKILL);
		waitpid(up_pid, NULL, 0);
	}
	up_pid = -1;
	if (up2_pid > 1) {
		kill(up2_pid, SIGKILL);
		waitpid(up2_pid, NULL, 0);
	}
	up2_pid = -1;
	daemon_stop(&broker);
}

/* What the upstream was sent so far (its /open/log), a new string. */
static char *
upstream_log(void)
{
	char req[1024];

	request_to(req, sizeof(req), "www.api.test", "GET", "/open/log", false,
	    "close");
	return send_on(req);
}

/* resp, a refusal of method's request with a body: freed. */
static void
refused(char *resp, const char *method)
{
	const char *want = strcmp(method, "OPTIONS") == 0
	    ? "X-Cordon-Deny: method\r\n"
	    : "X-Cordon-Deny: malformed\r\n";

	ck_assert_msg(strstr(resp, want) != NULL, "%s: %.400s", method, resp);
	if (strcmp(method, "OPTIONS") != 0) {
		char reason[64];
		snprintf(reason, sizeof(reason), "body_on_%s", method);
		for (char *c = reason; *c != '\0'; c++)
			*c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a'
							   : *c);
		ck_assert_msg(strstr(resp, reason) != NULL, "%s: %.400s",
		    method, resp);
	}
	free(resp);
}

START_TEST(a_body_on_a_get_never_reaches_an_upstream_as_a_request)
{
	static const char *const methods[] = { "GET", "HEAD", "OPTIONS",
		"TRACE" };
	char req[2048], inner[256], *resp;

	/* The rule allows GET and HEAD under /open/ of www.api.test; an
   * upstream that reads no body on those methods takes the body as
   * its next request: DELETE /admin/..., which no rule allows and no
   * decision line names. */
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		snprintf(inner, sizeof(inner),
		    "DELETE /admin/everything-%zu HTTP/1.1\r\nHost: "
		    "www.api.test:%u\r\n\r\n",
		    i, up_port);
		snprintf(req, sizeof(req),
		    "%s http://www.api.test:%u/open/x HTTP/1.1\r\nHost: "
		    "www.api.test:%u\r\nContent-Length: %zu\r\n"
		    "Connection: close\r\n\r\n%s",
		    methods[i], up_port, up_port, strlen(inner), inner);
		refused(send_on(req), methods[i]);
		/* The same in a chunked body. */
		snprintf(req, sizeof(req),
		    "%s http://www.api.test:%u/open/x HTTP/1.1\r\nHost: "
		    "www.api.test:%u\r\nTransfer-Encoding: chunked\r\n"
		    "Connection: close\r\n\r\n%zx\r\n%s\r\n0\r\n\r\n",
		    methods[i], up_port, up_port, strlen(inner), inner);
		refused(send_on(req), methods[i]);
	}
	resp = upstream_log();
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "DELETE /admin/") == NULL,
	    "the upstream was sent a request no rule allows: %s", resp);
	free(resp);
}
END_TEST

/* The request lines del.test's upstream was sent, a new string. */
static char *
del_log(void)
{
	char req[1024];

	snprintf(req, sizeof(req),
	    "GET http://del.test:%u/log HTTP/1.1\r\nHost: del.test:%u\r\n"
	    "Connection: close\r\n\r\n",
	    up2_port, up2_port);
	return send_on(req);
}

START_TEST(a_body_on_delete_goes_with_connection_close)
{
	static const char *const methods[] = { "DELETE", "OPTIONS" };
	char req[2048], inner[256], *resp;

	/* python's http.server reads no body on DELETE or OPTIONS here: on
	 * a kept-alive upstream connection the body is its next request.
	 * Told to close, it reads nothing after the first. */
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		snprintf(inner, sizeof(inner),
		    "DELETE /admin/everything-%zu HTTP/1.1\r\nHost: "
		    "del.test:%u\r\n\r\n",
		    i, up2_port);
		snprintf(req, sizeof(req),
		    "%s http://del.test:%u/item/%zu HTTP/1.1\r\nHost: "
		    "del.test:%u\r\nContent-Length: %zu\r\n"
		    "Connection: close\r\n\r\n%s",
		    methods[i], up2_port, i, up2_port, strlen(inner), inner);
		resp = send_on(req);
		ck_assert_msg(http_status(resp) == 200 &&
			strstr(resp, "done\n") != NULL,
		    "%s: %.600s", methods[i], resp);
		free(resp);
	}
	resp = del_log();
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "DELETE /item/0 HTTP/1.1") != NULL &&
		strstr(resp, "OPTIONS /item/1 HTTP/1.1") != NULL,
	    "%s", resp);
	ck_assert_msg(strstr(resp, "/admin/") == NULL,
	    "the upstream was sent a request no rule judged: %s", resp);
	free(resp);
}
END_TEST

START_TEST(a_post_body_still_goes)
{
	char req[1024], *resp;

	snprintf(req, sizeof(req),
	    "POST http://del.test:%u/p HTTP/1.1\r\nHost: del.test:%u\r\n"
	    "Content-Length: 5\r\nConnection: close\r\n\r\nhello",
	    up2_port, up2_port);
	resp = send_on(req);
	ck_assert_msg(http_status(resp) == 200 &&
		strstr(resp, "\r\n\r\nhello") != NULL,
	    "%.600s", resp);
	free(resp);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("smuggle");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc,
	    a_body_on_a_get_never_reaches_an_upstream_as_a_request);
	tcase_add_test(tc, a_body_on_delete_goes_with_connection_close);
	tcase_add_test(tc, a_post_body_still_goes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
