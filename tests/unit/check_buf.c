/*
 * Capped buffers: an append or printf that would pass the cap fails whole
 * and leaves the contents as they were, an exact fit succeeds, the text is
 * always NUL-terminated, and steal, reset and free hand over or drop the
 * memory as their contracts say.
 */
#include "buf.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The contents are exactly the n bytes of want, followed by a NUL. */
static void
assert_contents(const struct buf *b, const char *want, size_t n)
{
	ck_assert_uint_eq(b->len, n);
	ck_assert_ptr_nonnull(b->data);
	ck_assert_mem_eq(b->data, want, n);
	ck_assert_int_eq(b->data[n], '\0');
	ck_assert_uint_le(b->len, b->max);
	ck_assert_uint_le(b->cap, b->max);
	ck_assert_uint_ge(b->cap, b->len);
}

/* buf_append_u64 writes what %llu writes, and past the cap nothing. */
START_TEST(test_append_u64_as_printf)
{
	static const uint64_t vs[] = { 0, 1, 9, 10, 99, 100, 4294967296u,
		UINT64_C(9007199254740991), UINT64_MAX };
	char want[32];
	struct buf b = BUF_INIT(1024), small = BUF_INIT(19);

	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		int n = snprintf(want, sizeof(want), "%llu",
		    (unsigned long long)vs[i]);
		buf_reset(&b);
		ck_assert_int_eq(buf_append_u64(&b, vs[i]), 0);
		assert_contents(&b, want, (size_t)n);
	}
	ck_assert_int_eq(buf_append_u64(&small, UINT64_MAX), -E2BIG);
	ck_assert_uint_eq(small.len, 0);
	ck_assert_int_eq(BUF_LIT(&small, "lit"), 0);
	assert_contents(&small, "lit", 3);
	buf_free(&b);
	buf_free(&small);
}
END_TEST

START_TEST(test_empty_is_empty_string)
{
	struct buf b;

	buf_init(&b, 16);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.max, 16);
	ck_assert_str_eq(buf_str(&b), "");
	buf_free(&b);
}
END_TEST

START_TEST(test_append_past_cap_fails_unchanged)
{
	struct buf b = BUF_INIT(8);

	ck_assert_int_eq(buf_append(&b, "hello", 5), 0);
	assert_contents(&b, "hello", 5);
	/* 5 + 4 = 9 > 8: nothing of it may land. */
	ck_assert_int_eq(buf_append(&b, "abcd", 4), -E2BIG);
	assert_contents(&b, "hello", 5);
	ck_assert_str_eq(buf_str(&b), "hello");
	/* A smaller append that fits still works after the refusal. */
	ck_assert_int_eq(buf_append(&b, "abc", 3), 0);
	assert_contents(&b, "helloabc", 8);
	/* Full: even one byte more is refused, zero bytes are fine. */
	ck_assert_int_eq(buf_append(&b, "x", 1), -E2BIG);
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	assert_contents(&b, "helloabc", 8);
	buf_free(&b);
}
END_TEST

START_TEST(test_first_append_past_cap_fails)
{
	struct buf b = BUF_INIT(4);

	ck_assert_int_eq(buf_append(&b, "12345", 5), -E2BIG);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(buf_str(&b), "");
	buf_free(&b);
}
END_TEST

START_TEST(test_exact_fit_at_max)
{
	char block[1000];
	struct buf b = BUF_INIT(sizeof(block));

	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (char)('a' + i % 26);
	ck_assert_int_eq(buf_append(&b, block, sizeof(block)), 0);
	assert_contents(&b, block, sizeof(block));
	ck_assert_int_eq(buf_append(&b, "x", 1), -E2BIG);
	assert_contents(&b, block, sizeof(block));
	buf_free(&b);
}
END_TEST

