/*
 * The strict HTTP/1.1 request parser, the upstream serialiser and the
 * chunked-body decoder (see http1.h for the contracts and the refusal
 * reasons). The head is scanned one byte at a time from where the last
 * call stopped, so feeding it a byte at a time costs what one call does;
 * each line is judged once, when its CRLF has arrived. Every loop is
 * bounded by the bytes given; nothing past them is read.
 */
#include "http1.h"

#include "lex.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

enum {
	P_REQUEST_LINE,
	P_HEADERS,
	P_DONE,
	P_FAILED,
};

static bool
is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	    (c >= 'A' && c <= 'F');
}

static unsigned
hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c - 'A' + 10;
}

/* --- targets and authorities ----------------------------------------- */

enum authority_result {
	AUTH_OK,
	AUTH_BAD,
	AUTH_USERINFO,
};

/*
 * Reads host[:port] from s[0..n): a reg-name of letters, digits, '-', '.'
 * and '_', or an IPv6 literal in brackets (no zone). The port is 1 to 5
 * digits, 1 to 65535. *ret_host is relative to s.
 */
static enum authority_result
parse_authority(const char *s, size_t n, bool port_required,
    struct http1_span *ret_host, bool *ret_has_port, uint16_t *ret_port)
{
	size_t i = 0, hlen;
	unsigned port = 0;

	if (memchr(s, '@', n) != NULL)
		return AUTH_USERINFO;
	if (n > 0 && s[0] == '[') {
		bool colon = false;

		for (i = 1; i < n && s[i] != ']'; i++) {
			unsigned char c = (unsigned char)s[i];
			if (c == ':')
				colon = true;
			else if (!is_hex(c) && c != '.')
				return AUTH_BAD;
		}
		if (i == n || !colon)
			return AUTH_BAD;
		i++; /* the ']' */
	} else {
		for (; i < n && s[i] != ':'; i++) {
			unsigned char c = (unsigned char)s[i];
			if (!((c >= 'a' && c <= 'z') ||
				(c >= 'A' && c <= 'Z') ||
				(c >= '0' && c <= '9') || c == '-' ||
				c == '.' || c == '_'))
				return AUTH_BAD;
		}
		if (i == 0)
			return AUTH_BAD;
	}
	hlen = i;
	if (i == n) {
		if (port_required)
			return AUTH_BAD;
		*ret_host = (struct http1_span){ 0, hlen };
		*ret_has_port = false;
		*ret_port = 0;
		return AUTH_OK;
	}
	if (s[i] != ':' || n - i - 1 < 1 || n - i - 1 > 5)
		return AUTH_BAD;
	for (i++; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return AUTH_BAD;
		port = port * 10 + (unsigned)(s[i] - '0');
	}
	if (port == 0 || port > 65535)
		return AUTH_BAD;
	*ret_host = (struct http1_span){ 0, hlen };
	*ret_has_port = true;
	*ret_port = (uint16_t)port;
	return AUTH_OK;
}

/* RFC 3986 pchar, '/' and '?', with %HH checked: path and query. */
static bool
valid_path_query(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '%') {
			if (n - i < 3 || !is_hex((unsigned char)s[i + 1]) ||
			    !is_hex((unsigned char)s[i + 2]))
				return false;
			i += 2;
			continue;
		}
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9'))
			continue;
		if (strchr("-._~!$&'()*+,;=:@/?", c) == NULL || c == '\0')
			return false;
	}
	return true;
}

/* Splits t (at off in data, len n) at its first '?' into path and query. */
static const char *
split_path_query(struct http1_request *req, const char *t, size_t off, size_t n)
{
	const char *q = memchr(t, '?', n);
	size_t plen = q != NULL ? (size_t)(q - t) : n;

	if (!valid_path_query(t, n))
		return "bad_target";
	req->path = (struct http1_span){ off, plen };
	req->has_query = q != NULL;
	if (q != NULL)
		req->query =
		    (struct http1_span){ off + plen + 1, n - plen - 1 };
	return NULL;
}

