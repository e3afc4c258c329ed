/*
 * The HTTP/1.1 answer reader (http_answer.h for the contract and the
 * refusal reasons). A state machine over the bytes as they come: head
 * lines (and trailers) are kept in the head buf and judged whole once
 * their CRLF is in; chunk-size lines are judged a byte at a time and not
 * kept; body bytes are copied in runs. Nothing depends on where a feed
 * ends, which is what makes the result the same however the bytes are
 * cut.
 */
#include "http_answer.h"
#include "util.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

enum {
	S_LINE, /* a head or trailer line */
	S_LINE_LF, /* its CR seen */
	S_CHUNK_SIZE,
	S_CHUNK_WS, /* BWS after the size: only ';' may follow */
	S_CHUNK_EXT,
	S_CHUNK_LF,
	S_CHUNK_DATA,
	S_CHUNK_DATA_CR,
	S_CHUNK_DATA_LF,
	S_BODY_LENGTH,
	S_BODY_CLOSE,
	S_DONE,
	S_FAILED,
};

/* Whether the trailers are being read: S_LINE's lines go there. */
#define IN_TRAILERS(a) ((a)->trailers != SIZE_MAX)

void
http_answer_init(struct http_answer *a, bool no_body, size_t head_max,
    size_t body_max)
{
	*a = (struct http_answer){ .head = BUF_INIT(head_max),
		.body = BUF_INIT(body_max),
		.head_max = head_max,
		.no_body = no_body,
		.state = S_LINE,
		.trailers = SIZE_MAX };
}

static void
wipe_free(struct buf *b)
{
	if (b->data != NULL)
		explicit_bzero(b->data, b->cap + 1);
	buf_free(b);
}

void
http_answer_free(struct http_answer *a)
{
	if (a == NULL)
		return;
	wipe_free(&a->head);
	wipe_free(&a->body);
}

static int
fail(struct http_answer *a, int r, const char *reason)
{
	a->state = S_FAILED;
	a->result = r;
	a->reason = reason;
	return r;
}

static int
done(struct http_answer *a)
{
	/* The body is text to read in place, empty or not. */
	if (buf_append(&a->body, "", 0) < 0)
		return fail(a, -ENOMEM, "no_memory");
	a->state = S_DONE;
	a->result = 1;
	return 1;
}

static bool
is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

static bool
is_ctl(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* "HTTP/1.x SP 3DIGIT [SP reason-phrase]" in s[0..n): 0, or the fault. */
static int
status_line(struct http_answer *a, const char *s, size_t n)
{
	const char *sp = memchr(s, ' ', n);
	size_t vlen = sp != NULL ? (size_t)(sp - s) : n;

	if (n < 5 || memcmp(s, "HTTP/", 5) != 0)
		return fail(a, -EIO, "malformed");
	if (vlen != 8 || memcmp(s, "HTTP/1.", 7) != 0 ||
	    (s[7] != '0' && s[7] != '1'))
		return fail(a, -EIO, "bad_version");
	if (n < 12 || !(s[9] >= '1' && s[9] <= '5') || s[10] < '0' ||
	    s[10] > '9' || s[11] < '0' || s[11] > '9' ||
	    (n > 12 && s[12] != ' '))
		return fail(a, -EIO, "bad_status");
	for (size_t i = 13; i < n; i++)
		if (is_ctl((unsigned char)s[i]))
			return fail(a, -EIO, "malformed");
	a->minor = s[7] - '0';
	a->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
	return 0;
}

/* A field line s[0..n), in the head or the trailers: 0, or the fault. */
static int
field_line(struct http_answer *a, const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n), *v, *ve = s + n;
	size_t name;

	if (s[0] == ' ' || s[0] == '\t')
		return fail(a, -EIO, "obs_fold");
	if (colon == NULL)
		return fail(a, -EIO, "malformed");
	name = (size_t)(colon - s);
	if (name == 0)
		return fail(a, -EIO, "bad_header_name");
	if (s[name - 1] == ' ' || s[name - 1] == '\t')
		return fail(a, -EIO, "space_before_colon");
	for (size_t i = 0; i < name; i++)
		if (!is_tchar((unsigned char)s[i]))
			return fail(a, -EIO, "bad_header_name");
	for (v = colon + 1; v < ve; v++)
		if (is_ctl((unsigned char)*v))
			return fail(a, -EIO, "bad_header_value");
	if (IN_TRAILERS(a))
		return 0; /* checked, never read */
	for (v = colon + 1; v < ve && (*v == ' ' || *v == '\t'); v++)
		;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	if (name == 14 && strncasecmp(s, "Content-Length", 14) == 0) {
		if (a->seen_cl)
			return fail(a, -EIO, "duplicate_cl");
		a->seen_cl = true;
		if (ve == v || ve - v > 19)
			return fail(a, -EIO, "bad_cl");
		a->cl = 0;
		for (; v < ve; v++) {
			if (*v < '0' || *v > '9')
				return fail(a, -EIO, "bad_cl");
			a->cl = a->cl * 10 + (uint64_t)(*v - '0');
		}
	} else if (name == 17 && strncasecmp(s, "Transfer-Encoding", 17) == 0) {
		if (a->seen_te)
			return fail(a, -EIO, "duplicate_te");
		a->seen_te = true;
		if (ve - v != 7 || strncasecmp(v, "chunked", 7) != 0)
			return fail(a, -EIO, "unknown_te");
	}
	return 0;
}

