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
#include "injectkit.h"
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

static struct injectkit kit;
static pid_t up2_pid = -1;
static unsigned up2_port;

static const char value[] = "sk_live_redteam_0123456789abcdef";

static void
setup(void)
{
	json_t *m;

	kit.up_pid = -1;
	injectkit_stack_start(&kit,
	    "127.0.0.1 api.test\n127.0.0.1 www.api.test\n"
	    "127.0.0.1 plain.test\n",
	    "proxy-trailers", "\"inject_cache_seconds\": 0");
	kit.up_pid =
	    injectkit_jobs_upstream("redteam/reflect.py", NULL, &kit.up_port);
	up2_pid =
	    injectkit_jobs_upstream("smuggle/upstream.py", NULL, &up2_port);
	injectkit_secret(&kit, "up-key", value);
	m = injectkit_manifest("trailers",
	    json_pack("[o, {s:s, s:i, s:[s], s:[s], s:s, s:[s]}]",
		/* rule 0: injects up-key */
		injectkit_inject_rule(&kit, false, NULL, NULL),
		/* rule 1: a service that sends trailers, nothing injected */
		"host", "plain.test", "port", up2_port, "methods", "GET",
		"paths", "/", "reason", "a plain api", "allow_cidrs",
		"127.0.0.0/8"));
	ck_assert_ptr_nonnull(m);
	injectkit_job_start(&kit, "trailers", m);
}

static void
teardown(void)
{
	injectkit_stop(&kit);
	injectkit_upstream_stop(&up2_pid);
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
	resp = injectkit_send(&kit, req);
	ck_assert_msg(strstr(resp,
			  "\r\n\r\n3\r\nok\n\r\n0\r\n"
			  "X-Checksum: c0ffee\r\n\r\n") != NULL,
	    "raw: %.600s", resp);
	free(resp);
	/* curl: the whole body, its trailer among the fields it shows. */
	snprintf(cmd, sizeof(cmd),
	    "curl -sS -D - --max-time 10 --unix-socket '%s' "
	    "--request-target '%s' '%s' 2>&1",
	    kit.channel, url, url);
	st = run_out(cmd, out, sizeof(out));
	ck_assert_msg(st == 0 && strstr(out, "\r\n\r\nok\n") != NULL,
	    "curl (%d): %s", st, out);
	ck_assert_msg(strstr(out, "X-Checksum: c0ffee") != NULL, "curl: %s",
	    out);
	/* python's http.client reads the body to its end. */
	snprintf(cmd, sizeof(cmd),
	    "/usr/bin/python3 -B " CORDON_SOURCE_DIR
	    "/tests/integration/jobs/smuggle/client.py '%s' '%s' 2>&1",
	    kit.channel, url);
	st = run_out(cmd, out, sizeof(out));
	ck_assert_msg(st == 0 && strcmp(out, "200\nok\ncomplete\n") == 0,
	    "python (%d): %s", st, out);
	ck_assert(!injectkit_decisions_hold(&kit.proxy, "bad_upstream_chunk"));
}
END_TEST

START_TEST(a_scanned_answer_ends_whole_without_its_trailer)
{
	char req[1024], *resp;

	/* reflect.py's trailer is X-Echo: the injected key. */
	injectkit_request_to(&kit, req, sizeof(req), "api.test", "GET",
	    "/case/trailer", true, "close");
	resp = injectkit_send(&kit, req);
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
	resp = injectkit_send(&kit, req);
	ck_assert_msg(strstr(resp, "\r\n\r\n3\r\nok\n\r\n0\r\n\r\n") != NULL,
	    "%.600s", resp);
	free(resp);
	ck_assert(!injectkit_decisions_hold(&kit.proxy, "bad_upstream_chunk"));
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