/* Fills req's form, scheme, host, port, path and query from its target. */
static const char *
parse_target(struct http1_parser *p, const char *data)
{
	struct http1_request *req = &p->req;
	const char *t = data + req->target.off;
	size_t n = req->target.len, off = req->target.off, alen;
	struct http1_span host;
	bool has_port;
	uint16_t port;
	enum authority_result ar;

	if (memchr(t, '#', n) != NULL)
		return "fragment";
	if (p->mode != HTTP1_MODE_PROXY) {
		if (req->connect || t[0] != '/')
			return "bad_target";
		req->form = HTTP1_FORM_ORIGIN;
		return split_path_query(req, t, off, n);
	}
	if (req->connect) {
		req->form = HTTP1_FORM_AUTHORITY;
		ar = parse_authority(t, n, true, &host, &has_port, &port);
		if (ar != AUTH_OK)
			return ar == AUTH_USERINFO ? "userinfo" : "bad_target";
		req->host = (struct http1_span){ off + host.off, host.len };
		req->port = port;
		return NULL;
	}
	if (n < 7 || strncasecmp(t, "http://", 7) != 0)
		return "bad_target";
	req->form = HTTP1_FORM_ABSOLUTE;
	req->scheme = (struct http1_span){ off, 4 };
	t += 7;
	off += 7;
	n -= 7;
	for (alen = 0; alen < n && t[alen] != '/' && t[alen] != '?'; alen++)
		;
	ar = parse_authority(t, alen, false, &host, &has_port, &port);
	if (ar != AUTH_OK)
		return ar == AUTH_USERINFO ? "userinfo" : "bad_target";
	req->host = (struct http1_span){ off + host.off, host.len };
	req->port = has_port ? port : 80;
	if (alen == n) {
		req->path = (struct http1_span){ off + n, 0 };
		return NULL;
	}
	return split_path_query(req, t + alen, off + alen, n - alen);
}

/* --- the request line and the fields --------------------------------- */

static const char *
parse_request_line(struct http1_parser *p, const char *data, size_t start,
    size_t end)
{
	struct http1_request *req = &p->req;
	const char *s = data + start, *sp1, *sp2, *v;
	size_t n = end - start, vlen;

	if (n == 0)
		return "malformed";
	sp1 = memchr(s, ' ', n);
	if (sp1 == NULL)
		return "malformed";
	if (!lex_token(s, (size_t)(sp1 - s)))
		return "bad_method";
	req->method = (struct http1_span){ start, (size_t)(sp1 - s) };
	req->connect = req->method.len == 7 && memcmp(s, "CONNECT", 7) == 0;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(s + n - sp1 - 1));
	if (sp2 == NULL || sp2 == sp1 + 1)
		return "malformed";
	for (const char *c = sp1 + 1; c < sp2; c++)
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
			return "bad_target";
	req->target = (struct http1_span){ start + (size_t)(sp1 + 1 - s),
		(size_t)(sp2 - sp1 - 1) };
	v = sp2 + 1;
	vlen = (size_t)(s + n - v);
	if (vlen == 8 && memcmp(v, "HTTP/1.1", 8) == 0)
		req->minor_version = 1;
	else if (vlen == 8 && memcmp(v, "HTTP/1.0", 8) == 0)
		req->minor_version = 0;
	else if (memchr(v, ' ', vlen) != NULL)
		return "malformed";
	else
		return "bad_version";
	return parse_target(p, data);
}

static const char *
parse_content_length(struct http1_request *req, const char *v, size_t n)
{
	uint64_t cl;

	if (!lex_content_length(v, n, HTTP1_CL_MAX, &cl))
		return "bad_cl";
	req->body = HTTP1_BODY_LENGTH;
	req->content_length = cl;
	return NULL;
}

