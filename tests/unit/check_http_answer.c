/*
 * The HTTP/1.1 answer reader (common/http_answer.h): a table of answers,
 * each accepted one with its status, body, head and the bytes it leaves,
 * each refused one with its errno and reason (obs-fold, bare CR and LF,
 * duplicate and malformed Content-Length, CL with TE, codings, chunk
 * sizes and extensions, trailers, interim answers, 101, HEAD, 204 and
 * 304, close framing, every cap); and every case fed whole, cut in two
 * at every byte boundary, and a byte at a time, each from an
 * exactly-sized copy, with one and the same result.
 */
#include "http_answer.h"

#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tcase {
	const char *name;
	const char *in;
	size_t in_len; /* 0: strlen(in) */
	bool close; /* the peer closes after the bytes */
	bool no_body; /* the request was HEAD */
	size_t head_max, body_max; /* 0: 1024 */
	int want; /* 1, or the -errno */
	const char *reason; /* when refused */
	int status;
	const char *body;
	size_t rest; /* bytes left after the answer */
	const char *field, *value; /* a field of the head, or its absence */
};

#define H11 "HTTP/1.1 200 OK\r\n"
#define CHUNKED H11 "Transfer-Encoding: chunked\r\n\r\n"
#define BAD(n, i, why)                                                         \
	{                                                                      \
		.name = n, .in = i, .want = -EIO, .reason = why                \
	}
#define BADC(n, i, why)                                                        \
	{                                                                      \
		.name = n, .in = i, .close = true, .want = -EIO, .reason = why \
	}

