/*
 * diagnose_sandbox against hosts laid out in a directory: a chroot (no
 * mount at /), user namespaces switched off, AppArmor's restriction, a
 * container without CAP_SYS_ADMIN, and a host that can make the sandbox
 * (no finding at all).
 */
#include "diagnose.h"
#include "testutil.h"

#include <check.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#define HOST_MOUNTS                                                            \
	"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"              \
	"23 22 0:5 / /proc rw,nosuid shared:2 - proc proc rw\n"
#define CHROOT_MOUNTS "23 22 0:5 / /proc rw,nosuid shared:2 - proc proc rw\n"
#define CAPS_ROOT "Name:\tcordon\nCapEff:\t000001ffffffffff\n"
#define CAPS_NONE "Name:\tcordon\nCapEff:\t00000000a80425fb\n"

/* A host under testutil_dir: its mountinfo, CapEff and three sysctls
 * (NULL: the file is absent). */
static void
host(const char *mounts, const char *caps, const char *clone,
    const char *max_userns, const char *apparmor)
{
	char p[PATH_MAX];
	const char *dirs[] = { "/proc", "/proc/self", "/proc/sys",
		"/proc/sys/kernel", "/proc/sys/user", "/run" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		ck_assert_int_eq(mkdir(testutil_at(p, dirs[i] + 1), 0755), 0);
	testutil_write_text(testutil_at(p, "proc/self/mountinfo"), mounts);
	testutil_write_text(testutil_at(p, "proc/self/status"), caps);
	if (clone != NULL)
		testutil_write_text(
		    testutil_at(p, "proc/sys/kernel/unprivileged_userns_clone"),
		    clone);
	if (max_userns != NULL)
		testutil_write_text(testutil_at(p,
					"proc/sys/user/max_user_namespaces"),
		    max_userns);
	if (apparmor != NULL)
		testutil_write_text(testutil_at(p,
					"proc/sys/kernel/"
					"apparmor_restrict_unprivileged_"
					"userns"),
		    apparmor);
}

START_TEST(test_good_host_says_nothing)
{
	char out[2048];

	host(HOST_MOUNTS, CAPS_ROOT, "1\n", "15000\n", "0\n");
	ck_assert_int_eq(diagnose_sandbox(testutil_dir, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_chroot)
{
	char out[2048];

	host(CHROOT_MOUNTS, CAPS_ROOT, NULL, "15000\n", NULL);
	ck_assert_int_eq(diagnose_sandbox(testutil_dir, out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(
	    strstr(out, "/ is not a mount point (a chroot?)"));
	ck_assert_ptr_nonnull(strstr(out, "not in a chroot"));
}
END_TEST

START_TEST(test_userns_off_and_apparmor)
{
	char out[2048];

	host(HOST_MOUNTS, CAPS_ROOT, "0\n", "0\n", "1\n");
	ck_assert_int_eq(diagnose_sandbox(testutil_dir, out, sizeof(out)), 3);
	ck_assert_ptr_nonnull(
	    strstr(out, "sysctl -w kernel.unprivileged_userns_clone=1"));
	ck_assert_ptr_nonnull(strstr(out, "; no user namespaces may be made"));
	ck_assert_ptr_nonnull(
	    strstr(out, "; AppArmor restricts user namespaces"));
}
END_TEST

START_TEST(test_container)
{
	char out[2048], p[PATH_MAX];

	host(HOST_MOUNTS, CAPS_NONE, NULL, NULL, NULL);
	ck_assert_int_eq(diagnose_sandbox(testutil_dir, out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "CAP_SYS_ADMIN is missing"));
	/* Privileged, with a container's marker: it makes the sandbox, so
	 * the marker is no reason (as where these tests run). */
	testutil_write_text(testutil_at(p, "proc/self/status"), CAPS_ROOT);
	testutil_write_text(testutil_at(p, ".dockerenv"), "");
	ck_assert_int_eq(diagnose_sandbox(testutil_dir, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "");
	/* The marker, and capabilities that cannot be read. */
	testutil_write_text(testutil_at(p, "proc/self/status"), "Name:\tx\n");
	ck_assert_int_eq(diagnose_sandbox(testutil_dir, out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "this is a container (/.dockerenv"));
	/* A short buffer is cut, still a string. */
	ck_assert_int_eq(diagnose_sandbox(testutil_dir, out, 8), 1);
	ck_assert_uint_eq(strlen(out), 7);
}
END_TEST

static Suite *
diagnose_suite(void)
{
	Suite *s = suite_create("diagnose");
	TCase *tc = tcase_create("diagnose");

	testutil_tmp_fixture(tc, "diagnose");
	tcase_add_checked_fixture(tc, testutil_dir_setup, NULL);
	tcase_add_test(tc, test_good_host_says_nothing);
	tcase_add_test(tc, test_chroot);
	tcase_add_test(tc, test_userns_off_and_apparmor);
	tcase_add_test(tc, test_container);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(diagnose_suite());
}
