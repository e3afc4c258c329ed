/*
 * Three ways a hostile review pulled an injected credential past the
 * reflection scanner, or past the rule, closed (issue 18, credentials.md
 * "No reflection back in"). The upstream (jobs/inject/holes.py) reflects
 * what it was sent, as one the job partly controls may.
 *  - Range: the job asks for 8 bytes of its own head at a time, so the
 *    scanner, which matches the whole value, never sees it whole. Range
 *    and If-Range are dropped on an injected request, and a 206 or a
 *    multipart/byteranges answer to one is a 502 partial_answer.
 *  - Method overrides: X-HTTP-Method-Override and its kin are dropped
 *    on an injected request, a _method query parameter is a 403.
 *  - Bytes left after a bodyless answer (a 204 and a whole second answer
 *    in one write) never become the next request's answer: an upstream
 *    with unread input is neither reused nor pooled.
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

static const char value[] = "sk_live_holes_0123456789abcdefgh";

/* The job's GET of /case/<name><query> with the token and extra fields. */
static char *
ask(const char *name, const char *extra, const char *conn)
{
	char req[1024];

	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/case/%s HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Authorization: Bearer %s\r\n%sConnection: %s\r\n\r\n",
	    kit.up_port, name, kit.up_port, kit.tok, extra, conn);
	return injectkit_send(&kit, req);
}

static void
setup(void)
{
	kit.up_pid = -1;
	injectkit_stack_start(&kit, "127.0.0.1 api.test\n", "proxy-holes",
	    "\"reflect_limit\": 1000000");
	kit.up_pid =
	    injectkit_jobs_upstream("inject/holes.py", NULL, &kit.up_port);
	injectkit_secret(&kit, "up-key", value);
	injectkit_job_start(&kit, "holes",
	    json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s,s], s:[s], s:s, s:[s], s:s,"
		      "  s:{s:s, s:s, s:s, s:s}}]}",
		"name", "holes", "command", "/bin/true", "capabilities", "name",
		"x.read", "audience", "api", "params", "t", "1", "ttl_seconds",
		600, "reason", "read x", "egress", "host", "api.test", "port",
		kit.up_port, "methods", "GET", "HEAD", "paths", "/case/",
		"reason", "the api", "allow_cidrs", "127.0.0.0/8", "audience",
		"api", "inject", "secret", "up-key", "header", "X-Api-Key",
		"format", "Key {secret}", "capability", "x.read"));
}

static void
teardown(void)
{
	injectkit_stop(&kit);
}

START_TEST(ranges_never_reassemble_the_key)
{
	char extra[64], got[256] = "", *resp;

	/* 8 bytes at a time over the whole head, as the review did. */
	for (int at = 0; at < 400; at += 8) {
		snprintf(extra, sizeof(extra), "Range: bytes=%03d-%03d\r\n", at,
		    at + 7);
		resp = ask("range", extra, "close");
		ck_assert_msg(http_status(resp) == 200 ||
			http_status(resp) == 206,
		    "at %d: %.400s", at, resp);
		ck_assert_msg(!injectkit_holds_piece(value, resp),
		    "a piece at %d: %s", at, resp);
		const char *body = strstr(resp, "\r\n\r\n");
		if (http_status(resp) == 206 && body != NULL)
			strncat(got, body + 4, sizeof(got) - strlen(got) - 1);
		free(resp);
	}
	ck_assert_msg(strstr(got, value) == NULL, "reassembled: %s", got);
	/* If-Range goes with Range: the head the upstream saw has neither. */
	resp = ask("head", "Range: bytes=0-3\r\nIf-Range: \"x\"\r\n", "close");
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "Range:") == NULL, "%s", resp);
	free(resp);
}
END_TEST

