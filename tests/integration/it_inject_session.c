/*
 * What an injected request's answer and the injected field's look-alikes
 * may carry (issue 18's hostile review, it_redteam_session). A session the
 * upstream bought with the key (Set-Cookie: JSESSIONID on an answer to a
 * request with it, as Jenkins answers an API token) is a credential
 * derived from the key, valid without it and after the stop: an injected
 * answer's Set-Cookie and Set-Cookie2 are dropped and counted on the
 * decision line (cookies_dropped), unless the rule's inject says
 * "cookies": true. And a job's X_Api_Key beside the injected X-Api-Key
 * reads as the same variable on a WSGI or CGI server (HTTP_X_API_KEY,
 * python's wsgiref joins them): every field of the job's whose name
 * folds (case, '_' and '-') to the injected one is dropped. Upstreams:
 * jobs/redteam/reflect.py and jobs/smuggle/wsgi.py.
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
upstream_run(const char *script, pid_t *pid, unsigned *port, const char *key)
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
		if (key != NULL)
			execl("/usr/bin/python3", "python3", "-B", path,
			    "--port-file", portf, "--key", key, (char *)NULL);
		else
			execl("/usr/bin/python3", "python3", "-B", path,
			    "--port-file", portf, (char *)NULL);
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
setup_with(bool cookies)
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
	upstream_run("redteam/reflect.py", &up_pid, &up_port, NULL);
	upstream_run("smuggle/wsgi.py", &up2_pid, &up2_port, value);
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf,
	    "127.0.0.1 api.test\n127.0.0.1 www.api.test\n"
	    "127.0.0.1 wsgi.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"proxy-session\", "
	    "\"inject_cache_seconds\": 0}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/secrets/up-key",
	    admin, NULL, json_pack("{s:s}", "value", value)));
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s,s], s:[s], s:s, s:[s], s:s,"
		      "     s:{s:s, s:s, s:s, s:s}},"
		      "    {s:s, s:i, s:[s], s:[s], s:s, s:[s], s:s,"
		      "     s:{s:s, s:s, s:s, s:s}}]}",
	    "name", "session", "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress",
	    /* rule 0: injects up-key, cookies as the fixture says */
	    "host", "api.test", "port", up_port, "methods", "GET", "HEAD",
	    "paths", "/case/", "reason", "the api", "allow_cidrs",
	    "127.0.0.0/8", "audience", "api", "inject", "secret", "up-key",
	    "header", "X-Api-Key", "format", "Key {secret}", "capability",
	    "x.read",
	    /* rule 1: a WSGI service behind the same injection */
	    "host", "wsgi.test", "port", up2_port, "methods", "GET", "paths",
	    "/", "reason", "a wsgi api", "allow_cidrs", "127.0.0.0/8",
	    "audience", "api", "inject", "secret", "up-key", "header",
	    "X-Api-Key", "format", "Key {secret}", "capability", "x.read");
	ck_assert_ptr_nonnull(m);
	if (cookies)
		json_object_set_new(
		    json_object_get(json_array_get(json_object_get(m, "egress"),
					0),
			"inject"),
		    "cookies", json_true());
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/manifests/session",
	    admin, NULL, m));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "session"));
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
setup(void)
{
	setup_with(false);
}

static void
setup_cookies(void)
{
	setup_with(true);
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

static bool
decisions_hold(const char *needle)
{
	static char data[1 << 20];
	char path[400];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log",
	    proxy.dir);
	if ((f = fopen(path, "rbe")) == NULL)
		return false;
	n = fread(data, 1, sizeof(data), f);
	fclose(f);
	return memmem(data, n, needle, strlen(needle)) != NULL;
}

START_TEST(a_session_the_key_bought_never_reaches_the_job)
{
	char req[1024], *resp;

	request_to(req, sizeof(req), "api.test", "GET", "/case/login", true,
	    "close");
	resp = send_on(req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strcasestr(resp, "Set-Cookie") == NULL,
	    "a session bought with the key reached the job: %s", resp);
	free(resp);
	/* A cookie without the key's help goes on the same way: dropped
	 * too, on an injected answer; counted. */
	request_to(req, sizeof(req), "api.test", "GET", "/case/cookie", true,
	    "close");
	resp = send_on(req);
	ck_assert_msg(http_status(resp) == 200 &&
		strcasestr(resp, "Set-Cookie") == NULL,
	    "%.400s", resp);
	free(resp);
	ck_assert_msg(decisions_hold("\"path\":\"/case/login\"") &&
		decisions_hold("\"cookies_dropped\":1"),
	    "no decision line counts the dropped cookie");
}
END_TEST

START_TEST(a_rule_that_wants_cookies_gets_them)
{
	char req[1024], *resp;

	request_to(req, sizeof(req), "api.test", "GET", "/case/login", true,
	    "close");
	resp = send_on(req);
	ck_assert_msg(http_status(resp) == 200 &&
		strstr(resp, "Set-Cookie: JSESSIONID=") != NULL,
	    "%.400s", resp);
	free(resp);
	ck_assert(!decisions_hold("\"cookies_dropped\":1"));
}
END_TEST

START_TEST(a_look_alike_of_the_injected_field_never_reaches_a_wsgi_app)
{
	static const char *const names[] = { "X_Api_Key", "x_api-key",
		"X-API_KEY", "x-api-key" };
	char req[1024], *resp;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(req, sizeof(req),
		    "GET http://wsgi.test:%u/x HTTP/1.1\r\nHost: "
		    "wsgi.test:%u\r\nAuthorization: Bearer %s\r\n"
		    "%s: the-jobs-own\r\nConnection: close\r\n\r\n",
		    up2_port, up2_port, tok, names[i]);
		resp = send_on(req);
		ck_assert_msg(http_status(resp) == 200 &&
			strstr(resp, "took: Key <KEY>\n") != NULL,
		    "%s: %.400s", names[i], resp);
		free(resp);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("inject_session");
	TCase *tc = tcase_create("dropped");
	TCase *tk = tcase_create("kept");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_session_the_key_bought_never_reaches_the_job);
	tcase_add_test(tc,
	    a_look_alike_of_the_injected_field_never_reaches_a_wsgi_app);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tk, 60);
	tcase_add_checked_fixture(tk, setup_cookies, teardown);
	tcase_add_test(tk, a_rule_that_wants_cookies_gets_them);
	suite_add_tcase(s, tk);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
