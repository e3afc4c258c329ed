/*
 * A hostile review of credential injection (issue 18): the places an
 * upstream hands an injected key back to the job other than an answer's
 * body. The upstream (jobs/redteam/reflect.py) reflects the X-Api-Key it
 * was sent in a 103 Early Hints and a 100 Continue, a chunked answer's
 * trailer, a redirect's Location, a Set-Cookie, a WWW-Authenticate
 * challenge, a HEAD answer's fields, a status line's reason phrase, and
 * in a later answer on the same upstream connection (/last, the previous
 * request's head). None of the key's bytes may reach the job. And a rule
 * that injects names its host in full: a wildcard is refused at PUT.
 * The manifest's second rule (www.api.test, the same service, nothing
 * injected) is where a stored reflection is not scanned (credentials.md).
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
	.follower = "proxy-redteam",
	/* It reflects its own key on purpose. */
	.proxy_extra = "\"reflect_limit\": 1000000",
	.value = value,
};

INJECTKIT_FIXTURE(kit, opts)

START_TEST(reflections_outside_the_body_are_redacted)
{
	static const char *const get[] = { "early", "continue", "location",
		"cookie", "wwwauth", "fields", "reason" };
	long before =
	    injectkit_metric(&kit.proxy, "cordon_proxy_reflections_total");
	char path[64], *resp;
	long n = 0;

	for (size_t i = 0; i < sizeof(get) / sizeof(get[0]); i++, n++) {
		snprintf(path, sizeof(path), "/case/%s", get[i]);
		resp = injectkit_ask(&kit, "GET", path, true);
		ck_assert_msg(http_status(resp) > 0, "%s: %.400s", get[i],
		    resp);
		ck_assert_msg(!injectkit_holds_piece(value, resp), "%s: %s",
		    get[i], resp);
		free(resp);
	}
	/* The cookie's Set-Cookie is dropped, not redacted: no reflection
	 * (the decision line's cookies_dropped). */
	n--;
	/* A scanned answer's trailer is left out: the body ends whole,
	 * nothing of the trailer goes down. */
	resp = injectkit_ask(&kit, "GET", "/case/trailer", true);
	ck_assert_msg(http_status(resp) == 200, "trailer: %.400s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp), "trailer: %s", resp);
	ck_assert_msg(strstr(resp, "X-Echo") == NULL, "trailer: %s", resp);
	free(resp);
	resp = injectkit_ask(&kit, "HEAD", "/case/fields", true);
	n++;
	ck_assert_msg(http_status(resp) == 200, "HEAD: %.400s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp), "HEAD: %s", resp);
	free(resp);
	/* Each was a reflection, seen and counted. */
	ck_assert_int_eq(injectkit_metric(&kit.proxy,
			     "cordon_proxy_reflections_total"),
	    before + n);
}
END_TEST

/* first, then second on one connection to the job's channel (second sent
 * once first's answer, which ends in "public\n", is in): what came back
 * after first's answer. */
static char *
two_on_one(const char *first, const char *second)
{
	char out[8192] = "", *more;
	int fd = unix_connect(kit.channel);
	size_t got = 0;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(send(fd, first, strlen(first), MSG_NOSIGNAL),
	    (ssize_t)strlen(first));
	while (strstr(out, "public\n") == NULL && got < sizeof(out) - 1) {
		struct pollfd p = { fd, POLLIN, 0 };
		ck_assert_int_eq(poll(&p, 1, 5000), 1);
		ssize_t n = recv(fd, out + got, sizeof(out) - 1 - got, 0);
		ck_assert_msg(n > 0, "first: %s", out);
		got += (size_t)n;
		out[got] = '\0';
	}
	more = http_exchange(fd, second, strlen(second), 5000);
	close(fd);
	ck_assert_ptr_nonnull(more);
	return more;
}

START_TEST(a_later_answer_quoting_an_injected_head_is_redacted)
{
	char first[1024], second[1024], *resp;

	/* The upstream's answer to the second request on one connection
	 * quotes the first: both injected, both scanned. */
	injectkit_request_to(&kit, first, sizeof(first), "api.test", "GET",
	    "/case/x", true, "keep-alive");
	injectkit_request_to(&kit, second, sizeof(second), "api.test", "GET",
	    "/case/last", true, "close");
	resp = two_on_one(first, second);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "X-Api-Key") != NULL, "%.600s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp),
	    "same connection: %s", resp);
	free(resp);
}
END_TEST

START_TEST(an_injecting_rule_names_its_host_in_full)
{
	/* A wildcard would send the key to every name under it: a customer's
	 * shop, a user's page, a host nobody reviewed. */
	json_t *m =
	    json_pack("{s:s, s:[s], s:[{s:s, s:s, s:{s:[s]}, s:i, s:s}],"
		      " s:[{s:s, s:i, s:[s], s:s, s:s,"
		      "     s:{s:s, s:s, s:s}}]}",
		"name", "wild", "command", "/bin/true", "capabilities", "name",
		"x.read", "audience", "api", "params", "t", "1", "ttl_seconds",
		600, "reason", "read x", "egress", "host", "*.api.test", "port",
		443, "methods", "GET", "reason", "the api", "audience", "api",
		"inject", "secret", "up-key", "header", "X-Api-Key",
		"capability", "x.read");
	json_t *r = harness_expect(&kit.broker, 422, "PUT",
	    "/v1/manifests/wild", kit.admin, NULL, m);
	char *text = json_dumps(r, 0);

	ck_assert_msg(strstr(text, "egress[0].inject") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "wildcard") != NULL, "%s", text);
	free(text);
	json_decref(r);
}
END_TEST

START_TEST(path_overrides_never_go_with_the_credential)
{
	static const char *const fields[] = { "X-Original-URL",
		"X-Rewrite-URL" };
	char req[1024];

	/* IIS, and the frameworks that take its fields (Symfony, Zend,
	 * Laravel, ASP.NET behind URL Rewrite), route by these instead of
	 * the request line: the credential would reach a path the rule
	 * never judged (a templated one's other repository). */
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		snprintf(req, sizeof(req),
		    "GET http://api.test:%u/case/echo HTTP/1.1\r\nHost: "
		    "api.test:%u\r\nAuthorization: Bearer %s\r\n%s: "
		    "/admin/keys\r\nx-%s: /admin/keys\r\nConnection: "
		    "close\r\n\r\n",
		    kit.up_port, kit.up_port, kit.tok, fields[i],
		    fields[i] + 2);
		char *resp = injectkit_send(&kit, req);
		ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
		ck_assert_msg(strstr(resp, "echo: GET /case/echo") != NULL,
		    "%s", resp);
		ck_assert_msg(strcasestr(resp, fields[i]) == NULL,
		    "went upstream with the credential: %s", resp);
		ck_assert_msg(strstr(resp, "/admin/keys") == NULL,
		    "went upstream with the credential: %s", resp);
		free(resp);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("redteam_inject");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, reflections_outside_the_body_are_redacted);
	tcase_add_test(tc, a_later_answer_quoting_an_injected_head_is_redacted);
	tcase_add_test(tc, an_injecting_rule_names_its_host_in_full);
	tcase_add_test(tc, path_overrides_never_go_with_the_credential);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
