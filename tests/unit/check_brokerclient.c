/*
 * What the proxy's broker client leaves of an answer in libevent's
 * buffers (proxy/brokerclient.c): brokerclient_evbuffer_wipe zeroes every
 * byte of every chain of an evbuffer in place (a released secret's
 * answer is read out of one, then wiped, then drained), whatever the
 * chains' number and a start inside the first one; the buffer's length
 * is unchanged and the peek after the wipe sees zeros only.
 */
#include "brokerclient.h"

#include "testutil.h"

#include <check.h>
#include <event2/buffer.h>
#include <string.h>

/* Every byte of b, by evbuffer_peek: zero? And how many chains. */
static bool
all_zero(struct evbuffer *b, int *ret_chains)
{
	int n = evbuffer_peek(b, -1, NULL, NULL, 0);
	struct evbuffer_iovec v[64];
	size_t total = 0;

	ck_assert_int_le(n, 64);
	ck_assert_int_eq(evbuffer_peek(b, -1, NULL, v, n), n);
	*ret_chains = n;
	for (int i = 0; i < n; i++) {
		const unsigned char *p = v[i].iov_base;
		for (size_t k = 0; k < v[i].iov_len; k++)
			if (p[k] != 0)
				return false;
		total += v[i].iov_len;
	}
	ck_assert_uint_eq(total, evbuffer_get_length(b));
	return true;
}

START_TEST(every_chain_is_zeroed_in_place)
{
	struct evbuffer *b = evbuffer_new(), *part;
	static char big[9000];
	int chains;

	memset(big, 'S', sizeof(big));
	/* More chains than the wipe peeks at once (8): buffers added
	 * whole keep their own. */
	for (int i = 0; i < 12; i++) {
		part = evbuffer_new();
		ck_assert_int_eq(evbuffer_add(part, big, 700 + 600 * i), 0);
		ck_assert_int_eq(evbuffer_add_buffer(b, part), 0);
		evbuffer_free(part);
	}
	/* A start inside the first chain (what a parser drained). */
	evbuffer_drain(b, 13);
	size_t len = evbuffer_get_length(b);
	ck_assert(!all_zero(b, &chains));
	ck_assert_int_gt(chains, 8);
	brokerclient_evbuffer_wipe(b);
	ck_assert_uint_eq(evbuffer_get_length(b), len);
	ck_assert_msg(all_zero(b, &chains), "a byte of the answer is left");
	evbuffer_free(b);

	/* Empty: nothing to do, nothing breaks. */
	b = evbuffer_new();
	brokerclient_evbuffer_wipe(b);
	ck_assert_uint_eq(evbuffer_get_length(b), 0);
	evbuffer_free(b);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("brokerclient");
	TCase *tc = tcase_create("brokerclient");

	tcase_add_test(tc, every_chain_is_zeroed_in_place);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
