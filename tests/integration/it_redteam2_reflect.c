/*
 * The hostile review's second pass at the scan of every answer
 * (proxy/reflect.c, credentials.md "What is scanned"): a stored
 * reflection (jobs/redteam2/stored.py keeps the last key it was sent and
 * hands it back to any later request) read on the rule that injects
 * nothing, in the parts of an answer a scanner could forget: a 103's
 * fields, a HEAD answer's fields, an HTTP/1.0 body delimited by the
 * upstream's close, a chunked answer's trailer, the status line's reason
 * phrase, a 101's fields and what follows it. No 6 bytes in a row of the
 * key may come back in any of them.
 */
#include "injectkit.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct injectkit kit;

static const char value[] = "sk_live_redteam2_0123456789abcdef";

static const struct injectkit_opts opts = {
	.script =
	    CORDON_SOURCE_DIR "/tests/integration/jobs/redteam2/stored.py",
	.port_file = "stored.port",
	.follower = "proxy-redteam2",
	/* It reflects its own key on purpose. */
	.proxy_extra = "\"reflect_limit\": 1000000",
	.value = value,
};

static void
setup(void)
{
	injectkit_start(&kit, &opts);
}

static void
teardown(void)
{
	injectkit_stop(&kit);
}

START_TEST(a_stored_reflection_outside_a_framed_body_is_redacted)
{
	static const struct {
		const char *method, *path, *shown;
	} cases[] = {
		{ "GET", "/open/early", "X-Echo: Key " },
		{ "HEAD", "/open/fields", "X-Echo: Key " },
		{ "GET", "/open/fields", "X-Echo: Key " },
		{ "GET", "/open/http10", "stored: Key " },
		{ "GET", "/open/trailer", "ok" },
		{ "GET", "/open/reason", "401 bad key Key " },
		{ "GET", "/open/upgrade", NULL },
	};
	char req[1024], *resp;

	/* The key injected once: the upstream stores it. */
	resp = injectkit_ask(&kit, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		injectkit_request_to(&kit, req, sizeof(req), "www.api.test",
		    cases[i].method, cases[i].path, false, "close");
		if (strcmp(cases[i].path, "/open/upgrade") == 0) {
			/* An upgrade the rule does not allow is refused; the
			 * key must not come back either way. */
			char *end = strstr(req, "\r\n\r\n");
			ck_assert_ptr_nonnull(end);
			snprintf(end, sizeof(req) - (size_t)(end - req),
			    "\r\nUpgrade: x\r\n\r\n");
		}
		resp = injectkit_send(&kit, req);
		ck_assert_msg(cases[i].shown == NULL ||
			strstr(resp, cases[i].shown) != NULL,
		    "%s %s: not the stored answer: %s", cases[i].method,
		    cases[i].path, resp);
		ck_assert_msg(!injectkit_holds_piece(value, resp),
		    "%s %s: the key came back: %s", cases[i].method,
		    cases[i].path, resp);
		free(resp);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("redteam2_reflect");
	TCase *tc = tcase_create("stored");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc,
	    a_stored_reflection_outside_a_framed_body_is_redacted);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
