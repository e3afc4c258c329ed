/*
 * A connection's scratch buffers (proxy/scratch.c) as the next exchange
 * finds them: empty, with no byte of the last use left in their memory
 * (an injected key's header was there), and not kept once large.
 */
#include "scratch.h"
#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char key_head[] =
    "GET /v1/x HTTP/1.1\r\nHost: api.test\r\n"
    "X-Api-Key: Key sk_live_0123456789abcdef\r\n\r\n";

/* Whether n bytes at p are all zero. */
static bool
zeroed(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/* A use ends wiped; the next takes the same memory, empty: what it
 * writes is only its own, and nothing of the key is left past it. */
START_TEST(the_next_use_finds_nothing_of_the_last)
{
	struct buf b = BUF_INIT(0);
	struct buf *s = scratch_take(&b, 65536);

	ck_assert_int_eq(buf_append(s, key_head, strlen(key_head)), 0);
	char *mem = s->data;
	size_t cap = s->cap;
	scratch_done(s);
	ck_assert_ptr_eq(b.data, mem); /* kept: no malloc next time */
	ck_assert_uint_eq(b.len, 0);
	/* What it held is zeros (past it, malloc's own bytes). */
	ck_assert(zeroed(mem, strlen(key_head) + 1));
	ck_assert_ptr_null(memmem(mem, cap + 1, "sk_live_", 8));

	s = scratch_take(&b, 65536);
	ck_assert_ptr_eq(s->data, mem);
	ck_assert_uint_eq(s->len, 0);
	ck_assert_str_eq(buf_str(s), "");
	ck_assert_int_eq(buf_append(s, "HTTP/1.1 200 OK\r\n", 17), 0);
	ck_assert_str_eq(s->data, "HTTP/1.1 200 OK\r\n");
	ck_assert(zeroed(s->data + 18, strlen(key_head) + 1 - 18));
	ck_assert_ptr_null(memmem(s->data, cap + 1, "sk_live_", 8));
	scratch_done(s);
	ck_assert(zeroed(mem, strlen(key_head) + 1));
	scratch_free(&b);
	ck_assert_ptr_null(b.data);
}
END_TEST

/* The cap is the new use's, whatever the memory kept: an append past it
 * fails as a fresh buffer's would. */
START_TEST(each_use_has_its_own_cap)
{
	struct buf b = BUF_INIT(0);
	struct buf *s = scratch_take(&b, 4000);
	char big[3000];

	memset(big, 'a', sizeof(big));
	ck_assert_int_eq(buf_append(s, big, sizeof(big)), 0);
	scratch_done(s);
	s = scratch_take(&b, 100);
	ck_assert_int_eq(buf_append(s, big, 101), -E2BIG);
	ck_assert_uint_eq(s->len, 0);
	ck_assert_int_eq(buf_append(s, big, 100), 0);
	scratch_done(s);
	scratch_free(&b);
}
END_TEST

/* A use that made the buffer large frees it: a connection does not keep
 * a large answer's memory for its life. Never used: nothing to do. */
START_TEST(large_is_not_kept)
{
	struct buf b = BUF_INIT(0);
	struct buf *s = scratch_take(&b, 1 << 20);
	char *big = malloc(SCRATCH_KEEP + 1);

	ck_assert_ptr_nonnull(big);
	memset(big, 'k', SCRATCH_KEEP + 1);
	ck_assert_int_eq(buf_append(s, big, SCRATCH_KEEP + 1), 0);
	scratch_done(s);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	free(big);

	struct buf never = BUF_INIT(0);
	scratch_done(&never);
	scratch_free(&never);
	ck_assert_ptr_null(never.data);
}
END_TEST

/* A room for a string the caller writes (the injected header's value):
 * every byte of it wiped at the use's end, however much of it was
 * written, the memory kept for the next request (no malloc), grown when
 * a longer one comes, its old memory wiped first. */
START_TEST(a_room_is_wiped_whole_and_kept)
{
	static const char key[] = "Key sk_live_0123456789abcdef";
	struct buf b = BUF_INIT(0);
	size_t cap = sizeof(key) + 8;

	char *p = scratch_room(&b, cap);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_ge(b.cap, cap);
	memcpy(p, key, sizeof(key));
	/* A use that wrote the whole room, no NUL where strlen would
	 * stop. */
	memset(p + sizeof(key), 'k', cap - sizeof(key));
	scratch_done(&b);
	ck_assert_ptr_eq(b.data, p); /* kept */
	ck_assert(zeroed(p, cap));
	ck_assert_uint_eq(b.len, 0);

	char *q = scratch_room(&b, 10);
	ck_assert_ptr_eq(q, p); /* the same memory, no malloc */
	ck_assert(zeroed(q, cap));
	memcpy(q, "Key short", 10);
	scratch_done(&b);
	ck_assert(zeroed(p, cap));

	/* Longer: new memory; the old was wiped at its use's end. */
	char *r = scratch_room(&b, 2 * cap);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_ge(b.cap, 2 * cap);
	memset(r, 'k', 2 * cap);
	scratch_done(&b);
	ck_assert(zeroed(r, 2 * cap));
	ck_assert_ptr_null(scratch_room(&b, 0));
	scratch_free(&b);
	ck_assert_ptr_null(b.data);

	/* Past SCRATCH_KEEP: freed at the end, as a large answer is. */
	ck_assert_ptr_nonnull(scratch_room(&b, SCRATCH_KEEP + 2));
	scratch_done(&b);
	ck_assert_ptr_null(b.data);
}
END_TEST

static Suite *
scratch_suite(void)
{
	Suite *s = suite_create("scratch");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, the_next_use_finds_nothing_of_the_last);
	tcase_add_test(tc, each_use_has_its_own_cap);
	tcase_add_test(tc, large_is_not_kept);
	tcase_add_test(tc, a_room_is_wiped_whole_and_kept);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(scratch_suite());
}
