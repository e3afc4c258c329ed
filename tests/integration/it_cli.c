/*
 * The command line as a person or CI uses it: `cordon lint` checks a
 * manifest exactly as the broker will (the same problems, the same
 * sha256), one line per problem, with exit statuses a script can trust.
 */
#include "harness.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

static char out[65536], err[65536];

static const char *
write_file(const char *name, const char *text)
{
	static char path[2][512];
	static int k;
	FILE *f;

	k ^= 1;
	snprintf(path[k], sizeof(path[k]), "%s/%s", harness_tmpdir(), name);
	f = fopen(path[k], "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return path[k];
}

static int
lint(const char *a, const char *b)
{
	char bin[512];
	char *argv[] = { bin, "lint", (char *)a, (char *)b, NULL };

	snprintf(bin, sizeof(bin), "%s", harness_bin("cordon"));
	if (a == NULL)
		argv[2] = NULL;
	return harness_run(argv, out, sizeof(out), err, sizeof(err));
}

static const char good[] =
    "{\"name\": \"t\", \"egress\": [{\"host\": \"api.github.com\", "
    "\"methods\": [\"GET\"], \"reason\": \"read issues\"}], "
    "\"capabilities\": [{\"name\": \"c\", \"audience\": \"a\", \"reason\": "
    "\"r\", \"params\": {\"tenant\": [\"1\"]}}]}";

START_TEST(lint_statuses_and_lines)
{
	const char *ok = write_file("good.json", good);
	const char *bad = write_file("bad.json",
	    "{\"name\": \"t\", \"env\": {\"AWS_SECRET_ACCESS_KEY\": \"x\"}, "
	    "\"egress\": [{\"host\": \"*\", \"methods\": [\"GET\"]}]}");

	ck_assert_int_eq(lint(ok, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, ": ok (sha256 "));

	ck_assert_int_eq(lint(bad, ok), 1);
	char want[600];
	snprintf(want, sizeof(want), "%s: env.AWS_SECRET_ACCESS_KEY: ", bad);
	ck_assert_ptr_nonnull(strstr(out, want));
	snprintf(want, sizeof(want), "%s: egress[0].host: ", bad);
	ck_assert_ptr_nonnull(strstr(out, want));
	snprintf(want, sizeof(want), "%s: egress[0].reason: ", bad);
	ck_assert_ptr_nonnull(strstr(out, want));
	/* The good one still says so. */
	snprintf(want, sizeof(want), "%s: ok", ok);
	ck_assert_ptr_nonnull(strstr(out, want));

	const char *broken = write_file("broken.json", "{\"name\": \n\"x\",");
	ck_assert_int_eq(lint(broken, NULL), 1);
	snprintf(want, sizeof(want), "%s:2:", broken);
	ck_assert_ptr_nonnull(strstr(out, want));

	ck_assert_int_eq(lint("/nonexistent/m.json", NULL), 66);
	ck_assert_ptr_nonnull(strstr(err, "No such file"));
	ck_assert_int_eq(lint(NULL, NULL), 64);
}
END_TEST

START_TEST(lint_agrees_with_the_broker)
{
	struct daemon broker;
	char keypath[600], admin[128];
	long status;

	ck_assert_int_eq(daemon_start(&broker, "broker", NULL), 0);
	snprintf(keypath, sizeof(keypath), "%s/var/broker/keys/admin.key",
	    broker.dir);
	ck_assert_int_eq(harness_read_line(keypath, admin, sizeof(admin)), 0);
	json_t *m = json_loads(good, 0, NULL);
	json_t *v = harness_call(&broker, "PUT", "/v1/manifests/t", admin, NULL,
	    m, &status);
	ck_assert_int_eq(status, 200);
	ck_assert_int_eq(lint(write_file("t.json", good), NULL), 0);
	char want[128];
	snprintf(want, sizeof(want), "(sha256 %s)",
	    json_string_value(json_object_get(v, "sha256")));
	ck_assert_ptr_nonnull(strstr(out, want));
	json_decref(v);
	json_decref(m);
	ck_assert_int_eq(daemon_stop(&broker), 0);
}
END_TEST

static Suite *
cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("lint");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, lint_statuses_and_lines);
	tcase_add_test(tc, lint_agrees_with_the_broker);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(cli_suite());
}