static const char *
parse_field_line(struct http1_parser *p, const char *data, size_t start,
    size_t end)
{
	struct http1_request *req = &p->req;
	const char *s = data + start, *v, *bad;
	size_t nlen, vs, ve;

	if ((bad = lex_field_line(s, end - start, &nlen, &vs, &ve)) != NULL)
		return bad;
	if (req->nheaders == HTTP1_FIELDS_MAX)
		return "headers_too_large";
	req->headers[req->nheaders++] = (struct http1_header){
		.name = { start, nlen },
		.value = { start + vs, ve - vs },
	};
	v = s + vs;
	if (lex_eq_nocase(s, nlen, "Host")) {
		if (p->seen_host)
			return "duplicate_host";
		p->seen_host = true;
		p->host_value = (struct http1_span){ start + vs, ve - vs };
	} else if (lex_eq_nocase(s, nlen, "Content-Length")) {
		if (p->seen_cl)
			return "duplicate_cl";
		if (p->seen_te)
			return "cl_and_te";
		p->seen_cl = true;
		return parse_content_length(req, v, ve - vs);
	} else if (lex_eq_nocase(s, nlen, "Transfer-Encoding")) {
		if (p->seen_te)
			return "duplicate_te";
		if (p->seen_cl)
			return "cl_and_te";
		p->seen_te = true;
		if (req->minor_version == 0)
			return "te_in_http10";
		if (!lex_eq_nocase(v, ve - vs, "chunked"))
			return "unknown_te";
		req->body = HTTP1_BODY_CHUNKED;
	} else if (lex_eq_nocase(s, nlen, "Upgrade")) {
		/* A second field, or a list, asks for something else too. */
		req->upgrade_websocket =
		    !req->upgrade && lex_eq_nocase(v, ve - vs, "websocket");
		req->upgrade = true;
	} else if (lex_eq_nocase(s, nlen, "Content-Type")) {
		/* nginx reads the first, the override judge its own:
		 * one only (override.h). */
		if (p->seen_ct)
			return "duplicate_ct";
		p->seen_ct = true;
	}
	return NULL;
}

/* The checks that need the whole head. */
static const char *
finish_head(struct http1_parser *p, const char *data)
{
	struct http1_request *req = &p->req;
	bool close = false, keep = false, has_port;
	struct http1_span host;
	uint16_t port;
	const char *r;

	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http1_header *h = &req->headers[i];
		if (!lex_eq_nocase(data + h->name.off, h->name.len,
			"Connection"))
			continue;
		r = lex_connection(data + h->value.off, h->value.len, &close,
		    &keep);
		if (r != NULL)
			return r;
	}
	req->keep_alive = !close && (req->minor_version == 1 || keep);
	if (req->connect && http1_has_body(req))
		return "connect_body";
	/* A body where the method gives it no meaning: a server that reads
	 * none there takes it as its next request, never judged. */
	if (http1_has_body(req)) {
		const char *m = data + req->method.off;
		size_t ml = req->method.len;
		if (ml == 3 && memcmp(m, "GET", 3) == 0)
			return "body_on_get";
		if (ml == 4 && memcmp(m, "HEAD", 4) == 0)
			return "body_on_head";
		if (ml == 5 && memcmp(m, "TRACE", 5) == 0)
			return "body_on_trace";
	}
	if (!p->seen_host) {
		if (req->minor_version == 1 || p->mode != HTTP1_MODE_PROXY)
			return "missing_host";
		return NULL;
	}
	if (parse_authority(data + p->host_value.off, p->host_value.len, false,
		&host, &has_port, &port) != AUTH_OK)
		return "bad_host";
	host.off += p->host_value.off;
	if (p->mode != HTTP1_MODE_PROXY) {
		req->host = host;
		req->port = has_port                     ? port
		    : p->mode == HTTP1_MODE_ORIGIN_PLAIN ? 80
							 : 443;
		return NULL;
	}
	/* A CONNECT whose Host names the job's relay (Node's default: the
	 * proxy it dials) is unambiguous: its target is the request line's
	 * alone and nothing of its head goes upstream. */
	if (req->connect && has_port && port == HTTP1_RELAY_PORT &&
	    ((host.len == 9 && strncmp(data + host.off, "127.0.0.1", 9) == 0) ||
		(host.len == 9 &&
		    strncasecmp(data + host.off, "localhost", 9) == 0)))
		return NULL;
	if (!has_port)
		port = req->connect ? 443 : 80;
	if (port != req->port || host.len != req->host.len ||
	    strncasecmp(data + host.off, data + req->host.off, host.len) != 0)
		return "host_mismatch";
	return NULL;
}

bool
http1_has_body(const struct http1_request *req)
{
	return req->body == HTTP1_BODY_CHUNKED ||
	    (req->body == HTTP1_BODY_LENGTH && req->content_length > 0);
}

bool
http1_close_after_body(const struct http1_request *req, const char *data)
{
	const char *m = data + req->method.off;
	size_t ml = req->method.len;

	if (!http1_has_body(req))
		return false;
	return !((ml == 4 && memcmp(m, "POST", 4) == 0) ||
	    (ml == 3 && memcmp(m, "PUT", 3) == 0) ||
	    (ml == 5 && memcmp(m, "PATCH", 5) == 0));
}