START_TEST(test_growth_keeps_contents)
{
	/* Many small appends across several doublings, ending exactly at
	 * a cap that is not a power of two. */
	const size_t max = 100000 + 7;
	struct buf b = BUF_INIT(max);
	char *want = malloc(max);
	size_t n = 0;

	ck_assert_ptr_nonnull(want);
	while (n < max) {
		char chunk[13];
		size_t k = max - n < sizeof(chunk) ? max - n : sizeof(chunk);

		for (size_t i = 0; i < k; i++)
			chunk[i] = (char)((n + i) * 7 % 251 + 1);
		ck_assert_int_eq(buf_append(&b, chunk, k), 0);
		memcpy(want + n, chunk, k);
		n += k;
		ck_assert_int_eq(b.data[b.len], '\0');
	}
	assert_contents(&b, want, max);
	ck_assert_int_eq(buf_append(&b, "x", 1), -E2BIG);
	assert_contents(&b, want, max);
	free(want);
	buf_free(&b);
}
END_TEST

START_TEST(test_length_overflow_refused)
{
	/* len + n would wrap around SIZE_MAX; the check must not. */
	struct buf b = BUF_INIT(SIZE_MAX);

	ck_assert_int_eq(buf_append(&b, "hello", 5), 0);
	ck_assert_int_eq(buf_append(&b, "x", SIZE_MAX - 2), -E2BIG);
	ck_assert_int_eq(buf_append(&b, "x", SIZE_MAX), -E2BIG);
	assert_contents(&b, "hello", 5);
	buf_free(&b);
}
END_TEST

START_TEST(test_unbounded_max)
{
	/* max == SIZE_MAX: a buffer with no cap of its own still works. */
	struct buf b = BUF_INIT(SIZE_MAX);
	char want[300];

	ck_assert_int_eq(buf_append(&b, "hello", 5), 0);
	ck_assert_int_eq(buf_printf(&b, " %d", 42), 0);
	assert_contents(&b, "hello 42", 8);
	/* Past the first allocation, so that it grows. */
	memset(want, 'q', sizeof(want));
	memcpy(want, "hello 42", 8);
	ck_assert_int_eq(buf_append(&b, want + 8, sizeof(want) - 8), 0);
	assert_contents(&b, want, sizeof(want));
	buf_free(&b);
	ck_assert_ptr_null(b.data);
}
END_TEST

START_TEST(test_unbounded_max_huge_append)
{
	/*
	 * Growing to SIZE_MAX leaves no byte for the NUL: the append must
	 * fail with the old memory still owned by the buffer, not freed by
	 * a realloc to size 0 and then freed again by buf_free.
	 */
	struct buf b = BUF_INIT(SIZE_MAX);
	/* Over half of SIZE_MAX even from empty: growth jumps to max. */
	size_t huge = SIZE_MAX / 2 + 2;

	ck_assert_int_eq(buf_append(&b, "hello", 5), 0);
	ck_assert_int_eq(buf_append(&b, "x", huge), -ENOMEM);
	assert_contents(&b, "hello", 5);
	ck_assert_int_eq(buf_printf(&b, "%s", "abc"), 0);
	assert_contents(&b, "helloabc", 8);
	buf_free(&b);
	ck_assert_ptr_null(b.data);

	/* The same on a buffer that holds nothing yet. */
	buf_init(&b, SIZE_MAX);
	ck_assert_int_eq(buf_append(&b, "x", huge), -ENOMEM);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_lt(b.cap, SIZE_MAX);
	ck_assert_str_eq(buf_str(&b), "");
	ck_assert_int_eq(buf_append(&b, "ok", 2), 0);
	assert_contents(&b, "ok", 2);
	buf_free(&b);
}
END_TEST

START_TEST(test_nul_terminated_binary)
{
	struct buf b = BUF_INIT(64);

	ck_assert_int_eq(buf_append(&b, "a\0b", 3), 0);
	assert_contents(&b, "a\0b", 3);
	ck_assert_int_eq(buf_append(&b, "c", 1), 0);
	assert_contents(&b, "a\0bc", 4);
	/* Text read in place stops at the embedded NUL; len does not. */
	ck_assert_str_eq(buf_str(&b), "a");
	buf_free(&b);
}
END_TEST

START_TEST(test_zero_length_append_on_fresh_buffer)
{
	struct buf b = BUF_INIT(16);

	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(buf_str(&b), "");
	buf_free(&b);
}
END_TEST

