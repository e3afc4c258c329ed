/*
 * A secret stored as it goes on the wire (issue 18; redteam's
 * it_redteam_basic): the rule injects "Authorization: Basic {secret}"
 * and the secret is the base64 of "key:" (a key as the user, as Stripe
 * takes it). An upstream that decodes it and says whom it took it for
 * (httpbin's basic-auth, a debug whoami) would hand back the key in
 * clear; the scanner also looks for the decoding of a base64 word of the
 * value, its secret side (credentials.md, "Secrets stored encoded"), so
 * it is redacted.
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

/* Basic of "sk_live_redteam_0123456789abcdef:" (a key as the user, as
 * Stripe takes it): what is stored at the broker. */
static const char value[] = "c2tfbGl2ZV9yZWR0ZWFtXzAxMjM0NTY3ODlhYmNkZWY6";
static const char decoded[] = "sk_live_redteam_0123456789abcdef";

static const struct injectkit_opts opts = {
	.script =
	    CORDON_SOURCE_DIR "/tests/integration/jobs/redteam/reflect.py",
	.port_file = "reflect.port",
	.follower = "proxy-redteam",
	.value = value,
	.post = true,
	.header = "Authorization",
	.format = "Basic {secret}",
};

INJECTKIT_FIXTURE(kit, opts)

START_TEST(a_decoded_basic_credential_never_comes_back)
{
	char req[1024];

	/* The upstream decodes the Basic credential it was sent and says
	 * whom it took it for, as httpbin's basic-auth does: the key in
	 * clear, which no encoding of the stored value matches. */
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/case/whoami HTTP/1.1\r\nHost: "
	    "api.test:%u\r\nAuthorization: Bearer %s\r\n"
	    "Connection: close\r\n\r\n",
	    kit.up_port, kit.up_port, kit.tok);
	char *resp = injectkit_send(&kit, req);
	ck_assert_msg(http_status(resp) == 200, "%.400s", resp);
	ck_assert_msg(strstr(resp, "\"user\"") != NULL, "%.400s", resp);
	ck_assert_msg(strstr(resp, decoded) == NULL,
	    "the key came back decoded: %s", resp);
	free(resp);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("inject_basic");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_decoded_basic_credential_never_comes_back);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
