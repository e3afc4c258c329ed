/*
 * The proxy's request parser: each refusal reason with a minimal request
 * that earns it beside a near-identical one that passes; a byte-at-a-time
 * feed answers as one call does; pipelined requests split where they
 * should; the limits hold exactly at their boundary and not one byte
 * past; chunked bodies decode with extensions and refuse trailers, bad
 * sizes and overflow; the upstream head is exact, hop-by-hop fields gone.
 */
#include "http1.h"

#include "testutil.h"
#include "util.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H "Host: a.test\r\n"

struct head_case {
	const char *want; /* reason, or NULL for a complete head */
	const char *text;
	enum http1_mode mode;
};

#define P(w, t)                                                                \
	{                                                                      \
		.want = (w), .text = (t)                                       \
	}
#define O(w, t)                                                                \
	{                                                                      \
		.want = (w), .text = (t), .mode = HTTP1_MODE_ORIGIN            \
	}

/* Pairs: each refusal first, then the nearest request that passes. */
static const struct head_case cases[] = {
	P("nul", "GET http://a.test/\0 HTTP/1.1\r\n" H "\r\n"),
	P("nul", "GET http://a.test/ HTTP/1.1\r\nX: a\0b\r\n" H "\r\n"),
	P(NULL, "GET http://a.test/ HTTP/1.1\r\nX: ab\r\n" H "\r\n"),
	P("bare_cr", "GET http://a.test/ HTTP/1.1\r\nX: a\rb\r\n" H "\r\n"),
	P("bare_cr", "GET http://a.test/ HTTP/1.1\r\n" H "\r\r\n"),
	P("bare_lf", "GET http://a.test/ HTTP/1.1\n" H "\r\n"),
	P("bare_lf", "GET http://a.test/ HTTP/1.1\r\n" H "\n"),
	P("bare_lf", "GET http://a.test/ HTTP/1.1\r\nX: a\nb\r\n" H "\r\n"),
	P(NULL, "GET http://a.test/ HTTP/1.1\r\n" H "\r\n"),
	P("malformed", "\r\nGET http://a.test/ HTTP/1.1\r\n" H "\r\n"),
	P("malformed", "GET  http://a.test/ HTTP/1.1\r\n" H "\r\n"),
	P("malformed", "GET http://a.test/  HTTP/1.1\r\n" H "\r\n"),
	P("malformed", "GET http://a.test/\r\n" H "\r\n"),
	P("malformed", "GET http://a.test/ HTTP/1.1\r\nNoColon\r\n" H "\r\n"),
	P("bad_method", "G(T http://a.test/ HTTP/1.1\r\n" H "\r\n"),
	P("bad_method", " GET http://a.test/ HTTP/1.1\r\n" H "\r\n"),
	P(NULL, "G-T http://a.test/ HTTP/1.1\r\n" H "\r\n"),
	P("bad_version", "GET http://a.test/ HTTP/2.0\r\n" H "\r\n"),
	P("bad_version", "GET http://a.test/ http/1.1\r\n" H "\r\n"),
	P("bad_version", "GET http://a.test/ HTTP/1.10\r\n" H "\r\n"),
	P(NULL, "GET http://a.test/ HTTP/1.0\r\n" H "\r\n"),
	P("bad_target", "GET /index.html HTTP/1.1\r\n" H "\r\n"),
	P("bad_target", "OPTIONS * HTTP/1.1\r\n" H "\r\n"),
	P("bad_target", "GET https://a.test/ HTTP/1.1\r\n" H "\r\n"),
	P("bad_target", "GET http:///x HTTP/1.1\r\n" H "\r\n"),
	P("bad_target", "GET http://a.test:/ HTTP/1.1\r\n" H "\r\n"),
	P("bad_target", "GET http://a.test:65536/ HTTP/1.1\r\n" H "\r\n"),
	P("bad_target", "GET http://a.test/%zz HTTP/1.1\r\n" H "\r\n"),
	P("bad_target", "GET http://a.test/a|b HTTP/1.1\r\n" H "\r\n"),
	P("bad_target", "GET http://a%2etest/ HTTP/1.1\r\n" H "\r\n"),
	P("bad_target", "CONNECT a.test HTTP/1.1\r\n" H "\r\n"),
	P("bad_target", "CONNECT http://a.test:443/ HTTP/1.1\r\n" H "\r\n"),
	P("bad_target", "GET a.test:443 HTTP/1.1\r\n" H "\r\n"),
	P(NULL, "GET http://a.test/%41?q=1&r=%2F HTTP/1.1\r\n" H "\r\n"),
	P(NULL, "GET HTTP://A.test HTTP/1.1\r\n" H "\r\n"),
	P(NULL, "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n"),
	/* Node's CONNECT names the proxy in Host (the job's relay): the
	 * target is the request line's alone, so it stands. */
	P(NULL, "CONNECT a.test:443 HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n"),
	P(NULL, "CONNECT a.test:443 HTTP/1.1\r\nHost: LOCALHOST:3128\r\n\r\n"),
	P("host_mismatch",
	    "CONNECT a.test:443 HTTP/1.1\r\nHost: b.test:443\r\n\r\n"),
	P("host_mismatch",
	    "CONNECT a.test:443 HTTP/1.1\r\nHost: 127.0.0.1:3129\r\n\r\n"),
	P("host_mismatch",
	    "CONNECT a.test:443 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
	/* Not for an absolute-form request: its Host goes upstream. */
	P("host_mismatch",
	    "GET http://a.test/ HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n"),
	P("userinfo", "GET http://u:p@a.test/ HTTP/1.1\r\n" H "\r\n"),
	P("userinfo", "CONNECT u@a.test:443 HTTP/1.1\r\n" H "\r\n"),
	P(NULL, "GET http://a.test/u:p@x HTTP/1.1\r\n" H "\r\n"),
	P("fragment", "GET http://a.test/#top HTTP/1.1\r\n" H "\r\n"),
	P("obs_fold", "GET http://a.test/ HTTP/1.1\r\n" H "X: a\r\n b\r\n\r\n"),
	P("obs_fold", "GET http://a.test/ HTTP/1.1\r\n\tX: a\r\n" H "\r\n"),
	P(NULL, "GET http://a.test/ HTTP/1.1\r\n" H "X: a \t b\r\n\r\n"),
	P("space_before_colon",
	    "GET http://a.test/ HTTP/1.1\r\n"
	    "Host : a.test\r\n\r\n"),
	P("space_before_colon",
	    "GET http://a.test/ HTTP/1.1\r\n" H "X\t: a\r\n\r\n"),
	P(NULL, "GET http://a.test/ HTTP/1.1\r\nHost:a.test\r\n\r\n"),
	P("bad_header_name", "GET http://a.test/ HTTP/1.1\r\n" H ": a\r\n\r\n"),
	P("bad_header_name",
	    "GET http://a.test/ HTTP/1.1\r\n" H "X(y): a\r\n\r\n"),
	P("bad_header_value",
	    "GET http://a.test/ HTTP/1.1\r\n" H "X: a\x01"
	    "b\r\n\r\n"),
	P("bad_header_value",
	    "GET http://a.test/ HTTP/1.1\r\n" H "X: a\x7f\r\n\r\n"),
	P(NULL, "GET http://a.test/ HTTP/1.1\r\n" H "X: a\x80\xff\r\n\r\n"),
	P("duplicate_host", "GET http://a.test/ HTTP/1.1\r\n" H H "\r\n"),
	P("bad_host", "GET http://a.test/ HTTP/1.1\r\nHost: u@a.test\r\n\r\n"),
	P("bad_host", "GET http://a.test/ HTTP/1.1\r\nHost:\r\n\r\n"),
	P("missing_host", "GET http://a.test/ HTTP/1.1\r\n\r\n"),
	P(NULL, "GET http://a.test/ HTTP/1.0\r\n\r\n"),
	P("host_mismatch",
	    "GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n"),
	P("host_mismatch",
	    "GET http://a.test/ HTTP/1.1\r\n"
	    "Host: a.test:8080\r\n\r\n"),
	P("host_mismatch", "GET http://a.test:81/ HTTP/1.1\r\n" H "\r\n"),
	P("host_mismatch",
	    "CONNECT a.test:443 HTTP/1.1\r\n"
	    "Host: a.test:8443\r\n\r\n"),
	P(NULL, "GET http://a.test:80/ HTTP/1.1\r\nHost: A.TEST\r\n\r\n"),
	P(NULL, "CONNECT a.test:443 HTTP/1.1\r\n" H "\r\n"),
	P(NULL, "GET http://[::1]:81/ HTTP/1.1\r\nHost: [::1]:81\r\n\r\n"),
	P("bad_cl",
	    "POST http://a.test/ HTTP/1.1\r\n" H "Content-Length: +5\r\n\r\n"),
	P("bad_cl",
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Content-Length: 5, 5\r\n\r\n"),
	P("bad_cl",
	    "POST http://a.test/ HTTP/1.1\r\n" H "Content-Length:\r\n\r\n"),
	P("bad_cl",
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Content-Length: 9007199254740992\r\n\r\n"),
	P(NULL,
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Content-Length: 9007199254740991\r\n\r\n"),
	P("duplicate_cl",
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Content-Length: 5\r\ncontent-length: 5\r\n\r\n"),
	P("duplicate_cl",
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Content-Length: 5\r\nContent-Length: 6\r\n\r\n"),
	P(NULL,
	    "POST http://a.test/ HTTP/1.1\r\n" H "Content-Length: 5\r\n\r\n"),
	P("unknown_te",
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Transfer-Encoding: gzip, chunked\r\n\r\n"),
	P("unknown_te",
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Transfer-Encoding: identity\r\n\r\n"),
	P("unknown_te",
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Transfer-Encoding: chunked,\r\n\r\n"),
	P(NULL,
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Transfer-Encoding:  ChUnKeD \r\n\r\n"),
	P("duplicate_te",
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Transfer-Encoding: chunked\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"),
	P("te_in_http10",
	    "POST http://a.test/ HTTP/1.0\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"),
	P("cl_and_te",
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
	P("cl_and_te",
	    "POST http://a.test/ HTTP/1.1\r\n" H
	    "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"),
	P("bad_connection",
	    "GET http://a.test/ HTTP/1.1\r\n" H "Connection: close x\r\n\r\n"),
	P("bad_connection",
	    "GET http://a.test/ HTTP/1.1\r\n" H "Connection: a(b)\r\n\r\n"),
	P(NULL,
	    "GET http://a.test/ HTTP/1.1\r\n" H
	    "Connection: , close ,x\r\n\r\n"),
	P("connect_body",
	    "CONNECT a.test:443 HTTP/1.1\r\n" H "Content-Length: 1\r\n\r\n"),
	P("connect_body",
	    "CONNECT a.test:443 HTTP/1.1\r\n" H
	    "Transfer-Encoding: chunked\r\n\r\n"),
	P(NULL,
	    "CONNECT a.test:443 HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\n"),
	/* A body where the method gives it no meaning: an upstream that
	 * reads none takes it for a request of its own. */
	P("body_on_get",
	    "GET http://a.test/ HTTP/1.1\r\n" H "Content-Length: 1\r\n\r\n"),
	P("body_on_get",
	    "GET http://a.test/ HTTP/1.1\r\n" H
	    "Transfer-Encoding: chunked\r\n\r\n"),
	P("body_on_head",
	    "HEAD http://a.test/ HTTP/1.1\r\n" H "Content-Length: 9\r\n\r\n"),
	P("body_on_trace",
	    "TRACE http://a.test/ HTTP/1.1\r\n" H
	    "Transfer-Encoding: chunked\r\n\r\n"),
	P(NULL,
	    "GET http://a.test/ HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\n"),
	P(NULL,
	    "DELETE http://a.test/ HTTP/1.1\r\n" H "Content-Length: 2\r\n\r\n"),
	O("body_on_get", "GET /x HTTP/1.1\r\n" H "Content-Length: 1\r\n\r\n"),
	/* Tunnels: origin-form only, Host always. */
	O("bad_target", "GET http://a.test/ HTTP/1.1\r\n" H "\r\n"),
	O("bad_target", "CONNECT a.test:443 HTTP/1.1\r\n" H "\r\n"),
	O("missing_host", "GET / HTTP/1.0\r\n\r\n"),
	O(NULL, "GET /x?y HTTP/1.0\r\n" H "\r\n"),
};

static int
parse_all(struct http1_parser *p, const char *text, size_t n,
    enum http1_mode mode, size_t *used)
{
	http1_parser_init(p, mode);
	return http1_parse(p, text, n, used);
}

/* Feeds text[0..n) a byte at a time; the last call's answer. */
static int
parse_bytewise(struct http1_parser *p, const char *text, size_t n,
    enum http1_mode mode, size_t *used)
{
	int r = -EAGAIN;

	http1_parser_init(p, mode);
	for (size_t i = 0; i <= n && r == -EAGAIN; i++)
		r = http1_parse(p, text, i, used);
	return r;
}

/* The length of a case's text, which may hold a NUL. */
static size_t
case_len(const struct head_case *c)
{
	const char *t = c->text;
	size_t n = strlen(t);

	/* The NUL cases go on past their NUL: find the final CRLF CRLF. */
	if (c->want != NULL && strcmp(c->want, "nul") == 0)
		n += 1 + strlen(t + n + 1);
	return n;
}

START_TEST(test_refusal_table)
{
	const struct head_case *c = &cases[_i];
	struct http1_parser *p = malloc(sizeof(*p));
	size_t n = case_len(c), used = 0;
	int r;

	ck_assert_ptr_nonnull(p);
	r = parse_all(p, c->text, n, c->mode, &used);
	if (c->want == NULL) {
		ck_assert_msg(r == 0, "case %d refused (%s): %s", _i,
		    r == -EBADMSG ? p->reason : "more", c->text);
		ck_assert_uint_eq(used, n);
	} else {
		ck_assert_msg(r == -EBADMSG, "case %d not refused: %s", _i,
		    c->text);
		ck_assert_str_eq(p->reason, c->want);
	}
	free(p);
}
END_TEST

START_TEST(test_bytewise_matches_oneshot)
{
	const struct head_case *c = &cases[_i];
	struct http1_parser *a = calloc(1, sizeof(*a));
	struct http1_parser *b = calloc(1, sizeof(*b));
	size_t n = case_len(c), ua = 0, ub = 0;
	int ra, rb;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ra = parse_all(a, c->text, n, c->mode, &ua);
	rb = parse_bytewise(b, c->text, n, c->mode, &ub);
	ck_assert_int_eq(ra, rb);
	if (ra == -EBADMSG)
		ck_assert_str_eq(a->reason, b->reason);
	if (ra == 0) {
		ck_assert_uint_eq(ua, ub);
		ck_assert_mem_eq(&a->req, &b->req, sizeof(a->req));
	}
	/* Once answered, the answer stays. */
	ck_assert_int_eq(http1_parse(a, c->text, n, &ua), ra);
	free(a);
	free(b);
}
END_TEST

static bool
span_is(const char *data, struct http1_span s, const char *want)
{
	return s.len == strlen(want) && memcmp(data + s.off, want, s.len) == 0;
}

START_TEST(test_fields_of_absolute_form)
{
	static const char t[] =
	    "GET http://Api.Test:8080/a/b?x=1&y HTTP/1.1\r\n"
	    "Host: api.test:8080\r\n"
	    "X-Trim:  \t spaced value\t \r\n"
	    "Upgrade: websocket\r\n\r\n";
	struct http1_parser *p = malloc(sizeof(*p));
	const struct http1_request *q = &p->req;
	size_t used;

	ck_assert_int_eq(parse_all(p, t, strlen(t), HTTP1_MODE_PROXY, &used),
	    0);
	ck_assert(span_is(t, q->method, "GET"));
	ck_assert(span_is(t, q->target, "http://Api.Test:8080/a/b?x=1&y"));
	ck_assert(span_is(t, q->scheme, "http"));
	ck_assert(span_is(t, q->host, "Api.Test"));
	ck_assert_uint_eq(q->port, 8080);
	ck_assert(span_is(t, q->path, "/a/b"));
	ck_assert(q->has_query);
	ck_assert(span_is(t, q->query, "x=1&y"));
	ck_assert_int_eq(q->form, HTTP1_FORM_ABSOLUTE);
	ck_assert_int_eq(q->minor_version, 1);
	ck_assert(!q->connect);
	ck_assert(q->keep_alive);
	ck_assert(q->upgrade);
	ck_assert_int_eq(q->body, HTTP1_BODY_NONE);
	ck_assert_uint_eq(q->nheaders, 3);
	ck_assert(span_is(t, q->headers[1].name, "X-Trim"));
	ck_assert(span_is(t, q->headers[1].value, "spaced value"));
	ck_assert_ptr_eq(http1_find_header(q, t, "x-trim"), &q->headers[1]);
	ck_assert_ptr_null(http1_find_header(q, t, "X-Trim2"));
	free(p);
}
END_TEST

START_TEST(test_fields_of_connect_and_origin)
{
	static const char c[] = "CONNECT [2001:db8::1]:443 HTTP/1.1\r\n"
				"Host: [2001:DB8::1]\r\n\r\n";
	static const char o[] = "POST /up HTTP/1.0\r\nHost: in.test\r\n"
				"Connection: keep-alive\r\n"
				"Content-Length: 007\r\n\r\n";
	struct http1_parser *p = malloc(sizeof(*p));
	size_t used;

	ck_assert_int_eq(parse_all(p, c, strlen(c), HTTP1_MODE_PROXY, &used),
	    0);
	ck_assert(p->req.connect);
	ck_assert_int_eq(p->req.form, HTTP1_FORM_AUTHORITY);
	ck_assert(span_is(c, p->req.host, "[2001:db8::1]"));
	ck_assert_uint_eq(p->req.port, 443);

	ck_assert_int_eq(parse_all(p, o, strlen(o), HTTP1_MODE_ORIGIN, &used),
	    0);
	ck_assert_int_eq(p->req.form, HTTP1_FORM_ORIGIN);
	ck_assert(span_is(o, p->req.host, "in.test"));
	ck_assert_uint_eq(p->req.port, 443);
	ck_assert(span_is(o, p->req.path, "/up"));
	ck_assert(!p->req.has_query);
	ck_assert(p->req.keep_alive); /* 1.0 with keep-alive */
	ck_assert_int_eq(p->req.body, HTTP1_BODY_LENGTH);
	ck_assert_uint_eq(p->req.content_length, 7);
	free(p);
}
END_TEST

START_TEST(test_keep_alive_rules)
{
	static const struct {
		const char *text;
		bool keep;
	} t[] = {
		{ "GET http://a.test/ HTTP/1.1\r\n" H "\r\n", true },
		{ "GET http://a.test/ HTTP/1.1\r\n" H
		  "Connection: Close\r\n\r\n",
		    false },
		{ "GET http://a.test/ HTTP/1.0\r\n\r\n", false },
		{ "GET http://a.test/ HTTP/1.0\r\nConnection: "
		  "keep-alive\r\n\r\n",
		    true },
		{ "GET http://a.test/ HTTP/1.0\r\nConnection: keep-alive\r\n"
		  "Connection: close\r\n\r\n",
		    false },
	};
	struct http1_parser *p = malloc(sizeof(*p));
	size_t used;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		ck_assert_int_eq(parse_all(p, t[i].text, strlen(t[i].text),
				     HTTP1_MODE_PROXY, &used),
		    0);
		ck_assert_msg(p->req.keep_alive == t[i].keep, "%s", t[i].text);
	}
	free(p);
}
END_TEST

START_TEST(test_needs_more_then_completes)
{
	static const char t[] = "GET http://a.test/ HTTP/1.1\r\n" H "\r\n";
	struct http1_parser *p = malloc(sizeof(*p));
	size_t used = 12345;

	http1_parser_init(p, HTTP1_MODE_PROXY);
	ck_assert_int_eq(http1_parse(p, t, 0, &used), -EAGAIN);
	ck_assert_int_eq(http1_parse(p, t, strlen(t) - 1, &used), -EAGAIN);
	ck_assert_uint_eq(used, 12345); /* untouched until complete */
	ck_assert_int_eq(http1_parse(p, t, 5, &used), -EINVAL);
	ck_assert_int_eq(http1_parse(p, t, strlen(t), &used), 0);
	ck_assert_uint_eq(used, strlen(t));
	free(p);
}
END_TEST

START_TEST(test_pipelined_split)
{
	static const char t[] = "POST http://a.test/x HTTP/1.1\r\n" H
				"Content-Length: 5\r\n\r\nhello"
				"GET http://a.test/y HTTP/1.1\r\n" H "\r\n"
				"GARBAGE\n";
	static const char first[] =
	    "POST http://a.test/x HTTP/1.1\r\n" H "Content-Length: 5\r\n\r\n";
	struct http1_parser *p = malloc(sizeof(*p));
	size_t used, used2, off;

	for (int bytewise = 0; bytewise < 2; bytewise++) {
		int r = bytewise
		    ? parse_bytewise(p, t, strlen(t), HTTP1_MODE_PROXY, &used)
		    : parse_all(p, t, strlen(t), HTTP1_MODE_PROXY, &used);
		ck_assert_int_eq(r, 0);
		ck_assert_uint_eq(used, strlen(first));
		ck_assert_uint_eq(p->req.content_length, 5);
		off = used + 5;
		r = bytewise ? parse_bytewise(p, t + off, strlen(t) - off,
				   HTTP1_MODE_PROXY, &used2)
			     : parse_all(p, t + off, strlen(t) - off,
				   HTTP1_MODE_PROXY, &used2);
		ck_assert_int_eq(r, 0);
		ck_assert(span_is(t + off, p->req.path, "/y"));
		ck_assert_uint_eq(used2, strlen(t) - off - strlen("GARBAGE\n"));
	}
	free(p);
}
END_TEST

/* "GET http://a.test/<pad> HTTP/1.1" of exactly n bytes, then a Host. */
static char *
long_line(size_t n)
{
	const char *pre = "GET http://a.test/", *post = " HTTP/1.1";
	size_t pad = n - strlen(pre) - strlen(post);
	char *t = malloc(n + 64);

	ck_assert_ptr_nonnull(t);
	strcpy(t, pre);
	memset(t + strlen(pre), 'a', pad);
	strcpy(t + strlen(pre) + pad, post);
	strcat(t, "\r\n" H "\r\n");
	return t;
}

START_TEST(test_request_line_limit)
{
	struct http1_parser *p = malloc(sizeof(*p));
	char *at = long_line(HTTP1_LINE_MAX),
	     *past = long_line(HTTP1_LINE_MAX + 1);
	size_t used;

	ck_assert_int_eq(parse_all(p, at, strlen(at), HTTP1_MODE_PROXY, &used),
	    0);
	ck_assert_int_eq(parse_bytewise(p, at, strlen(at), HTTP1_MODE_PROXY,
			     &used),
	    0);
	ck_assert_int_eq(parse_all(p, past, strlen(past), HTTP1_MODE_PROXY,
			     &used),
	    -EBADMSG);
	ck_assert_str_eq(p->reason, "line_too_long");
	/* Refused as soon as the line is too long, CRLF or not. */
	ck_assert_int_eq(parse_all(p, past, HTTP1_LINE_MAX + 1,
			     HTTP1_MODE_PROXY, &used),
	    -EBADMSG);
	ck_assert_str_eq(p->reason, "line_too_long");
	free(at);
	free(past);
	free(p);
}
END_TEST

/*
 * A request whose field lines take exactly size bytes with their CRLFs,
 * in count fields (the Host line first): filler "X-nnn: vvv..." lines.
 */
static char *
sized_head(size_t size, size_t count)
{
	const char *rl = "GET http://a.test/ HTTP/1.1\r\n";
	size_t host = strlen(H), each, last, n = 0;
	char *t = malloc(strlen(rl) + size + 64);

	ck_assert_ptr_nonnull(t);
	ck_assert_uint_ge(count, 2);
	/* count - 1 filler lines: "X-nnn:" + value + CRLF, at least 9 each */
	each = (size - host) / (count - 1);
	last = size - host - each * (count - 2);
	ck_assert_uint_ge(each, 9);
	n += (size_t)sprintf(t, "%s%s", rl, H);
	for (size_t i = 0; i < count - 1; i++) {
		size_t len = i == count - 2 ? last : each;
		n += (size_t)sprintf(t + n, "X-%03zu:", i % 1000);
		memset(t + n, 'v', len - 8);
		n += len - 8;
		memcpy(t + n, "\r\n", 2);
		n += 2;
	}
	memcpy(t + n, "\r\n", 3);
	return t;
}

START_TEST(test_header_size_limit)
{
	struct http1_parser *p = malloc(sizeof(*p));
	char *at = sized_head(HTTP1_HEADERS_MAX, 50);
	char *past = sized_head(HTTP1_HEADERS_MAX + 1, 50);
	size_t used;

	ck_assert_int_eq(parse_all(p, at, strlen(at), HTTP1_MODE_PROXY, &used),
	    0);
	ck_assert_uint_eq(used, strlen(at));
	ck_assert_uint_eq(p->req.nheaders, 50);
	ck_assert_uint_le(used, HTTP1_HEAD_MAX);
	ck_assert_int_eq(parse_bytewise(p, at, strlen(at), HTTP1_MODE_PROXY,
			     &used),
	    0);
	ck_assert_int_eq(parse_all(p, past, strlen(past), HTTP1_MODE_PROXY,
			     &used),
	    -EBADMSG);
	ck_assert_str_eq(p->reason, "headers_too_large");
	ck_assert_int_eq(parse_bytewise(p, past, strlen(past), HTTP1_MODE_PROXY,
			     &used),
	    -EBADMSG);
	ck_assert_str_eq(p->reason, "headers_too_large");
	free(at);
	free(past);
	free(p);
}
END_TEST

START_TEST(test_field_count_limit)
{
	struct http1_parser *p = malloc(sizeof(*p));
	char *at = sized_head(100 * 12, HTTP1_FIELDS_MAX);
	char *past = sized_head(101 * 12, HTTP1_FIELDS_MAX + 1);
	size_t used;

	ck_assert_int_eq(parse_all(p, at, strlen(at), HTTP1_MODE_PROXY, &used),
	    0);
	ck_assert_uint_eq(p->req.nheaders, HTTP1_FIELDS_MAX);
	ck_assert_int_eq(parse_all(p, past, strlen(past), HTTP1_MODE_PROXY,
			     &used),
	    -EBADMSG);
	ck_assert_str_eq(p->reason, "headers_too_large");
	free(at);
	free(past);
	free(p);
}
END_TEST

/* --- chunked ---------------------------------------------------------- */

/* Decodes in whole (step 0) or step bytes at a time into out. */
static int
decode(const char *in, size_t len, size_t step, uint64_t max, char *out,
    size_t *out_len, size_t *used_total, const char **reason)
{
	struct http1_chunked c;
	size_t at = 0, o = 0;
	int r = -EAGAIN;

	http1_chunked_init(&c, max);
	while (at < len && r == -EAGAIN) {
		size_t n = step == 0 || len - at < step ? len - at : step;
		size_t used, off, dlen;

		r = http1_chunked_decode(&c, in + at, n, &used, &off, &dlen);
		ck_assert_uint_le(used, n);
		ck_assert_uint_le(off + dlen, used);
		memcpy(out + o, in + at + off, dlen);
		o += dlen;
		at += used;
	}
	*out_len = o;
	*used_total = at;
	*reason = c.reason;
	return r;
}

START_TEST(test_chunked_decodes)
{
	static const char body[] = "4;name=value;x=\"q s\"\r\nWiki\r\n"
				   "5 ;ext\r\npedia\r\n"
				   "00000E\r\n in\r\n\r\nchunks.\r\n"
				   "0\r\n\r\nNEXT";
	char out[64];
	const char *reason;

	for (size_t step = 0; step < 5; step++) {
		size_t n, used;
		ck_assert_int_eq(decode(body, strlen(body), step, 1024, out, &n,
				     &used, &reason),
		    0);
		ck_assert_uint_eq(n, 23);
		ck_assert_mem_eq(out, "Wikipedia in\r\n\r\nchunks.", 23);
		ck_assert_uint_eq(used, strlen(body) - 4);
	}
}
END_TEST

START_TEST(test_chunked_refusals)
{
	static const struct {
		const char *want, *body;
		uint64_t max;
	} t[] = {
		{ "trailers", "1\r\na\r\n0\r\nX-Trailer: 1\r\n\r\n", 100 },
		{ NULL, "1\r\na\r\n0\r\n\r\n", 100 },
		{ "bad_chunk_size", "g\r\nabc\r\n0\r\n\r\n", 100 },
		{ "bad_chunk_size", "\r\n0\r\n\r\n", 100 },
		{ "bad_chunk_size", "0x1\r\na\r\n0\r\n\r\n", 100 },
		{ "bad_chunk_size", "-1\r\na\r\n0\r\n\r\n", 100 },
		{ "bad_chunk_size", "1 \r\na\r\n0\r\n\r\n", 100 },
		{ "bad_chunk_size", "20000000000000\r\n", UINT64_MAX },
		{ "bad_chunk_size", "ffffffffffffffffff1\r\n", UINT64_MAX },
		{ NULL, "1fffffffffffff\r\n", UINT64_MAX },
		{ "body_too_large", "65\r\n", 100 },
		{ NULL, "64\r\n", 100 },
		{ "bad_chunk", "1\r\nab\r\n0\r\n\r\n", 100 },
		{ "bad_chunk", "1;a\x01\r\na\r\n0\r\n\r\n", 100 },
		{ "bare_lf", "1\na\r\n0\r\n\r\n", 100 },
		{ "bare_lf", "1\r\na\n0\r\n\r\n", 100 },
		{ "bare_lf", "1\r\na\r\n0\r\n\n", 100 },
		{ "bare_cr", "1\rxa\r\n0\r\n\r\n", 100 },
		{ "bare_cr", "1\r\na\r\r\n", 100 },
		{ "bare_cr", "0\r\n\rx", 100 },
	};
	char out[256];
	const char *reason;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		for (size_t step = 0; step < 2; step++) {
			size_t n, used;
			int r = decode(t[i].body, strlen(t[i].body), step,
			    t[i].max, out, &n, &used, &reason);
			if (t[i].want == NULL) {
				ck_assert_msg(r != -EBADMSG, "%zu: %s", i,
				    reason);
				continue;
			}
			ck_assert_msg(r == -EBADMSG, "%zu not refused", i);
			ck_assert_str_eq(reason, t[i].want);
		}
	}
}
END_TEST

/* An answer's body read with http1_chunked_init_response, step bytes a
 * call (0: all at once): what was not trailer fields into kept, the
 * trailer fields into fields; the last return, reason on -EBADMSG. */
static int
decode_response(const char *body, size_t step, char *kept, char *fields,
    const char **reason)
{
	struct http1_chunked c;
	size_t at = 0, len = strlen(body), nk = 0, nf = 0;
	int r = -EAGAIN;

	http1_chunked_init_response(&c, 1 << 20);
	while (at < len && r == -EAGAIN) {
		size_t n = step == 0 || len - at < step ? len - at : step;
		size_t used, off, dlen;
		r = http1_chunked_decode(&c, body + at, n, &used, &off, &dlen);
		if (r == -EBADMSG)
			break;
		ck_assert_uint_gt(used, 0);
		memcpy(c.trailer_part ? fields + nf : kept + nk, body + at,
		    used);
		if (c.trailer_part)
			nf += used;
		else
			nk += used;
		at += used;
	}
	kept[nk] = fields[nf] = '\0';
	*reason = c.reason;
	return r;
}

/* An upstream's trailers are fields, read as a head's are, and apart
 * from the rest, so that a caller may leave them out. */
START_TEST(test_chunked_response_trailers)
{
	static const struct {
		const char *want, *body;
	} bad[] = {
		{ "bad_trailer", "0\r\n x: 1\r\n\r\n" },
		{ "bad_trailer", "0\r\nX y: 1\r\n\r\n" },
		{ "bad_trailer", "0\r\nX : 1\r\n\r\n" },
		{ "bad_trailer", "0\r\n: 1\r\n\r\n" },
		{ "bad_trailer", "0\r\nX: a\x01b\r\n\r\n" },
		{ "bare_lf", "0\r\nX: 1\n\r\n" },
		{ "bare_cr", "0\r\nX: 1\rx\r\n" },
	};
	static const char good[] = "3\r\nok\n\r\n0\r\nX-Checksum: c0ffee\r\n"
				   "Grpc-Status: 0\r\n\r\n";
	char kept[256], fields[256], *big;
	const char *reason;

	for (size_t step = 0; step < 4; step++) {
		ck_assert_int_eq(decode_response(good, step, kept, fields,
				     &reason),
		    0);
		ck_assert_str_eq(kept, "3\r\nok\n\r\n0\r\n\r\n");
		ck_assert_str_eq(fields,
		    "X-Checksum: c0ffee\r\nGrpc-Status: 0\r\n");
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			ck_assert_int_eq(decode_response(bad[i].body, step,
					     kept, fields, &reason),
			    -EBADMSG);
			ck_assert_str_eq(reason, bad[i].want);
		}
	}
	/* At most HTTP1_HEADERS_MAX bytes of trailers. */
	big = malloc(HTTP1_HEADERS_MAX + 64);
	char *k = malloc(HTTP1_HEADERS_MAX + 64),
	     *f = malloc(HTTP1_HEADERS_MAX + 64);
	memcpy(big, "0\r\nX: ", 6);
	memset(big + 6, 'v', HTTP1_HEADERS_MAX);
	memcpy(big + 6 + HTTP1_HEADERS_MAX, "\r\n\r\n", 5);
	ck_assert_int_eq(decode_response(big, 0, k, f, &reason), -EBADMSG);
	ck_assert_str_eq(reason, "trailers_too_large");
	free(big);
	free(k);
	free(f);
	/* A request's trailers are still refused. */
	static const char req[] = "1\r\na\r\n0\r\nX: 1\r\n\r\n";
	size_t n, used;
	ck_assert_int_eq(decode(req, strlen(req), 0, 100, kept, &n, &used,
			     &reason),
	    -EBADMSG);
	ck_assert_str_eq(reason, "trailers");
}
END_TEST

START_TEST(test_chunked_second_chunk_overflows_total)
{
	static const char body[] =
	    "32\r\n"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "\r\n33\r\n";
	char out[128];
	const char *reason;
	size_t n, used;

	ck_assert_int_eq(decode(body, strlen(body), 0, 100, out, &n, &used,
			     &reason),
	    -EBADMSG);
	ck_assert_str_eq(reason, "body_too_large");
	ck_assert_uint_eq(n, 50);
	ck_assert_int_eq(decode(body, strlen(body), 0, 101, out, &n, &used,
			     &reason),
	    -EAGAIN);
}
END_TEST

START_TEST(test_chunked_line_limit)
{
	char *body = malloc(HTTP1_CHUNK_LINE_MAX + 16), out[8];
	const char *reason;
	size_t n, used;

	body[0] = '0';
	body[1] = ';';
	memset(body + 2, 'e', HTTP1_CHUNK_LINE_MAX - 2);
	strcpy(body + HTTP1_CHUNK_LINE_MAX, "\r\n\r\n");
	ck_assert_int_eq(decode(body, strlen(body), 0, 0, out, &n, &used,
			     &reason),
	    0);
	memset(body + 2, 'e', HTTP1_CHUNK_LINE_MAX - 1);
	strcpy(body + HTTP1_CHUNK_LINE_MAX + 1, "\r\n\r\n");
	ck_assert_int_eq(decode(body, strlen(body), 1, 0, out, &n, &used,
			     &reason),
	    -EBADMSG);
	ck_assert_str_eq(reason, "chunk_line_too_long");
	free(body);
}
END_TEST

/* --- the upstream head ------------------------------------------------ */

static void
assert_serialized(const char *text, const struct http1_field *extra,
    size_t nextra, unsigned flags, const char *want)
{
	struct http1_parser *p = malloc(sizeof(*p));
	struct buf out = BUF_INIT(1 << 16);
	size_t used;

	ck_assert_int_eq(parse_all(p, text, strlen(text), HTTP1_MODE_PROXY,
			     &used),
	    0);
	ck_assert_int_eq(http1_serialize(&p->req, text, extra, nextra, flags,
			     &out),
	    0);
	ck_assert_str_eq(buf_str(&out), want);
	buf_free(&out);
	free(p);
}

START_TEST(test_serialize_strips_hop_by_hop)
{
	static const struct http1_field host[] = { { "Host", "a.test" } };

	assert_serialized("GET http://a.test/p/q?x=1&y=%20 HTTP/1.1\r\n"
			  "Host: a.test\r\n"
			  "User-Agent: curl/8\r\n"
			  "Connection: keep-alive, X-Secret ,x-other\r\n"
			  "X-Secret: s\r\n"
			  "Accept: */*\r\n"
			  "X-Other: o\r\n"
			  "Keep-Alive: timeout=5\r\n"
			  "Proxy-Connection: keep-alive\r\n"
			  "Proxy-Authorization: Basic eDp5\r\n"
			  "proxy-authenticate: x\r\n"
			  "Proxy-Anything: y\r\n"
			  "TE: trailers\r\n"
			  "Trailer: X-T\r\n"
			  "Upgrade: h2c\r\n"
			  "Authorization: Bearer crd_x\r\n\r\n",
	    host, 1, 0,
	    "GET /p/q?x=1&y=%20 HTTP/1.1\r\n"
	    "Host: a.test\r\n"
	    "User-Agent: curl/8\r\n"
	    "Accept: */*\r\n"
	    "Authorization: Bearer crd_x\r\n\r\n");
}
END_TEST

/* For broker.cordon: the proxy's own credentials replace the job's. */
START_TEST(test_serialize_drops_credentials)
{
	static const struct http1_field extra[] = {
		{ "Authorization", "Bearer proxy" }, { "X-Cordon-Job", "j1" }
	};

	assert_serialized("POST http://broker.cordon/v1/token HTTP/1.1\r\n"
			  "Host: broker.cordon\r\n"
			  "Authorization: Bearer crd_stolen\r\n"
			  "x-cordon-job: someone-else\r\n"
			  "X-Cordon-Anything: 1\r\n"
			  "Cookie: s=1\r\n"
			  "Accept: */*\r\n\r\n",
	    extra, 2, HTTP1_DROP_CREDENTIALS,
	    "POST /v1/token HTTP/1.1\r\n"
	    "Authorization: Bearer proxy\r\n"
	    "X-Cordon-Job: j1\r\n"
	    "Accept: */*\r\n\r\n");
}
END_TEST

START_TEST(test_serialize_framing_and_upgrade)
{
	static const struct http1_field extra[] = { { "Host", "a.test:81" },
		{ "Via", "1.1 cordon" } };

	assert_serialized("POST http://a.test:81 HTTP/1.1\r\n"
			  "Host: a.test:81\r\n"
			  "Content-Length: 0012\r\n\r\n",
	    extra, 2, 0,
	    "POST / HTTP/1.1\r\n"
	    "Host: a.test:81\r\n"
	    "Via: 1.1 cordon\r\n"
	    "Content-Length: 12\r\n\r\n");
	assert_serialized("PUT http://a.test?q HTTP/1.1\r\n"
			  "Host: a.test\r\n"
			  "Transfer-Encoding: chunked\r\n\r\n",
	    extra, 1, 0,
	    "PUT /?q HTTP/1.1\r\n"
	    "Host: a.test:81\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	/* The length's digits written by hand: 0 and the largest. */
	assert_serialized("POST http://a.test/p? HTTP/1.1\r\n"
			  "Host: a.test\r\n"
			  "Content-Length: 0\r\n\r\n",
	    NULL, 0, 0,
	    "POST /p? HTTP/1.1\r\n"
	    "Content-Length: 0\r\n\r\n");
	assert_serialized("POST http://a.test/p HTTP/1.1\r\n"
			  "Host: a.test\r\n"
			  "X-A:\tv w\t\r\n"
			  "Content-Length: 9007199254740991\r\n\r\n",
	    extra, 1, 0,
	    "POST /p HTTP/1.1\r\n"
	    "Host: a.test:81\r\n"
	    "X-A: v w\r\n"
	    "Content-Length: 9007199254740991\r\n\r\n");
	/* Kept when told: Upgrade stays, Connection is ours alone. */
	assert_serialized("GET http://a.test/ws HTTP/1.1\r\n"
			  "Host: a.test\r\n"
			  "Connection: Upgrade, X-Drop\r\n"
			  "X-Drop: 1\r\n"
			  "Upgrade: websocket\r\n\r\n",
	    NULL, 0, HTTP1_KEEP_UPGRADE,
	    "GET /ws HTTP/1.1\r\n"
	    "Upgrade: websocket\r\n"
	    "Connection: upgrade\r\n\r\n");
}
END_TEST

/* Only a websocket is an upgrade a rule may allow (egress.md): the one
 * field, its value the one token; h2c or a list is something else. */
START_TEST(test_upgrade_protocol)
{
	static const struct {
		const char *fields;
		bool websocket;
	} ups[] = {
		{ "Upgrade: websocket\r\n", true },
		{ "Upgrade: WebSocket\r\n", true },
		{ "Upgrade:  websocket \r\n", true },
		{ "Upgrade: h2c\r\nHTTP2-Settings: "
		  "AAMAAABkAAQAoAAAAAIAAAAA\r\n",
		    false },
		{ "Upgrade: websocket, h2c\r\n", false },
		{ "Upgrade: h2c, websocket\r\n", false },
		{ "Upgrade: websocket\r\nUpgrade: h2c\r\n", false },
		{ "Upgrade: websocket/13\r\n", false },
		{ "Upgrade: anything/1\r\n", false },
	};
	char text[512];
	struct http1_parser p;
	size_t used;

	for (size_t i = 0; i < sizeof(ups) / sizeof(ups[0]); i++) {
		int n = snprintf(text, sizeof(text),
		    "GET http://a.test/ws HTTP/1.1\r\nHost: a.test\r\n"
		    "Connection: upgrade\r\n%s\r\n",
		    ups[i].fields);
		ck_assert(n > 0 && (size_t)n < sizeof(text));
		ck_assert_int_eq(parse_all(&p, text, (size_t)n,
				     HTTP1_MODE_PROXY, &used),
		    0);
		ck_assert(p.req.upgrade);
		ck_assert_msg(p.req.upgrade_websocket == ups[i].websocket,
		    "case %zu (%s): upgrade_websocket %d", i, ups[i].fields,
		    p.req.upgrade_websocket);
	}
	/* HTTP2-Settings is the h2c upgrade's own connection field: never
	 * forwarded, even where Upgrade is kept. */
	assert_serialized("GET http://a.test/ws HTTP/1.1\r\n"
			  "Host: a.test\r\n"
			  "Connection: Upgrade\r\n"
			  "HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n"
			  "Upgrade: websocket\r\n\r\n",
	    NULL, 0, HTTP1_KEEP_UPGRADE,
	    "GET /ws HTTP/1.1\r\n"
	    "Upgrade: websocket\r\n"
	    "Connection: upgrade\r\n\r\n");
}
END_TEST

START_TEST(test_serialize_errors)
{
	static const char c[] = "CONNECT a.test:443 HTTP/1.1\r\n" H "\r\n";
	static const char g[] =
	    "GET http://a.test/ HTTP/1.1\r\n" H "X-Long: 0123456789\r\n\r\n";
	static const struct http1_field bad[] = { { "Bad Name", "v" } };
	static const struct http1_field crlf[] = { { "X",
	    "a\r\nInjected: 1" } };
	struct http1_parser *p = malloc(sizeof(*p));
	struct buf out = BUF_INIT(30);
	size_t used;

	ck_assert_int_eq(parse_all(p, c, strlen(c), HTTP1_MODE_PROXY, &used),
	    0);
	ck_assert_int_eq(http1_serialize(&p->req, c, NULL, 0, 0, &out),
	    -EINVAL);
	ck_assert_int_eq(parse_all(p, g, strlen(g), HTTP1_MODE_PROXY, &used),
	    0);
	ck_assert_int_eq(http1_serialize(&p->req, g, bad, 1, 0, &out), -EINVAL);
	ck_assert_int_eq(http1_serialize(&p->req, g, crlf, 1, 0, &out),
	    -EINVAL);
	ck_assert_int_eq(buf_append(&out, "keep", 4), 0);
	ck_assert_int_eq(http1_serialize(&p->req, g, NULL, 0, 0, &out), -E2BIG);
	ck_assert_str_eq(buf_str(&out), "keep"); /* left as it was */
	buf_free(&out);
	free(p);
}
END_TEST

/* The launcher's first line on a channel connection (http1.h): each kind
 * read with its length; a prefix of it asks for more; anything else is
 * either no line at all or refused. */
START_TEST(test_origin_line)
{
	static const struct {
		const char *text;
		int want;
		enum http1_origin kind;
		size_t used;
	} lines[] = {
		{ "CORDON/1 relay\r\nGET", 0, HTTP1_ORIGIN_RELAY, 16 },
		{ "CORDON/1 capture\r\n", 0, HTTP1_ORIGIN_CAPTURE, 18 },
		{ "CORDON/1 dns\r\n", 0, HTTP1_ORIGIN_DNS, 14 },
		{ "CORDON/1 direct tcp\r\n", 0, HTTP1_ORIGIN_DIRECT_TCP, 21 },
		{ "CORDON/1 direct udp\r\n", 0, HTTP1_ORIGIN_DIRECT_UDP, 21 },
		{ "CORDON/1 capture-http a.test 8080\r\n", 0,
		    HTTP1_ORIGIN_CAPTURE_HTTP, 35 },
		{ "CORDON/1 capture-http a.test 65535\r\n", 0,
		    HTTP1_ORIGIN_CAPTURE_HTTP, 36 },
		{ "CORD", -EAGAIN, 0, 0 },
		{ "CORDON/1 capt", -EAGAIN, 0, 0 },
		{ "GET http://a.test/ HTTP/1.1\r\n", -ENOENT, 0, 0 },
		{ "CONNECT a.test:443 HTTP/1.1\r\n", -ENOENT, 0, 0 },
		{ "cordon/1 relay\r\n", -ENOENT, 0, 0 },
		{ "CORDON/1 relay\n", -EBADMSG, 0, 0 },
		{ "CORDON/1 relay \r\n", -EBADMSG, 0, 0 },
		{ "CORDON/1 bogus\r\n", -EBADMSG, 0, 0 },
		{ "CORDON/1 direct sctp\r\n", -EBADMSG, 0, 0 },
		{ "CORDON/1 capture-http a.test\r\n", -EBADMSG, 0, 0 },
		{ "CORDON/1 capture-http a.test 0\r\n", -EBADMSG, 0, 0 },
		{ "CORDON/1 capture-http a.test 65536\r\n", -EBADMSG, 0, 0 },
		{ "CORDON/1 capture-http a.test 80x\r\n", -EBADMSG, 0, 0 },
		{ "CORDON/1 capture-http a test 80\r\n", -EBADMSG, 0, 0 },
		{ "CORDON/1 capture-http a/b 80\r\n", -EBADMSG, 0, 0 },
		{ "CORDON/1 capture-http  80\r\n", -EBADMSG, 0, 0 },
	};
	struct http1_origin_line o;
	size_t used;

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		int r = http1_origin_parse(lines[i].text, strlen(lines[i].text),
		    &o, &used);
		ck_assert_msg(r == lines[i].want, "%s: %d", lines[i].text, r);
		if (r == 0) {
			ck_assert_int_eq(o.kind, lines[i].kind);
			ck_assert_uint_eq(used, lines[i].used);
		}
	}
	ck_assert_int_eq(http1_origin_parse("CORDON/1 capture-http a.test "
					    "8080\r\n",
			     35, &o, &used),
	    0);
	ck_assert_str_eq(o.host, "a.test");
	ck_assert_uint_eq(o.port, 8080);

	/* No end of line within HTTP1_ORIGIN_MAX: refused, not waited on. */
	char big[HTTP1_ORIGIN_MAX + 10];
	memset(big, 'a', sizeof(big));
	memcpy(big, "CORDON/1 ", 9);
	ck_assert_int_eq(http1_origin_parse(big, HTTP1_ORIGIN_MAX - 1, &o,
			     &used),
	    -EAGAIN);
	ck_assert_int_eq(http1_origin_parse(big, sizeof(big), &o, &used),
	    -EBADMSG);
}
END_TEST

/* A captured plain-HTTP connection's requests: origin-form with Host, a
 * missing port 80 (not 443 as inside a terminated tunnel). */
START_TEST(test_origin_plain_mode)
{
	static const char t[] = "GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n";
	static const char abs[] =
	    "GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n";
	struct http1_parser p;
	size_t used;

	http1_parser_init(&p, HTTP1_MODE_ORIGIN_PLAIN);
	ck_assert_int_eq(http1_parse(&p, t, strlen(t), &used), 0);
	ck_assert_uint_eq(p.req.port, 80);
	http1_parser_init(&p, HTTP1_MODE_ORIGIN);
	ck_assert_int_eq(http1_parse(&p, t, strlen(t), &used), 0);
	ck_assert_uint_eq(p.req.port, 443);
	http1_parser_init(&p, HTTP1_MODE_ORIGIN_PLAIN);
	ck_assert_int_eq(http1_parse(&p, abs, strlen(abs), &used), -EBADMSG);
	ck_assert_str_eq(p.reason, "bad_target");
}
END_TEST

static Suite *
http1_suite(void)
{
	Suite *s = suite_create("http1");
	TCase *tc;

	tc = tcase_create("head");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_refusal_table, 0, (int)ARRAY_SIZE(cases));
	tcase_add_loop_test(tc, test_bytewise_matches_oneshot, 0,
	    (int)ARRAY_SIZE(cases));
	tcase_add_test(tc, test_fields_of_absolute_form);
	tcase_add_test(tc, test_fields_of_connect_and_origin);
	tcase_add_test(tc, test_keep_alive_rules);
	tcase_add_test(tc, test_needs_more_then_completes);
	tcase_add_test(tc, test_pipelined_split);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_request_line_limit);
	tcase_add_test(tc, test_header_size_limit);
	tcase_add_test(tc, test_field_count_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("chunked");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_chunked_decodes);
	tcase_add_test(tc, test_chunked_refusals);
	tcase_add_test(tc, test_chunked_response_trailers);
	tcase_add_test(tc, test_chunked_second_chunk_overflows_total);
	tcase_add_test(tc, test_chunked_line_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("serialize");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_serialize_strips_hop_by_hop);
	tcase_add_test(tc, test_serialize_framing_and_upgrade);
	tcase_add_test(tc, test_upgrade_protocol);
	tcase_add_test(tc, test_serialize_drops_credentials);
	tcase_add_test(tc, test_serialize_errors);
	tcase_add_test(tc, test_origin_line);
	tcase_add_test(tc, test_origin_plain_mode);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(http1_suite());
}
