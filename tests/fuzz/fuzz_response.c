/*
 * Fuzzes the proxy's response head parser. The input is a selector byte,
 * whose low bit says the request was HEAD ('0' GET, '1' HEAD), then an
 * upstream's bytes. Properties: the answer on every prefix is -EAGAIN or
 * the answer on the whole, the same head_len, response and reason, and
 * once given it stays given, with more bytes appended too; a strict
 * prefix of a complete head answers -EAGAIN; no more than HTTP1_HEAD_MAX
 * bytes answer -EAGAIN; a complete head lies within the input, ends with CRLF
 * CRLF, holds no NUL, bare CR or bare LF, starts with the version and
 * status it reports, and is framed as its fields say (RFC 9112 6.3); a
 * refusal's reason is one of response.h's list. An interim response is
 * followed by the next one, parsed from its head_len on. Every call gets
 * an exactly-sized copy of its bytes, so that ASan sees an over-read.
 */
#include "fuzz.h"
#include "response.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#define PREFIX_ALL 512 /* inputs up to this long have every prefix tried */
#define INTERIM_MAX 8 /* interim responses followed, at most */

static const char *const reasons[] = {
	"nul",
	"bare_cr",
	"bare_lf",
	"headers_too_large",
	"malformed",
	"bad_version",
	"bad_status",
	"obs_fold",
	"space_before_colon",
	"bad_header_name",
	"bad_header_value",
	"bad_cl",
	"duplicate_cl",
	"unknown_te",
	"duplicate_te",
	"te_in_http10",
	"cl_and_te",
	"bad_connection",
};

struct answer {
	int r;
	struct http1_response resp;
	const char *reason;
};

/* One parse of data[0..n) from an exactly-sized copy. */
static struct answer
parse_exact(const char *data, size_t n, bool head_request)
{
	struct answer a;
	char *copy = malloc(n);

	FUZZ_ASSERT(copy != NULL || n == 0);
	if (n > 0)
		memcpy(copy, data, n);
	/* *resp is written only on 0: a marker shows any other write. */
	memset(&a.resp, 0xa5, sizeof(a.resp));
	a.reason = "unset";
	a.r = http1_response_parse(copy, n, head_request, &a.resp, &a.reason);
	free(copy);
	FUZZ_ASSERT(a.r == 0 || a.r == -EAGAIN || a.r == -EBADMSG);
	if (a.r != 0) {
		struct http1_response marker;
		memset(&marker, 0xa5, sizeof(marker));
		FUZZ_ASSERT(memcmp(&a.resp, &marker, sizeof(marker)) == 0);
	}
	if (a.r == -EBADMSG) {
		bool listed = false;
		FUZZ_ASSERT(a.reason != NULL);
		for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]);
		     i++)
			listed = listed || strcmp(a.reason, reasons[i]) == 0;
		FUZZ_ASSERT(listed);
	} else {
		FUZZ_ASSERT(a.reason == NULL);
	}
	return a;
}

static bool
same_response(const struct http1_response *a, const struct http1_response *b)
{
	return a->minor_version == b->minor_version && a->status == b->status &&
	    a->body == b->body && a->content_length == b->content_length &&
	    a->keep_alive == b->keep_alive && a->upgrade == b->upgrade &&
	    a->head_len == b->head_len;
}

static bool
same_answer(const struct answer *a, const struct answer *b)
{
	if (a->r != b->r)
		return false;
	if (a->r == 0)
		return same_response(&a->resp, &b->resp);
	if (a->r == -EBADMSG)
		return strcmp(a->reason, b->reason) == 0;
	return true;
}

