/*
 * The proxy's response head parser: each refusal reason with minimal
 * heads that earn it beside near-identical ones that pass, the checks
 * made on bodiless responses too; each body kind and keep-alive by
 * version, status, HEAD and Connection; every prefix of every head,
 * copied to a buffer of its own size so that a read past it shows,
 * answers -EAGAIN or the whole head's answer, and keeps it; the head's
 * length stops at its empty line; the limits hold exactly at their
 * boundary and not one byte past.
 */
#include "response.h"

#include "testutil.h"
#include "util.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OK "HTTP/1.1 200 OK\r\n"

struct head_case {
	const char *want; /* reason, or NULL for a complete head */
	const char *text; /* may hold a NUL */
	size_t len;
	bool head; /* a response to HEAD */
};

#define R(w, t)                                                                \
	{                                                                      \
		.want = (w), .text = (t), .len = sizeof(t) - 1                 \
	}
#define RH(w, t)                                                               \
	{                                                                      \
		.want = (w), .text = (t), .len = sizeof(t) - 1, .head = true   \
	}

/* Refusals, each group followed by the nearest heads that pass. */
static const struct head_case cases[] = {
	R("nul", "HTTP/1.1 2\0000 OK\r\n\r\n"),
	R("nul", OK "X: a\0b\r\n\r\n"),
	R("nul", OK "\0\r\n\r\n"),
	R(NULL, OK "X: ab\r\n\r\n"),
	R("bare_cr", "HTTP/1.1 200 OK\r \n\r\n"),
	R("bare_cr", OK "X: a\rb\r\n\r\n"),
	R("bare_cr", OK "\r\r\n"),
	R("bare_lf", "HTTP/1.1 200 OK\n\r\n"),
	R("bare_lf", OK "\n"),
	R("bare_lf", OK "X: a\nb\r\n\r\n"),
	R("bare_lf", OK "X: a\n\r\n"),
	R(NULL, OK "\r\n"),
	R("malformed", "\r\nHTTP/1.1 200 OK\r\n\r\n"),
	R("malformed", "\r\n"),
	R("malformed", OK "NoColon\r\n\r\n"),
	R("malformed", "HTTP/1.1 200 O\x01K\r\n\r\n"),
	R("malformed", "HTTP/1.1 200 OK\x7f\r\n\r\n"),
	R(NULL, "HTTP/1.1 200 O\tK \x80\xff\r\n\r\n"),
	R("bad_version", "HTTP/2.0 200 OK\r\n\r\n"),
	R("bad_version", "http/1.1 200 OK\r\n\r\n"),
	R("bad_version", "HTTP/1.10 200 OK\r\n\r\n"),
	R("bad_version", "HTTP/1.2 200 OK\r\n\r\n"),
	R("bad_version", " HTTP/1.1 200 OK\r\n\r\n"),
	R("bad_version", "HTTP/1.1\t200 OK\r\n\r\n"),
	R("bad_version", "ICY 200 OK\r\n\r\n"),
	R(NULL, "HTTP/1.0 200 OK\r\n\r\n"),
	R("bad_status", "HTTP/1.1\r\n\r\n"),
	R("bad_status", "HTTP/1.1 \r\n\r\n"),
	R("bad_status", "HTTP/1.1 20\r\n\r\n"),
	R("bad_status", "HTTP/1.1 20 OK\r\n\r\n"),
	R("bad_status", "HTTP/1.1 2000 OK\r\n\r\n"),
	R("bad_status", "HTTP/1.1 20x OK\r\n\r\n"),
	R("bad_status", "HTTP/1.1 +20 OK\r\n\r\n"),
	R("bad_status", "HTTP/1.1  200 OK\r\n\r\n"),
	R("bad_status", "HTTP/1.1 200\tOK\r\n\r\n"),
	R("bad_status", "HTTP/1.1 099 OK\r\n\r\n"),
	R("bad_status", "HTTP/1.1 600 OK\r\n\r\n"),
	R(NULL, "HTTP/1.1 100 Continue\r\n\r\n"),
	R(NULL, "HTTP/1.1 599 X\r\n\r\n"),
	R(NULL, "HTTP/1.1 200 \r\n\r\n"), /* empty reason, with its SP */
	R(NULL, "HTTP/1.1 200\r\n\r\n"), /* and without: the leniency */
	R(NULL, "HTTP/1.1 200  two  spaces \r\n\r\n"),
	R("obs_fold", OK "X: a\r\n b\r\n\r\n"),
	R("obs_fold", OK "X: a\r\n\tb\r\n\r\n"),
	R("obs_fold", OK " X: a\r\n\r\n"),
	R(NULL, OK "X: a \t b\r\n\r\n"),
	R("space_before_colon", OK "Content-Length : 0\r\n\r\n"),
	R("space_before_colon", OK "X\t: a\r\n\r\n"),
	R(NULL, OK "X:a\r\n\r\n"),
	R("bad_header_name", OK ": a\r\n\r\n"),
	R("bad_header_name", OK "X(y): a\r\n\r\n"),
	R("bad_header_name", OK "X y: a\r\n\r\n"),
	R("bad_header_name", OK "X\x80: a\r\n\r\n"),
	R(NULL, OK "X-y_z!#$%&'*+.^`|~: a\r\n\r\n"),
	R("bad_header_value",
	    OK "X: a\x01"
	       "b\r\n\r\n"),
	R("bad_header_value", OK "X: a\x7f\r\n\r\n"),
	R("bad_header_value", OK "X: \x1b[0m\r\n\r\n"),
	R(NULL, OK "X: a\x80\xff\r\n\r\n"),
	R(NULL, OK "X:\r\n\r\n"),
	R("bad_cl", OK "Content-Length: +5\r\n\r\n"),
	R("bad_cl", OK "Content-Length: -1\r\n\r\n"),
	R("bad_cl", OK "Content-Length: 5, 5\r\n\r\n"),
	R("bad_cl", OK "Content-Length: 5 5\r\n\r\n"),
	R("bad_cl", OK "Content-Length: 0x10\r\n\r\n"),
	R("bad_cl", OK "Content-Length:\r\n\r\n"),
	R("bad_cl", OK "Content-Length: 9007199254740992\r\n\r\n"),
	R("bad_cl", OK "Content-Length: 99999999999999999999999\r\n\r\n"),
	R(NULL, OK "Content-Length: 9007199254740991\r\n\r\n"),
	R(NULL, OK "Content-Length:  007 \r\n\r\n"),
	R("duplicate_cl", OK "Content-Length: 5\r\ncontent-length: 5\r\n\r\n"),
	R("duplicate_cl", OK "Content-Length: 5\r\nContent-Length: 6\r\n\r\n"),
	R("unknown_te", OK "Transfer-Encoding: gzip, chunked\r\n\r\n"),
	R("unknown_te", OK "Transfer-Encoding: chunked, gzip\r\n\r\n"),
	R("unknown_te", OK "Transfer-Encoding: identity\r\n\r\n"),
	R("unknown_te", OK "Transfer-Encoding: chunked,\r\n\r\n"),
	R("unknown_te", OK "Transfer-Encoding: \"chunked\"\r\n\r\n"),
	R("unknown_te", OK "Transfer-Encoding:\r\n\r\n"),
	R(NULL, OK "Transfer-Encoding:  ChUnKeD \r\n\r\n"),
	R("duplicate_te",
	    OK "Transfer-Encoding: chunked\r\n"
	       "Transfer-Encoding: chunked\r\n\r\n"),
	R("te_in_http10",
	    "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
	R("cl_and_te", /* judged before the version */
	    "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"),
	R("te_in_http10",
	    "HTTP/1.0 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"),
	R("cl_and_te",
	    OK "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
	R("cl_and_te",
	    OK "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"),
	R("bad_connection", OK "Connection: close x\r\n\r\n"),
	R("bad_connection", OK "Connection: a(b)\r\n\r\n"),
	R("bad_connection", OK "Connection: \"close\"\r\n\r\n"),
	R(NULL, OK "Connection: , close ,x\r\n\r\n"),
	R(NULL, OK "Connection:\r\n\r\n"),
	/* Bodiless responses are checked all the same. */
	R("bad_cl", "HTTP/1.1 304 Not Modified\r\nContent-Length: x\r\n\r\n"),
	R("unknown_te",
	    "HTTP/1.1 204 No Content\r\n"
	    "Transfer-Encoding: gzip\r\n\r\n"),
	R("cl_and_te",
	    "HTTP/1.1 100 Continue\r\nContent-Length: 0\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"),
	R("cl_and_te",
	    "HTTP/1.1 101 Switching Protocols\r\nTransfer-Encoding: chunked\r\n"
	    "Content-Length: 0\r\n\r\n"),
	RH("duplicate_cl", OK "Content-Length: 5\r\nContent-Length: 5\r\n\r\n"),
	RH("bad_header_value", OK "X: \x01\r\n\r\n"),
	RH(NULL, OK "Content-Length: 5\r\n\r\n"),
};

static bool
resp_eq(const struct http1_response *a, const struct http1_response *b)
{
	return a->minor_version == b->minor_version && a->status == b->status &&
	    a->body == b->body && a->content_length == b->content_length &&
	    a->keep_alive == b->keep_alive && a->upgrade == b->upgrade &&
	    a->head_len == b->head_len;
}

/* Parses text[0..n) from a buffer of exactly n bytes: ASan sees any
 * read past the end. */
static int
parse_exact(const char *text, size_t n, bool head, struct http1_response *resp,
    const char **reason)
{
	char *copy = malloc(n > 0 ? n : 1);
	int r;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, text, n);
	r = http1_response_parse(copy, n, head, resp, reason);
	free(copy);
	return r;
}

START_TEST(test_refusal_table)
{
	const struct head_case *c = &cases[_i];
	struct http1_response resp;
	const char *reason = "unset";
	int r;

	r = parse_exact(c->text, c->len, c->head, &resp, &reason);
	if (c->want == NULL) {
		ck_assert_msg(r == 0, "case %d: %d (%s): %s", _i, r,
		    r == -EBADMSG ? reason : "more", c->text);
		ck_assert_ptr_null(reason);
		ck_assert_uint_eq(resp.head_len, c->len);
	} else {
		ck_assert_msg(r == -EBADMSG, "case %d: %d, not refused: %s", _i,
		    r, c->text);
		ck_assert_str_eq(reason, c->want);
	}
}
END_TEST

/*
 * Every prefix of text[0..n) answers -EAGAIN up to some length and,
 * from that length on, the whole text's answer. A complete head ends
 * exactly where its answer first comes, at its head_len.
 */
static void
check_prefixes(const char *text, size_t n, bool head)
{
	struct http1_response all, part;
	const char *all_reason, *part_reason;
	size_t first = SIZE_MAX;
	int r_all, r;

	r_all = parse_exact(text, n, head, &all, &all_reason);
	ck_assert_int_ne(r_all, -EAGAIN);
	for (size_t i = 0; i <= n; i++) {
		r = parse_exact(text, i, head, &part, &part_reason);
		if (r == -EAGAIN) {
			ck_assert_msg(first == SIZE_MAX,
			    "prefix %zu of %s took back its answer", i, text);
			ck_assert_ptr_null(part_reason);
			continue;
		}
		if (first == SIZE_MAX)
			first = i;
		ck_assert_msg(r == r_all, "prefix %zu of %s: %d, not %d", i,
		    text, r, r_all);
		if (r == 0)
			ck_assert(resp_eq(&part, &all));
		else
			ck_assert_str_eq(part_reason, all_reason);
	}
	ck_assert_uint_le(first, n);
	if (r_all == 0)
		ck_assert_uint_eq(first, all.head_len);
}

START_TEST(test_prefixes_of_table)
{
	const struct head_case *c = &cases[_i];

	check_prefixes(c->text, c->len, c->head);
}
END_TEST

struct body_case {
	const char *text;
	bool head;
	unsigned status;
	int minor;
	enum http1_resp_body body;
	uint64_t cl;
	bool keep;
	bool upgrade;
};

#define CL5 "Content-Length: 5\r\n"
#define TE "Transfer-Encoding: chunked\r\n"
#define KA "Connection: keep-alive\r\n"
#define CLOSE "Connection: close\r\n"

static const struct body_case bodies[] = {
	/* The framing of a 200, and keep-alive in HTTP/1.1. */
	{ OK CL5 "\r\n", false, 200, 1, HTTP1_RESP_LENGTH, 5, true, false },
	{ OK "Content-Length: 0\r\n\r\n", false, 200, 1, HTTP1_RESP_LENGTH, 0,
	    true, false },
	{ OK TE "\r\n", false, 200, 1, HTTP1_RESP_CHUNKED, 0, true, false },
	{ OK "\r\n", false, 200, 1, HTTP1_RESP_CLOSE, 0, false, false },
	{ OK KA "\r\n", false, 200, 1, HTTP1_RESP_CLOSE, 0, false, false },
	{ OK CL5 CLOSE "\r\n", false, 200, 1, HTTP1_RESP_LENGTH, 5, false,
	    false },
	{ OK TE "Connection: Keep-Alive, CLOSE\r\n\r\n", false, 200, 1,
	    HTTP1_RESP_CHUNKED, 0, false, false },
	{ OK "Connection: upgrade\r\nUpgrade: h2c\r\n" CL5 "\r\n", false, 200,
	    1, HTTP1_RESP_LENGTH, 5, true, false },
	/* HTTP/1.0: keep-alive only when asked for, and never with close. */
	{ "HTTP/1.0 200 OK\r\n" CL5 "\r\n", false, 200, 0, HTTP1_RESP_LENGTH, 5,
	    false, false },
	{ "HTTP/1.0 200 OK\r\n" KA CL5 "\r\n", false, 200, 0, HTTP1_RESP_LENGTH,
	    5, true, false },
	{ "HTTP/1.0 200 OK\r\nconnection: x, KEEP-ALIVE\r\n" CL5 "\r\n", false,
	    200, 0, HTTP1_RESP_LENGTH, 5, true, false },
	{ "HTTP/1.0 200 OK\r\n" KA CLOSE CL5 "\r\n", false, 200, 0,
	    HTTP1_RESP_LENGTH, 5, false, false },
	{ "HTTP/1.0 200 OK\r\n" KA "\r\n", false, 200, 0, HTTP1_RESP_CLOSE, 0,
	    false, false },
	{ "HTTP/1.0 204 No Content\r\n" KA "\r\n", false, 204, 0,
	    HTTP1_RESP_NONE, 0, true, false },
	{ "HTTP/1.0 204 No Content\r\n\r\n", false, 204, 0, HTTP1_RESP_NONE, 0,
	    false, false },
	/* A response to HEAD has no body, whatever it says. */
	{ OK CL5 "\r\n", true, 200, 1, HTTP1_RESP_NONE, 0, true, false },
	{ OK TE "\r\n", true, 200, 1, HTTP1_RESP_NONE, 0, true, false },
	{ OK "\r\n", true, 200, 1, HTTP1_RESP_NONE, 0, true, false },
	{ OK CLOSE "\r\n", true, 200, 1, HTTP1_RESP_NONE, 0, false, false },
	{ "HTTP/1.1 404 Not Found\r\n" TE "\r\n", true, 404, 1, HTTP1_RESP_NONE,
	    0, true, false },
	/* Nor have 204, 304 and 1xx. */
	{ "HTTP/1.1 204 No Content\r\n" CL5 "\r\n", false, 204, 1,
	    HTTP1_RESP_NONE, 0, true, false },
	{ "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n", false,
	    304, 1, HTTP1_RESP_NONE, 0, true, false },
	{ "HTTP/1.1 304 Not Modified\r\n" TE "\r\n", false, 304, 1,
	    HTTP1_RESP_NONE, 0, true, false },
	{ "HTTP/1.1 304 Not Modified\r\n\r\n", false, 304, 1, HTTP1_RESP_NONE,
	    0, true, false },
	{ "HTTP/1.1 100 Continue\r\n\r\n", false, 100, 1, HTTP1_RESP_NONE, 0,
	    true, false },
	{ "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n",
	    false, 103, 1, HTTP1_RESP_NONE, 0, true, false },
	{ "HTTP/1.1 199 X\r\n" CL5 "\r\n", false, 199, 1, HTTP1_RESP_NONE, 0,
	    true, false },
	/* 101 switches the connection: an upgrade, never kept. */
	{ "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	  "Connection: Upgrade\r\n\r\n",
	    false, 101, 1, HTTP1_RESP_NONE, 0, false, true },
	{ "HTTP/1.1 101 Switching Protocols\r\n\r\n", false, 101, 1,
	    HTTP1_RESP_NONE, 0, false, true },
	/* Only 204 and 304 of the others go without. */
	{ "HTTP/1.1 205 Reset Content\r\nContent-Length: 0\r\n\r\n", false, 205,
	    1, HTTP1_RESP_LENGTH, 0, true, false },
	{ "HTTP/1.1 404 Not Found\r\n" TE "\r\n", false, 404, 1,
	    HTTP1_RESP_CHUNKED, 0, true, false },
	{ "HTTP/1.1 599\r\n" CL5 "\r\n", false, 599, 1, HTTP1_RESP_LENGTH, 5,
	    true, false },
	{ "HTTP/1.1 200\r\nContent-Length: 9007199254740991\r\n\r\n", false,
	    200, 1, HTTP1_RESP_LENGTH, UINT64_C(9007199254740991), true,
	    false },
};

START_TEST(test_body_and_keep_alive)
{
	const struct body_case *c = &bodies[_i];
	struct http1_response resp;
	const char *reason;
	size_t n = strlen(c->text);
	int r;

	r = parse_exact(c->text, n, c->head, &resp, &reason);
	ck_assert_msg(r == 0, "case %d: %d (%s)", _i, r,
	    r == -EBADMSG ? reason : "more");
	ck_assert_uint_eq(resp.head_len, n);
	ck_assert_uint_eq(resp.status, c->status);
	ck_assert_int_eq(resp.minor_version, c->minor);
	ck_assert_msg(resp.body == c->body, "case %d: body %d, want %d", _i,
	    (int)resp.body, (int)c->body);
	ck_assert_uint_eq(resp.content_length, c->cl);
	ck_assert_msg(resp.keep_alive == c->keep, "case %d: keep_alive %d", _i,
	    resp.keep_alive);
	ck_assert_msg(resp.upgrade == c->upgrade, "case %d: upgrade %d", _i,
	    resp.upgrade);
}
END_TEST

/* A 101 is a websocket only with the one Upgrade field saying so: what a
 * rule's "upgrade" allows (egress.md). */
START_TEST(test_switch_to_websocket_only)
{
	static const struct {
		const char *text;
		bool websocket;
	} ups[] = {
		{ "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		  "Connection: Upgrade\r\n\r\n",
		    true },
		{ "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\n"
		  "\r\n",
		    true },
		{ "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n"
		  "Connection: Upgrade\r\n\r\n",
		    false },
		{ "HTTP/1.1 101 Switching Protocols\r\n\r\n", false },
		{ "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket, "
		  "h2c\r\n\r\n",
		    false },
		{ "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		  "Upgrade: h2c\r\n\r\n",
		    false },
		{ OK "Upgrade: websocket\r\nContent-Length: 0\r\n\r\n", false },
	};
	struct http1_response resp;
	const char *reason;

	for (size_t i = 0; i < sizeof(ups) / sizeof(ups[0]); i++) {
		size_t n = strlen(ups[i].text);
		ck_assert_int_eq(parse_exact(ups[i].text, n, false, &resp,
				     &reason),
		    0);
		ck_assert_msg(resp.upgrade_websocket == ups[i].websocket,
		    "case %zu: upgrade_websocket %d", i,
		    resp.upgrade_websocket);
	}
}
END_TEST

START_TEST(test_prefixes_of_bodies)
{
	const struct body_case *c = &bodies[_i];

	check_prefixes(c->text, strlen(c->text), c->head);
}
END_TEST

/* What follows the head is not read: a body, a next response, junk. */
START_TEST(test_head_len_stops_at_empty_line)
{
	static const char t[] = OK CL5 "\r\nhello\0\n\rjunk";
	static const char chain[] =
	    "HTTP/1.1 100 Continue\r\n\r\n"
	    "HTTP/1.1 103 Early Hints\r\nLink: <x>\r\n\r\n"
	    "HTTP/1.0 200 OK\r\n" KA CL5 "\r\nhello";
	struct http1_response resp;
	const char *reason;
	size_t off = 0;

	ck_assert_int_eq(parse_exact(t, sizeof(t) - 1, false, &resp, &reason),
	    0);
	ck_assert_uint_eq(resp.head_len, strlen(OK CL5 "\r\n"));
	ck_assert_uint_eq(resp.content_length, 5);

	/* Interim responses, then the final one, each from the last's end. */
	ck_assert_int_eq(parse_exact(chain, strlen(chain), false, &resp,
			     &reason),
	    0);
	ck_assert_uint_eq(resp.status, 100);
	ck_assert_uint_eq(resp.head_len,
	    strlen("HTTP/1.1 100 Continue\r\n\r\n"));
	off += resp.head_len;
	ck_assert_int_eq(parse_exact(chain + off, strlen(chain) - off, false,
			     &resp, &reason),
	    0);
	ck_assert_uint_eq(resp.status, 103);
	ck_assert_int_eq(resp.body, HTTP1_RESP_NONE);
	off += resp.head_len;
	ck_assert_int_eq(parse_exact(chain + off, strlen(chain) - off, false,
			     &resp, &reason),
	    0);
	ck_assert_uint_eq(resp.status, 200);
	ck_assert_int_eq(resp.minor_version, 0);
	ck_assert_int_eq(resp.body, HTTP1_RESP_LENGTH);
	ck_assert(resp.keep_alive);
	off += resp.head_len;
	ck_assert_str_eq(chain + off, "hello");
}
END_TEST

/* *resp is written only on 0, *ret_reason is NULL but on -EBADMSG. */
START_TEST(test_outputs_untouched_until_answer)
{
	static const char t[] = OK CL5 "\r\n";
	static const char bad[] = OK "X: a\nb";
	struct http1_response resp, saved;
	const char *reason = "unset";

	memset(&resp, 0xa5, sizeof(resp));
	saved = resp;
	ck_assert_int_eq(http1_response_parse(NULL, 0, false, &resp, &reason),
	    -EAGAIN);
	ck_assert_ptr_null(reason);
	ck_assert_int_eq(http1_response_parse(t, sizeof(t) - 2, false, &resp,
			     &reason),
	    -EAGAIN);
	ck_assert_mem_eq(&resp, &saved, sizeof(resp));
	reason = "unset";
	ck_assert_int_eq(http1_response_parse(bad, sizeof(bad) - 1, false,
			     &resp, &reason),
	    -EBADMSG);
	ck_assert_str_eq(reason, "bare_lf");
	ck_assert_mem_eq(&resp, &saved, sizeof(resp));
	reason = "unset";
	ck_assert_int_eq(http1_response_parse(t, sizeof(t) - 1, false, &resp,
			     &reason),
	    0);
	ck_assert_ptr_null(reason);
	ck_assert_uint_eq(resp.head_len, sizeof(t) - 1);
}
END_TEST

/* A fault is refused as soon as its bytes are in, head complete or not. */
START_TEST(test_refused_before_complete)
{
	static const struct {
		const char *text;
		const char *want;
	} t[] = {
		{ "HTTP/2.0 200 OK\r\n", "bad_version" },
		{ "HTTP/1.1 200 OK\r\nX: \x01\r\n", "bad_header_value" },
		{ OK CL5 CL5, "duplicate_cl" }, { OK "X: a\rb", "bare_cr" },
		{ OK "X", "nul" }, /* with its NUL, see below */
	};
	struct http1_response resp;
	const char *reason;

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		size_t n = strlen(t[i].text);
		if (strcmp(t[i].want, "nul") == 0)
			n++; /* the literal's own NUL */
		ck_assert_int_eq(parse_exact(t[i].text, n, false, &resp,
				     &reason),
		    -EBADMSG);
		ck_assert_str_eq(reason, t[i].want);
	}
}
END_TEST

