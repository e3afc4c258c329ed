/*
 * A value released while another answer of the job is being read is
 * scanned for in the rest of that answer (credentials.md, "What is
 * scanned"): the upstream (jobs/reflectall/midway.py) starts an answer on
 * www.api.test's /open/slow, a rule that injects nothing, before anything
 * was released to the job, and finishes it with the heads it was sent
 * once the job's first injected request (api.test's /case/, up-key) came.
 * The key's bytes are not in it.
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

	snprintf(portf, sizeof(portf), "%s/midway.port", harness_tmpdir());
	unlink(portf);
	up_pid = fork();
	ck_assert_int_ge(up_pid, 0);
	if (up_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/usr/bin/python3", "python3", "-B",
		    CORDON_SOURCE_DIR
		    "/tests/integration/jobs/reflectall/midway.py",
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
	    "\"hosts_file\": \"%s\", \"follower\": \"proxy-midway\", "
	    "\"inject_cache_seconds\": 0}",
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
	     * injected */
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

START_TEST(a_value_released_midway_is_redacted_in_the_rest)
{
	char req[1024], got[8192] = "", *resp;
	size_t n = 0;
	ssize_t r;
	int fd = unix_connect(channel);

	ck_assert_int_ge(fd, 0);
	request_to(req, sizeof(req), "www.api.test", "GET", "/open/slow", false,
	    "close");
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	/* The answer is under way, unscanned (nothing released yet). */
	while (strstr(got, "start") == NULL && n < sizeof(got) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&p, 1, 10000), 1);
		r = read(fd, got + n, sizeof(got) - 1 - n);
		ck_assert_int_gt(r, 0);
		n += (size_t)r;
		got[n] = '\0';
	}
	resp = ask("GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&p, 1, 15000), 1);
		r = read(fd, got + n, sizeof(got) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		got[n] = '\0';
	}
	close(fd);
	ck_assert_msg(strstr(got, "X-Api-Key") != NULL, "%s", got);
	ck_assert_msg(!holds_piece(got), "the key came back: %s", got);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("reflect_midway");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_value_released_midway_is_redacted_in_the_rest);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
