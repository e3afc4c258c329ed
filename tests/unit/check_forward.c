/*
 * The head a judged request takes upstream (proxy/forward.c): Host as the
 * verdict checked it, with a port only when it is not the scheme's
 * default; towards broker.cordon the proxy's credentials and the job in
 * place of the job's own, whatever the job put in; with a credential
 * injected no Range, If-Range or method override.
 */
#include "forward.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>

static struct http1_parser parser;

static const struct http1_request *
parse(const char *text, enum http1_mode mode)
{
	size_t used = 0;

	http1_parser_init(&parser, mode);
	ck_assert_int_eq(http1_parse(&parser, text, strlen(text), &used), 0);
	return &parser.req;
}

static char *
head_for(const char *text, enum http1_mode mode, const struct forward_target *t)
{
	const struct http1_request *r = parse(text, mode);
	struct buf out;
	char *s;

	buf_init(&out, HTTP1_HEAD_MAX + 1024);
	ck_assert_int_eq(forward_head(r, text, t, &out), 0);
	s = strdup(buf_str(&out));
	buf_free(&out);
	return s;
}

START_TEST(host_carries_a_port_only_off_the_default)
{
	static const char plain[] = "GET http://API.test:8080/ok/x HTTP/1.1\r\n"
				    "Host: API.test:8080\r\n\r\n";
	static const char inner[] = "GET /ok/x HTTP/1.1\r\nHost: tls.test\r\n"
				    "\r\n";
	struct forward_target t = { .host = "api.test", .port = 8080 };
	char *s = head_for(plain, HTTP1_MODE_PROXY, &t);

	ck_assert_ptr_nonnull(strstr(s, "GET /ok/x HTTP/1.1\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nHost: api.test:8080\r\n"));
	free(s);
	t.port = 80;
	s = head_for(plain, HTTP1_MODE_PROXY, &t);
	ck_assert_ptr_nonnull(strstr(s, "\r\nHost: api.test\r\n"));
	free(s);
	/* Inside a tunnel, 443 is the default and 80 is not. */
	t = (struct forward_target){ .host = "tls.test",
		.port = 443,
		.tunnel = true };
	s = head_for(inner, HTTP1_MODE_ORIGIN, &t);
	ck_assert_ptr_nonnull(strstr(s, "\r\nHost: tls.test\r\n"));
	free(s);
	t.port = 80;
	s = head_for(inner, HTTP1_MODE_ORIGIN, &t);
	ck_assert_ptr_nonnull(strstr(s, "\r\nHost: tls.test:80\r\n"));
	free(s);
}
END_TEST

START_TEST(an_injected_request_asks_for_no_part_and_no_other_method)
{
	static const char req[] =
	    "GET http://api.test/v1/x HTTP/1.1\r\nHost: api.test\r\n"
	    "Range: bytes=0-7\r\nif-range: \"e\"\r\n"
	    "X-HTTP-Method-Override: DELETE\r\nx-http-method: DELETE\r\n"
	    "X-Method-Override: DELETE\r\nAccept: */*\r\n\r\n";
	struct forward_target t = { .host = "api.test",
		.port = 80,
		.inject_header = "X-Api-Key",
		.inject_value = "Key v" };
	char *s = head_for(req, HTTP1_MODE_PROXY, &t);

	ck_assert_ptr_null(strcasestr(s, "range"));
	ck_assert_ptr_null(strcasestr(s, "method"));
	ck_assert_ptr_null(strstr(s, "DELETE"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nAccept: */*\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Api-Key: Key v\r\n"));
	free(s);
	/* Whatever a CGI or WSGI server reads as the injected field goes. */
	static const char look[] =
	    "GET http://api.test/v1/x HTTP/1.1\r\nHost: api.test\r\n"
	    "X_Api_Key: a\r\nx-api_KEY: b\r\nX-Api-Keys: c\r\n\r\n";
	s = head_for(look, HTTP1_MODE_PROXY, &t);
	ck_assert_ptr_null(strstr(s, ": a\r\n"));
	ck_assert_ptr_null(strstr(s, ": b\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Api-Keys: c\r\n"));
	free(s);
	/* Without a credential the job's fields go as they are. */
	t.inject_header = NULL;
	t.inject_value = NULL;
	s = head_for(req, HTTP1_MODE_PROXY, &t);
	ck_assert_ptr_nonnull(strstr(s, "\r\nRange: bytes=0-7\r\n"));
	ck_assert_ptr_nonnull(
	    strstr(s, "\r\nX-HTTP-Method-Override: DELETE\r\n"));
	free(s);
}
END_TEST

START_TEST(broker_cordon_gets_the_proxys_credentials_not_the_jobs)
{
	static const char req[] =
	    "POST http://broker.cordon/v1/token HTTP/1.1\r\n"
	    "Host: broker.cordon\r\n"
	    "Authorization: Bearer job-supplied\r\n"
	    "Cookie: s=1\r\n"
	    "X-Cordon-Job: job_other\r\n"
	    "X-Cordon-Anything: x\r\n"
	    "Content-Length: 2\r\n\r\n";
	struct sockaddr_in b = { .sin_family = AF_INET,
		.sin_port = htons(7701) };
	struct forward_target t = { .host = "broker.cordon", .port = 80 };
	char *s;

	ck_assert_int_eq(inet_pton(AF_INET, "127.0.0.1", &b.sin_addr), 1);
	t.broker = &b;
	t.verifier_key = "crk_verifier";
	t.job = "job_a";
	s = head_for(req, HTTP1_MODE_PROXY, &t);
	ck_assert_ptr_nonnull(strstr(s, "POST /v1/token HTTP/1.1\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nHost: 127.0.0.1:7701\r\n"));
	ck_assert_ptr_nonnull(
	    strstr(s, "\r\nAuthorization: Bearer crk_verifier\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Cordon-Job: job_a\r\n"));
	ck_assert_ptr_null(strstr(s, "job-supplied"));
	ck_assert_ptr_null(strstr(s, "Cookie"));
	ck_assert_ptr_null(strstr(s, "job_other"));
	ck_assert_ptr_null(strstr(s, "X-Cordon-Anything"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nContent-Length: 2\r\n"));
	free(s);
}
END_TEST

START_TEST(upgrade_goes_only_where_the_rule_allows_it)
{
	static const char req[] =
	    "GET /ok/ws HTTP/1.1\r\nHost: tls.test\r\n"
	    "Connection: Upgrade\r\nUpgrade: websocket\r\n"
	    "\r\n";
	struct forward_target t = { .host = "tls.test",
		.port = 443,
		.tunnel = true };
	char *s = head_for(req, HTTP1_MODE_ORIGIN, &t);

	ck_assert_ptr_null(strstr(s, "websocket"));
	free(s);
	t.upgrade_ok = true;
	s = head_for(req, HTTP1_MODE_ORIGIN, &t);
	ck_assert_ptr_nonnull(strstr(s, "\r\nUpgrade: websocket\r\n"));
	free(s);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("forward");
	TCase *tc = tcase_create("forward");

	tcase_add_test(tc, host_carries_a_port_only_off_the_default);
	tcase_add_test(tc,
	    broker_cordon_gets_the_proxys_credentials_not_the_jobs);
	tcase_add_test(tc, upgrade_goes_only_where_the_rule_allows_it);
	tcase_add_test(tc,
	    an_injected_request_asks_for_no_part_and_no_other_method);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(suite());
}
