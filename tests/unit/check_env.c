/*
 * The launcher's environment has one source, manifest_launcher_env: every
 * name in it (and CORDON_JOB) is refused in a manifest's env, the job's
 * HOME in it is the directory the sandbox makes (SANDBOX_HOME), outside
 * /work, and a name the launcher does not set is a manifest's to set.
 */
#include "manifest.h"
#include "sandbox.h"
#include "testutil.h"

#include <check.h>
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

int
main(void)
{
	Suite *s = suite_create("env");
	TCase *tc = tcase_create("env");

	tcase_add_test(tc, test_every_launcher_variable_is_refused);
	tcase_add_test(tc, test_home_is_the_sandbox_s_scratch);
	suite_add_tcase(s, tc);
	return testutil_run(s);
}