static bool
name_is(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

static bool
is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Reads the complete head h[0..n) again, naively, and checks that the
 * parser's framing follows from its fields.
 */
static void
check_head(const char *h, size_t n, bool head_request,
    const struct http1_response *resp)
{
	size_t at, nfields = 0, ncl = 0, nte = 0;
	uint64_t cl = 0;
	bool conn_keep = false, conn_close = false;
	const char *end;

	FUZZ_ASSERT(n >= 4 && n <= HTTP1_HEAD_MAX);
	FUZZ_ASSERT(memcmp(h + n - 4, "\r\n\r\n", 4) == 0);
	FUZZ_ASSERT(memchr(h, '\0', n) == NULL);
	for (size_t i = 0; i < n; i++) {
		if (h[i] == '\r')
			FUZZ_ASSERT(i + 1 < n && h[i + 1] == '\n');
		if (h[i] == '\n')
			FUZZ_ASSERT(i > 0 && h[i - 1] == '\r');
	}

	/* The status line. */
	FUZZ_ASSERT(resp->minor_version == 0 || resp->minor_version == 1);
	FUZZ_ASSERT(n >= 16 && memcmp(h, "HTTP/1.", 7) == 0);
	FUZZ_ASSERT(h[7] == '0' + resp->minor_version && h[8] == ' ');
	FUZZ_ASSERT(resp->status >= 100 && resp->status <= 599);
	FUZZ_ASSERT((unsigned)(h[9] - '0') * 100 +
		(unsigned)(h[10] - '0') * 10 + (unsigned)(h[11] - '0') ==
	    resp->status);
	FUZZ_ASSERT(h[12] == ' ' || h[12] == '\r');
	end = memchr(h, '\r', n);
	at = (size_t)(end - h) + 2;

	/* The field lines. */
	while (at < n - 2) {
		const char *line = h + at, *colon, *v;
		size_t len, vlen;

		end = memchr(line, '\r', n - at);
		FUZZ_ASSERT(end != NULL);
		len = (size_t)(end - line);
		FUZZ_ASSERT(len > 0 && !is_ows(line[0]));
		colon = memchr(line, ':', len);
		FUZZ_ASSERT(colon != NULL && colon > line);
		FUZZ_ASSERT(!is_ows(colon[-1]));
		v = colon + 1;
		vlen = (size_t)(end - v);
		while (vlen > 0 && is_ows(v[0])) {
			v++;
			vlen--;
		}
		while (vlen > 0 && is_ows(v[vlen - 1]))
			vlen--;
		if (name_is(line, (size_t)(colon - line), "Content-Length")) {
			ncl++;
			cl = 0;
			FUZZ_ASSERT(vlen > 0);
			for (size_t i = 0; i < vlen; i++) {
				FUZZ_ASSERT(v[i] >= '0' && v[i] <= '9');
				cl = cl * 10 + (uint64_t)(v[i] - '0');
				FUZZ_ASSERT(cl <= HTTP1_CL_MAX);
			}
		} else if (name_is(line, (size_t)(colon - line),
			       "Transfer-Encoding")) {
			nte++;
			FUZZ_ASSERT(name_is(v, vlen, "chunked"));
		} else if (name_is(line, (size_t)(colon - line),
			       "Connection")) {
			/* Substrings over-approximate the tokens: enough
			 * for the implications checked below. */
			for (size_t i = 0; i + 5 <= vlen; i++) {
				conn_close = conn_close ||
				    strncasecmp(v + i, "close", 5) == 0;
				conn_keep = conn_keep ||
				    (i + 10 <= vlen &&
					strncasecmp(v + i, "keep-alive", 10) ==
					    0);
			}
		}
		nfields++;
		at += len + 2;
	}
	FUZZ_ASSERT(at == n - 2);
	FUZZ_ASSERT(nfields <= HTTP1_FIELDS_MAX);
	FUZZ_ASSERT(ncl <= 1 && nte <= 1 && ncl + nte <= 1);
	FUZZ_ASSERT(nte == 0 || resp->minor_version == 1);

	/* The framing, RFC 9112 6.3. */
	if (head_request || resp->status / 100 == 1 || resp->status == 204 ||
	    resp->status == 304)
		FUZZ_ASSERT(resp->body == HTTP1_RESP_NONE);
	else if (nte == 1)
		FUZZ_ASSERT(resp->body == HTTP1_RESP_CHUNKED);
	else if (ncl == 1)
		FUZZ_ASSERT(resp->body == HTTP1_RESP_LENGTH);
	else
		FUZZ_ASSERT(resp->body == HTTP1_RESP_CLOSE);
	if (resp->body == HTTP1_RESP_LENGTH)
		FUZZ_ASSERT(resp->content_length == cl &&
		    resp->content_length <= HTTP1_CL_MAX);
	else
		FUZZ_ASSERT(resp->content_length == 0);
	FUZZ_ASSERT(resp->upgrade == (resp->status == 101));
	if (resp->body == HTTP1_RESP_CLOSE || resp->upgrade)
		FUZZ_ASSERT(!resp->keep_alive);
	if (resp->keep_alive)
		FUZZ_ASSERT(resp->minor_version == 1 || conn_keep);
	if (!conn_close && resp->minor_version == 1 &&
	    resp->body != HTTP1_RESP_CLOSE && !resp->upgrade)
		FUZZ_ASSERT(resp->keep_alive);
}

/* data[0..len) with suffix[0..slen) after it: the same final answer. */
static void
check_appended(const char *data, size_t len, bool head_request,
    const struct answer *whole, const char *suffix, size_t slen)
{
	char *more = malloc(len + slen);
	struct answer a;

	FUZZ_ASSERT(more != NULL);
	if (len > 0)
		memcpy(more, data, len);
	memcpy(more + len, suffix, slen);
	a = parse_exact(more, len + slen, head_request);
	free(more);
	FUZZ_ASSERT(same_answer(&a, whole));
}

/*
 * No more than HTTP1_HEAD_MAX bytes leave the parser waiting. Exactly
 * that many may: it refuses an overlong head once a byte past the limit
 * is in (or a CR whose LF would be), and conn.c takes -EAGAIN at the
 * limit as a refusal. Below it, the answer is -EAGAIN or the final one.
 */
static void
check_bounded(const char *data, size_t len, bool head_request)
{
	size_t n = HTTP1_HEAD_MAX + 1;
	char *big;
	struct answer a, b;

	if (len >= n)
		return;
	big = malloc(n);
	FUZZ_ASSERT(big != NULL);
	if (len > 0)
		memcpy(big, data, len);
	/* One long line, or the input again and again. */
	for (size_t i = len; i < n; i++)
		big[i] = len > 0 && data[0] == 'H' ? data[i % len] : 'a';
	/* Or a CR that would have its LF just past HTTP1_HEAD_MAX. */
	if (len < n - 2 && len % 2 == 1)
		big[n - 2] = '\r';
	a = parse_exact(big, n, head_request);
	b = parse_exact(big, n - 1, head_request);
	free(big);
	FUZZ_ASSERT(a.r != -EAGAIN);
	FUZZ_ASSERT(b.r == -EAGAIN || same_answer(&a, &b));
}

/* Checks one response starting at data, and returns the whole answer. */
static struct answer
check_response(const char *data, size_t len, bool head_request)
{
	struct answer whole = parse_exact(data, len, head_request);
	size_t decided = len + 1; /* the shortest prefix not -EAGAIN */
	size_t step = len <= PREFIX_ALL ? 1 : len / 64;

	/* Every prefix when short; else the ends, a spread between, and
	 * around head_len. */
	for (size_t n = 0; n <= len; n++) {
		struct answer a;

		if (step > 1 && n >= 64 && n + 64 < len && n % step != 0 &&
		    !(whole.r == 0 && n + 2 >= whole.resp.head_len &&
			n <= whole.resp.head_len + 1))
			continue;
		a = parse_exact(data, n, head_request);
		if (a.r == -EAGAIN) {
			/* Once answered, always answered. */
			FUZZ_ASSERT(decided > len);
			continue;
		}
		FUZZ_ASSERT(same_answer(&a, &whole));
		if (decided > len)
			decided = n;
	}
	if (whole.r == -EAGAIN) {
		FUZZ_ASSERT(decided > len);
		check_bounded(data, len, head_request);
		return whole;
	}
	FUZZ_ASSERT(decided <= len);
	if (whole.r == 0) {
		const struct http1_response *resp = &whole.resp;

		FUZZ_ASSERT(resp->head_len <= len);
		/* A strict prefix of the head waits; the head is enough. */
		FUZZ_ASSERT(decided == resp->head_len);
		check_head(data, resp->head_len, head_request, resp);
	}
	check_appended(data, len, head_request, &whole, "\r\n\r\n", 4);
	check_appended(data, len, head_request, &whole, "\0\n\r", 3);
	check_appended(data, len, head_request, &whole, data, len);
	return whole;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	bool head_request;

	if (size == 0)
		return 0;
	head_request = (data[0] & 1) != 0;
	in++;
	size--;
	/* After an interim response, the next one from its head_len on. */
	for (int i = 0; i < INTERIM_MAX; i++) {
		struct answer a = check_response(in, size, head_request);

		if (a.r != 0 || a.resp.status / 100 != 1 || a.resp.upgrade)
			break;
		FUZZ_ASSERT(a.resp.body == HTTP1_RESP_NONE);
		in += a.resp.head_len;
		size -= a.resp.head_len;
	}
	return 0;
}
