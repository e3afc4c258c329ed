/*
 * The scan sets a job was given (proxy/guard.h's guard_asked): an issuer
 * secret's is due again once a newer bindings list was read, a static
 * one's once a newer version is bound, and one forgotten past
 * GUARD_ASKED_MAX is due again (asked once more, never scanned less).
 * With the list's scan_gen (guard_asked_stale), an issuer's set is due
 * again only when a newer list's number is not the set's. The list's
 * burned versions (guard_burned, the newest GUARD_BURNED_MAX), and a
 * job's cached value of one forgotten (inject_cache_forget).
 */
#include "guard.h"
#include "inject.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
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

/* Loads one binding of up-key, of kind, with extra members (JSON text
 * of an object's members, "" for none), read at now_ms: guard_load's rc. */
static int
load(struct guard *g, const char *kind, const char *extra, int64_t now_ms)
{
	char text[1024], err[160];

	snprintf(text, sizeof(text),
	    "[{\"secret\": \"up-key\", \"kind\": \"%s\", \"version\": 20, "
	    "\"hosts\": [\"api.test\"], \"addrs\": []%s%s}]",
	    kind, extra[0] != '\0' ? ", " : "", extra);
	json_t *l = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(l);
	int r = guard_load(g, l, now_ms, err, sizeof(err));
	json_decref(l);
	return r;
}

START_TEST(an_issuer_set_is_stale_only_once_its_gen_moved)
{
	struct guard g = { 0 };
	struct guard_asked a = { .n = 0 };
	const char *oauth = "oauth_client_credentials";

	ck_assert_int_eq(load(&g, oauth, "\"scan_gen\": 7", 100), 0);
	const struct guard_binding *b = guard_binding_of(&g, "up-key");
	ck_assert(b->has_gen && b->scan_gen == 7);
	ck_assert(guard_asked_stale(&a, &g, b)); /* never asked */
	guard_asked_put(&a, "up-key", 100, true, 7);
	ck_assert(!guard_asked_stale(&a, &g, b));
	/* Newer reads, the same set: not asked again. */
	for (int64_t t = 200; t <= 500; t += 100) {
		ck_assert_int_eq(load(&g, oauth, "\"scan_gen\": 7", t), 0);
		ck_assert(
		    !guard_asked_stale(&a, &g, guard_binding_of(&g, "up-key")));
	}
	/* A credential obtained: the number moved. */
	ck_assert_int_eq(load(&g, oauth, "\"scan_gen\": 8", 600), 0);
	b = guard_binding_of(&g, "up-key");
	ck_assert(guard_asked_stale(&a, &g, b));
	/* The set newer than the list read it was asked after (9, the list
	 * 8): not asked again until a newer read, which says 9. */
	guard_asked_put(&a, "up-key", 600, true, 9);
	ck_assert(!guard_asked_stale(&a, &g, b));
	ck_assert_int_eq(load(&g, oauth, "\"scan_gen\": 9", 700), 0);
	ck_assert(!guard_asked_stale(&a, &g, guard_binding_of(&g, "up-key")));
	/* The list newer than the set (read while it was asked): asked. */
	guard_asked_put(&a, "up-key", 700, true, 9);
	ck_assert_int_eq(load(&g, oauth, "\"scan_gen\": 10", 800), 0);
	ck_assert(guard_asked_stale(&a, &g, guard_binding_of(&g, "up-key")));
	/* No number (an older broker): every newer read, as before. */
	ck_assert_int_eq(load(&g, oauth, "", 900), 0);
	b = guard_binding_of(&g, "up-key");
	ck_assert(!b->has_gen);
	guard_asked_put(&a, "up-key", 900, false, 0);
	ck_assert(!guard_asked_stale(&a, &g, b));
	ck_assert_int_eq(load(&g, oauth, "", 1000), 0);
	ck_assert(guard_asked_stale(&a, &g, guard_binding_of(&g, "up-key")));
	/* A set given without a number, a list with one: every newer read. */
	ck_assert_int_eq(load(&g, oauth, "\"scan_gen\": 10", 1100), 0);
	ck_assert(guard_asked_stale(&a, &g, guard_binding_of(&g, "up-key")));
	guard_free(&g);
}
END_TEST

START_TEST(burned_versions_come_from_the_list_and_leave_the_cache)
{
	struct guard g = { 0 };
	struct inject_cache c = { .n = 0 };

	ck_assert_int_eq(load(&g, "static", "\"burned\": [1, 3]", 100), 0);
	ck_assert(guard_burned(&g, "up-key", 1));
	ck_assert(!guard_burned(&g, "up-key", 2));
	ck_assert(guard_burned(&g, "up-key", 3));
	ck_assert(!guard_burned(&g, "other", 1));
	/* The newest GUARD_BURNED_MAX of a longer list. */
	char extra[512] = "\"burned\": [";
	for (int v = 1; v <= GUARD_BURNED_MAX + 4; v++)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
		    "%s%d", v > 1 ? ", " : "", v);
	snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), "]");
	ck_assert_int_eq(load(&g, "static", extra, 200), 0);
	ck_assert(!guard_burned(&g, "up-key", 4));
	ck_assert(guard_burned(&g, "up-key", 5));
	ck_assert(guard_burned(&g, "up-key", GUARD_BURNED_MAX + 4));
	/* Not a list of versions: refused, the last list kept. */
	ck_assert_int_eq(load(&g, "static", "\"burned\": \"1\"", 300), -EINVAL);
	ck_assert_int_eq(load(&g, "static", "\"burned\": [\"1\"]", 300),
	    -EINVAL);
	ck_assert_int_eq(load(&g, "static", "\"scan_gen\": \"7\"", 300),
	    -EINVAL);
	ck_assert(guard_burned(&g, "up-key", 5));
	/* A job's cached value of a burned version is forgotten, wiped;
	 * another version's stays. */
	ck_assert_int_eq(inject_cache_put(&c, "up-key", 5, "k5", 2, 10, 0), 0);
	ck_assert_int_eq(inject_cache_put(&c, "in-key", 1, "i1", 2, 10, 0), 0);
	ck_assert(!inject_cache_forget(&c, "up-key", 4));
	ck_assert(inject_cache_forget(&c, "up-key", 5));
	ck_assert_ptr_null(inject_cache_get(&c, "up-key", 11, 30));
	ck_assert_ptr_nonnull(inject_cache_get(&c, "in-key", 11, 30));
	ck_assert_uint_eq(c.n, 1);
	inject_cache_clear(&c);
	guard_free(&g);
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
	tcase_add_test(tc, an_issuer_set_is_stale_only_once_its_gen_moved);
	tcase_add_test(tc,
	    burned_versions_come_from_the_list_and_leave_the_cache);
	suite_add_tcase(s, tc);
	return testutil_run(s);
}
