/*
 * Every answer a job reads is scanned for every value released to it
 * (credentials.md, "What is scanned"). The upstream
 * (jobs/redteam/reflect.py) keeps a log of the heads it was sent and shows
 * it at .../log: a stored reflection. The manifest has two rules on one
 * service: api.test's /case/ injects up-key, www.api.test's /open/ injects
 * nothing. The key's bytes reach the job on neither rule, nor those of a
 * version rotated away; and a request on the rule that injects nothing
 * asks for an answer the scanner can read (Accept-Encoding: identity).
 * From the hostile review's it_redteam_stored.c; the proxy's
 * inject_cache_seconds 0.
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

static const char value[] = "sk_live_redteam_0123456789abcdef";

static const struct injectkit_opts opts = {
	.script =
	    CORDON_SOURCE_DIR "/tests/integration/jobs/redteam/reflect.py",
	.port_file = "reflect.port",
	.follower = "proxy-reflectall",
	.proxy_extra = "\"inject_cache_seconds\": 0",
	.value = value,
};

INJECTKIT_FIXTURE(kit, opts)

START_TEST(a_stored_reflection_on_another_host_is_redacted)
{
	char req[1024], *resp;

	/* The injected request, then the same service under another name
   * the job may reach without injection, whose answer quotes the
   * requests the service was sent (a request log, a debug page). */
	resp = injectkit_ask(&kit, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	injectkit_request_to(&kit, req, sizeof(req), "www.api.test", "GET",
	    "/open/log", false, "close");
	resp = injectkit_send(&kit, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "X-Api-Key") != NULL, "%.600s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp),
	    "the key came back: %s", resp);
	free(resp);
}
END_TEST

START_TEST(a_stored_reflection_of_the_last_version_is_redacted)
{
	char *resp;

	/* The injected request with version 1, then a rotation at the
   * broker, then an injected request whose answer quotes the requests
   * the service was sent: it is scanned for version 2 alone. */
	resp = injectkit_ask(&kit, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	json_decref(harness_expect(&kit.broker, 200, "PUT",
	    "/v1/secrets/up-key", kit.admin, NULL,
	    json_pack("{s:s}", "value", "sk_live_rotated_9999999999zzzzzz")));
	resp = injectkit_ask(&kit, "GET", "/case/log", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "X-Api-Key") != NULL, "%.600s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp),
	    "version 1 came back: %s", resp);
	free(resp);
}
END_TEST

START_TEST(a_rotated_version_is_redacted_on_another_host)
{
	char req[1024], *resp;

	/* Version 1 injected, a rotation, version 2 injected: the log read
	 * through the rule that injects nothing holds both. */
	resp = injectkit_ask(&kit, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	json_decref(harness_expect(&kit.broker, 200, "PUT",
	    "/v1/secrets/up-key", kit.admin, NULL,
	    json_pack("{s:s}", "value", "sk_live_rotated_9999999999zzzzzz")));
	resp = injectkit_ask(&kit, "GET", "/case/y", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	injectkit_request_to(&kit, req, sizeof(req), "www.api.test", "GET",
	    "/open/log", false, "close");
	resp = injectkit_send(&kit, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "GET /case/y") != NULL, "%.600s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp),
	    "version 1 came back: %s", resp);
	ck_assert_msg(strstr(resp, "9999999999zzzzzz") == NULL,
	    "version 2 came back: %s", resp);
	free(resp);
}
END_TEST

START_TEST(an_answer_on_another_rule_comes_readable)
{
	char req[1024], *resp;

	/* Once a value was released, a compressed answer on any rule could
	 * carry it past the scanner: the job's Accept-Encoding is replaced
	 * and its Range dropped. */
	resp = injectkit_ask(&kit, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	snprintf(req, sizeof(req),
	    "GET http://www.api.test:%u/open/echo HTTP/1.1\r\nHost: "
	    "www.api.test:%u\r\nAccept-Encoding: gzip\r\n"
	    "Range: bytes=0-7\r\nConnection: close\r\n\r\n",
	    kit.up_port, kit.up_port);
	resp = injectkit_send(&kit, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "Accept-Encoding: identity") != NULL &&
		strstr(resp, "gzip") == NULL && strstr(resp, "Range") == NULL,
	    "the upstream was asked for what the scanner cannot read: %s",
	    resp);
	free(resp);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("reflect_all");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_stored_reflection_on_another_host_is_redacted);
	tcase_add_test(tc, a_stored_reflection_of_the_last_version_is_redacted);
	tcase_add_test(tc, a_rotated_version_is_redacted_on_another_host);
	tcase_add_test(tc, an_answer_on_another_rule_comes_readable);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