/* The blank line that ends a head: what comes next, or the fault. */
static int
head_end(struct http_answer *a)
{
	if (a->seen_cl && a->seen_te)
		return fail(a, -EIO, "cl_and_te");
	if (a->seen_te && a->minor == 0)
		return fail(a, -EIO, "te_in_http10");
	if (a->status == 101)
		return fail(a, -EIO, "upgrade");
	if (a->status / 100 == 1) {
		/* Interim: the final answer follows; its bytes still count. */
		explicit_bzero(a->head.data, a->head.len);
		buf_reset(&a->head);
		a->status = a->minor = 0;
		a->seen_cl = a->seen_te = false;
		a->line = 0;
		return 0;
	}
	if (a->no_body || a->status == 204 || a->status == 304)
		return done(a);
	if (a->seen_te) {
		a->state = S_CHUNK_SIZE;
		return 0;
	}
	if (a->seen_cl) {
		if (a->cl > a->body.max)
			return fail(a, -EFBIG, "body_too_large");
		if (a->cl == 0)
			return done(a);
		a->left = a->cl;
		a->state = S_BODY_LENGTH;
		return 0;
	}
	a->state = S_BODY_CLOSE;
	return 0;
}

/* A line's CRLF is in: judges it (its bytes from a->line, CRLF kept). */
static int
line_end(struct http_answer *a)
{
	const char *s = a->head.data + a->line;
	size_t n = a->head.len - a->line - 2;
	int r;

	if (n == 0 && IN_TRAILERS(a)) {
		/* The trailers are checked and dropped: the head stays. */
		explicit_bzero(a->head.data + a->trailers,
		    a->head.len - a->trailers);
		a->head.len = a->trailers;
		a->head.data[a->head.len] = '\0';
		return done(a);
	}
	if (n == 0 && a->status == 0)
		return fail(a, -EIO, "malformed");
	if (n == 0)
		return head_end(a);
	r = a->status == 0 ? status_line(a, s, n) : field_line(a, s, n);
	a->line = a->head.len;
	return r;
}

/* One byte of a head or trailer line. */
static int
head_byte(struct http_answer *a, unsigned char c)
{
	int r;

	if (a->head_seen >= a->head_max)
		return fail(a, -EFBIG, "headers_too_large");
	a->head_seen++;
	if (c == '\0')
		return fail(a, -EIO, "nul");
	if (a->state == S_LINE_LF && c != '\n')
		return fail(a, -EIO, "bare_cr");
	if (a->state == S_LINE && c == '\n')
		return fail(a, -EIO, "bare_lf");
	if ((r = buf_append(&a->head, &c, 1)) < 0)
		return fail(a, r == -E2BIG ? -EFBIG : r,
		    r == -E2BIG ? "headers_too_large" : "no_memory");
	if (c == '\r') {
		a->state = S_LINE_LF;
		return 0;
	}
	if (a->state == S_LINE)
		return 0;
	a->state = S_LINE;
	return line_end(a);
}

