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
setup_with(bool cookies)
{
	json_t *m;

	kit.up_pid = -1;
	injectkit_stack_start(&kit,
	    "127.0.0.1 api.test\n127.0.0.1 www.api.test\n"
	    "127.0.0.1 wsgi.test\n",
	    "proxy-session", "\"inject_cache_seconds\": 0");
	kit.up_pid =
	    injectkit_jobs_upstream("redteam/reflect.py", NULL, &kit.up_port);
	up2_pid = injectkit_jobs_upstream("smuggle/wsgi.py", value, &up2_port);
	injectkit_secret(&kit, "up-key", value);
	m = injectkit_manifest("session",
	    json_pack("[o, {s:s, s:i, s:[s], s:[s], s:s, s:[s], s:s, s:{s:s, "
		      "s:s, s:s, s:s}}]",
		/* rule 0: injects up-key, cookies as the fixture says */
		injectkit_inject_rule(&kit, false, NULL, NULL),
		/* rule 1: a WSGI service behind the same injection */
		"host", "wsgi.test", "port", up2_port, "methods", "GET",
		"paths", "/", "reason", "a wsgi api", "allow_cidrs",
		"127.0.0.0/8", "audience", "api", "inject", "secret", "up-key",
		"header", "X-Api-Key", "format", "Key {secret}", "capability",
		"x.read"));
	ck_assert_ptr_nonnull(m);
	if (cookies)
		json_object_set_new(
		    json_object_get(json_array_get(json_object_get(m, "egress"),
					0),
			"inject"),
		    "cookies", json_true());
	injectkit_job_start(&kit, "session", m);
}

static void
teardown(void)
{
	injectkit_stop(&kit);
	injectkit_upstream_stop(&up2_pid);
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

START_TEST(a_session_the_key_bought_never_reaches_the_job)
{
	char req[1024], *resp;

	injectkit_request_to(&kit, req, sizeof(req), "api.test", "GET",
	    "/case/login", true, "close");
	resp = injectkit_send(&kit, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strcasestr(resp, "Set-Cookie") == NULL,
	    "a session bought with the key reached the job: %s", resp);
	free(resp);
	/* A cookie without the key's help goes on the same way: dropped
	 * too, on an injected answer; counted. */
	injectkit_request_to(&kit, req, sizeof(req), "api.test", "GET",
	    "/case/cookie", true, "close");
	resp = injectkit_send(&kit, req);
	ck_assert_msg(http_status(resp) == 200 &&
		strcasestr(resp, "Set-Cookie") == NULL,
	    "%.400s", resp);
	free(resp);
	/* Nor in an interim answer before the final one (a 103's). */
	injectkit_request_to(&kit, req, sizeof(req), "api.test", "GET",
	    "/case/early-login", true, "close");
	resp = injectkit_send(&kit, req);
	ck_assert_msg(strstr(resp, " 103 ") != NULL &&
		strstr(resp, "ok\n") != NULL,
	    "%.400s", resp);
	ck_assert_msg(strcasestr(resp, "Set-Cookie") == NULL,
	    "a 103's session reached the job: %s", resp);
	free(resp);
	ck_assert_msg(injectkit_decisions_hold(&kit.proxy,
			  "\"path\":\"/case/login\"") &&
		injectkit_decisions_hold(&kit.proxy, "\"cookies_dropped\":1"),
	    "no decision line counts the dropped cookie");
}
END_TEST

START_TEST(a_rule_that_wants_cookies_gets_them)
{
	char req[1024], *resp;

	injectkit_request_to(&kit, req, sizeof(req), "api.test", "GET",
	    "/case/login", true, "close");
	resp = injectkit_send(&kit, req);
	ck_assert_msg(http_status(resp) == 200 &&
		strstr(resp, "Set-Cookie: JSESSIONID=") != NULL,
	    "%.400s", resp);
	free(resp);
	ck_assert(
	    !injectkit_decisions_hold(&kit.proxy, "\"cookies_dropped\":1"));
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
		    up2_port, up2_port, kit.tok, names[i]);
		resp = injectkit_send(&kit, req);
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
