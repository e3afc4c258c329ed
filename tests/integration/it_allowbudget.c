/*
 * Allowed decision lines have a budget per job, as refused ones do
 * (redteam4's noticed: a mint flood's 27,001 allowed lines wrote 8 MB of
 * decisions.log in 30 s, about 1 GB an hour from one job): past
 * allow_lines_burst, then allow_lines_per_second, a job's allowed
 * decisions are counted by host and status and told in one line each
 * ("detail": "held_past_budget", "count"), so that no request goes
 * uncounted. The job here makes 200 plain requests with a budget of 20
 * and 5 a second: fewer lines than requests, at least one held line,
 * and the lines' requests and the held counts add up to the 200.
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REQUESTS 200

static struct injectkit k;
static const struct injectkit_opts opts = {
	.script =
	    CORDON_SOURCE_DIR "/tests/integration/jobs/scanbudget/upstream.py",
	.port_file = "allowbudget.port",
	.follower = "allowbudget",
	.proxy_extra = "\"allow_lines_burst\": 20, "
		       "\"allow_lines_per_second\": 5",
	.value = "sk_live_allowbudget_0123456789",
};
INJECTKIT_FIXTURE(k, opts)

/* The lines of decisions.log for www.api.test: how many, and what their
 * requests add up to (a held line counts its "count"). */
static void
count_lines(long *ret_lines, long *ret_requests, long *ret_held)
{
	char path[400], line[8192];
	FILE *f;

	snprintf(path, sizeof(path), "%s/var/proxy/log/decisions.log",
	    k.proxy.dir);
	f = fopen(path, "re");
	ck_assert_msg(f != NULL, "no %s", path);
	*ret_lines = *ret_requests = *ret_held = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		json_t *j = json_loads(line, 0, NULL);
		const char *host =
		    json_string_value(json_object_get(j, "host"));
		const char *dec =
		    json_string_value(json_object_get(j, "decision"));
		if (host != NULL && strcmp(host, "www.api.test") == 0 &&
		    dec != NULL && strcmp(dec, "allow") == 0) {
			json_int_t c =
			    json_integer_value(json_object_get(j, "count"));
			(*ret_lines)++;
			*ret_requests += c > 0 ? (long)c : 1;
			if (c > 0)
				(*ret_held)++;
		}
		json_decref(j);
	}
	fclose(f);
}

START_TEST(allowed_lines_past_the_budget_are_counted)
{
	char req[1024];
	long lines = 0, requests = 0, held = 0;

	for (int i = 0; i < REQUESTS; i++) {
		injectkit_request_to(&k, req, sizeof(req), "www.api.test",
		    "GET", "/open/small", false, "close");
		char *r = injectkit_send(&k, req);
		ck_assert_msg(http_status(r) == 200, "request %d: %.300s", i,
		    r);
		free(r);
	}
	/* The held ones are told within a second or two (the sweep). */
	for (int i = 0; i < 100; i++) {
		count_lines(&lines, &requests, &held);
		if (requests >= REQUESTS)
			break;
		usleep(100000);
	}
	ck_assert_msg(requests == REQUESTS,
	    "the lines count %ld requests of %d (%ld lines, %ld held)",
	    requests, REQUESTS, lines, held);
	ck_assert_msg(lines < REQUESTS && held > 0,
	    "every allowed request had a line of its own (%ld lines)", lines);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("allowbudget");
	TCase *tc = tcase_create("allowbudget");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, allowed_lines_past_the_budget_are_counted);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