static const struct tcase cases[] = {
	/* Accepted. */
	{ .name = "length",
	    .in = H11 "Content-Length: 5\r\n\r\nhello",
	    .want = 1,
	    .status = 200,
	    .body = "hello",
	    .field = "content-length",
	    .value = "5" },
	{ .name = "length, bytes after it",
	    .in = H11 "Content-Length: 2\r\n\r\nhiEXTRA",
	    .want = 1,
	    .status = 200,
	    .body = "hi",
	    .rest = 5 },
	{ .name = "length 0",
	    .in = H11 "Content-Length: 0\r\n\r\n",
	    .want = 1,
	    .status = 200,
	    .body = "" },
	{ .name = "names any case, value blanks",
	    .in = "HTTP/1.1 201 Created\r\ncontent-LENGTH:\t 3 \t\r\n"
		  "X-A:b\r\n\r\nabc",
	    .want = 1,
	    .status = 201,
	    .body = "abc",
	    .field = "x-a",
	    .value = "b" },
	{ .name = "chunked, extensions, trailers",
	    .in = CHUNKED "5;a=b\r\nhello\r\n1 ;x=\"y z\"\r\n!\r\n"
			  "0\r\nX-Trailer: 1\r\nContent-Length: 9\r\n\r\nNEXT",
	    .want = 1,
	    .status = 200,
	    .body = "hello!",
	    .rest = 4,
	    .field = "X-Trailer",
	    .value = NULL },
	{ .name = "chunked, hex sizes",
	    .in = H11 "transfer-encoding: CHUNKED\r\n\r\n"
		      "A\r\n0123456789\r\n00000001\r\nz\r\n0\r\n\r\n",
	    .want = 1,
	    .status = 200,
	    .body = "0123456789z" },
	{ .name = "chunked, empty",
	    .in = CHUNKED "0\r\n\r\n",
	    .want = 1,
	    .status = 200,
	    .body = "" },
	{ .name = "to the close",
	    .in = "HTTP/1.0 200 OK\r\n\r\nto the close",
	    .close = true,
	    .want = 1,
	    .status = 200,
	    .body = "to the close" },
	{ .name = "to the close, empty",
	    .in = H11 "\r\n",
	    .close = true,
	    .want = 1,
	    .status = 200,
	    .body = "" },
	{ .name = "no reason phrase",
	    .in = "HTTP/1.1 404\r\n\r\nno",
	    .close = true,
	    .want = 1,
	    .status = 404,
	    .body = "no" },
	{ .name = "empty reason phrase",
	    .in = "HTTP/1.1 503 \r\n\r\n",
	    .close = true,
	    .want = 1,
	    .status = 503,
	    .body = "" },
	{ .name = "obs-text and HTAB",
	    .in = "HTTP/1.1 200 \xc3\xa9t\xc3\xa9\r\nX: caf\xc3\xa9\ta\r\n"
		  "Content-Length: 0\r\n\r\n",
	    .want = 1,
	    .status = 200,
	    .body = "",
	    .field = "X",
	    .value = "caf\xc3\xa9\ta" },
	{ .name = "interim answers skipped",
	    .in = "HTTP/1.1 100 Continue\r\n\r\n"
		  "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" H11
		  "Content-Length: 2\r\n\r\nok",
	    .want = 1,
	    .status = 200,
	    .body = "ok",
	    .field = "Link",
	    .value = NULL },
	{ .name = "HEAD: no body, whatever the length",
	    .in = H11 "Content-Length: 99999999\r\n\r\n",
	    .no_body = true,
	    .want = 1,
	    .status = 200,
	    .body = "" },
	{ .name = "HEAD: no body, chunked",
	    .in = CHUNKED "5\r\nhello\r\n0\r\n\r\n",
	    .no_body = true,
	    .want = 1,
	    .status = 200,
	    .body = "",
	    .rest = 15 },
	{ .name = "204: no body",
	    .in = "HTTP/1.1 204 No Content\r\n"
		  "Content-Length: 4\r\n\r\njunk",
	    .want = 1,
	    .status = 204,
	    .body = "",
	    .rest = 4 },
	{ .name = "304: no body",
	    .in = "HTTP/1.1 304 Not Modified\r\n"
		  "Content-Length: 10\r\n\r\n",
	    .want = 1,
	    .status = 304,
	    .body = "" },
	{ .name = "a body at the cap",
	    .in = H11 "Content-Length: 10\r\n\r\n0123456789",
	    .body_max = 10,
	    .want = 1,
	    .status = 200,
	    .body = "0123456789" },
	{ .name = "a chunked body at the cap",
	    .in = CHUNKED "6\r\n012345\r\n4\r\n6789\r\n0\r\n\r\n",
	    .body_max = 10,
	    .want = 1,
	    .status = 200,
	    .body = "0123456789" },
	{ .name = "a head at the cap",
	    .in = "HTTP/1.1 200 OK\r\n\r\n",
	    .head_max = 19,
	    .close = true,
	    .want = 1,
	    .status = 200,
	    .body = "" },

	/* The status line. */
	BAD("empty line first", "\r\n" H11 "\r\n", "malformed"),
	BAD("not HTTP", "ICY 200 OK\r\n\r\n", "malformed"),
	BAD("HTTP/2", "HTTP/2 200 OK\r\n\r\n", "bad_version"),
	BAD("HTTP/1.2", "HTTP/1.2 200 OK\r\n\r\n", "bad_version"),
	BAD("HTTP/1.10", "HTTP/1.10 200 OK\r\n\r\n", "bad_version"),
	BAD("two digits", "HTTP/1.1 20 OK\r\n\r\n", "bad_status"),
	BAD("four digits", "HTTP/1.1 2000 OK\r\n\r\n", "bad_status"),
	BAD("600", "HTTP/1.1 600 X\r\n\r\n", "bad_status"),
	BAD("099", "HTTP/1.1 099 X\r\n\r\n", "bad_status"),
	BAD("no code", "HTTP/1.1\r\n\r\n", "bad_status"),
	BAD("two spaces", "HTTP/1.1  200 OK\r\n\r\n", "bad_status"),
	BAD("control in reason", "HTTP/1.1 200 O\x01K\r\n\r\n", "malformed"),
	BAD("101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
	    "upgrade"),

	/* Line ends and bytes. */
	BAD("bare LF ends the status line", "HTTP/1.1 200 OK\nX: 1\r\n\r\n",
	    "bare_lf"),
	BAD("bare LF head", "HTTP/1.1 200 OK\n\n", "bare_lf"),
	BAD("bare LF ends a field", H11 "Content-Length: 0\n\r\n", "bare_lf"),
	BAD("bare LF ends the head", H11 "Content-Length: 0\r\n\n", "bare_lf"),
	BAD("bare CR", H11 "X: a\rb\r\n\r\n", "bare_cr"),
	{ .name = "NUL",
	    .in = H11 "X: a\0b\r\n\r\n",
	    .in_len = sizeof(H11 "X: a\0b\r\n\r\n") - 1,
	    .want = -EIO,
	    .reason = "nul" },

	/* Field lines. */
	BAD("obs-fold", H11 "X: a\r\n b\r\nContent-Length: 0\r\n\r\n",
	    "obs_fold"),
	BAD("obs-fold, HTAB", H11 "X: a\r\n\tb\r\n\r\n", "obs_fold"),
	BAD("whitespace before the first field", H11 " X: a\r\n\r\n",
	    "obs_fold"),
	BAD("space before colon", H11 "Content-Length : 2\r\n\r\nhi",
	    "space_before_colon"),
	BAD("no colon", H11 "Garbage\r\n\r\n", "malformed"),
	BAD("empty name", H11 ": v\r\n\r\n", "bad_header_name"),
	BAD("name not a token", H11 "X(1): v\r\n\r\n", "bad_header_name"),
	BAD("control in a value", H11 "X: a\x01z\r\n\r\n", "bad_header_value"),
	BAD("DEL in a value", H11 "X: a\x7fz\r\n\r\n", "bad_header_value"),

	/* Framing. */
	BAD("duplicate Content-Length, equal",
	    H11 "Content-Length: 2\r\nContent-Length: 2\r\n\r\nhi",
	    "duplicate_cl"),
	BAD("duplicate Content-Length",
	    H11 "Content-Length: 2\r\nContent-Length: 3\r\n\r\nhi!",
	    "duplicate_cl"),
	BAD("Content-Length list", H11 "Content-Length: 2, 2\r\n\r\nhi",
	    "bad_cl"),
	BAD("Content-Length +", H11 "Content-Length: +2\r\n\r\nhi", "bad_cl"),
	BAD("Content-Length -", H11 "Content-Length: -1\r\n\r\n", "bad_cl"),
	BAD("Content-Length junk", H11 "Content-Length: 2a\r\n\r\nhi",
	    "bad_cl"),
	BAD("Content-Length empty", H11 "Content-Length:\r\n\r\n", "bad_cl"),
	BAD("Content-Length 20 digits",
	    H11 "Content-Length: 00000000000000000002\r\n\r\nhi", "bad_cl"),
	BAD("a bad Content-Length on a 304",
	    "HTTP/1.1 304 X\r\nContent-Length: x\r\n\r\n", "bad_cl"),
	BAD("CL and TE",
	    H11 "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
		"0\r\n\r\n",
	    "cl_and_te"),
	BAD("TE and CL",
	    H11 "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
		"0\r\n\r\n",
	    "cl_and_te"),
	BAD("TE gzip, chunked",
	    H11 "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	    "unknown_te"),
	BAD("TE identity", H11 "Transfer-Encoding: identity\r\n\r\n",
	    "unknown_te"),
	BAD("TE twice",
	    H11 "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
		"\r\n0\r\n\r\n",
	    "duplicate_te"),
	BAD("TE in HTTP/1.0",
	    "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	    "te_in_http10"),
	BAD("CL and TE in an interim answer",
	    "HTTP/1.1 100 Continue\r\nContent-Length: 1\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n" H11 "\r\n",
	    "cl_and_te"),

	/* Chunks. */
	BAD("chunk size 0x", CHUNKED "0x5\r\nhello\r\n0\r\n\r\n", "bad_chunk"),
	BAD("chunk size blank first", CHUNKED " 5\r\nhello\r\n0\r\n\r\n",
	    "bad_chunk"),
	BAD("chunk size not hex", CHUNKED "g\r\n", "bad_chunk"),
	BAD("chunk size empty", CHUNKED "\r\nhello\r\n0\r\n\r\n", "bad_chunk"),
	BAD("chunk size, blank, no extension",
	    CHUNKED "5 \r\nhello\r\n0\r\n\r\n", "bad_chunk"),
	BAD("chunk size 17 digits",
	    CHUNKED "00000000000000005\r\nhello\r\n0\r\n\r\n", "bad_chunk"),
	BAD("chunk size bare LF", CHUNKED "5\nhello\r\n0\r\n\r\n", "bare_lf"),
	BAD("chunk size bare CR", CHUNKED "5\rhello\r\n0\r\n\r\n", "bare_cr"),
	BAD("control in a chunk extension",
	    CHUNKED "5;a\x01\r\nhello\r\n0\r\n\r\n", "bad_chunk"),
	BAD("chunk extension bare LF", CHUNKED "5;a\nhello\r\n0\r\n\r\n",
	    "bare_lf"),
	BAD("chunk data without CRLF", CHUNKED "5\r\nhelloXX0\r\n\r\n",
	    "bad_chunk"),
	BAD("chunk data, bare LF", CHUNKED "5\r\nhello\n0\r\n\r\n",
	    "bad_chunk"),
	BAD("chunk longer than its size", CHUNKED "2\r\nhello\r\n0\r\n\r\n",
	    "bad_chunk"),
	BAD("chunk line over its cap",
	    CHUNKED
	    "5;"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aa"
	    "\r\nhello\r\n0\r\n\r\n",
	    "bad_chunk"),
	BAD("a trailer folded", CHUNKED "0\r\nX: a\r\n b\r\n\r\n", "obs_fold"),
	BAD("a trailer without colon", CHUNKED "0\r\nX\r\n\r\n", "malformed"),
	BAD("the trailers end in bare LF", CHUNKED "0\r\n\n", "bare_lf"),

	/* Cut short by the close. */
	BADC("nothing at all", "", "cut_short"),
	BADC("in the status line", "HTTP/1.1 200", "cut_short"),
	BADC("in the head", H11 "Content-Length: 5\r\n", "cut_short"),
	BADC("in a Content-Length body", H11 "Content-Length: 10\r\n\r\nhello",
	    "cut_short"),
	BADC("in a chunk", CHUNKED "5\r\nhel", "cut_short"),
	BADC("before the last chunk", CHUNKED "5\r\nhello\r\n", "cut_short"),
	BADC("in the trailers", CHUNKED "5\r\nhello\r\n0\r\n", "cut_short"),
	BADC("after an interim answer", "HTTP/1.1 100 Continue\r\n\r\n",
	    "cut_short"),

	/* Caps. */
	{ .name = "a head past its cap",
	    .in = "HTTP/1.1 200 OK\r\n\r\n",
	    .head_max = 18,
	    .want = -EFBIG,
	    .reason = "headers_too_large" },
	{ .name = "interim heads count",
	    .in = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"
		  "HTTP/1.1 200 OK\r\n\r\n",
	    .head_max = 60,
	    .want = -EFBIG,
	    .reason = "headers_too_large" },
	{ .name = "trailers count",
	    .in = CHUNKED "0\r\nX-Trailer: 1234567890\r\n\r\n",
	    .head_max = 60,
	    .want = -EFBIG,
	    .reason = "headers_too_large" },
	{ .name = "a Content-Length past the cap",
	    .in = H11 "Content-Length: 11\r\n\r\n01234567890",
	    .body_max = 10,
	    .want = -EFBIG,
	    .reason = "body_too_large" },
	{ .name = "a Content-Length of 19 nines",
	    .in = H11 "Content-Length: 9999999999999999999\r\n\r\n",
	    .want = -EFBIG,
	    .reason = "body_too_large" },
	{ .name = "chunks past the cap",
	    .in = CHUNKED "6\r\n012345\r\n5\r\n67890\r\n0\r\n\r\n",
	    .body_max = 10,
	    .want = -EFBIG,
	    .reason = "body_too_large" },
	{ .name = "a chunk of 16 Fs",
	    .in = CHUNKED "FFFFFFFFFFFFFFFF\r\n",
	    .want = -EFBIG,
	    .reason = "body_too_large" },
	{ .name = "to the close past the cap",
	    .in = H11 "\r\n01234567890",
	    .close = true,
	    .body_max = 10,
	    .want = -EFBIG,
	    .reason = "body_too_large" },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

struct outcome {
	int r;
	const char *reason;
	int status;
	char *body, *head; /* malloc'd copies, or NULL */
	size_t blen, hlen;
	size_t used; /* bytes taken, when complete in a feed */
	const char *value; /* of the case's field, in head */
	size_t vlen;
};

static size_t
in_len(const struct tcase *c)
{
	return c->in_len != 0 ? c->in_len : strlen(c->in);
}

static char *
copy_of(const char *p, size_t n)
{
	char *d = malloc(n + 1);

	ck_assert_ptr_nonnull(d);
	memcpy(d, p, n);
	d[n] = '\0';
	return d;
}

/* Feeds the case cut where cuts[] says (ascending offsets), each piece
 * from an exactly-sized copy. */
static struct outcome
run(const struct tcase *c, const size_t *cuts, size_t ncuts)
{
	struct http_answer a;
	struct outcome o = { 0 };
	size_t n = in_len(c), at = 0;
	int r = 0;

	http_answer_init(&a, c->no_body, c->head_max ? c->head_max : 1024,
	    c->body_max ? c->body_max : 1024);
	for (size_t i = 0; i <= ncuts && r == 0; i++) {
		size_t end = i < ncuts ? cuts[i] : n, used = 0;
		char *piece = malloc(end - at > 0 ? end - at : 1);

		ck_assert_ptr_nonnull(piece);
		memcpy(piece, c->in + at, end - at);
		r = http_answer_feed(&a, piece, end - at, &used);
		free(piece);
		ck_assert_uint_le(used, end - at);
		if (r == 0)
			ck_assert_uint_eq(used, end - at);
		o.used = at + used;
		at = end;
	}
	if (r == 0 && c->close) {
		r = http_answer_close(&a);
		o.used = n;
	}
	o.r = r;
	o.reason = a.reason;
	if (r == 1) {
		ck_assert_ptr_null(a.reason);
		ck_assert_ptr_nonnull(a.body.data);
		ck_assert_int_eq(a.body.data[a.body.len], '\0');
		o.status = a.status;
		o.body = copy_of(a.body.data, a.body.len);
		o.blen = a.body.len;
		o.head = copy_of(a.head.data, a.head.len);
		o.hlen = a.head.len;
		if (c->field != NULL) {
			const char *v =
			    http_answer_field(&a, c->field, &o.vlen);
			o.value = v != NULL ? o.head + (v - a.head.data) : NULL;
		}
		/* Done stays done, and takes nothing more. */
		size_t more = 7;
		ck_assert_int_eq(http_answer_feed(&a, "xyz", 3, &more), 1);
		ck_assert_uint_eq(more, 0);
		ck_assert_int_eq(http_answer_close(&a), 1);
	} else if (r < 0) {
		ck_assert_ptr_nonnull(a.reason);
		ck_assert_int_eq(http_answer_feed(&a, "xyz", 3, NULL), r);
		ck_assert_int_eq(http_answer_close(&a), r);
	}
	http_answer_free(&a);
	return o;
}

static void
outcome_free(struct outcome *o)
{
	free(o->body);
	free(o->head);
}

static void
same(const struct tcase *c, const struct outcome *whole,
    const struct outcome *o, const char *how, size_t at)
{
	ck_assert_msg(o->r == whole->r, "%s: %s at %zu: %d, whole %d", c->name,
	    how, at, o->r, whole->r);
	ck_assert_msg((o->reason == NULL) == (whole->reason == NULL) &&
		(o->reason == NULL || strcmp(o->reason, whole->reason) == 0),
	    "%s: %s at %zu: reason %s, whole %s", c->name, how, at,
	    o->reason ? o->reason : "-", whole->reason ? whole->reason : "-");
	if (o->r != 1)
		return;
	ck_assert_msg(o->status == whole->status && o->blen == whole->blen &&
		memcmp(o->body, whole->body, o->blen) == 0 &&
		o->hlen == whole->hlen &&
		memcmp(o->head, whole->head, o->hlen) == 0 &&
		o->used == whole->used,
	    "%s: %s at %zu: another answer", c->name, how, at);
}

START_TEST(test_table)
{
	const struct tcase *c = &cases[_i];
	struct outcome w = run(c, NULL, 0);
	size_t n = in_len(c);

	ck_assert_msg(w.r == c->want, "%s: %d (%s), want %d (%s)", c->name, w.r,
	    w.reason ? w.reason : "-", c->want, c->reason ? c->reason : "-");
	if (c->want < 0) {
		ck_assert_msg(strcmp(w.reason, c->reason) == 0,
		    "%s: reason %s, want %s", c->name, w.reason, c->reason);
	} else {
		ck_assert_int_eq(w.status, c->status);
		ck_assert_msg(w.blen == strlen(c->body) &&
			memcmp(w.body, c->body, w.blen) == 0,
		    "%s: body '%s', want '%s'", c->name, w.body, c->body);
		ck_assert_msg(w.used == n - c->rest, "%s: took %zu of %zu",
		    c->name, w.used, n);
		/* The head is the final answer's, its blank line last. */
		ck_assert_msg(w.hlen >= 4 &&
			memcmp(w.head + w.hlen - 4, "\r\n\r\n", 4) == 0,
		    "%s: head '%s'", c->name, w.head);
		if (c->field != NULL && c->value == NULL)
			ck_assert_msg(w.value == NULL, "%s: %s is in the head",
			    c->name, c->field);
		if (c->value != NULL)
			ck_assert_msg(w.value != NULL &&
				w.vlen == strlen(c->value) &&
				memcmp(w.value, c->value, w.vlen) == 0,
			    "%s: %s is '%.*s'", c->name, c->field, (int)w.vlen,
			    w.value ? w.value : "");
	}
	/* Cut in two at every byte boundary. */
	for (size_t at = 0; at <= n; at++) {
		struct outcome o = run(c, &at, 1);
		same(c, &w, &o, "cut", at);
		outcome_free(&o);
	}
	/* A byte at a time. */
	{
		size_t *cuts = malloc((n + 1) * sizeof(*cuts));
		ck_assert_ptr_nonnull(cuts);
		for (size_t i = 0; i < n; i++)
			cuts[i] = i + 1;
		struct outcome o = run(c, cuts, n);
		same(c, &w, &o, "bytewise", 0);
		outcome_free(&o);
		free(cuts);
	}
	outcome_free(&w);
}
END_TEST

/* The field lookup: the first of a name, never a value nor the status
 * line, none before the answer is complete. */
START_TEST(test_field)
{
	static const char in[] = "HTTP/1.1 200 Content-Type: no\r\n"
				 "X-Y: Content-Type: no\r\n"
				 "Content-Type:  application/json \r\n"
				 "content-type: text/plain\r\n"
				 "Content-Length: 0\r\n\r\n";
	struct http_answer a;
	const char *v;
	size_t len;

	http_answer_init(&a, false, 1024, 1024);
	ck_assert_ptr_null(http_answer_field(&a, "Content-Type", &len));
	ck_assert_int_eq(http_answer_feed(&a, in, 60, NULL), 0);
	ck_assert_ptr_null(http_answer_field(&a, "Content-Type", &len));
	ck_assert_int_eq(http_answer_feed(&a, in + 60, strlen(in) - 60, NULL),
	    1);
	v = http_answer_field(&a, "Content-Type", &len);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(len, 16);
	ck_assert_mem_eq(v, "application/json", 16);
	ck_assert_ptr_null(http_answer_field(&a, "Content", &len));
	ck_assert_ptr_null(http_answer_field(&a, "X", &len));
	http_answer_free(&a);
	http_answer_free(NULL);
}
END_TEST

/* http_answer_read: the reader's own errno passes through, a close ends
 * a close-framed answer, and reading stops at the answer's end. */
struct script {
	const char *const *pieces;
	size_t n, at;
	int err; /* after the pieces, when not 0 */
};

static ssize_t
script_read(void *ctx, char *buf, size_t n)
{
	struct script *s = ctx;
	size_t len;

	if (s->at == s->n)
		return s->err != 0 ? -s->err : 0;
	len = strlen(s->pieces[s->at]);
	ck_assert_uint_le(len, n);
	memcpy(buf, s->pieces[s->at++], len);
	return (ssize_t)len;
}

START_TEST(test_read)
{
	static const char *const framed[] = { H11 "Content-Length: 4\r\n",
		"\r\nbo", "dy", "never read" };
	static const char *const closed[] = { H11 "\r\n", "to the", " close" };
	struct script s = { .pieces = framed, .n = 4 };
	struct http_answer a;

	http_answer_init(&a, false, 1024, 1024);
	ck_assert_int_eq(http_answer_read(&a, script_read, &s), 0);
	ck_assert_str_eq(a.body.data, "body");
	ck_assert_uint_eq(s.at, 3);
	http_answer_free(&a);

	s = (struct script){ .pieces = closed, .n = 3 };
	http_answer_init(&a, false, 1024, 1024);
	ck_assert_int_eq(http_answer_read(&a, script_read, &s), 0);
	ck_assert_str_eq(a.body.data, "to the close");
	http_answer_free(&a);

	s = (struct script){ .pieces = closed, .n = 2, .err = ETIMEDOUT };
	http_answer_init(&a, false, 1024, 1024);
	ck_assert_int_eq(http_answer_read(&a, script_read, &s), -ETIMEDOUT);
	http_answer_free(&a);

	s = (struct script){ .pieces = framed, .n = 2 };
	http_answer_init(&a, false, 1024, 1024);
	ck_assert_int_eq(http_answer_read(&a, script_read, &s), -EIO);
	ck_assert_str_eq(a.reason, "cut_short");
	http_answer_free(&a);
}
END_TEST

static Suite *
http_answer_suite(void)
{
	Suite *s = suite_create("http_answer");
	TCase *tc = tcase_create("reader");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_table, 0, (int)NCASES);
	tcase_add_test(tc, test_field);
	tcase_add_test(tc, test_read);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testutil_run(http_answer_suite());
}
