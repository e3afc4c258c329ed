/*
 * A job's cache of positive introspection answers (proxy/tokcache.c): an
 * entry answers for its token and audience alone, until the token's exp
 * or max_age, whichever comes first; a full cache replaces its oldest;
 * a clear (the job's channel closed, the feed lost) forgets every entry;
 * a token the feed revoked alone is dropped by its id and never put again
 * (an answer the broker gave before the revoke may come after it), and
 * once the ring of such ids forgets one, nothing is put for a while.
 */
#include "testutil.h"
#include "tokcache.h"
#include "token.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static void
fresh(char out[TOKEN_LEN + 1])
{
	ck_assert_int_eq(token_generate(out), 0);
}

START_TEST(an_answer_is_kept_for_its_token_and_audience_alone)
{
	struct tokcache c;
	char a[TOKEN_LEN + 1], b[TOKEN_LEN + 1];
	json_t *params = json_pack("{s:s}", "repo", "x");
	const struct tokcache_entry *e;

	tokcache_init(&c);
	fresh(a);
	fresh(b);
	ck_assert_ptr_null(tokcache_get(&c, a, "api", 1000, 10, 30));
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", params,
			     1600, 1000, 10),
	    0);
	json_decref(params); /* the cache holds its own reference */
	e = tokcache_get(&c, a, "api", 1001, 11, 30);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->capability, "x.read");
	ck_assert_str_eq(json_string_value(json_object_get(e->params, "repo")),
	    "x");
	ck_assert_ptr_null(tokcache_get(&c, a, "other", 1001, 11, 30));
	ck_assert_ptr_null(tokcache_get(&c, b, "api", 1001, 11, 30));
	/* The token itself is not kept, only its hash. */
	ck_assert_ptr_null(memmem(&c, sizeof(c), a, TOKEN_LEN));
	ck_assert_uint_eq(c.hits, 1);
	ck_assert_uint_eq(c.misses, 3);
	tokcache_clear(&c);
}
END_TEST

START_TEST(an_entry_ends_at_the_tokens_exp_or_max_age)
{
	struct tokcache c;
	char a[TOKEN_LEN + 1];

	tokcache_init(&c);
	fresh(a);
	/* exp at 1005, max_age 30: the exp ends it. */
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     1005, 1000, 50),
	    0);
	ck_assert_ptr_nonnull(tokcache_get(&c, a, "api", 1004, 54, 30));
	ck_assert_ptr_null(tokcache_get(&c, a, "api", 1005, 55, 30));
	ck_assert_uint_eq(tokcache_size(&c), 0); /* dropped when found stale */

	/* exp far, max_age 30: the age ends it, on the monotonic clock,
	 * whatever the wall clock says. */
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     9000, 1000, 50),
	    0);
	ck_assert_ptr_nonnull(tokcache_get(&c, a, "api", 1000, 79, 30));
	ck_assert_ptr_null(tokcache_get(&c, a, "api", 1000, 80, 30));
	/* A monotonic clock before the put (never, but fail closed). */
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     9000, 1000, 50),
	    0);
	ck_assert_ptr_null(tokcache_get(&c, a, "api", 1000, 49, 30));
	/* max_age 0: the cache is off. */
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     9000, 1000, 50),
	    0);
	ck_assert_ptr_null(tokcache_get(&c, a, "api", 1000, 50, 0));
	/* An answer already expired is not kept at all. */
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     1000, 1000, 50),
	    -EINVAL);
	tokcache_clear(&c);
	ck_assert_uint_eq(tokcache_size(&c), 0);
}
END_TEST

START_TEST(a_full_cache_replaces_its_oldest)
{
	struct tokcache c;
	char t[TOKCACHE_MAX + 1][TOKEN_LEN + 1], ids[TOKCACHE_MAX + 1][16];

	tokcache_init(&c);
	for (int i = 0; i <= TOKCACHE_MAX; i++) {
		fresh(t[i]);
		snprintf(ids[i], sizeof(ids[i]), "tok_%d", i);
		ck_assert_int_eq(tokcache_put(&c, t[i], ids[i], "api", "x.read",
				     NULL, 9000, 1000, 100 + i),
		    0);
		ck_assert_uint_le(tokcache_size(&c), TOKCACHE_MAX);
	}
	ck_assert_uint_eq(tokcache_size(&c), TOKCACHE_MAX);
	ck_assert_ptr_null(tokcache_get(&c, t[0], "api", 1000, 120, 30));
	for (int i = 1; i <= TOKCACHE_MAX; i++)
		ck_assert_ptr_nonnull(
		    tokcache_get(&c, t[i], "api", 1000, 120, 30));
	/* The same token and audience again: one entry, renewed. */
	ck_assert_int_eq(tokcache_put(&c, t[1], ids[1], "api", "x.read", NULL,
			     9000, 1000, 200),
	    0);
	ck_assert_uint_eq(tokcache_size(&c), TOKCACHE_MAX);
	ck_assert_ptr_nonnull(tokcache_get(&c, t[1], "api", 1000, 220, 30));
	/* What does not fit is refused, not cut. */
	char aud[TOKCACHE_AUD_MAX + 2];
	memset(aud, 'a', sizeof(aud) - 1);
	aud[sizeof(aud) - 1] = '\0';
	ck_assert_int_eq(tokcache_put(&c, t[0], ids[0], aud, "x.read", NULL,
			     9000, 1000, 100),
	    -EINVAL);
	ck_assert_int_eq(tokcache_put(&c, t[0], ids[0], "", "x.read", NULL,
			     9000, 1000, 100),
	    -EINVAL);
	tokcache_clear(&c);
}
END_TEST

