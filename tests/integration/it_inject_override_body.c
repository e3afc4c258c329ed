/*
 * A method override in an injected request's body never goes upstream
 * with the credential (credentials.md, "Method overrides"): Rails
 * (Rack::MethodOverride), Laravel and Symfony take a POST form's _method
 * (PHP also .method, [method: it makes them _method) as the method,
 * Laravel a JSON body's too, so a rule allowing POST would let the
 * credential go with DELETE. The proxy holds such a body (at most
 * INJECT_FORM_MAX bytes, with a Content-Length) until it is judged: 403
 * method_override, or on whole; a bigger or chunked one is refused
 * (form_unjudged). From the hostile review's it_redteam_override.c.
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

/* POSTs body (as ctype, none when NULL) to /case/echo with the token. */
static char *
post(const char *ctype, const char *body, const char *te)
{
	size_t n = strlen(body), cap = n + 2048;
	char *req = malloc(cap), ct[200] = "", len[64] = "";
	char *resp;

	ck_assert_ptr_nonnull(req);
	if (ctype != NULL)
		snprintf(ct, sizeof(ct), "Content-Type: %s\r\n", ctype);
	if (te == NULL)
		snprintf(len, sizeof(len), "Content-Length: %zu\r\n", n);
	else
		snprintf(len, sizeof(len), "Transfer-Encoding: %s\r\n", te);
	snprintf(req, cap,
	    "POST http://api.test:%u/case/echo HTTP/1.1\r\nHost: "
	    "api.test:%u\r\nAuthorization: Bearer %s\r\n%s%s"
	    "Connection: close\r\n\r\n%s",
	    kit.up_port, kit.up_port, kit.tok, ct, len, body);
	resp = injectkit_send(&kit, req);
	free(req);
	return resp;
}

static const char form[] = "application/x-www-form-urlencoded";

static const struct injectkit_opts opts = {
	.script =
	    CORDON_SOURCE_DIR "/tests/integration/jobs/redteam/reflect.py",
	.port_file = "reflect.port",
	.follower = "proxy-overridebody",
	.proxy_extra = "\"head_timeout_ms\": 2000",
	.value = value,
	.post = true,
};

INJECTKIT_FIXTURE(kit, opts)

START_TEST(a_method_override_in_a_form_body_never_goes_with_the_credential)
{
	static const struct {
		const char *ctype, *body;
	} cases[] = {
		{ form, "_method=DELETE" },
		{ form, "x=1&_method=DELETE" },
		{ form, "_METHOD=delete" },
		{ form, "%5Fmethod=DELETE" },
		{ form, "x=1;_method=DELETE" },
		{ form, ".method=DELETE" },
		{ form, "x=1&+%5bmethod=DELETE" },
		{ "Application/X-WWW-Form-Urlencoded; charset=utf-8",
		    "_method=DELETE" },
		{ NULL, "_method=DELETE" },
		{ "multipart/form-data; boundary=zz",
		    "--zz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n"
		    "1\r\n--zz\r\nContent-Disposition: form-data; "
		    "name=\"_method\"\r\n\r\nDELETE\r\n--zz--\r\n" },
		{ "multipart/form-data; boundary=zz",
		    "--zz\r\ncontent-disposition: form-data; name=_Method\r\n"
		    "\r\nDELETE\r\n--zz--\r\n" },
		{ "application/json", "{\"a\": 1, \"_method\" : \"DELETE\"}" },
		{ "application/json", "{\"\\u005fmethod\":\"DELETE\"}" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *resp = post(cases[i].ctype, cases[i].body, NULL);
		ck_assert_msg(http_status(resp) == 403 &&
			strstr(resp, "method_override") != NULL,
		    "%s went upstream with the credential: %s", cases[i].body,
		    resp);
		free(resp);
	}
}
END_TEST

START_TEST(a_form_without_an_override_goes_whole)
{
	static const char *const bodies[] = { "x=1&y_method=2&_methods=3",
		"name=%5Fmethodical" };
	char *resp;

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		resp = post(form, bodies[i], NULL);
		ck_assert_msg(http_status(resp) == 200 &&
			strstr(resp, bodies[i]) != NULL,
		    "%s: %s", bodies[i], resp);
		free(resp);
	}
	resp = post("multipart/form-data; boundary=zz",
	    "--zz\r\nContent-Disposition: form-data; name=\"file\"; "
	    "filename=\"_method\"\r\n\r\nDELETE\r\n--zz--\r\n",
	    NULL);
	ck_assert_msg(http_status(resp) == 200, "%s", resp);
	free(resp);
	/* A type no framework reads the override from goes as it is. */
	resp = post("text/plain", "_method=DELETE", NULL);
	ck_assert_msg(http_status(resp) == 200, "%s", resp);
	free(resp);
}
END_TEST