/*
 * "HTTP/1.1 200 OK" CRLF, one field "X: vvv..." padded so that the head
 * (its empty line included) is size bytes, then extra bytes of junk.
 */
static char *
sized_head(size_t size, size_t *ret_len)
{
	size_t fixed = strlen(OK) + strlen("X: ") + 2 + 2, n = 0;
	char *t = malloc(size + 16);

	ck_assert_ptr_nonnull(t);
	ck_assert_uint_gt(size, fixed);
	n += (size_t)snprintf(t, size + 16, "%sX: ", OK);
	memset(t + n, 'v', size - fixed);
	n += size - fixed;
	memcpy(t + n, "\r\n\r\n", 4);
	n += 4;
	ck_assert_uint_eq(n, size);
	*ret_len = n;
	return t;
}

START_TEST(test_head_size_limit)
{
	struct http1_response resp;
	const char *reason;
	size_t n;
	char *t;

	/* Exactly HTTP1_HEAD_MAX: complete, and not a byte sooner. */
	t = sized_head(HTTP1_HEAD_MAX, &n);
	ck_assert_int_eq(parse_exact(t, n, false, &resp, &reason), 0);
	ck_assert_uint_eq(resp.head_len, HTTP1_HEAD_MAX);
	ck_assert_int_eq(parse_exact(t, n - 1, false, &resp, &reason), -EAGAIN);
	free(t);

	/* One more: the empty line's LF would be byte HTTP1_HEAD_MAX, so
	 * the head is refused at its CR, the last byte that may be in it. */
	t = sized_head(HTTP1_HEAD_MAX + 1, &n);
	ck_assert_int_eq(parse_exact(t, n, false, &resp, &reason), -EBADMSG);
	ck_assert_str_eq(reason, "headers_too_large");
	ck_assert_int_eq(parse_exact(t, HTTP1_HEAD_MAX, false, &resp, &reason),
	    -EBADMSG);
	ck_assert_str_eq(reason, "headers_too_large");
	ck_assert_int_eq(parse_exact(t, HTTP1_HEAD_MAX - 1, false, &resp,
			     &reason),
	    -EAGAIN);
	free(t);

	/* Two more: the empty line's CR is past the limit. */
	t = sized_head(HTTP1_HEAD_MAX + 2, &n);
	ck_assert_int_eq(parse_exact(t, n, false, &resp, &reason), -EBADMSG);
	ck_assert_str_eq(reason, "headers_too_large");
	free(t);

	/* A line that never ends is refused once it cannot fit. */
	t = malloc(HTTP1_HEAD_MAX + 1);
	ck_assert_ptr_nonnull(t);
	memcpy(t, OK "X: ", strlen(OK "X: "));
	memset(t + strlen(OK "X: "), 'v',
	    HTTP1_HEAD_MAX + 1 - strlen(OK "X: "));
	ck_assert_int_eq(parse_exact(t, HTTP1_HEAD_MAX, false, &resp, &reason),
	    -EAGAIN);
	ck_assert_int_eq(parse_exact(t, HTTP1_HEAD_MAX + 1, false, &resp,
			     &reason),
	    -EBADMSG);
	ck_assert_str_eq(reason, "headers_too_large");
	free(t);
}
END_TEST

