/*
 * A secret stored as it goes on the wire (issue 18; redteam's
 * it_redteam_basic): the rule injects "Authorization: Basic {secret}"
 * and the secret is the base64 of "key:" (a key as the user, as Stripe
 * takes it). An upstream that decodes it and says whom it took it for
 * (httpbin's basic-auth, a debug whoami) would hand back the key in
 * clear; the scanner also looks for the decoding of a base64 word of the
 * value, its secret side (credentials.md, "Secrets stored encoded"), so
 * it is redacted.
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

/* Basic of "sk_live_redteam_0123456789abcdef:" (a key as the user, as
 * Stripe takes it): what is stored at the broker. */
static const char value[] = "c2tfbGl2ZV9yZWR0ZWFtXzAxMjM0NTY3ODlhYmNkZWY6";
static const char decoded[] = "sk_live_redteam_0123456789abcdef";

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
		      " s:[{s:s, s:i, s:[s,s,s], s:[s], s:s, s:[s], s:s,"
		      "     s:{s:s, s:s, s:s, s:s}},"
		      "    {s:s, s:i, s:[s,s], s:[s], s:s, s:[s]}]}",
	    "name", "redteam", "command", "/bin/true", "capabilities", "name",
	    "x.read", "audience", "api", "params", "t", "1", "ttl_seconds", 600,
	    "reason", "read x", "egress",
	    /* rule 0: injects up-key */
	    "host", "api.test", "port", up_port, "methods", "GET", "HEAD",
	    "POST", "paths", "/case/", "reason", "the api", "allow_cidrs",
	    "127.0.0.0/8", "audience", "api", "inject", "secret", "up-key",
	    "header", "Authorization", "format", "Basic {secret}", "capability",
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

START_TEST(a_decoded_basic_credential_never_comes_back)
{
	char req[1024];

	/* The upstream decodes the Basic credential it was sent and says
	 * whom it took it for, as httpbin's basic-auth does: the key in
	 * clear, which no encoding of the stored value matches. */
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/case/whoami HTTP/1.1\r\nHost: "
	    "api.test:%u\r\nAuthorization: Bearer %s\r\n"
	    "Connection: close\r\n\r\n",
	    up_port, up_port, tok);
	char *resp = send_on(req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "\"user\"") != NULL, "%.400s", resp);
	ck_assert_msg(strstr(resp, decoded) == NULL,
	    "the key came back decoded: %s", resp);
	free(resp);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("inject_basic");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_decoded_basic_credential_never_comes_back);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
