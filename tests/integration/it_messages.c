/*
 * The messages a new user meets, from the real binaries run as a user
 * runs them: from a directory that is not the source tree, as a user who
 * is not root, with a key file that is missing or is not a key. Each test
 * asserts the one line on stderr (what is wrong, which file or setting,
 * what to do) and the exit status: 78 (EX_CONFIG) for every key file a
 * program cannot use, at start and under -n alike.
 */
#include "harness.h"

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char out[65536], err[65536];

static int
run(char *const argv[])
{
	out[0] = err[0] = '\0';
	return harness_run(argv, out, sizeof(out), err, sizeof(err));
}

static void
assert_one_line(void)
{
	char *nl = strchr(err, '\n');

	ck_assert_msg(nl != NULL && nl[1] == '\0', "not one line: %s", err);
}

static const char *
write_config(const char *name, const char *text)
{
	static char path[2][512];
	static int k;

	k ^= 1;
	snprintf(path[k], sizeof(path[k]), "%s/%s", harness_tmpdir(), name);
	harness_write_file(path[k], text);
	return path[k];
}

static char *
bin(const char *prog)
{
	static char path[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s", harness_bin(prog));
	return path[k];
}

START_TEST(proxy_check_missing_key)
{
	const char *cfg = write_config("proxy.json",
	    "{\"launcher_key_file\": \"/nonexistent/launcher.key\"}");
	char *argv[] = { bin("cordon-proxy"), "-n", "--config", (char *)cfg,
		NULL };

	ck_assert_int_eq(run(argv), 78);
	ck_assert_ptr_null(strstr(out, "configuration ok"));
	ck_assert_msg(strstr(err,
			  "cordon-proxy: launcher_key_file "
			  "/nonexistent/launcher.key: no such file; start "
			  "cordon-broker first") != NULL,
	    "%s", err);
	assert_one_line();
}
END_TEST

START_TEST(proxy_not_a_key)
{
	char key[512], cfg_text[1024];

	snprintf(key, sizeof(key), "%s/short.key", harness_tmpdir());
	harness_write_file(key, "crk_short\n");
	snprintf(cfg_text, sizeof(cfg_text), "{\"broker_key_file\": \"%s\"}",
	    key);
	const char *cfg = write_config("proxy.json", cfg_text);
	char *check[] = { bin("cordon-proxy"), "-n", "--config", (char *)cfg,
		NULL };
	char *start[] = { bin("cordon-proxy"), "--listen", "127.0.0.1:0",
		"--config", (char *)cfg, NULL };
	char want[700];

	snprintf(want, sizeof(want),
	    "cordon-proxy: broker_key_file %s: not a key", key);
	ck_assert_int_eq(run(check), 78);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	assert_one_line();
	/* Starting says the same, with the same status. */
	ck_assert_int_eq(run(start), 78);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
}
END_TEST

START_TEST(hatch_missing_key)
{
	const char *cfg = write_config("hatch.json",
	    "{\"launcher_key_file\": \"/nonexistent/launcher.key\"}");
	char *check[] = { bin("cordon-hatch"), "-n", "--config", (char *)cfg,
		NULL };
	char *start[] = { bin("cordon-hatch"), "--listen", "127.0.0.1:0",
		"--config", (char *)cfg, NULL };
	const char *want = "cordon-hatch: launcher_key_file "
			   "/nonexistent/launcher.key: no such file;";

	ck_assert_int_eq(run(check), 78);
	ck_assert_ptr_null(strstr(out, "configuration ok"));
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	assert_one_line();
	/* The same status as the proxy's for the same failure. */
	ck_assert_int_eq(run(start), 78);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
}
END_TEST

/* cordon run from a directory with no ./var: the default key path is
 * named with the directory it is relative to, and what to do. */
START_TEST(run_elsewhere_names_the_key)
{
	char *argv[] = { bin("cordon"), "run", "--manifest", "m", "--",
		"/bin/true", NULL };

	ck_assert_int_eq(run(argv), 78);
	ck_assert_ptr_null(strstr(err, "Invalid argument"));
	ck_assert_msg(strstr(err,
			  "cordon run: launcher_key_file "
			  "var/broker/keys/launcher.key (relative to /") !=
		NULL,
	    "%s", err);
	ck_assert_msg(strstr(err, "): no such file; start cordon-broker") !=
		NULL,
	    "%s", err);
	assert_one_line();
}
END_TEST

/* A user who is not root is told so before anything is made: no
 * "Permission denied" on a state directory. */
START_TEST(run_not_root)
{
	char *argv[] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
		"--clear-groups", bin("cordon"), "run", "--manifest", "m", "--",
		"/bin/true", NULL };

	ck_assert_int_eq(run(argv), 125);
	ck_assert_ptr_null(strstr(err, "Permission denied"));
	ck_assert_msg(strncmp(err, "cordon run: must run as root", 28) == 0,
	    "%s", err);
	assert_one_line();
}
END_TEST

START_TEST(run_id_fd_checked)
{
	char *argv[] = { bin("cordon"), "run", "--id-fd", "3x", "--manifest",
		"m", "--", "/bin/true", NULL };

	ck_assert_int_eq(run(argv), 64);
	ck_assert_msg(strstr(err,
			  "cordon run: --id-fd is a descriptor number, not "
			  "\"3x\"") != NULL,
	    "%s", err);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("messages");
	TCase *tc = tcase_create("messages");

	tcase_add_test(tc, proxy_check_missing_key);
	tcase_add_test(tc, proxy_not_a_key);
	tcase_add_test(tc, hatch_missing_key);
	tcase_add_test(tc, run_elsewhere_names_the_key);
	tcase_add_test(tc, run_not_root);
	tcase_add_test(tc, run_id_fd_checked);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