/* OK, count fields "X: a" (Content-Length: 0 among them), empty line. */
static char *
counted_head(size_t count, size_t *ret_len)
{
	char *t = malloc(strlen(OK) + count * 32 + 3);
	size_t n;

	ck_assert_ptr_nonnull(t);
	n = (size_t)sprintf(t, "%sContent-Length: 0\r\n", OK);
	for (size_t i = 1; i < count; i++)
		n += (size_t)sprintf(t + n, "X-%zu: a\r\n", i);
	n += (size_t)sprintf(t + n, "\r\n");
	*ret_len = n;
	return t;
}

START_TEST(test_field_count_limit)
{
	struct http1_response resp;
	const char *reason;
	size_t n;
	char *t;

	t = counted_head(HTTP1_FIELDS_MAX, &n);
	ck_assert_int_eq(parse_exact(t, n, false, &resp, &reason), 0);
	ck_assert_int_eq(resp.body, HTTP1_RESP_LENGTH);
	ck_assert_uint_eq(resp.head_len, n);
	free(t);
	t = counted_head(HTTP1_FIELDS_MAX + 1, &n);
	ck_assert_int_eq(parse_exact(t, n, false, &resp, &reason), -EBADMSG);
	ck_assert_str_eq(reason, "headers_too_large");
	free(t);
}
END_TEST

