/*
 * A connection's buffers, kept from one exchange to the next (issue 18's
 * bench: proxy/scratch.c, no malloc and free an exchange): the request's
 * head as it goes up (an injected key in it), the answer's head and the
 * scanned answer on their way down. On one kept-alive connection of a
 * job's channel, an injected request with a long head and a long answer,
 * then a short request under another rule that injects nothing, then a
 * short injected one: the second goes up as its own head alone (no byte
 * of the first's, its key nor its padding) and comes down as its own
 * answer alone; the third carries the key once. No job is spawned (uid
 * base 1440000 reserved).
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char value[] = "sk_live_scratch_0123456789abcdef";

/* The manifest's rules: the kit's injecting rule 0 (api.test, /case/)
 * and rule 1, www.api.test's /open/ on the same upstream, injecting
 * nothing. */
static json_t *
rules(const struct injectkit *k)
{
	return json_pack("[o, {s:s, s:i, s:[s], s:[s], s:s, s:[s]}]",
	    injectkit_inject_rule(k, false, NULL, NULL), "host", "www.api.test",
	    "port", k->up_port, "methods", "GET", "paths", "/open/", "reason",
	    "the public part", "allow_cidrs", "127.0.0.0/8");
}

/* How many times needle is in s. */
static int
count_of(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

START_TEST(the_next_exchange_carries_nothing_of_the_last)
{
	struct injectkit k = { .up_pid = -1 };
	struct upstream *u = upstream_start(NULL, NULL);
	char pad[1501], req[4096], *resp, *head;

	ck_assert_ptr_nonnull(u);
	injectkit_stack_start(&k,
	    "127.0.0.1 api.test\n127.0.0.1 www.api.test\n", "proxy-scratch",
	    NULL);
	injectkit_secret(&k, "up-key", value);
	k.up_port = upstream_port(u);
	injectkit_job_start(&k, "scratch",
	    injectkit_manifest("scratch", rules(&k)));
	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';

	int fd = unix_connect(k.channel);
	ck_assert_int_ge(fd, 0);

	/* 1: injected, a long head up, a long answer down (the upstream
	 * echoes the fields it got, the key redacted by the scan). */
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/case/first HTTP/1.1\r\nHost: "
	    "api.test:%u\r\n"
	    "Authorization: Bearer %s\r\nX-Pad: %s\r\n\r\n",
	    k.up_port, k.up_port, k.tok, pad);
	resp = http_exchange(fd, req, strlen(req), 5000);
	ck_assert_ptr_nonnull(resp);
	ck_assert_msg(http_status(resp) == 200, "first: %.400s", resp);
	ck_assert_msg(strstr(resp, pad) != NULL, "first: %.400s", resp);
	ck_assert_msg(!injectkit_holds_piece(value, resp), "first: %s", resp);
	free(resp);
	head = upstream_last_head(u);
	ck_assert_ptr_nonnull(head);
	ck_assert_msg(count_of(head, value) == 1, "first went up as: %s", head);
	free(head);

	/* 2: another rule, nothing injected, a short head on the same
	 * connection: up as itself alone, down as its own answer alone. */
	snprintf(req, sizeof(req),
	    "GET http://www.api.test:%u/open/second HTTP/1.1\r\n"
	    "Host: www.api.test:%u\r\n\r\n",
	    k.up_port, k.up_port);
	resp = http_exchange(fd, req, strlen(req), 5000);
	ck_assert_ptr_nonnull(resp);
	head = upstream_last_head(u);
	ck_assert_ptr_nonnull(head);
	ck_assert_msg(strncmp(head, "GET /open/second HTTP/1.1\r\n", 27) == 0,
	    "second went up as: %s", head);
	ck_assert_msg(!injectkit_holds_piece(value, head) &&
		strstr(head, "X-Api-Key") == NULL &&
		strstr(head, "pppppppp") == NULL &&
		count_of(head, "\r\n\r\n") == 1,
	    "second went up with bytes of the first: %s", head);
	free(head);
	ck_assert_msg(http_status(resp) == 200 &&
		count_of(resp, "HTTP/1.1 ") == 1 &&
		strstr(resp, "/open/second") != NULL &&
		strstr(resp, "pppppppp") == NULL &&
		strstr(resp, "/case/first") == NULL &&
		!injectkit_holds_piece(value, resp),
	    "second came down with bytes of the first: %s", resp);
	free(resp);

	/* 3: injected again, short: the key once, nothing of the others. */
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/case/third HTTP/1.1\r\nHost: "
	    "api.test:%u\r\n"
	    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
	    k.up_port, k.up_port, k.tok);
	resp = http_exchange(fd, req, strlen(req), 5000);
	ck_assert_ptr_nonnull(resp);
	ck_assert_msg(http_status(resp) == 200 &&
		count_of(resp, "HTTP/1.1 ") == 1 &&
		strstr(resp, "/case/third") != NULL &&
		strstr(resp, "/open/second") == NULL &&
		strstr(resp, "pppppppp") == NULL,
	    "third: %s", resp);
	free(resp);
	head = upstream_last_head(u);
	ck_assert_ptr_nonnull(head);
	ck_assert_msg(strncmp(head, "GET /case/third HTTP/1.1\r\n", 26) == 0 &&
		count_of(head, value) == 1 &&
		strstr(head, "pppppppp") == NULL &&
		count_of(head, "\r\n\r\n") == 1,
	    "third went up as: %s", head);
	free(head);
	close(fd);
	ck_assert_uint_eq(upstream_requests(u), 3);
	injectkit_stop(&k);
	upstream_stop(u);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("inject_scratch");
	TCase *tc = tcase_create("reuse");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, the_next_exchange_carries_nothing_of_the_last);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
