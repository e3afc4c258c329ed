/*
 * Trailer fields on an upstream's chunked answer (RFC 9112 7.1.2): they
 * cut every answer after its head (bad_upstream_chunk), so a service that
 * sends them (a checksum, gRPC-web's status) did not work through the
 * proxy. Now an answer's trailers are read as its header fields are
 * (names, values, at most HTTP1_HEADERS_MAX bytes) and relayed; a scanned
 * answer (the job holds a released secret) has them left out, as the
 * reflection scanner reads them as framing: its body still ends whole.
 * Clients: curl, python's http.client (jobs/smuggle/client.py), raw bytes.
 * Upstreams: jobs/smuggle/upstream.py's /trailer, jobs/redteam/reflect.py's
 * (X-Echo: the key, in a trailer).
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
	upstream_run("redteam/reflect.py", &up_pid, &up_port, NULL);
	upstream_run("smuggle/upstream.py", &up2_pid, &up2_port, NULL);
	snprintf(hostsf, sizeof(hostsf), "%s/hosts", harness_tmpdir());
	harness_write_file(hostsf,
	    "127.0.0.1 api.test\n127.0.0.1 www.api.test\n"
	    "127.0.0.1 plain.test\n");
	snprintf(path, sizeof(path), "%s/verifier.key", harness_tmpdir());
	harness_write_file(path, verifier);
	snprintf(cfg, sizeof(cfg),
	    "{\"broker\": \"%s\", \"broker_key_file\": \"%s\", "
	    "\"launcher_key_sha256\": \"%s\", "
	    "\"hosts_file\": \"%s\", \"follower\": \"proxy-trailers\", "
	    "\"inject_cache_seconds\": 0}",
	    broker.base, path, harness_launcher_sha256(&broker), hostsf);
	ck_assert_int_eq(daemon_start(&proxy, "proxy", cfg), 0);
	json_decref(harness_expect(&broker, 200, "PUT", "/v1/secrets/up-key",
	    admin, NULL, json_pack("{s:s}", "value", value)));
	m = json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s,s], s:[s], s:s, s:[s], s:s,"
		      "     s:{s:s, s:s, s:s, s:s}},"
		      "    {s:s, s:i, s:[s], s:[s], s:s, s:[s]}]}",
	    "name", "trailers", "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress",
	    /* rule 0: injects up-key */
	    "host", "api.test", "port", up_port, "methods", "GET", "HEAD",
	    "paths", "/case/", "reason", "the api", "allow_cidrs",
	    "127.0.0.0/8", "audience", "api", "inject", "secret", "up-key",
	    "header", "X-Api-Key", "format", "Key {secret}", "capability",
	    "x.read",
	    /* rule 1: a service that sends trailers, nothing injected */
	    "host", "plain.test", "port", up2_port, "methods", "GET", "paths",
	    "/", "reason", "a plain api", "allow_cidrs", "127.0.0.0/8");
	ck_assert_ptr_nonnull(m);
	json_decref(harness_expect(&broker, 200, "PUT",
	    "/v1/manifests/trailers", admin, NULL, m));
	j = harness_expect(&broker, 201, "POST", "/v1/jobs", launcher, NULL,
	    json_pack("{s:s}", "manifest", "trailers"));
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

/* A command's output (at most cap - 1 bytes); its exit status. */
static int
run_out(const char *cmd, char *out, size_t cap)
{
	FILE *f = popen(cmd, "r");
	size_t n = 0;

	ck_assert_ptr_nonnull(f);
	while (n + 1 < cap) {
		size_t k = fread(out + n, 1, cap - 1 - n, f);
		if (k == 0)
			break;
		n += k;
	}
	out[n] = '\0';
	return pclose(f);
}

START_TEST(an_answer_with_a_trailer_reaches_every_client_whole)
{
	char req[1024], url[256], cmd[2048], out[8192], *resp;
	int st;

	snprintf(url, sizeof(url), "http://plain.test:%u/trailer", up2_port);
	snprintf(req, sizeof(req),
	    "GET %s HTTP/1.1\r\nHost: plain.test:%u\r\n"
	    "Connection: close\r\n\r\n",
	    url, up2_port);
	resp = send_on(req);
	ck_assert_msg(strstr(resp,
			  "\r\n\r\n3\r\nok\n\r\n0\r\n"
			  "X-Checksum: c0ffee\r\n\r\n") != NULL,
	    "raw: %.600s", resp);
	free(resp);
	/* curl: the whole body, its trailer among the fields it shows. */
	snprintf(cmd, sizeof(cmd),
	    "curl -sS -D - --max-time 10 --unix-socket '%s' "
	    "--request-target '%s' '%s' 2>&1",
	    channel, url, url);
	st = run_out(cmd, out, sizeof(out));
	ck_assert_msg(st == 0 && strstr(out, "\r\n\r\nok\n") != NULL,
	    "curl (%d): %s", st, out);
	ck_assert_msg(strstr(out, "X-Checksum: c0ffee") != NULL, "curl: %s",
	    out);
	/* python's http.client reads the body to its end. */
	snprintf(cmd, sizeof(cmd),
	    "/usr/bin/python3 -B " CORDON_SOURCE_DIR
	    "/tests/integration/jobs/smuggle/client.py '%s' '%s' 2>&1",
	    channel, url);
	st = run_out(cmd, out, sizeof(out));
	ck_assert_msg(st == 0 && strcmp(out, "200\nok\ncomplete\n") == 0,
	    "python (%d): %s", st, out);
	ck_assert(!decisions_hold("bad_upstream_chunk"));
}
END_TEST

START_TEST(a_scanned_answer_ends_whole_without_its_trailer)
{
	char req[1024], *resp;

	/* reflect.py's trailer is X-Echo: the injected key. */
	request_to(req, sizeof(req), "api.test", "GET", "/case/trailer", true,
	    "close");
	resp = send_on(req);
	ck_assert_msg(http_status(resp) == 200 &&
		strstr(resp, "\r\n\r\n3\r\nok\n\r\n0\r\n\r\n") != NULL,
	    "%.600s", resp);
	ck_assert_msg(strstr(resp, "X-Echo") == NULL &&
		strstr(resp, "0123456789abcdef") == NULL,
	    "%.600s", resp);
	free(resp);
	/* The job holds a released secret now: the plain rule's answers
	 * are scanned too, and lose their trailers the same way. */
	snprintf(req, sizeof(req),
	    "GET http://plain.test:%u/trailer HTTP/1.1\r\nHost: "
	    "plain.test:%u\r\nConnection: close\r\n\r\n",
	    up2_port, up2_port);
	resp = send_on(req);
	ck_assert_msg(strstr(resp, "\r\n\r\n3\r\nok\n\r\n0\r\n\r\n") != NULL,
	    "%.600s", resp);
	free(resp);
	ck_assert(!decisions_hold("bad_upstream_chunk"));
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("trailers");
	TCase *tc = tcase_create("trailers");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, an_answer_with_a_trailer_reaches_every_client_whole);
	tcase_add_test(tc, a_scanned_answer_ends_whole_without_its_trailer);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
