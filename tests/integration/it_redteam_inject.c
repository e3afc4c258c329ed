/*
 * A hostile review of credential injection (issue 18): the places an
 * upstream hands an injected key back to the job other than an answer's
 * body. The upstream (jobs/redteam/reflect.py) reflects the X-Api-Key it
 * was sent in a 103 Early Hints and a 100 Continue, a chunked answer's
 * trailer, a redirect's Location, a Set-Cookie, a WWW-Authenticate
 * challenge, a HEAD answer's fields, a status line's reason phrase, and
 * in a later answer on the same upstream connection (/last, the previous
 * request's head). None of the key's bytes may reach the job. And a rule
 * that injects names its host in full: a wildcard is refused at PUT.
 * The manifest's second rule (www.api.test, the same service, nothing
 * injected) is where a stored reflection is not scanned (credentials.md).
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
static pid_t up_pid = -1;
static unsigned up_port;

static const char value[] = "sk_live_redteam_0123456789abcdef";

static void
upstream_run(void)
{
	char portf[400], line[32];

	snprintf(portf, sizeof(portf), "%s/reflect.port", harness_tmpdir());
	unlink(portf);
	up_pid = fork();
	ck_assert_int_ge(up_pid, 0);
	if (up_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/usr/bin/python3", "python3", "-B",
		    CORDON_SOURCE_DIR
		    "/tests/integration/jobs/redteam/reflect.py",
		    "--port-file", portf, (char *)NULL);
		_exit(127);
	}
	for (int i = 0;
	     i < 200 && harness_read_line(portf, line, sizeof(line)) != 0; i++)
		usleep(50000);
	ck_assert_int_eq(harness_read_line(portf, line, sizeof(line)), 0);
	up_port = (unsigned)strtoul(line, NULL, 10);
	ck_assert_uint_gt(up_port, 0);
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

/* Whether resp holds any 6 bytes in a row of the secret. */
static bool
holds_piece(const char *resp)
{
	for (size_t i = 0; i + 6 <= strlen(value); i++)
		if (memmem(resp, strlen(resp), value + i, 6) != NULL)
			return true;
	return false;
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
request(char *out, size_t cap, const char *method, const char *path,
    bool with_token, const char *conn)
{
	request_to(out, cap, "api.test", method, path, with_token, conn);
}

static char *
ask(const char *method, const char *path, bool with_token)
{
	char req[1024];

	request(req, sizeof(req), method, path, with_token, "close");
	return send_on(req);
}

/* The value of metric name in the proxy's /metrics, or -1. */
static long
metric(const char *name)
{
	char cmd[300], line[300];
	long v = -1;
	size_t n = strlen(name);
	FILE *f;

	snprintf(cmd, sizeof(cmd), "curl -s %s/metrics", proxy.base);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, name, n) == 0 && line[n] == ' ')
			v = strtol(line + n + 1, NULL, 10);
	pclose(f);
	return v;
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
	upstream_run();
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf,
	    "127.0.0.1 api.test\n127.0.0.1 www.api.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"proxy-redteam\"}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/secrets/up-key",
	    admin, NULL, json_pack("{s:s}", "value", value)));
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s,s], s:[s], s:s, s:[s], s:s,"
		      "     s:{s:s, s:s, s:s, s:s}},"
		      "    {s:s, s:i, s:[s,s], s:[s], s:s, s:[s]}]}",
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
	    "127.0.0.0/8");
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
	daemon_stop(&broker);
}

START_TEST(reflections_outside_the_body_are_redacted)
{
	static const char *const get[] = { "early", "continue", "location",
		"cookie", "wwwauth", "fields", "reason" };
	long before = metric("cordon_proxy_reflections_total");
	char path[64], *resp;
	long n = 0;

	for (size_t i = 0; i < sizeof(get) / sizeof(get[0]); i++, n++) {
		snprintf(path, sizeof(path), "/case/%s", get[i]);
		resp = ask("GET", path, true);
		ck_assert_msg(http_status(resp) > 0, "%s: %.400s", get[i],
		    resp);
		ck_assert_msg(!holds_piece(resp), "%s: %s", get[i], resp);
		free(resp);
	}
	/* The cookie's Set-Cookie is dropped, not redacted: no reflection
	 * (the decision line's cookies_dropped). */
	n--;
	/* A scanned answer's trailer is left out: the body ends whole,
	 * nothing of the trailer goes down. */
	resp = ask("GET", "/case/trailer", true);
	ck_assert_msg(http_status(resp) == 200, "trailer: %.400s", resp);
	ck_assert_msg(!holds_piece(resp), "trailer: %s", resp);
	ck_assert_msg(strstr(resp, "X-Echo") == NULL, "trailer: %s", resp);
	free(resp);
	resp = ask("HEAD", "/case/fields", true);
	n++;
	ck_assert_msg(http_status(resp) == 200, "HEAD: %.400s", resp);
	ck_assert_msg(!holds_piece(resp), "HEAD: %s", resp);
	free(resp);
	/* Each was a reflection, seen and counted. */
	ck_assert_int_eq(metric("cordon_proxy_reflections_total"), before + n);
}
END_TEST

