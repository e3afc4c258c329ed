/*
 * The launcher's environment has one source, manifest_launcher_env: every
 * name in it (and CORDON_JOB) is refused in a manifest's env, the job's
 * HOME in it is the directory the sandbox makes (SANDBOX_HOME), outside
 * /work, and a name the launcher does not set is a manifest's to set. The
 * limits' ranges and defaults likewise have one table, which
 * docs/manifest.md shows.
 */
#include "manifest.h"
#include "sandbox.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool
env_refused(const char *name)
{
	char text[256];
	json_t *problems = json_array(), *warnings = json_array();

	snprintf(text, sizeof(text),
	    "{\"name\": \"t\", \"env\": {\"%s\": \"x\"}}", name);
	json_t *m = testutil_json(text, 0);
	bool ok = manifest_validate(m, NULL, problems, warnings);
	json_decref(m);
	json_decref(problems);
	json_decref(warnings);
	return !ok;
}

START_TEST(test_every_launcher_variable_is_refused)
{
	size_t n = 0;

	for (const char *const *e = manifest_launcher_env; *e != NULL; e++) {
		char name[64];
		size_t k = strcspn(*e, "=");

		ck_assert_msg((*e)[k] == '=', "%s: no value", *e);
		ck_assert_uint_lt(k, sizeof(name));
		memcpy(name, *e, k);
		name[k] = '\0';
		ck_assert_msg(env_refused(name), "%s is a manifest's to set",
		    name);
		n++;
	}
	ck_assert_uint_ge(n, 10);
	ck_assert(env_refused("CORDON_JOB"));
	ck_assert(!env_refused("LANG"));
}
END_TEST

/* The AWS SDKs and CLI read AWS_CA_BUNDLE: the launcher sets it to the
 * job's bundle, while a manifest still may set no AWS_ name, that one
 * included (the secret convention's ^AWS_ stands). */
START_TEST(test_the_aws_sdks_get_the_bundle)
{
	bool set = false;

	for (const char *const *e = manifest_launcher_env; *e != NULL; e++)
		set = set ||
		    strcmp(*e,
			"AWS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt") ==
			0;
	ck_assert_msg(set, "no AWS_CA_BUNDLE in manifest_launcher_env");
	ck_assert(env_refused("AWS_CA_BUNDLE"));
	ck_assert(env_refused("AWS_SECRET_ACCESS_KEY"));
	ck_assert(env_refused("AWS_ACCESS_KEY_ID"));
	ck_assert(env_refused("AWS_SESSION_TOKEN"));
	ck_assert(env_refused("AWS_REGION"));
}
END_TEST

START_TEST(test_home_is_the_sandbox_s_scratch)
{
	const char *home = NULL;

	for (const char *const *e = manifest_launcher_env; *e != NULL; e++)
		if (strncmp(*e, "HOME=", 5) == 0)
			home = *e + 5;
	ck_assert_ptr_nonnull(home);
	ck_assert_str_eq(home, SANDBOX_HOME);
	ck_assert_msg(strncmp(home, "/work", 5) != 0, "%s", home);
}
END_TEST

/* docs/manifest.md's table of limits is the table manifest.c applies. */
START_TEST(test_limits_doc_is_the_table)
{
	static const char *const keys[] = { "wall_seconds", "memory_mb", "pids",
		"disk_mb", "output_kb" };
	char line[512];
	size_t seen = 0;
	FILE *f = fopen(CORDON_SOURCE_DIR "/docs/manifest.md", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL)
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			char head[64], digits[128];
			long long min, max, dflt, v[3];
			size_t k = 0;
			int n = 0;

			snprintf(head, sizeof(head), "| `%s` | ", keys[i]);
			if (strncmp(line, head, strlen(head)) != 0)
				continue;
			/* "1 to 86,400 | 900 (...)": the commas dropped. */
			for (const char *c = line + strlen(head);
			     *c != '\0' && k + 1 < sizeof(digits); c++)
				if (*c != ',')
					digits[k++] = *c;
			digits[k] = '\0';
			ck_assert_int_eq(sscanf(digits, "%lld to %lld | %lld%n",
					     &v[0], &v[1], &v[2], &n),
			    3);
			ck_assert_int_eq(manifest_limit_range(keys[i], &min,
					     &max, &dflt),
			    0);
			ck_assert_msg(v[0] == min && v[1] == max &&
				v[2] == dflt,
			    "%s: the doc says %lld to %lld, %lld; the table "
			    "%lld "
			    "to %lld, %lld",
			    keys[i], v[0], v[1], v[2], min, max, dflt);
			seen++;
		}
	fclose(f);
	ck_assert_uint_eq(seen, 5);
	long long a, b, c;
	ck_assert_int_eq(manifest_limit_range("cpus", &a, &b, &c), -ENOENT);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("env");
	TCase *tc = tcase_create("env");

	tcase_add_test(tc, test_every_launcher_variable_is_refused);
	tcase_add_test(tc, test_the_aws_sdks_get_the_bundle);
	tcase_add_test(tc, test_home_is_the_sandbox_s_scratch);
	tcase_add_test(tc, test_limits_doc_is_the_table);
	suite_add_tcase(s, tc);
	return testutil_run(s);
}