START_TEST(test_printf_formats_and_appends)
{
	struct buf b = BUF_INIT(256);

	ck_assert_int_eq(buf_append(&b, "n=", 2), 0);
	ck_assert_int_eq(buf_printf(&b, "%d-%s-%05.1f", 42, "x", 3.14159), 0);
	ck_assert_str_eq(buf_str(&b), "n=42-x-003.1");
	ck_assert_uint_eq(b.len, strlen("n=42-x-003.1"));
	ck_assert_int_eq(buf_printf(&b, "%s", ""), 0);
	ck_assert_str_eq(buf_str(&b), "n=42-x-003.1");
	ck_assert_int_eq(buf_printf(&b, "/%zu", (size_t)7), 0);
	ck_assert_str_eq(buf_str(&b), "n=42-x-003.1/7");
	buf_free(&b);
}
END_TEST

START_TEST(test_printf_on_fresh_buffer)
{
	struct buf b = BUF_INIT(16);

	ck_assert_int_eq(buf_printf(&b, "%s", ""), 0);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(buf_str(&b), "");
	ck_assert_int_eq(buf_printf(&b, "%c", 'z'), 0);
	assert_contents(&b, "z", 1);
	buf_free(&b);
}
END_TEST

START_TEST(test_printf_past_cap_fails_unchanged)
{
	struct buf b = BUF_INIT(10);

	ck_assert_int_eq(buf_printf(&b, "%s", "abcd"), 0);
	ck_assert_int_eq(buf_printf(&b, "%d", 1234567), -E2BIG);
	assert_contents(&b, "abcd", 4);
	/* Exactly to the cap succeeds. */
	ck_assert_int_eq(buf_printf(&b, "%06d", 42), 0);
	assert_contents(&b, "abcd000042", 10);
	ck_assert_int_eq(buf_printf(&b, "%s", "!"), -E2BIG);
	assert_contents(&b, "abcd000042", 10);
	buf_free(&b);
}
END_TEST

START_TEST(test_printf_large)
{
	/* Longer than the first allocation, so vsnprintf runs twice. */
	struct buf b = BUF_INIT(4096);
	char want[1001];

	memset(want, 'q', 1000);
	want[1000] = '\0';
	ck_assert_int_eq(buf_printf(&b, "<%s>", want), 0);
	ck_assert_uint_eq(b.len, 1002);
	ck_assert_int_eq(b.data[0], '<');
	ck_assert_mem_eq(b.data + 1, want, 1000);
	ck_assert_int_eq(b.data[1001], '>');
	ck_assert_int_eq(b.data[1002], '\0');
	buf_free(&b);
}
END_TEST

START_TEST(test_steal_hands_over)
{
	struct buf b = BUF_INIT(32);
	size_t len = 999;
	char big[28];
	char *p;

	ck_assert_int_eq(buf_append(&b, "secret\0x", 8), 0);
	p = buf_steal(&b, &len);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(len, 8);
	ck_assert_mem_eq(p, "secret\0x", 9);
	/* b is empty, owns nothing, and keeps its cap. */
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.cap, 0);
	ck_assert_uint_eq(b.max, 32);
	ck_assert_str_eq(buf_str(&b), "");
	ck_assert_int_eq(buf_append(&b, "again", 5), 0);
	assert_contents(&b, "again", 5);
	/* The stolen memory is independent of the buffer's new memory. */
	ck_assert_mem_eq(p, "secret\0x", 9);
	memset(big, 'z', sizeof(big));
	ck_assert_int_eq(buf_append(&b, big, sizeof(big)), -E2BIG);
	assert_contents(&b, "again", 5);
	free(p);
	buf_free(&b);
}
END_TEST

START_TEST(test_steal_empty_gives_empty_string)
{
	struct buf b = BUF_INIT(32);
	size_t len = 999;
	char *p = buf_steal(&b, &len);

	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p, "");
	ck_assert_uint_eq(len, 0);
	free(p);
	/* ret_len may be NULL. */
	ck_assert_int_eq(buf_append(&b, "ab", 2), 0);
	p = buf_steal(&b, NULL);
	ck_assert_str_eq(p, "ab");
	free(p);
	buf_free(&b);
}
END_TEST