void
http1_parser_init(struct http1_parser *p, enum http1_mode mode)
{
	memset(p, 0, sizeof(*p));
	p->mode = mode;
	p->state = P_REQUEST_LINE;
}

/* The launcher's origin line (http1.h): its words after the prefix. */
static int
origin_words(const char *w, size_t n, struct http1_origin_line *o)
{
	static const struct {
		const char *word;
		enum http1_origin kind;
	} kinds[] = {
		{ "relay", HTTP1_ORIGIN_RELAY },
		{ "capture", HTTP1_ORIGIN_CAPTURE },
		{ "dns", HTTP1_ORIGIN_DNS },
		{ "direct tcp", HTTP1_ORIGIN_DIRECT_TCP },
		{ "direct udp", HTTP1_ORIGIN_DIRECT_UDP },
	};
	static const char http[] = "capture-http ";
	const size_t hl = sizeof(http) - 1;

	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (n == strlen(kinds[i].word) &&
		    memcmp(w, kinds[i].word, n) == 0) {
			o->kind = kinds[i].kind;
			return 0;
		}
	if (n <= hl || memcmp(w, http, hl) != 0)
		return -EBADMSG;
	w += hl;
	n -= hl;
	const char *sp = memchr(w, ' ', n);
	size_t hn = sp != NULL ? (size_t)(sp - w) : 0, pn;
	if (hn == 0 || hn >= sizeof(o->host))
		return -EBADMSG;
	for (size_t i = 0; i < hn; i++)
		if (!((w[i] >= 'a' && w[i] <= 'z') ||
			(w[i] >= 'A' && w[i] <= 'Z') ||
			(w[i] >= '0' && w[i] <= '9') || w[i] == '-' ||
			w[i] == '.' || w[i] == '_'))
			return -EBADMSG;
	memcpy(o->host, w, hn);
	o->host[hn] = '\0';
	pn = n - hn - 1;
	unsigned long port = 0;
	if (pn == 0 || pn > 5)
		return -EBADMSG;
	for (size_t i = 0; i < pn; i++) {
		char ch = sp[1 + i];
		if (ch < '0' || ch > '9')
			return -EBADMSG;
		port = port * 10 + (unsigned long)(ch - '0');
	}
	if (port == 0 || port > 65535)
		return -EBADMSG;
	o->kind = HTTP1_ORIGIN_CAPTURE_HTTP;
	o->port = (uint16_t)port;
	return 0;
}

int
http1_origin_parse(const char *data, size_t len, struct http1_origin_line *o,
    size_t *ret_used)
{
	const size_t pl = sizeof(HTTP1_ORIGIN_PREFIX) - 1;
	const char *eol;

	*ret_used = 0;
	if (memcmp(data, HTTP1_ORIGIN_PREFIX, len < pl ? len : pl) != 0)
		return -ENOENT;
	if (len < pl)
		return -EAGAIN;
	eol =
	    memchr(data, '\n', len < HTTP1_ORIGIN_MAX ? len : HTTP1_ORIGIN_MAX);
	if (eol == NULL)
		return len < HTTP1_ORIGIN_MAX ? -EAGAIN : -EBADMSG;
	if (eol - data < (ptrdiff_t)pl + 1 || eol[-1] != '\r')
		return -EBADMSG;
	if (origin_words(data + pl, (size_t)(eol - 1 - data) - pl, o) < 0)
		return -EBADMSG;
	*ret_used = (size_t)(eol + 1 - data);
	return 0;
}

/* Judges the line data[p->line_start..end), its CRLF at end. */
static const char *
process_line(struct http1_parser *p, const char *data, size_t end)
{
	const char *r;

	if (p->state == P_REQUEST_LINE) {
		r = parse_request_line(p, data, p->line_start, end);
		p->state = P_HEADERS;
		p->headers_start = end + 2;
		return r;
	}
	if (end == p->line_start) {
		r = finish_head(p, data);
		p->state = P_DONE;
		p->consumed = end + 2;
		return r;
	}
	if (end + 2 - p->headers_start > HTTP1_HEADERS_MAX)
		return "headers_too_large";
	return parse_field_line(p, data, p->line_start, end);
}