/* One byte of a chunk-size line or of the CRLF after chunk data. */
static int
chunk_byte(struct http_answer *a, unsigned char c)
{
	int h;

	if (a->state == S_CHUNK_DATA_CR || a->state == S_CHUNK_DATA_LF) {
		if (c != (a->state == S_CHUNK_DATA_CR ? '\r' : '\n'))
			return fail(a, -EIO, "bad_chunk");
		a->state = a->state == S_CHUNK_DATA_CR ? S_CHUNK_DATA_LF
						       : S_CHUNK_SIZE;
		return 0;
	}
	if (a->state == S_CHUNK_LF) {
		if (c != '\n')
			return fail(a, -EIO, "bare_cr");
		a->chunk_line = a->chunk_digits = 0;
		if (a->left == 0) { /* the last chunk: trailers follow */
			a->trailers = a->head.len;
			a->line = a->head.len;
			a->state = S_LINE;
			return 0;
		}
		if (a->left > a->body.max - a->body.len)
			return fail(a, -EFBIG, "body_too_large");
		a->state = S_CHUNK_DATA;
		return 0;
	}
	if (++a->chunk_line > HTTP_ANSWER_CHUNK_LINE_MAX)
		return fail(a, -EIO, "bad_chunk");
	if (c == '\r' &&
	    (a->state == S_CHUNK_EXT ||
		(a->state == S_CHUNK_SIZE && a->chunk_digits > 0))) {
		a->state = S_CHUNK_LF;
		return 0;
	}
	if (c == '\n')
		return fail(a, -EIO, "bare_lf");
	switch (a->state) {
	case S_CHUNK_SIZE:
		if ((h = hex_digit((unsigned char)c)) >= 0) {
			if (++a->chunk_digits > 16)
				return fail(a, -EIO, "bad_chunk");
			a->left = a->left * 16 + (uint64_t)h;
			return 0;
		}
		if (a->chunk_digits == 0)
			return fail(a, -EIO, "bad_chunk");
		if (c == ';')
			a->state = S_CHUNK_EXT;
		else if (c == ' ' || c == '\t')
			a->state = S_CHUNK_WS;
		else
			return fail(a, -EIO, "bad_chunk");
		return 0;
	case S_CHUNK_WS:
		if (c == ';')
			a->state = S_CHUNK_EXT;
		else if (c != ' ' && c != '\t')
			return fail(a, -EIO, "bad_chunk");
		return 0;
	default: /* S_CHUNK_EXT */
		return is_ctl(c) ? fail(a, -EIO, "bad_chunk") : 0;
	}
}

int
http_answer_feed(struct http_answer *a, const void *p, size_t n,
    size_t *ret_used)
{
	const unsigned char *s = p;
	size_t i = 0;
	int r = 0;

	while (i < n && r == 0 && a->state != S_DONE && a->state != S_FAILED) {
		size_t k;

		switch (a->state) {
		case S_LINE:
		case S_LINE_LF:
			r = head_byte(a, s[i++]);
			break;
		case S_CHUNK_DATA:
		case S_BODY_LENGTH:
			k = n - i < a->left ? n - i : (size_t)a->left;
			if ((r = buf_append(&a->body, s + i, k)) < 0) {
				r = fail(a, r == -E2BIG ? -EFBIG : r,
				    r == -E2BIG ? "body_too_large"
						: "no_memory");
				break;
			}
			i += k;
			a->left -= k;
			if (a->left == 0 && a->state == S_BODY_LENGTH)
				r = done(a);
			else if (a->left == 0)
				a->state = S_CHUNK_DATA_CR;
			break;
		case S_BODY_CLOSE:
			if ((r = buf_append(&a->body, s + i, n - i)) < 0)
				r = fail(a, r == -E2BIG ? -EFBIG : r,
				    r == -E2BIG ? "body_too_large"
						: "no_memory");
			else
				i = n;
			break;
		default:
			r = chunk_byte(a, s[i++]);
			break;
		}
	}
	if (ret_used != NULL)
		*ret_used = i;
	if (a->state == S_DONE || a->state == S_FAILED) {
		if (r == 0 && ret_used != NULL)
			*ret_used = 0; /* complete before this feed */
		return a->result;
	}
	return r;
}

int
http_answer_close(struct http_answer *a)
{
	if (a->state == S_BODY_CLOSE)
		return done(a);
	if (a->state == S_DONE || a->state == S_FAILED)
		return a->result;
	return fail(a, -EIO, "cut_short");
}

int
http_answer_read(struct http_answer *a, http_answer_reader rd, void *ctx)
{
	char buf[16384];
	size_t got = 0;
	int r = 0;

	while (r == 0) {
		ssize_t k = rd(ctx, buf, sizeof(buf));

		if (k < 0) {
			r = (int)k;
			break;
		}
		if (k == 0)
			r = http_answer_close(a);
		else
			r = http_answer_feed(a, buf, (size_t)k, NULL);
		if ((size_t)k > got)
			got = (size_t)k;
	}
	explicit_bzero(buf, got);
	return r < 0 ? r : 0;
}

const char *
http_answer_field(const struct http_answer *a, const char *name,
    size_t *ret_len)
{
	size_t n = strlen(name);
	const char *p, *end;

	if (a->state != S_DONE)
		return NULL;
	p = a->head.data;
	end = p + a->head.len;
	/* Past the status line; every line ends in CRLF. */
	while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL && ++p < end) {
		const char *eol = memchr(p, '\r', (size_t)(end - p)), *v;

		if ((size_t)(eol - p) <= n || p[n] != ':' ||
		    strncasecmp(p, name, n) != 0)
			continue;
		for (v = p + n + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		while (eol > v && (eol[-1] == ' ' || eol[-1] == '\t'))
			eol--;
		*ret_len = (size_t)(eol - v);
		return v;
	}
	return NULL;
}
