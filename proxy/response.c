/*
 * The strict HTTP/1.1 response head parser (see response.h for the
 * contract and the refusal reasons). It keeps no state between calls:
 * each call scans from the first byte, one byte at a time, judging each
 * line once its CRLF is in and stopping at the first fault. Every check
 * depends only on the bytes before the point where it is made, which is
 * what makes an answer given on a prefix the answer on the whole. Every
 * loop is bounded by the bytes given; nothing past them is read.
 */
#include "response.h"

#include "lex.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

/* What the field lines seen so far said. */
struct resp_state {
	struct http1_response resp;
	size_t nfields;
	bool seen_cl, seen_te;
	bool conn_close, conn_keep;
	unsigned upgrades; /* Upgrade fields seen */
	bool upgrade_websocket; /* the first said "websocket" alone */
};

/*
 * "HTTP/1.x SP 3DIGIT [SP reason-phrase]" in s[0..n). The version is
 * what comes before the first SP, so "HTTP/1.10" is a bad version, not
 * a good one with junk after it.
 */
static const char *
parse_status_line(struct resp_state *st, const char *s, size_t n)
{
	const char *sp;
	size_t vlen, c;
	unsigned status = 0;

	if (n == 0)
		return "malformed";
	sp = memchr(s, ' ', n);
	vlen = sp != NULL ? (size_t)(sp - s) : n;
	if (vlen == 8 && memcmp(s, "HTTP/1.1", 8) == 0)
		st->resp.minor_version = 1;
	else if (vlen == 8 && memcmp(s, "HTTP/1.0", 8) == 0)
		st->resp.minor_version = 0;
	else
		return "bad_version";
	c = vlen + 1;
	if (sp == NULL || n - c < 3)
		return "bad_status";
	for (size_t i = c; i < c + 3; i++) {
		if (s[i] < '0' || s[i] > '9')
			return "bad_status";
		status = status * 10 + (unsigned)(s[i] - '0');
	}
	/* The one leniency: the SP before an empty reason may be missing. */
	if (n > c + 3 && s[c + 3] != ' ')
		return "bad_status";
	if (status < 100 || status > 599)
		return "bad_status";
	for (size_t i = c + 3; i < n; i++)
		if (lex_bad_ctl((unsigned char)s[i]))
			return "malformed";
	st->resp.status = status;
	return NULL;
}

static const char *
parse_content_length(struct resp_state *st, const char *v, size_t n)
{
	uint64_t cl;

	if (!lex_content_length(v, n, HTTP1_CL_MAX, &cl))
		return "bad_cl";
	st->resp.content_length = cl;
	return NULL;
}

/* The field line s[0..n), without its CRLF, not empty. */
static const char *
parse_field_line(struct resp_state *st, const char *s, size_t n)
{
	const char *v, *bad;
	size_t nlen, vs, ve;

	if (st->nfields == HTTP1_FIELDS_MAX)
		return "headers_too_large";
	st->nfields++;
	if ((bad = lex_field_line(s, n, &nlen, &vs, &ve)) != NULL)
		return bad;
	v = s + vs;
	if (lex_eq_nocase(s, nlen, "Content-Length")) {
		if (st->seen_cl)
			return "duplicate_cl";
		if (st->seen_te)
			return "cl_and_te";
		st->seen_cl = true;
		return parse_content_length(st, v, ve - vs);
	}
	if (lex_eq_nocase(s, nlen, "Transfer-Encoding")) {
		if (st->seen_te)
			return "duplicate_te";
		if (st->seen_cl)
			return "cl_and_te";
		st->seen_te = true;
		if (st->resp.minor_version == 0)
			return "te_in_http10";
		if (!lex_eq_nocase(v, ve - vs, "chunked"))
			return "unknown_te";
		return NULL;
	}
	if (lex_eq_nocase(s, nlen, "Upgrade") && st->upgrades++ == 0)
		st->upgrade_websocket = lex_eq_nocase(v, ve - vs, "websocket");
	if (lex_eq_nocase(s, nlen, "Content-Encoding") &&
	    !lex_eq_nocase(v, ve - vs, "identity"))
		st->resp.coded = true;
	if (lex_eq_nocase(s, nlen, "Connection"))
		return lex_connection(v, ve - vs, &st->conn_close,
		    &st->conn_keep);
	return NULL;
}

/* The framing, once the empty line is in (RFC 9112 6.3, in its order). */
static void
finish_head(struct resp_state *st, bool head_request)
{
	struct http1_response *r = &st->resp;

	if (head_request || r->status / 100 == 1 || r->status == 204 ||
	    r->status == 304)
		r->body = HTTP1_RESP_NONE;
	else if (st->seen_te)
		r->body = HTTP1_RESP_CHUNKED;
	else if (st->seen_cl)
		r->body = HTTP1_RESP_LENGTH;
	else
		r->body = HTTP1_RESP_CLOSE;
	if (r->body != HTTP1_RESP_LENGTH)
		r->content_length = 0;
	r->upgrade = r->status == 101;
	r->upgrade_websocket =
	    r->upgrade && st->upgrades == 1 && st->upgrade_websocket;
	r->keep_alive = !st->conn_close &&
	    (r->minor_version == 1 || st->conn_keep) &&
	    r->body != HTTP1_RESP_CLOSE && !r->upgrade;
}

