/*
 * The method override judge through a real proxy (redteam2, after
 * check_override): an injected POST whose body a framework reads as
 * _method although the judge read it otherwise is 403 method_override,
 * and a head with two Content-Types (nginx reads the first, the judge
 * read the last) is 403 malformed duplicate_ct, nothing of either sent
 * upstream with the credential: Rack's empty media type, Laravel's
 * "/json" in a parameter, PHP's name cut at a NUL, busboy's RFC 2231
 * name*=, body-parser's utf-7.
 */
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct injectkit kit;

static const char value[] = "sk_live_redteam2_0123456789abcdef";

static const struct injectkit_opts opts = {
	.script =
	    CORDON_SOURCE_DIR "/tests/integration/jobs/redteam/reflect.py",
	.port_file = "reflect.port",
	.follower = "proxy-redteam2-override",
	.value = value,
	.post = true,
};

static void
setup(void)
{
	injectkit_start(&kit, &opts);
}

static void
teardown(void)
{
	injectkit_stop(&kit);
}

/* POSTs body with the Content-Type field(s) ctype to /case/echo with
 * the token. */
static char *
post(const char *ctype, const char *body)
{
	char req[4096];

	snprintf(req, sizeof(req),
	    "POST http://api.test:%u/case/echo HTTP/1.1\r\nHost: "
	    "api.test:%u\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
	    kit.up_port, kit.up_port, kit.tok, ctype, strlen(body), body);
	return injectkit_send(&kit, req);
}

START_TEST(an_override_the_frameworks_read_never_goes_with_the_credential)
{
	static const struct {
		const char *ctype, *body;
	} cases[] = {
		{ ";charset=utf-8", "_method=DELETE" },
		{ "text/plain; a=/json", "{\"_method\":\"DELETE\"}" },
		{ "application/x-www-form-urlencoded", "_method%00x=DELETE" },
		{ "multipart/form-data; boundary=zz",
		    "--zz\r\nContent-Disposition: form-data; "
		    "name*=UTF-8''%5Fmethod\r\n\r\nDELETE\r\n--zz--\r\n" },
		{ "application/json; charset=utf-7",
		    "{+ACI-+AF8-method+ACI-:+ACI-DELETE+ACI-}" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *resp = post(cases[i].ctype, cases[i].body);
		ck_assert_msg(http_status(resp) == 403 &&
			strstr(resp, "method_override") != NULL,
		    "%s / %s: %.600s", cases[i].ctype, cases[i].body, resp);
		free(resp);
	}
	char *resp = post("application/x-www-form-urlencoded\r\n"
			  "Content-Type: text/plain",
	    "_method=DELETE");
	ck_assert_msg(http_status(resp) == 403 &&
		strstr(resp, "malformed") != NULL,
	    "two Content-Types: %.600s", resp);
	ck_assert(injectkit_decisions_hold(&kit.proxy, "duplicate_ct"));
	free(resp);
	/* What passes still passes. */
	resp = post("application/json; charset=utf-8", "{\"a\":\"_method\"}");
	ck_assert_msg(http_status(resp) == 200, "%.600s", resp);
	free(resp);
}
END_TEST

START_TEST(a_compressed_form_is_not_passed_unread)
{
	/* gzip of "_method=DELETE": body-parser (Express) inflates a
	 * urlencoded or JSON body by its Content-Encoding before
	 * method-override reads req.body._method. */
	static const unsigned char gz[] = { 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x02, 0x03, 0x8b, 0xcf, 0x4d, 0x2d, 0xc9, 0xc8,
		0x4f, 0xb1, 0x75, 0x71, 0xf5, 0x71, 0x0d, 0x71, 0x05, 0x00,
		0x65, 0xfc, 0x26, 0xb0, 0x0e, 0x00, 0x00, 0x00 };
	char req[2048];
	int n = snprintf(req, sizeof(req),
	    "POST http://api.test:%u/case/echo HTTP/1.1\r\nHost: "
	    "api.test:%u\r\nAuthorization: Bearer %s\r\nContent-Type: "
	    "application/x-www-form-urlencoded\r\nContent-Encoding: gzip\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	    kit.up_port, kit.up_port, kit.tok, sizeof(gz));
	ck_assert(n > 0 && (size_t)n + sizeof(gz) < sizeof(req));
	memcpy(req + n, gz, sizeof(gz));
	int fd = unix_connect(kit.channel);
	ck_assert_int_ge(fd, 0);
	char *resp = http_exchange(fd, req, (size_t)n + sizeof(gz), 5000);
	close(fd);
	ck_assert_ptr_nonnull(resp);
	ck_assert_msg(http_status(resp) == 403,
	    "a gzip form went upstream with the credential: %.300s", resp);
	free(resp);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("redteam2_override");
	TCase *tc = tcase_create("override");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc,
	    an_override_the_frameworks_read_never_goes_with_the_credential);
	tcase_add_test(tc, a_compressed_form_is_not_passed_unread);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
