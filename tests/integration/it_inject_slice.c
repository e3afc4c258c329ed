/*
 * A sliding cut of the key (issue 18; redteam's it_redteam_slice): an
 * upstream that quotes a cut of what it was sent (an error page with the
 * first 200 bytes of the request) hands back a prefix of the key, and
 * the job sets where the cut falls (the key comes after the request
 * line, whose length is the job's), so one more byte a request would
 * reassemble all of the key but its last byte. The scanner redacts every
 * run of INJECT_WINDOW (8) bytes of the value in a row (credentials.md,
 * "Slices of the value"), so at most the first 7 come back.
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

START_TEST(a_cut_quotation_never_yields_the_key_a_byte_at_a_time)
{
	char got[sizeof(value)] = "", req[1024], pad[300];
	int base = -1;

	/* The upstream quotes the first 200 bytes of the head it got. The
	 * key sits after the request line, whose length the job chooses
	 * (the query): each length puts one more of the key's bytes last
	 * before the cut. The scanner looks for the whole value only. */
	for (int k = 0; k < 200; k++) {
		memset(pad, 'a', (size_t)k);
		pad[k] = '\0';
		snprintf(req, sizeof(req),
		    "GET http://api.test:%u/case/trunc?p=%s HTTP/1.1\r\nHost: "
		    "api.test:%u\r\nAuthorization: Bearer %s\r\n"
		    "Connection: close\r\n\r\n",
		    up_port, pad, up_port, tok);
		char *resp = send_on(req);
		const char *q = strstr(resp, "bad request: ");
		ck_assert_msg(q != NULL, "%.400s", resp);
		const char *at = strstr(q, "X-Api-Key: Key ");
		if (at != NULL) {
			at += strlen("X-Api-Key: Key ");
			size_t n = strcspn(at, "\n");
			/* The quotation ends in the key: its last byte is new
			 * when it is the key's (not the scanner's filler). */
			if (n > 0 && n < strlen(value) &&
			    at[n - 1] == value[n - 1]) {
				if (base < 0)
					base = k;
				got[n - 1] = at[n - 1];
			}
		}
		free(resp);
	}
	/* What the job learnt of the key, '.' for a byte it did not. */
	int known = 0;
	for (size_t i = 0; i < strlen(value); i++) {
		known += got[i] != '\0';
		if (got[i] == '\0')
			got[i] = '.';
	}
	ck_assert_msg(known < 8,
	    "%d of the key's %zu bytes, one a request: %s (from a query of %d "
	    "bytes on)",
	    known, strlen(value), got, base);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("inject_slice");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc,
	    a_cut_quotation_never_yields_the_key_a_byte_at_a_time);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