int
http1_response_parse(const char *data, size_t len, bool head_request,
    struct http1_response *resp, const char **ret_reason)
{
	struct resp_state st;
	size_t line_start = 0;
	const char *r = NULL;

	memset(&st, 0, sizeof(st));
	*ret_reason = NULL;
	for (size_t i = 0; i < len && r == NULL; i++) {
		unsigned char c = (unsigned char)data[i];

		/* The head is not complete, so byte i is in it. */
		if (i >= HTTP1_HEAD_MAX) {
			r = "headers_too_large";
			break;
		}
		if (c == '\0') {
			r = "nul";
			break;
		}
		if (c == '\n') {
			r = "bare_lf"; /* an LF after a CR is skipped below */
			break;
		}
		if (c != '\r')
			continue;
		if (i + 1 >= HTTP1_HEAD_MAX) {
			r = "headers_too_large"; /* so would its LF be */
			break;
		}
		if (i + 1 == len)
			return -EAGAIN; /* the LF has yet to come */
		if (data[i + 1] != '\n') {
			r = "bare_cr";
			break;
		}
		if (line_start > 0 && i == line_start) {
			finish_head(&st, head_request);
			st.resp.head_len = i + 2;
			*resp = st.resp;
			return 0;
		}
		if (line_start == 0)
			r = parse_status_line(&st, data, i);
		else
			r = parse_field_line(&st, data + line_start,
			    i - line_start);
		i++; /* the LF */
		line_start = i + 1;
	}
	if (r == NULL)
		return -EAGAIN;
	*ret_reason = r;
	return -EBADMSG;
}

/* --- the head the client gets ------------------------------------------ */

/* One field line of a head the parser accepted. */
struct field_line {
	const char *name, *value, *line;
	size_t nlen, vlen, len;
};

/* Reads the field line at offset at into f: the offset after it, or 0 at
 * the empty line. */
static size_t
next_field(const char *head, size_t len, size_t at, struct field_line *f)
{
	const char *eol = memchr(head + at, '\r', len - at);
	size_t end, colon;

	if (eol == NULL || eol == head + at)
		return 0; /* the empty line */
	end = (size_t)(eol - head);
	f->line = head + at;
	f->len = end + 2 - at;
	colon = at;
	while (colon < end && head[colon] != ':')
		colon++;
	f->name = head + at;
	f->nlen = colon - at;
	size_t vs = colon + 1, ve = end;
	while (vs < ve && lex_ows((unsigned char)head[vs]))
		vs++;
	while (ve > vs && lex_ows((unsigned char)head[ve - 1]))
		ve--;
	f->value = head + vs;
	f->vlen = ve - vs;
	return end + 2;
}

int
http1_response_rewrite(const char *head, size_t len, bool upgrade, bool close,
    struct buf *out)
{
	return http1_response_rewrite_fields(head, len, upgrade, close, 0, NULL,
	    out);
}

int
http1_response_rewrite_fields(const char *head, size_t len, bool upgrade,
    bool close, unsigned flags, size_t *ret_dropped, struct buf *out)
{
	static const char *const hop[] = { "Connection", "Keep-Alive", "TE",
		"Trailer", "Upgrade", "Proxy-Connection" };
	const char *sl_end = memchr(head, '\r', len);
	struct field_line f, c;
	size_t at, k, dropped = 0;
	int r;

	if (ret_dropped != NULL)
		*ret_dropped = 0;
	if (sl_end == NULL || len < 4 || memcmp(head + len - 4, "\r\n\r\n", 4))
		return -EINVAL;
	at = (size_t)(sl_end - head) + 2;
	r = buf_append(out, head, at);
	while (r == 0 && (k = next_field(head, len, at, &f)) != 0) {
		bool drop = false;
		at = k;
		/* A switched protocol needs its Connection and Upgrade. */
		if (upgrade &&
		    (lex_eq_nocase(f.name, f.nlen, "Connection") ||
			lex_eq_nocase(f.name, f.nlen, "Upgrade"))) {
			r = buf_append(out, f.line, f.len);
			continue;
		}
		if ((flags & HTTP1_RESP_DROP_COOKIES) &&
		    (lex_eq_nocase(f.name, f.nlen, "Set-Cookie") ||
			lex_eq_nocase(f.name, f.nlen, "Set-Cookie2"))) {
			dropped++;
			continue;
		}
		for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
			drop = drop || lex_eq_nocase(f.name, f.nlen, hop[i]);
		drop = drop ||
		    (f.nlen >= 6 && strncasecmp(f.name, "Proxy-", 6) == 0);
		for (size_t cat = (size_t)(sl_end - head) + 2, ck;
		     !drop && (ck = next_field(head, len, cat, &c)) != 0;
		     cat = ck)
			drop = lex_eq_nocase(c.name, c.nlen, "Connection") &&
			    lex_list_has(c.value, c.vlen, f.name, f.nlen);
		if (!drop)
			r = buf_append(out, f.line, f.len);
	}
	if (r == 0 && close && !upgrade)
		r = buf_append(out, "Connection: close\r\n", 19);
	if (r == 0)
		r = buf_append(out, "\r\n", 2);
	if (r == 0 && ret_dropped != NULL)
		*ret_dropped = dropped;
	return r;
}
