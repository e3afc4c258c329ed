/*
 * A value released while another answer of the job is being read is
 * scanned for in the rest of that answer (credentials.md, "What is
 * scanned"): the upstream (jobs/reflectall/midway.py) starts an answer on
 * www.api.test's /open/slow, a rule that injects nothing, before anything
 * was released to the job, and finishes it with the heads it was sent
 * once the job's first injected request (api.test's /case/, up-key) came.
 * The key's bytes are not in it.
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
	    CORDON_SOURCE_DIR "/tests/integration/jobs/reflectall/midway.py",
	.port_file = "midway.port",
	.follower = "proxy-midway",
	.proxy_extra = "\"inject_cache_seconds\": 0",
	.value = value,
};

INJECTKIT_FIXTURE(kit, opts)

START_TEST(a_value_released_midway_is_redacted_in_the_rest)
{
	char req[1024], got[8192] = "", *resp;
	size_t n = 0;
	ssize_t r;
	int fd = unix_connect(kit.channel);

	ck_assert_int_ge(fd, 0);
	injectkit_request_to(&kit, req, sizeof(req), "www.api.test", "GET",
	    "/open/slow", false, "close");
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	/* The answer is under way, unscanned (nothing released yet). */
	while (strstr(got, "start") == NULL && n < sizeof(got) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&p, 1, 10000), 1);
		r = read(fd, got + n, sizeof(got) - 1 - n);
		ck_assert_int_gt(r, 0);
		n += (size_t)r;
		got[n] = '\0';
	}
	resp = injectkit_ask(&kit, "GET", "/case/x", true);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	free(resp);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&p, 1, 15000), 1);
		r = read(fd, got + n, sizeof(got) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		got[n] = '\0';
	}
	close(fd);
	ck_assert_msg(strstr(got, "X-Api-Key") != NULL, "%s", got);
	ck_assert_msg(!injectkit_holds_piece(value, got),
	    "the key came back: %s", got);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("reflect_midway");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_value_released_midway_is_redacted_in_the_rest);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