START_TEST(a_form_too_big_to_judge_is_refused)
{
	size_t n = 70 * 1024;
	char *body = malloc(n + 1), *resp;

	ck_assert_ptr_nonnull(body);
	memset(body, 'a', n);
	memcpy(body, "x=", 2);
	memcpy(body + n - 15, "&_method=DELETE", 15);
	body[n] = '\0';
	resp = post(form, body, NULL);
	ck_assert_msg(http_status(resp) == 403 &&
		strstr(resp, "form_unjudged") != NULL,
	    "a form of %zu bytes: %.300s", n, resp);
	free(resp);
	free(body);
	resp = post(form, "e\r\n_method=DELETE\r\n0\r\n\r\n", "chunked");
	ck_assert_msg(http_status(resp) == 403 &&
		strstr(resp, "form_unjudged") != NULL,
	    "a chunked form: %.300s", resp);
	free(resp);
}
END_TEST

/* What comes on fd until it closes (or 10 s pass). */
static char *
read_all(int fd)
{
	size_t cap = 8192, n = 0;
	char *out = malloc(cap);

	ck_assert_ptr_nonnull(out);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 10000) != 1)
			break;
		ssize_t r = read(fd, out + n, cap - 1 - n);
		if (r <= 0 || (n += (size_t)r) == cap - 1)
			break;
	}
	out[n] = '\0';
	return out;
}

START_TEST(a_form_body_late_or_cut_never_goes)
{
	char req[1024], *resp;
	int fd;

	for (int cut = 0; cut < 2; cut++) {
		snprintf(req, sizeof(req),
		    "POST http://api.test:%u/case/echo HTTP/1.1\r\nHost: "
		    "api.test:%u\r\nAuthorization: Bearer %s\r\n"
		    "Content-Type: %s\r\nContent-Length: 14\r\n"
		    "Connection: close\r\n\r\nx=1&_me",
		    kit.up_port, kit.up_port, kit.tok, form);
		ck_assert_int_ge(fd = unix_connect(kit.channel), 0);
		ck_assert_int_eq(write(fd, req, strlen(req)),
		    (ssize_t)strlen(req));
		if (cut)
			shutdown(fd, SHUT_WR);
		resp = read_all(fd);
		close(fd);
		/* Late: the head timeout's 408; cut: closed, no answer. */
		if (cut)
			ck_assert_msg(http_status(resp) != 200, "%s", resp);
		else
			ck_assert_msg(http_status(resp) == 408 &&
				strstr(resp, "timeout") != NULL,
			    "half a form held: %s", resp);
		free(resp);
	}
	snprintf(req, sizeof(req),
	    "GET http://www.api.test:%u/open/log HTTP/1.1\r\nHost: "
	    "www.api.test:%u\r\nConnection: close\r\n\r\n",
	    kit.up_port, kit.up_port);
	resp = injectkit_send(&kit, req);
	ck_assert_msg(http_status(resp) == 200, "%.300s", resp);
	ck_assert_msg(strstr(resp, "POST /case/echo") == NULL,
	    "half a form went upstream: %s", resp);
	free(resp);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("inject_override_body");
	TCase *tc = tcase_create("reflect");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc,
	    a_method_override_in_a_form_body_never_goes_with_the_credential);
	tcase_add_test(tc, a_form_without_an_override_goes_whole);
	tcase_add_test(tc, a_form_too_big_to_judge_is_refused);
	tcase_add_test(tc, a_form_body_late_or_cut_never_goes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
