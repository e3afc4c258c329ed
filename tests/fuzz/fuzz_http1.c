/*
 * Fuzzes the proxy's request parser and chunked decoder. The input is a
 * client's bytes. Properties: a byte-at-a-time feed answers exactly what
 * one call does (result, reason, length, request); a complete head has a
 * token method, lies within the input and ends with CRLF CRLF; its
 * upstream form is written whole or fails with -E2BIG only, and reads
 * back in origin mode as the same method, path, query and framing; the
 * chunked decoder agrees with itself fed whole and fed a byte at a time.
 */
#include "fuzz.h"
#include "http1.h"

#include <errno.h>
#include <string.h>

static bool
is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool
span_in(struct http1_span s, size_t n)
{
	return s.off <= n && s.len <= n - s.off;
}

static void
check_head(const struct http1_request *req, const char *data, size_t used)
{
	FUZZ_ASSERT(used >= 4 && memcmp(data + used - 4, "\r\n\r\n", 4) == 0);
	FUZZ_ASSERT(req->method.len > 0 && span_in(req->method, used));
	for (size_t i = 0; i < req->method.len; i++)
		FUZZ_ASSERT(is_tchar((unsigned char)data[req->method.off + i]));
	FUZZ_ASSERT(span_in(req->target, used) && span_in(req->host, used));
	FUZZ_ASSERT(span_in(req->path, used) && span_in(req->query, used));
	FUZZ_ASSERT(req->nheaders <= HTTP1_FIELDS_MAX);
	for (size_t i = 0; i < req->nheaders; i++) {
		FUZZ_ASSERT(span_in(req->headers[i].name, used));
		FUZZ_ASSERT(span_in(req->headers[i].value, used));
	}
	FUZZ_ASSERT(req->content_length <= HTTP1_CL_MAX);
	FUZZ_ASSERT(req->port > 0);
}

/* The upstream head reads back as the same request. */
static void
check_serialize(const struct http1_request *req, const char *data)
{
	struct http1_field extra[] = { { "Host", "upstream.test:8080" } };
	struct buf small = BUF_INIT(64), out = BUF_INIT(2 * HTTP1_HEAD_MAX);
	struct http1_parser *p2 = malloc(sizeof(*p2));
	size_t used;
	int r;

	FUZZ_ASSERT(p2 != NULL);
	r = http1_serialize(req, data, extra, 1, 0, &small);
	FUZZ_ASSERT(r == 0 || r == -E2BIG);
	FUZZ_ASSERT(r == 0 || small.len == 0);
	r = http1_serialize(req, data, extra, 1, HTTP1_KEEP_UPGRADE, &out);
	FUZZ_ASSERT(r == 0 || r == -E2BIG);
	if (r == 0) {
		http1_parser_init(p2, HTTP1_MODE_ORIGIN);
		r = http1_parse(p2, out.data, out.len, &used);
		/* Only the extra field and framing can add to the count. */
		if (r == -EBADMSG)
			FUZZ_ASSERT(
			    strcmp(p2->reason, "headers_too_large") == 0);
		else
			FUZZ_ASSERT(r == 0);
	}
	if (r == 0) {
		const struct http1_request *q = &p2->req;
		FUZZ_ASSERT(used == out.len);
		FUZZ_ASSERT(q->method.len == req->method.len &&
		    memcmp(out.data + q->method.off, data + req->method.off,
			q->method.len) == 0);
		FUZZ_ASSERT(q->query.len == req->query.len &&
		    q->has_query == req->has_query &&
		    memcmp(out.data + q->query.off, data + req->query.off,
			q->query.len) == 0);
		FUZZ_ASSERT(req->path.len == 0 ||
		    (q->path.len == req->path.len &&
			memcmp(out.data + q->path.off, data + req->path.off,
			    q->path.len) == 0));
		FUZZ_ASSERT(q->body == req->body &&
		    q->content_length == req->content_length);
		/* A body on a method other than POST, PUT or PATCH goes up
		 * with Connection: close (its upstream is never reused); an
		 * upgrade keeps its own Connection. */
		FUZZ_ASSERT(q->port == 8080 &&
		    q->keep_alive ==
			(req->upgrade || !http1_close_after_body(req, data)));
	}
	buf_free(&small);
	buf_free(&out);
	free(p2);
}

static void
check_chunked(const char *in, size_t len)
{
	struct http1_chunked a, b;
	size_t used, off, n, at = 0, got_a = 0, got_b = 0;
	int ra = -EAGAIN, rb = -EAGAIN;
	unsigned char sum_a = 0, sum_b = 0;

	http1_chunked_init(&a, 1 << 20);
	http1_chunked_init(&b, 1 << 20);
	while (at < len) {
		ra = http1_chunked_decode(&a, in + at, len - at, &used, &off,
		    &n);
		FUZZ_ASSERT(used <= len - at && off + n <= used);
		FUZZ_ASSERT(ra != -EAGAIN || used > 0);
		for (size_t i = 0; i < n; i++)
			sum_a = (unsigned char)(sum_a * 31 + in[at + off + i]);
		got_a += n;
		at += used;
		if (ra != -EAGAIN)
			break;
	}
	for (size_t i = 0; i < len && rb == -EAGAIN; i++) {
		rb = http1_chunked_decode(&b, in + i, 1, &used, &off, &n);
		FUZZ_ASSERT(used == 1 || rb != -EAGAIN);
		if (n == 1)
			sum_b = (unsigned char)(sum_b * 31 + in[i]);
		got_b += n;
	}
	FUZZ_ASSERT(ra == rb && got_a == got_b && sum_a == sum_b);
	if (ra == -EBADMSG)
		FUZZ_ASSERT(strcmp(a.reason, b.reason) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	struct http1_parser *one = malloc(sizeof(*one));
	struct http1_parser *inc = malloc(sizeof(*inc));
	enum http1_mode mode = HTTP1_MODE_PROXY;
	size_t used1 = 0, used2 = 0;
	int r1, r2 = -EAGAIN;

	FUZZ_ASSERT(one != NULL && inc != NULL);
	/* A leading 'O' byte asks for origin mode, for tunnels. */
	if (size > 0 && in[0] == 'O') {
		mode = HTTP1_MODE_ORIGIN;
		in++;
		size--;
	}
	http1_parser_init(one, mode);
	http1_parser_init(inc, mode);
	r1 = http1_parse(one, in, size, &used1);
	for (size_t n = 0; n <= size && r2 == -EAGAIN; n++)
		r2 = http1_parse(inc, in, n, &used2);
	FUZZ_ASSERT(r1 == 0 || r1 == -EAGAIN || r1 == -EBADMSG);
	FUZZ_ASSERT(r1 == r2);
	if (r1 == -EBADMSG)
		FUZZ_ASSERT(strcmp(one->reason, inc->reason) == 0);
	if (r1 == 0) {
		FUZZ_ASSERT(used1 == used2 && used1 <= size);
		FUZZ_ASSERT(
		    memcmp(&one->req, &inc->req, sizeof(one->req)) == 0);
		check_head(&one->req, in, used1);
		if (!one->req.connect)
			check_serialize(&one->req, in);
		if (one->req.body == HTTP1_BODY_CHUNKED)
			check_chunked(in + used1, size - used1);
	} else {
		check_chunked(in, size);
	}
	free(one);
	free(inc);
	return 0;
}
