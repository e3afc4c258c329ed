/*
 * A sliding cut of the key (issue 18; redteam's it_redteam_slice): an
 * upstream that quotes a cut of what it was sent (an error page with the
 * first 200 bytes of the request) hands back a prefix of the key, and
 * the job sets where the cut falls (the key comes after the request
 * line, whose length is the job's), so one more byte a request would
 * reassemble all of the key but its last byte. The scanner redacts every
 * run of INJECT_WINDOW (8) bytes of the value in a row (credentials.md,
 * "Slices of the value"), so at most the first 7 come back.
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static struct injectkit kit;

static const char value[] = "sk_live_redteam_0123456789abcdef";

static const struct injectkit_opts opts = {
	.script =
	    CORDON_SOURCE_DIR "/tests/integration/jobs/redteam/reflect.py",
	.port_file = "reflect.port",
	.follower = "proxy-redteam",
	/* It reflects its own key on purpose. */
	.proxy_extra = "\"reflect_limit\": 1000000",
	.value = value,
	.post = true,
};

INJECTKIT_FIXTURE(kit, opts)

START_TEST(a_cut_quotation_never_yields_the_key_a_byte_at_a_time)
{
	char got[sizeof(value)] = "", req[1024], pad[300];
	int base = -1;

	/* The upstream quotes the first 200 bytes of the head it got. The
	 * key sits after the request line, whose length the job chooses
	 * (the query): each length puts one more of the key's bytes last
	 * before the cut. The scanner looks for the whole value only. */
	for (int k = 0; k < 200; k++) {
		memset(pad, 'a', (size_t)k);
		pad[k] = '\0';
		snprintf(req, sizeof(req),
		    "GET http://api.test:%u/case/trunc?p=%s HTTP/1.1\r\nHost: "
		    "api.test:%u\r\nAuthorization: Bearer %s\r\n"
		    "Connection: close\r\n\r\n",
		    kit.up_port, pad, kit.up_port, kit.tok);
		char *resp = injectkit_send(&kit, req);
		const char *q = strstr(resp, "bad request: ");
		ck_assert_msg(q != NULL, "%.400s", resp);
		const char *at = strstr(q, "X-Api-Key: Key ");
		if (at != NULL) {
			at += strlen("X-Api-Key: Key ");
			size_t n = strcspn(at, "\n");
			/* The quotation ends in the key: its last byte is new
			 * when it is the key's (not the scanner's filler). */
			if (n > 0 && n < strlen(value) &&
			    at[n - 1] == value[n - 1]) {
				if (base < 0)
					base = k;
				got[n - 1] = at[n - 1];
			}
		}
		free(resp);
	}
	/* What the job learnt of the key, '.' for a byte it did not; its
	 * public part "sk_live_" (keyshape.h) not counted. */
	int known = 0;
	for (size_t i = 0; i < strlen(value); i++) {
		known += got[i] != '\0' && i >= 8;
		if (got[i] == '\0')
			got[i] = '.';
	}
	ck_assert_msg(known < 8,
	    "%d of the key's %zu bytes, one a request: %s (from a query of %d "
	    "bytes on)",
	    known, strlen(value), got, base);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("inject_slice");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc,
	    a_cut_quotation_never_yields_the_key_a_byte_at_a_time);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
