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
	    "127.0.0.1 del.test\n",
	    "proxy-redteam", "\"inject_cache_seconds\": 0");
	kit.up_pid =
	    injectkit_jobs_upstream("redteam/reflect.py", NULL, &kit.up_port);
	up2_pid =
	    injectkit_jobs_upstream("smuggle/upstream.py", NULL, &up2_port);
	injectkit_secret(&kit, "up-key", value);
	m = injectkit_manifest("redteam",
	    json_pack("[o, {s:s, s:i, s:[s,s], s:[s], s:s, s:[s]}, {s:s, s:i, "
		      "s:[s,s,s,s], s:[s], s:s, s:[s]}]",
		/* rule 0: injects up-key */
		injectkit_inject_rule(&kit, false, NULL, NULL),
		/* rule 1: the same service under another name, nothing
                 * injected (its answers are not scanned) */
		"host", "www.api.test", "port", kit.up_port, "methods", "GET",
		"HEAD", "paths", "/open/", "reason", "the public part",
		"allow_cidrs", "127.0.0.0/8",
		/* rule 2: python's http.server, DELETE and OPTIONS allowed */
		"host", "del.test", "port", up2_port, "methods", "GET", "POST",
		"DELETE", "OPTIONS", "paths", "/", "reason", "a small service",
		"allow_cidrs", "127.0.0.0/8"));
	ck_assert_ptr_nonnull(m);
	injectkit_job_start(&kit, "redteam", m);
}

static void
teardown(void)
{
	injectkit_stop(&kit);
	injectkit_upstream_stop(&up2_pid);
}

/* What the upstream was sent so far (its /open/log), a new string. */
static char *
upstream_log(void)
{
	char req[1024];

	injectkit_request_to(&kit, req, sizeof(req), "www.api.test", "GET",
	    "/open/log", false, "close");
	return injectkit_send(&kit, req);
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
		    i, kit.up_port);
		snprintf(req, sizeof(req),
		    "%s http://www.api.test:%u/open/x HTTP/1.1\r\nHost: "
		    "www.api.test:%u\r\nContent-Length: %zu\r\n"
		    "Connection: close\r\n\r\n%s",
		    methods[i], kit.up_port, kit.up_port, strlen(inner), inner);
		refused(injectkit_send(&kit, req), methods[i]);
		/* The same in a chunked body. */
		snprintf(req, sizeof(req),
		    "%s http://www.api.test:%u/open/x HTTP/1.1\r\nHost: "
		    "www.api.test:%u\r\nTransfer-Encoding: chunked\r\n"
		    "Connection: close\r\n\r\n%zx\r\n%s\r\n0\r\n\r\n",
		    methods[i], kit.up_port, kit.up_port, strlen(inner), inner);
		refused(injectkit_send(&kit, req), methods[i]);
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
	return injectkit_send(&kit, req);
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
		resp = injectkit_send(&kit, req);
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
	resp = injectkit_send(&kit, req);
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