START_TEST(a_partial_answer_to_an_injected_request_is_refused)
{
	long before =
	    injectkit_metric(&kit.proxy, "cordon_proxy_partial_refused_total");
	char *resp = ask("partial", "", "close");

	ck_assert_msg(http_status(resp) == 502, "206: %.600s", resp);
	ck_assert_msg(strstr(resp, "partial_answer") != NULL, "%.600s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp), "%s", resp);
	free(resp);
	resp = ask("multipart", "", "close");
	ck_assert_msg(http_status(resp) == 502, "multipart: %.600s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp), "%s", resp);
	free(resp);
	ck_assert_int_eq(injectkit_metric(&kit.proxy,
			     "cordon_proxy_partial_refused_total"),
	    before + 2);
	ck_assert(injectkit_decisions_hold(&kit.proxy,
	    "\"detail\":\"partial_answer\""));
}
END_TEST

START_TEST(method_overrides_never_go_with_the_credential)
{
	char *resp = ask("head",
	    "X-HTTP-Method-Override: DELETE\r\nX-HTTP-Method: DELETE\r\n"
	    "X-Method-Override: DELETE\r\n",
	    "close");

	ck_assert_msg(http_status(resp) == 200, "%.600s", resp);
	ck_assert_msg(strstr(resp, "DELETE") == NULL, "went upstream: %s",
	    resp);
	free(resp);
	const char *q[] = { "head?_method=DELETE", "head?a=1&_method=DELETE",
		"head?_METHOD=DELETE", "head?%5Fmethod=DELETE" };
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		resp = ask(q[i], "", "close");
		ck_assert_msg(http_status(resp) == 403, "%s: %.600s", q[i],
		    resp);
		ck_assert_msg(strstr(resp, "method_override") != NULL, "%s: %s",
		    q[i], resp);
		free(resp);
	}
	ck_assert(injectkit_decisions_hold(&kit.proxy,
	    "\"detail\":\"method_override\""));
	/* A parameter that only ends in _method is the upstream's own. */
	resp = ask("head?x_method=1", "", "close");
	ck_assert_msg(http_status(resp) == 200, "%.600s", resp);
	free(resp);
}
END_TEST

/* Two requests in turn on one connection to the job's channel: the
 * second sent once the first's answer head is in. What came back. */
static char *
two_on_one(const char *first, const char *second)
{
	char req[1024], *out = calloc(1, 8192), *more;
	int fd = unix_connect(kit.channel);
	size_t got = 0;

	ck_assert_ptr_nonnull(out);
	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/case/%s HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Authorization: Bearer %s\r\n\r\n",
	    kit.up_port, first, kit.up_port, kit.tok);
	ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL),
	    (ssize_t)strlen(req));
	while (strstr(out, "\r\n\r\n") == NULL && got < 4096) {
		struct pollfd p = { fd, POLLIN, 0 };
		ck_assert_int_eq(poll(&p, 1, 5000), 1);
		ssize_t n = recv(fd, out + got, 4096 - got, 0);
		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/case/%s HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
	    kit.up_port, second, kit.up_port, kit.tok);
	more = http_exchange(fd, req, strlen(req), 5000);
	close(fd);
	ck_assert_ptr_nonnull(more);
	snprintf(out + got, 8192 - got, "%s", more);
	free(more);
	return out;
}

START_TEST(bytes_after_a_bodyless_answer_never_answer_the_next_request)
{
	/* On the same connection. */
	char *resp = two_on_one("204", "plain");

	ck_assert_msg(strstr(resp, "HTTP/1.1 204") == resp, "%.600s", resp);
	ck_assert_msg(strstr(resp, "smuggled") == NULL, "%s", resp);
	ck_assert_msg(strstr(resp, "public\n") != NULL, "%s", resp);
	free(resp);
	/* Through the job's pool: the 204's connection kept alive, the
	 * next request on a new connection. */
	for (int i = 0; i < 3; i++) {
		resp = ask("204", "", "close");
		ck_assert_msg(http_status(resp) == 204, "%.600s", resp);
		free(resp);
		resp = ask("plain", "", "close");
		ck_assert_msg(http_status(resp) == 200, "%.600s", resp);
		ck_assert_msg(strstr(resp, "smuggled") == NULL, "%s", resp);
		ck_assert_msg(strstr(resp, "public\n") != NULL, "%s", resp);
		free(resp);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("inject_holes");
	TCase *tc = tcase_create("holes");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, ranges_never_reassemble_the_key);
	tcase_add_test(tc, a_partial_answer_to_an_injected_request_is_refused);
	tcase_add_test(tc, method_overrides_never_go_with_the_credential);
	tcase_add_test(tc,
	    bytes_after_a_bodyless_answer_never_answer_the_next_request);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