int
http1_parse(struct http1_parser *p, const char *data, size_t len,
    size_t *ret_consumed)
{
	const char *r = NULL;

	if (p->state == P_FAILED)
		return -EBADMSG;
	if (p->state == P_DONE) {
		*ret_consumed = p->consumed;
		return 0;
	}
	if (len < p->scan)
		return -EINVAL;
	while (p->scan < len) {
		size_t i = p->scan;
		unsigned char c = (unsigned char)data[i];

		if (c == '\0') {
			r = "nul";
			break;
		}
		if (c == '\n') {
			r = "bare_lf";
			break;
		}
		if (c != '\r' && p->state == P_REQUEST_LINE &&
		    i - p->line_start >= HTTP1_LINE_MAX) {
			r = "line_too_long";
			break;
		}
		if (c != '\r' && p->state == P_HEADERS &&
		    i - p->headers_start >= HTTP1_HEADERS_MAX) {
			r = "headers_too_large";
			break;
		}
		if (c != '\r') {
			p->scan = i + 1;
			continue;
		}
		if (i + 1 == len)
			return -EAGAIN; /* the LF has yet to come */
		if (data[i + 1] != '\n') {
			r = "bare_cr";
			break;
		}
		r = process_line(p, data, i);
		if (r != NULL)
			break;
		p->scan = p->line_start = i + 2;
		if (p->state == P_DONE) {
			*ret_consumed = p->consumed;
			return 0;
		}
	}
	if (r == NULL)
		return -EAGAIN;
	p->state = P_FAILED;
	p->reason = r;
	return -EBADMSG;
}

const struct http1_header *
http1_find_header(const struct http1_request *req, const char *data,
    const char *name)
{
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http1_header *h = &req->headers[i];
		if (lex_eq_nocase(data + h->name.off, h->name.len, name))
			return h;
	}
	return NULL;
}

/* --- the upstream head ----------------------------------------------- */

static bool
is_hop_by_hop(const struct http1_request *req, const char *data,
    const char *name, size_t n, unsigned flags)
{
	static const char *const hop[] = { "Host", "Content-Length",
		"Transfer-Encoding", "Connection", "Keep-Alive", "TE",
		"Trailer", "HTTP2-Settings" };
	bool is_upgrade = lex_eq_nocase(name, n, "Upgrade");

	if (is_upgrade)
		return !(flags & HTTP1_KEEP_UPGRADE);
	if (n >= 6 && strncasecmp(name, "Proxy-", 6) == 0)
		return true;
	if ((flags & HTTP1_DROP_CREDENTIALS) &&
	    (lex_eq_nocase(name, n, "Authorization") ||
		lex_eq_nocase(name, n, "Cookie") ||
		(n >= 9 && strncasecmp(name, "X-Cordon-", 9) == 0)))
		return true;
	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (lex_eq_nocase(name, n, hop[i]))
			return true;
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http1_header *h = &req->headers[i];
		if (lex_eq_nocase(data + h->name.off, h->name.len,
			"Connection") &&
		    lex_list_has(data + h->value.off, h->value.len, name, n))
			return true;
	}
	return false;
}

static bool
valid_extra(const struct http1_field *f)
{
	if (f->name == NULL || f->value == NULL ||
	    !lex_token(f->name, strlen(f->name)))
		return false;
	for (const char *c = f->value; *c != '\0'; c++)
		if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f)
			return false;
	return true;
}

static int
serialize(const struct http1_request *req, const char *data,
    const struct http1_field *extra, size_t nextra, unsigned flags,
    struct buf *out)
{
	int r;

