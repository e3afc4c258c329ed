/*
 * The harness's own promises, where a test relying on them would go wrong
 * quietly: a path harness_bin returned stays that program's after other
 * calls, daemon_start and daemon_restart among them (they ask it for
 * their own program). No job is run (no uid range used; 1370000 is this
 * file's should it ever start one).
 */
#include "harness.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether path names prog: ".../prog". */
static bool
names(const char *path, const char *prog)
{
	size_t n = strlen(path), p = strlen(prog);

	return n > p && path[n - p - 1] == '/' &&
	    strcmp(path + n - p, prog) == 0;
}

START_TEST(a_bin_path_survives_other_calls_and_a_restart)
{
	char want[512], want_hatch[512];
	struct daemon broker;
	const char *cordon = harness_bin("cordon");
	const char *hatch = harness_bin("cordon-hatch");

	snprintf(want, sizeof(want), "%s", cordon);
	snprintf(want_hatch, sizeof(want_hatch), "%s", hatch);
	ck_assert_msg(names(want, "cordon"), "harness_bin(cordon) is %s", want);
	ck_assert_msg(names(want_hatch, "cordon-hatch"),
	    "harness_bin(cordon-hatch) is %s", want_hatch);
	/* Another program's path, and the same one's again. */
	ck_assert_msg(names(harness_bin("cordon-proxy"), "cordon-proxy"), "%s",
	    harness_bin("cordon-proxy"));
	ck_assert_str_eq(harness_bin("cordon"), want);
	ck_assert_str_eq(cordon, want);
	ck_assert_str_eq(hatch, want_hatch);
	/* daemon_start and daemon_restart look up cordon-broker. */
	ck_assert_int_eq(daemon_start(&broker, "broker", NULL), 0);
	ck_assert_str_eq(cordon, want);
	daemon_kill(&broker);
	ck_assert_int_eq(daemon_restart(&broker), 0);
	ck_assert_str_eq(cordon, want);
	ck_assert_str_eq(hatch, want_hatch);
	ck_assert_int_eq(daemon_stop(&broker), 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("harness");
	TCase *tc = tcase_create("harness");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_bin_path_survives_other_calls_and_a_restart);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