START_TEST(a_clear_forgets_every_entry)
{
	struct tokcache c;
	char a[TOKEN_LEN + 1], b[TOKEN_LEN + 1];
	json_t *params = json_object();

	tokcache_init(&c);
	fresh(a);
	fresh(b);
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", params,
			     9000, 1000, 10),
	    0);
	ck_assert_int_eq(tokcache_put(&c, b, "tok_b", "web", "y.write", params,
			     9000, 1000, 10),
	    0);
	json_decref(params);
	ck_assert_uint_eq(tokcache_size(&c), 2);
	tokcache_clear(&c);
	ck_assert_uint_eq(tokcache_size(&c), 0);
	ck_assert_ptr_null(tokcache_get(&c, a, "api", 1000, 11, 30));
	ck_assert_ptr_null(tokcache_get(&c, b, "web", 1000, 11, 30));
	/* Nothing of them is left in the cache's memory. */
	static const unsigned char zero[sizeof(struct tokcache_entry)];
	for (size_t i = 0; i < TOKCACHE_MAX; i++)
		ck_assert(memcmp(&c.e[i], zero, sizeof(zero)) == 0);
}
END_TEST

START_TEST(a_token_revoked_alone_is_dropped_and_never_put_again)
{
	struct tokcache c;
	char a[TOKEN_LEN + 1], b[TOKEN_LEN + 1];

	tokcache_init(&c);
	fresh(a);
	fresh(b);
	/* a for two audiences, b for one. */
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     9000, 1000, 10),
	    0);
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "web", "x.read", NULL,
			     9000, 1000, 10),
	    0);
	ck_assert_int_eq(tokcache_put(&c, b, "tok_b", "api", "x.read", NULL,
			     9000, 1000, 10),
	    0);
	ck_assert_uint_eq(tokcache_revoke(&c, "tok_a", 11), 2);
	ck_assert_ptr_null(tokcache_get(&c, a, "api", 1000, 11, 30));
	ck_assert_ptr_null(tokcache_get(&c, a, "web", 1000, 11, 30));
	ck_assert_ptr_nonnull(tokcache_get(&c, b, "api", 1000, 11, 30));
	/* The broker's answer given before the revoke, come late. */
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     9000, 1000, 12),
	    -ESTALE);
	ck_assert_ptr_null(tokcache_get(&c, a, "api", 1000, 12, 30));
	/* A clear (the feed lost) keeps what the feed said. */
	tokcache_clear(&c);
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     9000, 1000, 13),
	    -ESTALE);
	ck_assert_int_eq(tokcache_put(&c, b, "tok_b", "api", "x.read", NULL,
			     9000, 1000, 13),
	    0);
	/* Without an id, an answer is not kept: nothing could drop it. */
	ck_assert_int_eq(tokcache_put(&c, a, NULL, "api", "x.read", NULL, 9000,
			     1000, 13),
	    -EINVAL);
	ck_assert_int_eq(tokcache_put(&c, a, "", "api", "x.read", NULL, 9000,
			     1000, 13),
	    -EINVAL);
	/* An id never cached: nothing dropped, remembered all the same. */
	ck_assert_uint_eq(tokcache_revoke(&c, "tok_c", 14), 0);
	ck_assert_uint_eq(tokcache_size(&c), 1);
	tokcache_clear(&c);
}
END_TEST

START_TEST(a_forgotten_revoke_stops_every_put_for_a_while)
{
	struct tokcache c;
	char a[TOKEN_LEN + 1], id[32];

	tokcache_init(&c);
	fresh(a);
	for (int i = 0; i < TOKCACHE_REVOKED_MAX; i++) {
		snprintf(id, sizeof(id), "tok_r%d", i);
		tokcache_revoke(&c, id, 100);
	}
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     9000, 1000, 100),
	    0);
	/* One more: tok_r0 leaves the ring, so no answer is put until
	 * every call that could predate it is over. */
	tokcache_revoke(&c, "tok_r16", 200);
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     9000, 1000, 200 + TOKCACHE_GUARD_S - 1),
	    -ESTALE);
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     9000, 1000, 199),
	    -ESTALE);
	ck_assert_int_eq(tokcache_put(&c, a, "tok_a", "api", "x.read", NULL,
			     9000, 1000, 200 + TOKCACHE_GUARD_S),
	    0);
	/* tok_r16 is remembered still. */
	ck_assert_int_eq(tokcache_put(&c, a, "tok_r16", "api", "x.read", NULL,
			     9000, 1000, 200 + TOKCACHE_GUARD_S),
	    -ESTALE);
	tokcache_clear(&c);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("tokcache");
	TCase *tc = tcase_create("tokcache");

	tcase_add_test(tc, an_answer_is_kept_for_its_token_and_audience_alone);
	tcase_add_test(tc, an_entry_ends_at_the_tokens_exp_or_max_age);
	tcase_add_test(tc, a_full_cache_replaces_its_oldest);
	tcase_add_test(tc, a_clear_forgets_every_entry);
	tcase_add_test(tc,
	    a_token_revoked_alone_is_dropped_and_never_put_again);
	tcase_add_test(tc, a_forgotten_revoke_stops_every_put_for_a_while);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