	/* By hand, not buf_printf (twice vsnprintf a line: 2,300
	 * instructions each, every request's every field); a head holds
	 * no NUL (http1_parse), so each span goes whole, as %.*s wrote
	 * it. */
	r = buf_append(out, data + req->method.off, req->method.len);
	r = r ?: buf_append(out, " /", req->path.len == 0 ? 2 : 1);
	r = r ?: buf_append(out, data + req->path.off, req->path.len);
	r = r ?: buf_append(out, "?", req->has_query ? 1 : 0);
	r = r ?: buf_append(out, data + req->query.off, req->query.len);
	r = r ?: BUF_LIT(out, " HTTP/1.1\r\n");
	for (size_t i = 0; r == 0 && i < nextra; i++) {
		r = buf_append(out, extra[i].name, strlen(extra[i].name));
		r = r ?: BUF_LIT(out, ": ");
		r = r
		    ?: buf_append(out, extra[i].value, strlen(extra[i].value));
		r = r ?: BUF_LIT(out, "\r\n");
	}
	for (size_t i = 0; r == 0 && i < req->nheaders; i++) {
		const struct http1_header *h = &req->headers[i];
		if (is_hop_by_hop(req, data, data + h->name.off, h->name.len,
			flags))
			continue;
		r = buf_append(out, data + h->name.off, h->name.len);
		r = r ?: BUF_LIT(out, ": ");
		r = r ?: buf_append(out, data + h->value.off, h->value.len);
		r = r ?: BUF_LIT(out, "\r\n");
	}
	if (r == 0 && (flags & HTTP1_KEEP_UPGRADE) && req->upgrade)
		r = BUF_LIT(out, "Connection: upgrade\r\n");
	else if (r == 0 && http1_close_after_body(req, data))
		r = BUF_LIT(out, "Connection: close\r\n");
	if (r == 0 && req->body == HTTP1_BODY_LENGTH) {
		r = BUF_LIT(out, "Content-Length: ");
		r = r ?: buf_append_u64(out, req->content_length);
		r = r ?: BUF_LIT(out, "\r\n");
	}
	if (r == 0 && req->body == HTTP1_BODY_CHUNKED)
		r = BUF_LIT(out, "Transfer-Encoding: chunked\r\n");
	if (r == 0)
		r = buf_append(out, "\r\n", 2);
	return r;
}

int
http1_serialize(const struct http1_request *req, const char *data,
    const struct http1_field *extra, size_t nextra, unsigned flags,
    struct buf *out)
{
	size_t saved = out->len;
	int r;

	if (req->connect || req->form == HTTP1_FORM_AUTHORITY)
		return -EINVAL;
	for (size_t i = 0; i < nextra; i++)
		if (!valid_extra(&extra[i]))
			return -EINVAL;
	r = serialize(req, data, extra, nextra, flags, out);
	if (r < 0 && out->data != NULL) {
		out->len = saved;
		out->data[saved] = '\0';
	}
	return r;
}

/* --- chunked bodies -------------------------------------------------- */

enum {
	C_SIZE_START, /* the first hex digit of a chunk size */
	C_SIZE, /* more hex digits, ';', whitespace before ';', or CR */
	C_SIZE_WS, /* whitespace after the size: more of it, or ';' */
	C_EXT, /* an extension, up to CR */
	C_SIZE_LF, /* the LF of a chunk-size line */
	C_DATA,
	C_DATA_CR,
	C_DATA_LF,
	C_TRAILER, /* after the last chunk: CR, or a trailer field */
	C_TRAILER_LF,
	C_TNAME, /* a trailer field's name, up to ':' (trailers_ok) */
	C_TVALUE, /* its value, up to CR */
	C_TFIELD_LF, /* the LF of a trailer field line */
	C_DONE,
	C_FAILED,
};

void
http1_chunked_init(struct http1_chunked *c, uint64_t max_body)
{
	memset(c, 0, sizeof(*c));
	c->state = C_SIZE_START;
	c->max_total = max_body;
}

void
http1_chunked_init_response(struct http1_chunked *c, uint64_t max_body)
{
	http1_chunked_init(c, max_body);
	c->trailers_ok = true;
}

/* A trailer field's name, one byte. */
static const char *
trailer_name_byte(struct http1_chunked *c, unsigned char b)
{
	if (b == ':') {
		if (c->tname_len == 0)
			return "bad_trailer";
		c->state = C_TVALUE;
		return NULL;
	}
	if (!lex_tchar(b))
		return "bad_trailer"; /* whitespace before ':' among them */
	c->tname_len++;
	return NULL;
}

/* Whether c reads a trailer field line, or starts one with byte b. */
static bool
in_trailer_field(const struct http1_chunked *c, unsigned char b)
{
	return c->state == C_TNAME || c->state == C_TVALUE ||
	    c->state == C_TFIELD_LF ||
	    (c->trailers_ok && c->state == C_TRAILER && b != '\r');
}