START_TEST(test_reset_keeps_memory_and_cap)
{
	struct buf b = BUF_INIT(8);
	const char *before;
	size_t cap;

	ck_assert_int_eq(buf_append(&b, "12345678", 8), 0);
	before = b.data;
	cap = b.cap;
	buf_reset(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(buf_str(&b), "");
	ck_assert_ptr_eq(b.data, before);
	ck_assert_uint_eq(b.cap, cap);
	ck_assert_uint_eq(b.max, 8);
	ck_assert_int_eq(buf_append(&b, "abcdefgh", 8), 0);
	assert_contents(&b, "abcdefgh", 8);
	ck_assert_int_eq(buf_append(&b, "i", 1), -E2BIG);
	buf_free(&b);

	/* Resetting a buffer that never allocated is fine too. */
	buf_init(&b, 4);
	buf_reset(&b);
	ck_assert_str_eq(buf_str(&b), "");
	buf_free(&b);
}
END_TEST

START_TEST(test_free_and_reuse)
{
	struct buf b = BUF_INIT(16);

	ck_assert_int_eq(buf_append(&b, "abc", 3), 0);
	buf_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.cap, 0);
	ck_assert_str_eq(buf_str(&b), "");
	/* Twice, and NULL, are harmless. */
	buf_free(&b);
	buf_free(NULL);
	buf_init(&b, 2);
	ck_assert_int_eq(buf_append(&b, "abc", 3), -E2BIG);
	ck_assert_int_eq(buf_append(&b, "ab", 2), 0);
	assert_contents(&b, "ab", 2);
	buf_free(&b);
}
END_TEST

START_TEST(test_max_zero)
{
	struct buf b = BUF_INIT(0);
	char *p;
	size_t len = 1;

	ck_assert_int_eq(buf_append(&b, "x", 1), -E2BIG);
	ck_assert_int_eq(buf_printf(&b, "%s", "x"), -E2BIG);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(buf_str(&b), "");
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	ck_assert_int_eq(buf_printf(&b, "%s", ""), 0);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(buf_str(&b), "");
	ck_assert_int_eq(buf_append(&b, "x", 1), -E2BIG);
	p = buf_steal(&b, &len);
	ck_assert_str_eq(p, "");
	ck_assert_uint_eq(len, 0);
	free(p);
	buf_free(&b);
}
END_TEST

static Suite *
buf_suite(void)
{
	Suite *s = suite_create("buf");
	TCase *tc;

	tc = tcase_create("cap");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_empty_is_empty_string);
	tcase_add_test(tc, test_append_past_cap_fails_unchanged);
	tcase_add_test(tc, test_first_append_past_cap_fails);
	tcase_add_test(tc, test_exact_fit_at_max);
	tcase_add_test(tc, test_growth_keeps_contents);
	tcase_add_test(tc, test_length_overflow_refused);
	tcase_add_test(tc, test_unbounded_max);
	tcase_add_test(tc, test_unbounded_max_huge_append);
	tcase_add_test(tc, test_nul_terminated_binary);
	tcase_add_test(tc, test_zero_length_append_on_fresh_buffer);
	tcase_add_test(tc, test_max_zero);
	suite_add_tcase(s, tc);

	tc = tcase_create("printf");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_printf_formats_and_appends);
	tcase_add_test(tc, test_printf_on_fresh_buffer);
	tcase_add_test(tc, test_printf_past_cap_fails_unchanged);
	tcase_add_test(tc, test_printf_large);
	suite_add_tcase(s, tc);

	tc = tcase_create("ownership");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_steal_hands_over);
	tcase_add_test(tc, test_steal_empty_gives_empty_string);
	tcase_add_test(tc, test_reset_keeps_memory_and_cap);
	tcase_add_test(tc, test_free_and_reuse);
	tcase_add_test(tc, test_append_u64_as_printf);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(buf_suite());
}