static void
assert_rewritten(const char *head, bool upgrade, bool close, const char *want)
{
	struct buf out = BUF_INIT(1 << 16);

	ck_assert_int_eq(http1_response_rewrite(head, strlen(head), upgrade,
			     close, &out),
	    0);
	ck_assert_str_eq(buf_str(&out), want);
	buf_free(&out);
}

/* The job's client never sees the upstream's hop-by-hop fields, and is
 * told when the proxy will close. */
START_TEST(test_rewrite_drops_hop_by_hop)
{
	assert_rewritten("HTTP/1.1 200 OK\r\n"
			 "Connection: keep-alive, X-Hop\r\n"
			 "X-Hop: 1\r\n"
			 "Keep-Alive: timeout=5\r\n"
			 "Proxy-Authenticate: Basic\r\n"
			 "Content-Length: 5\r\n"
			 "Server: up\r\n\r\n",
	    false, true,
	    "HTTP/1.1 200 OK\r\n"
	    "Content-Length: 5\r\n"
	    "Server: up\r\n"
	    "Connection: close\r\n\r\n");
	assert_rewritten("HTTP/1.1 204 No Content\r\nTrailer: x\r\n\r\n", false,
	    false, "HTTP/1.1 204 No Content\r\n\r\n");
	/* A switch the request asked for keeps what makes it one. */
	assert_rewritten("HTTP/1.1 101 Switching Protocols\r\n"
			 "Upgrade: websocket\r\nConnection: Upgrade\r\n"
			 "Keep-Alive: x\r\n\r\n",
	    true, true,
	    "HTTP/1.1 101 Switching Protocols\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
	struct buf out = BUF_INIT(64);
	ck_assert_int_eq(http1_response_rewrite("HTTP/1.1 200 OK\r\n", 17,
			     false, false, &out),
	    -EINVAL);
	buf_free(&out);
}
END_TEST

/* An injected answer's cookies (a session the key bought) are left out
 * and counted; without the flag they stay. */
START_TEST(test_rewrite_drops_cookies_when_told)
{
	static const char head[] = "HTTP/1.1 200 OK\r\n"
				   "Set-Cookie: JSESSIONID=s; Path=/\r\n"
				   "X-A: 1\r\n"
				   "set-cookie2: k=v\r\n"
				   "SET-COOKIE: b=2\r\n"
				   "Set-Cookies: not-one\r\n"
				   "Content-Length: 0\r\n\r\n";
	struct buf out = BUF_INIT(1 << 12);
	size_t n = 99;

	ck_assert_int_eq(http1_response_rewrite_fields(head, strlen(head),
			     false, false, HTTP1_RESP_DROP_COOKIES, &n, &out),
	    0);
	ck_assert_str_eq(buf_str(&out),
	    "HTTP/1.1 200 OK\r\nX-A: 1\r\nSet-Cookies: not-one\r\n"
	    "Content-Length: 0\r\n\r\n");
	ck_assert_uint_eq(n, 3);
	buf_free(&out);
	out = (struct buf)BUF_INIT(1 << 12);
	ck_assert_int_eq(http1_response_rewrite_fields(head, strlen(head),
			     false, false, 0, &n, &out),
	    0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_nonnull(strstr(buf_str(&out), "JSESSIONID"));
	buf_free(&out);
}
END_TEST

/* Content-Encoding: whether the answer's body is coded (the reflection
 * scanner reads identity alone), for every spelling of a coding. */
START_TEST(test_content_coding_is_told)
{
	static const struct {
		const char *fields;
		bool coded;
	} v[] = {
		{ "", false },
		{ "Content-Encoding: identity\r\n", false },
		{ "content-encoding: IDENTITY\r\n", false },
		{ "Content-Encoding: gzip\r\n", true },
		{ "Content-Encoding: GZIP\r\n", true },
		{ "Content-Encoding: br\r\n", true },
		{ "Content-Encoding: zstd\r\n", true },
		{ "Content-Encoding: deflate\r\n", true },
		{ "Content-Encoding: x-unknown\r\n", true },
		{ "Content-Encoding: identity, gzip\r\n", true },
		{ "Content-Encoding: identity\r\nContent-Encoding: gzip\r\n",
		    true },
		{ "Content-Encoding: \r\n", true },
		{ "Content-Encoding:identity \r\n", false },
	};
	char text[512];

	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		struct http1_response resp;
		const char *reason;
		int n = snprintf(text, sizeof(text),
		    "HTTP/1.1 200 OK\r\n%sContent-Length: 3\r\n\r\n",
		    v[i].fields);
		ck_assert_int_eq(parse_exact(text, (size_t)n, false, &resp,
				     &reason),
		    0);
		ck_assert_msg(resp.coded == v[i].coded, "%s", v[i].fields);
	}
}
END_TEST

static Suite *
response_suite(void)
{
	Suite *s = suite_create("response");
	TCase *tc;

	tc = tcase_create("head");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_refusal_table, 0, (int)ARRAY_SIZE(cases));
	tcase_add_loop_test(tc, test_prefixes_of_table, 0,
	    (int)ARRAY_SIZE(cases));
	tcase_add_test(tc, test_head_len_stops_at_empty_line);
	tcase_add_test(tc, test_outputs_untouched_until_answer);
	tcase_add_test(tc, test_refused_before_complete);
	tcase_add_test(tc, test_content_coding_is_told);
	suite_add_tcase(s, tc);

	tc = tcase_create("framing");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_body_and_keep_alive, 0,
	    (int)ARRAY_SIZE(bodies));
	tcase_add_loop_test(tc, test_prefixes_of_bodies, 0,
	    (int)ARRAY_SIZE(bodies));
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_switch_to_websocket_only);
	tcase_add_test(tc, test_head_size_limit);
	tcase_add_test(tc, test_field_count_limit);
	tcase_add_test(tc, test_rewrite_drops_hop_by_hop);
	tcase_add_test(tc, test_rewrite_drops_cookies_when_told);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(response_suite());
}