/* One framing byte; NULL or a refusal. */
static const char *
chunked_byte(struct http1_chunked *c, unsigned char b)
{
	if (b == '\0')
		return "nul";
	if (b == '\n' && c->state != C_SIZE_LF && c->state != C_DATA_LF &&
	    c->state != C_TRAILER_LF && c->state != C_TFIELD_LF)
		return "bare_lf";
	if (c->state >= C_TRAILER && c->state <= C_TFIELD_LF &&
	    ++c->trailer_bytes > HTTP1_HEADERS_MAX)
		return "trailers_too_large";
	if (c->state <= C_EXT && b != '\r' &&
	    ++c->line_len > HTTP1_CHUNK_LINE_MAX)
		return "chunk_line_too_long";
	switch (c->state) {
	case C_SIZE_START:
		if (!is_hex(b))
			return "bad_chunk_size";
		c->size = hex_value(b);
		c->state = C_SIZE;
		return NULL;
	case C_SIZE:
		if (is_hex(b)) {
			c->size = c->size * 16 + hex_value(b);
			if (c->size > HTTP1_CL_MAX)
				return "bad_chunk_size";
		} else if (b == ';') {
			c->state = C_EXT;
		} else if (lex_ows(b)) {
			c->state = C_SIZE_WS;
		} else if (b == '\r') {
			c->state = C_SIZE_LF;
		} else {
			return "bad_chunk_size";
		}
		return NULL;
	case C_SIZE_WS:
		if (b == ';')
			c->state = C_EXT;
		else if (!lex_ows(b))
			return "bad_chunk_size";
		return NULL;
	case C_EXT:
		if (b == '\r')
			c->state = C_SIZE_LF;
		else if ((b < 0x20 && b != '\t') || b == 0x7f)
			return "bad_chunk";
		return NULL;
	case C_SIZE_LF:
		if (b != '\n')
			return "bare_cr";
		c->line_len = 0;
		if (c->size > c->max_total - c->total)
			return "body_too_large";
		c->total += c->size;
		c->state = c->size == 0 ? C_TRAILER : C_DATA;
		return NULL;
	case C_DATA_CR:
		if (b != '\r')
			return "bad_chunk";
		c->state = C_DATA_LF;
		return NULL;
	case C_DATA_LF:
		if (b != '\n')
			return "bare_cr";
		c->state = C_SIZE_START;
		return NULL;
	case C_TRAILER:
		if (b == '\r') {
			c->state = C_TRAILER_LF;
			return NULL;
		}
		if (!c->trailers_ok)
			return "trailers";
		c->state = C_TNAME; /* SP or HTAB first: obs-fold, refused */
		c->tname_len = 0;
		return trailer_name_byte(c, b);
	case C_TNAME:
		return trailer_name_byte(c, b);
	case C_TVALUE:
		if (b == '\r')
			c->state = C_TFIELD_LF;
		else if ((b < 0x20 && b != '\t') || b == 0x7f)
			return "bad_trailer";
		return NULL;
	case C_TFIELD_LF:
		if (b != '\n')
			return "bare_cr";
		c->state = C_TRAILER;
		return NULL;
	case C_TRAILER_LF:
		if (b != '\n')
			return "bare_cr";
		c->state = C_DONE;
		return NULL;
	}
	return "bad_chunk";
}

int
http1_chunked_decode(struct http1_chunked *c, const char *in, size_t len,
    size_t *ret_used, size_t *ret_data_off, size_t *ret_data_len)
{
	size_t i = 0;

	*ret_used = 0;
	*ret_data_off = 0;
	*ret_data_len = 0;
	if (c->state == C_FAILED)
		return -EBADMSG;
	if (c->state == C_DONE)
		return 0;
	/* A call takes trailer field bytes alone, or none of them. */
	c->trailer_part = len > 0 && in_trailer_field(c, (unsigned char)in[0]);
	while (i < len) {
		const char *r;

		if (i > 0 &&
		    (c->trailer_part !=
			    in_trailer_field(c, (unsigned char)in[i]) ||
			(c->trailer_part && c->state == C_TRAILER))) {
			*ret_used = i;
			return -EAGAIN;
		}

		if (c->state == C_DATA) {
			size_t n = len - i;
			if (n > c->size)
				n = (size_t)c->size;
			c->size -= n;
			if (c->size == 0)
				c->state = C_DATA_CR;
			*ret_data_off = i;
			*ret_data_len = n;
			*ret_used = i + n;
			return -EAGAIN;
		}
		r = chunked_byte(c, (unsigned char)in[i]);
		i++;
		if (r != NULL) {
			c->state = C_FAILED;
			c->reason = r;
			return -EBADMSG;
		}
		if (c->state == C_DONE) {
			*ret_used = i;
			return 0;
		}
	}
	*ret_used = i;
	return -EAGAIN;
}
