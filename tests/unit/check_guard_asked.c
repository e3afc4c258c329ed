/*
 * The scan sets a job was given (proxy/guard.h's guard_asked): an issuer
 * secret's is due again once a newer bindings list was read, a static
 * one's once a newer version is bound, and one forgotten past
 * GUARD_ASKED_MAX is due again (asked once more, never scanned less).
 */
#include "guard.h"
#include "testutil.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

START_TEST(a_set_is_due_until_asked_and_again_after_a_newer_read)
{
	struct guard_asked a = { .n = 0 };

	ck_assert(guard_asked_due(&a, "up-key", 0));
	guard_asked_set(&a, "up-key", 100);
	ck_assert(!guard_asked_due(&a, "up-key", 100));
	ck_assert(!guard_asked_due(&a, "up-key", 99));
	ck_assert(guard_asked_due(&a, "up-key", 101));
	ck_assert(guard_asked_due(&a, "other", 100));
	guard_asked_set(&a, "up-key", 101);
	ck_assert(!guard_asked_due(&a, "up-key", 101));
	ck_assert_uint_eq(a.n, 1);
}
END_TEST

START_TEST(the_oldest_forgotten_is_due_again)
{
	struct guard_asked a = { .n = 0 };
	char name[32];

	for (int i = 0; i <= GUARD_ASKED_MAX; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		guard_asked_set(&a, name, 7);
	}
	ck_assert_uint_eq(a.n, GUARD_ASKED_MAX);
	ck_assert(guard_asked_due(&a, "s0", 7));
	for (int i = 1; i <= GUARD_ASKED_MAX; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		ck_assert(!guard_asked_due(&a, name, 7));
	}
	/* A name out of bounds is never kept: always due. */
	char longname[GUARD_NAME_MAX + 2];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	guard_asked_set(&a, longname, 7);
	ck_assert(guard_asked_due(&a, longname, 7));
	guard_asked_set(&a, "", 7);
	ck_assert(guard_asked_due(&a, "", 7));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("guard_asked");
	TCase *tc = tcase_create("asked");

	tcase_add_test(tc,
	    a_set_is_due_until_asked_and_again_after_a_newer_read);
	tcase_add_test(tc, the_oldest_forgotten_is_due_again);
	suite_add_tcase(s, tc);
	return testutil_run(s);
}