/* first, then second on one connection to the job's channel (second sent
 * once first's answer, which ends in "public\n", is in): what came back
 * after first's answer. */
static char *
two_on_one(const char *first, const char *second)
{
	char out[8192] = "", *more;
	int fd = unix_connect(channel);
	size_t got = 0;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(send(fd, first, strlen(first), MSG_NOSIGNAL),
	    (ssize_t)strlen(first));
	while (strstr(out, "public\n") == NULL && got < sizeof(out) - 1) {
		struct pollfd p = { fd, POLLIN, 0 };
		ck_assert_int_eq(poll(&p, 1, 5000), 1);
		ssize_t n = recv(fd, out + got, sizeof(out) - 1 - got, 0);
		ck_assert_msg(n > 0, "first: %s", out);
		got += (size_t)n;
		out[got] = '\0';
	}
	more = http_exchange(fd, second, strlen(second), 5000);
	close(fd);
	ck_assert_ptr_nonnull(more);
	return more;
}

START_TEST(a_later_answer_quoting_an_injected_head_is_redacted)
{
	char first[1024], second[1024], *resp;

	/* The upstream's answer to the second request on one connection
	 * quotes the first: both injected, both scanned. */
	request(first, sizeof(first), "GET", "/case/x", true, "keep-alive");
	request(second, sizeof(second), "GET", "/case/last", true, "close");
	resp = two_on_one(first, second);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "X-Api-Key") != NULL, "%.600s", resp);
	ck_assert_msg(!holds_piece(resp), "same connection: %s", resp);
	free(resp);
}
END_TEST

START_TEST(an_injecting_rule_names_its_host_in_full)
{
	/* A wildcard would send the key to every name under it: a customer's
	 * shop, a user's page, a host nobody reviewed. */
	json_t *m =
	    json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:s, s:s,"
		      "     s:{s:s, s:s, s:s}}]}",
		"name", "wild", "command", "/bin/true", "capabilities", "name",
		"x.read", "audience", "api", "params", "t", "1", "ttl_seconds",
		600, "reason", "read x", "egress", "host", "*.api.test", "port",
		443, "methods", "GET", "reason", "the api", "audience", "api",
		"inject", "secret", "up-key", "header", "X-Api-Key",
		"capability", "x.read");
	json_t *r = harness_expect(&broker, 422, "PUT", "/v1/manifests/wild",
	    admin, NULL, m);
	char *text = json_dumps(r, 0);

	ck_assert_msg(strstr(text, "egress[0].inject") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "wildcard") != NULL, "%s", text);
	free(text);
	json_decref(r);
}
END_TEST

START_TEST(path_overrides_never_go_with_the_credential)
{
	static const char *const fields[] = { "X-Original-URL",
		"X-Rewrite-URL" };
	char req[1024];

	/* IIS, and the frameworks that take its fields (Symfony, Zend,
	 * Laravel, ASP.NET behind URL Rewrite), route by these instead of
	 * the request line: the credential would reach a path the rule
	 * never judged (a templated one's other repository). */
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		snprintf(req, sizeof(req),
		    "GET http://api.test:%u/case/echo HTTP/1.1\r\nHost: "
		    "api.test:%u\r\nAuthorization: Bearer %s\r\n%s: "
		    "/admin/keys\r\nx-%s: /admin/keys\r\nConnection: "
		    "close\r\n\r\n",
		    up_port, up_port, tok, fields[i], fields[i] + 2);
		char *resp = send_on(req);
		ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
		ck_assert_msg(strstr(resp, "echo: GET /case/echo") != NULL,
		    "%s", resp);
		ck_assert_msg(strcasestr(resp, fields[i]) == NULL,
		    "went upstream with the credential: %s", resp);
		ck_assert_msg(strstr(resp, "/admin/keys") == NULL,
		    "went upstream with the credential: %s", resp);
		free(resp);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("redteam_inject");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, reflections_outside_the_body_are_redacted);
	tcase_add_test(tc, a_later_answer_quoting_an_injected_head_is_redacted);
	tcase_add_test(tc, an_injecting_rule_names_its_host_in_full);
	tcase_add_test(tc, path_overrides_never_go_with_the_credential);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
