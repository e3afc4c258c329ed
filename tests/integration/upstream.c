/*
 * Upstream servers for the integration tests of cordon-proxy: a thread
 * accepts on 127.0.0.1 and a thread per connection answers, with blocking
 * I/O. upstream_stop wakes the acceptor through a pipe and shuts every
 * connection's socket down, so that no thread stays blocked; the pipe also
 * cuts short the waits of /slow and of a lingering close.
 *
 * Also a test CA made by the openssl tool, and raw HTTP exchanges.
 */
#include "upstream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define HEAD_MAX (64 * 1024) /* a longer request head gets 400 */
#define BUF_MAX (128 * 1024)
#define LINE_MAX_LEN 8192 /* chunk-size and trailer lines */
#define BODY_KEEP 4096 /* a body shorter than this is echoed */
#define BYTES_MAX (1ULL << 30)
#define SLOW_MS 3000
#define LINGER_MS 1000

struct conn {
	struct upstream *u;
	int fd; /* -1 once closed (under u->lock) */
	SSL *ssl;
	bool ssl_broken; /* no SSL_shutdown after a fatal error */
	bool peer_eof;
	bool done; /* the thread is about to return (under u->lock) */
	pthread_t thread;
	struct conn *next;
	char *buf; /* read but not consumed: buf[0..len) */
	size_t len, cap;
};

struct upstream {
	int lfd;
	int wake[2]; /* written once by upstream_stop, never read */
	uint16_t port;
	SSL_CTX *ctx;
	pthread_t acceptor;
	pthread_mutex_t lock;
	struct conn *conns;
	char *last_head;
	char *need_name, *need_value; /* upstream_require */
	atomic_uint connections, requests;
	atomic_bool stopping;
};

struct body {
	char keep[BODY_KEEP];
	size_t total;
};

struct request {
	char *head; /* the raw head, NUL-terminated */
	char *work; /* a copy cut into the fields below */
	const char *method, *target, *version;
	const char *host, *upgrade, *ws_key, *expect;
	json_t *headers;
	bool close, chunked, has_clen, head_only;
	unsigned long long clen;
	struct body body;
};

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Waits up to ms for upstream_stop: true when it came. */
static bool
wait_stop(struct upstream *u, int ms)
{
	struct pollfd p = { u->wake[0], POLLIN, 0 };
	double end = now_ms() + ms;

	for (;;) {
		double left = end - now_ms();
		if (atomic_load(&u->stopping))
			return true;
		if (left <= 0)
			return false;
		if (poll(&p, 1, (int)left + 1) > 0)
			return true;
	}
}

/* ---- connection I/O ---- */

/* Reads once into c->buf: the count, 0 at the end, -1 on an error. */
static ssize_t
conn_fill(struct conn *c)
{
	ssize_t n;

	if (c->len == c->cap) {
		size_t cap = c->cap == 0 ? 16384 : c->cap * 2;
		char *p;
		if (cap > BUF_MAX)
			return -1;
		p = realloc(c->buf, cap);
		if (p == NULL)
			return -1;
		c->buf = p;
		c->cap = cap;
	}
	if (c->ssl != NULL) {
		int r =
		    SSL_read(c->ssl, c->buf + c->len, (int)(c->cap - c->len));
		if (r <= 0) {
			int e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_ZERO_RETURN) {
				c->peer_eof = true;
				return 0;
			}
			c->ssl_broken = true;
			ERR_clear_error();
			return -1;
		}
		n = r;
	} else {
		do
			n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		while (n < 0 && errno == EINTR);
		if (n == 0)
			c->peer_eof = true;
	}
	if (n > 0)
		c->len += (size_t)n;
	return n;
}

static void
conn_consume(struct conn *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

static int
conn_write(struct conn *c, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n;
		if (c->ssl != NULL) {
			int chunk = len > 65536 ? 65536 : (int)len;
			int r = SSL_write(c->ssl, p, chunk);
			if (r <= 0) {
				c->ssl_broken = true;
				ERR_clear_error();
				return -1;
			}
			n = r;
		} else {
			n = send(c->fd, p, len, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads one CRLF-terminated line (CRLF dropped) into out: 0 or -1. */
static int
conn_line(struct conn *c, char *out, size_t outlen)
{
	for (;;) {
		char *eol = memmem(c->buf, c->len, "\r\n", 2);
		if (eol != NULL) {
			size_t n = (size_t)(eol - c->buf);
			if (n >= outlen)
				return -1;
			memcpy(out, c->buf, n);
			out[n] = '\0';
			conn_consume(c, n + 2);
			return 0;
		}
		if (c->len >= outlen || conn_fill(c) <= 0)
			return -1;
	}
}

static void
body_add(struct body *b, const char *p, size_t n)
{
	if (b->total < BODY_KEEP) {
		size_t k = BODY_KEEP - b->total < n ? BODY_KEEP - b->total : n;
		memcpy(b->keep + b->total, p, k);
	}
	b->total += n;
}

/* Reads n bytes of body: 0 or -1. */
static int
read_body(struct conn *c, unsigned long long n, struct body *b)
{
	while (n > 0) {
		size_t k;
		if (c->len == 0 && conn_fill(c) <= 0)
			return -1;
		k = c->len < n ? c->len : (size_t)n;
		body_add(b, c->buf, k);
		conn_consume(c, k);
		n -= k;
	}
	return 0;
}

/* Decodes a chunked body, trailers dropped: 0, or -1 (1 when malformed). */
static int
read_chunked(struct conn *c, struct body *b)
{
	char line[LINE_MAX_LEN];

	for (;;) {
		unsigned long long size = 0;
		size_t digits = 0;
		char *p;
		if (conn_line(c, line, sizeof(line)) < 0)
			return -1;
		for (p = line;
		     *p != '\0' && strchr("0123456789abcdefABCDEF", *p) != NULL;
		     p++, digits++) {
			int v = *p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10;
			if (digits >= 15)
				return 1;
			size = size * 16 + (unsigned)v;
		}
		p += strspn(p, " \t");
		if (digits == 0 || (*p != '\0' && *p != ';'))
			return 1;
		if (size == 0)
			break;
		if (read_body(c, size, b) < 0 ||
		    conn_line(c, line, sizeof(line)) < 0)
			return -1;
		if (line[0] != '\0')
			return 1;
	}
	do
		if (conn_line(c, line, sizeof(line)) < 0)
			return -1;
	while (line[0] != '\0');
	return 0;
}

/* ---- requests ---- */

static void
request_free(struct request *r)
{
	free(r->head);
	free(r->work);
	json_decref(r->headers);
	memset(r, 0, sizeof(*r));
}

/* Whether the comma-separated list value holds token (any case). */
static bool
has_token(const char *value, const char *token)
{
	size_t tl = strlen(token);

	while (*value != '\0') {
		size_t n;
		value += strspn(value, " \t,");
		n = strcspn(value, ",");
		while (n > 0 && (value[n - 1] == ' ' || value[n - 1] == '\t'))
			n--;
		if (n == tl && strncasecmp(value, token, n) == 0)
			return true;
		value += strcspn(value, ",");
	}
	return false;
}

/* The last token of a comma-separated list is token (any case). */
static bool
last_token_is(const char *value, const char *token)
{
	const char *last = strrchr(value, ',');
	size_t n;

	last = last != NULL ? last + 1 : value;
	last += strspn(last, " \t");
	n = strlen(last);
	while (n > 0 && (last[n - 1] == ' ' || last[n - 1] == '\t'))
		n--;
	return n == strlen(token) && strncasecmp(last, token, n) == 0;
}

static json_t *
str_or_null(const char *s)
{
	json_t *v = s != NULL ? json_string(s) : NULL;

	return v != NULL ? v : json_null();
}

/* Cuts r->work into the request line and headers: 0 or -1 (malformed). */
static int
parse_head(struct request *r)
{
	char *line = r->work, *next;
	const char *connection = NULL, *te = NULL;
	bool keep_alive;

	next = strstr(line, "\r\n");
	*next = '\0';
	next += 2;
	r->method = strsep(&line, " ");
	r->target = strsep(&line, " ");
	r->version = line;
	if (r->method == NULL || r->target == NULL || r->version == NULL ||
	    r->method[0] == '\0' || r->target[0] == '\0' ||
	    strchr(r->version, ' ') != NULL ||
	    strncmp(r->version, "HTTP/1.", 7) != 0)
		return -1;

	r->headers = json_array();
	while (*next != '\0') {
		char *name = next, *value, *end;
		next = strstr(next, "\r\n");
		*next = '\0';
		next += 2;
		if (name[0] == ' ' || name[0] == '\t')
			return -1; /* obsolete line folding */
		value = strchr(name, ':');
		if (value == NULL || value == name)
			return -1;
		*value++ = '\0';
		if (name[strcspn(name, " \t")] != '\0')
			return -1;
		value += strspn(value, " \t");
		end = value + strlen(value);
		while (end > value && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		json_array_append_new(r->headers,
		    json_pack("[o, o]", str_or_null(name), str_or_null(value)));

		if (strcasecmp(name, "Host") == 0)
			r->host = value;
		else if (strcasecmp(name, "Connection") == 0)
			connection = value;
		else if (strcasecmp(name, "Upgrade") == 0)
			r->upgrade = value;
		else if (strcasecmp(name, "Sec-WebSocket-Key") == 0)
			r->ws_key = value;
		else if (strcasecmp(name, "Expect") == 0)
			r->expect = value;
		else if (strcasecmp(name, "Transfer-Encoding") == 0)
			te = value;
		else if (strcasecmp(name, "Content-Length") == 0) {
			char *e;
			unsigned long long n;
			if (value[0] < '0' || value[0] > '9')
				return -1;
			errno = 0;
			n = strtoull(value, &e, 10);
			if (*e != '\0' || errno != 0 ||
			    (r->has_clen && n != r->clen))
				return -1;
			r->clen = n;
			r->has_clen = true;
		}
	}
	if (te != NULL) {
		if (!last_token_is(te, "chunked"))
			return -1;
		r->chunked = true;
	}
	if (strcmp(r->version, "HTTP/1.0") == 0)
		keep_alive =
		    connection != NULL && has_token(connection, "keep-alive");
	else
		keep_alive =
		    connection == NULL || !has_token(connection, "close");
	r->close = !keep_alive;
	r->head_only = strcmp(r->method, "HEAD") == 0;
	return 0;
}

/*
 * Reads a request, its body decoded: 0; 1 when the connection ended or
 * failed (nothing to answer); 2 when it was malformed (answer 400).
 */
static int
read_request(struct conn *c, struct request *r)
{
	struct upstream *u = c->u;
	char *end;
	size_t n;
	int rc;

	memset(r, 0, sizeof(*r));
	for (;;) {
		/* Empty lines before a request are to be ignored. */
		while (c->len >= 2 && memcmp(c->buf, "\r\n", 2) == 0)
			conn_consume(c, 2);
		end = memmem(c->buf, c->len, "\r\n\r\n", 4);
		if (end != NULL)
			break;
		if (c->len > HEAD_MAX)
			return 2;
		if (conn_fill(c) <= 0)
			return 1;
	}
	n = (size_t)(end - c->buf) + 4;
	if (n > HEAD_MAX)
		return 2;
	/* Copies, not strndup: the buffer has no NUL past the head when a
	 * body fills it (ASan's strict_string_checks read on to find one). */
	r->head = malloc(n + 1);
	r->work = malloc(n - 1); /* each line ends in CRLF */
	if (r->head != NULL && r->work != NULL) {
		memcpy(r->head, c->buf, n);
		r->head[n] = '\0';
		memcpy(r->work, c->buf, n - 2);
		r->work[n - 2] = '\0';
	}
	if (r->head == NULL || r->work == NULL)
		return 1;
	if (strlen(r->head) != n)
		return 2; /* a NUL in the head */
	conn_consume(c, n);

	pthread_mutex_lock(&u->lock);
	free(u->last_head);
	u->last_head = strdup(r->head);
	pthread_mutex_unlock(&u->lock);

	if (parse_head(r) < 0)
		return 2;
	if (r->expect != NULL && strcasecmp(r->expect, "100-continue") == 0 &&
	    strcmp(r->version, "HTTP/1.0") != 0 &&
	    (r->chunked || r->clen > 0)) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		if (conn_write(c, cont, sizeof(cont) - 1) < 0)
			return 1;
	}
	if (r->chunked) {
		rc = read_chunked(c, &r->body);
		if (rc != 0)
			return rc < 0 ? 1 : 2;
	} else if (r->has_clen && read_body(c, r->clen, &r->body) < 0)
		return 1;
	return 0;
}

/* ---- answers ---- */

/*
 * Sends a head with status, extra header lines (each ending in CRLF, or
 * ""), a Content-Length when clen >= 0, Connection: close when r->close,
 * then body (len bytes) unless the request was HEAD: 0 or -1.
 */
static int
send_answer(struct conn *c, const struct request *r, const char *status,
    const char *extra, long long clen, const char *body, size_t len)
{
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	int rc;

	if (f == NULL)
		return -1;
	fprintf(f, "HTTP/1.1 %s\r\n%s", status, extra);
	if (clen >= 0)
		fprintf(f, "Content-Length: %lld\r\n", clen);
	if (r->close)
		fputs("Connection: close\r\n", f);
	fputs("\r\n", f);
	if (!r->head_only && len > 0)
		fwrite(body, 1, len, f);
	if (fclose(f) != 0) {
		free(out);
		return -1;
	}
	rc = conn_write(c, out, outlen);
	free(out);
	return rc;
}

static int answer_echo_as(struct conn *c, const struct request *r,
    size_t chunk);

static int
answer_echo(struct conn *c, const struct request *r)
{
	return answer_echo_as(c, r, 0);
}

/* The echo, as a chunked body of chunk-byte chunks when chunk > 0. */
static int
answer_echo_as(struct conn *c, const struct request *r, size_t chunk)
{
	const struct body *b = &r->body;
	json_t *body = NULL, *o;
	char *text;
	int rc;

	if (b->total < BODY_KEEP)
		body = json_stringn(b->keep, b->total);
	o = json_pack("{s:o, s:o, s:o, s:O, s:I, s:o}", "method",
	    str_or_null(r->method), "target", str_or_null(r->target), "host",
	    str_or_null(r->host), "headers", r->headers, "body_len",
	    (json_int_t)b->total, "body", body != NULL ? body : json_null());
	text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (text == NULL)
		return -1;
	if (chunk > 0) {
		size_t len = strlen(text), n = 0;
		size_t cap = len + (len / chunk + 1) * 24 + 8;
		char *framed = malloc(cap);
		if (framed == NULL) {
			free(text);
			return -1;
		}
		for (size_t off = 0; off < len; off += chunk) {
			size_t m = len - off < chunk ? len - off : chunk;
			n +=
			    (size_t)snprintf(framed + n, cap - n, "%zx\r\n", m);
			memcpy(framed + n, text + off, m);
			n += m;
			memcpy(framed + n, "\r\n", 2);
			n += 2;
		}
		memcpy(framed + n, "0\r\n\r\n", 5);
		n += 5;
		rc = send_answer(c, r, "200 OK",
		    "Content-Type: application/json\r\n"
		    "Transfer-Encoding: chunked\r\n",
		    -1, framed, n);
		free(framed);
		free(text);
		return rc;
	}
	rc = send_answer(c, r, "200 OK", "Content-Type: application/json\r\n",
	    (long long)strlen(text), text, strlen(text));
	free(text);
	return rc;
}

/* /records: the head and the body as two writes (two TLS records) that
 * leave in one TCP segment (TCP_CORK around them), as python's
 * http.server writes an answer: a reader that takes both in one read
 * must still hand on the second. 0 or -1. */
static int
answer_records(struct conn *c, const struct request *r)
{
	static const char body[] = "the second record\n";
	int on = 1, off = 0, rc;

	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
	rc = send_answer(c, r, "200 OK", "Content-Type: text/plain\r\n",
	    (long long)sizeof(body) - 1, NULL, 0);
	if (rc == 0 && !r->head_only)
		rc = conn_write(c, body, sizeof(body) - 1);
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	return rc;
}

static int
answer_bytes(struct conn *c, const struct request *r, unsigned long long n)
{
	char chunk[16384];

	if (send_answer(c, r, "200 OK",
		"Content-Type: application/octet-stream\r\n", (long long)n,
		NULL, 0) < 0)
		return -1;
	if (r->head_only)
		return 0;
	memset(chunk, 'x', sizeof(chunk));
	while (n > 0) {
		size_t k = n < sizeof(chunk) ? (size_t)n : sizeof(chunk);
		if (conn_write(c, chunk, k) < 0)
			return -1;
		n -= k;
	}
	return 0;
}

/* 101 to the protocol named proto, then echoes until the peer closes:
 * always -1 (the end). */
static int
answer_upgrade_to(struct conn *c, const struct request *r, const char *proto)
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	char head[256], accept[64] = "";
	int n;

	if (r->ws_key != NULL && strlen(r->ws_key) < 128) {
		unsigned char md[EVP_MAX_MD_SIZE];
		unsigned int mdlen = 0;
		char in[192];
		int k = snprintf(in, sizeof(in), "%s%s", r->ws_key, guid);
		if (k > 0 && (size_t)k < sizeof(in) &&
		    EVP_Digest(in, (size_t)k, md, &mdlen, EVP_sha1(), NULL) ==
			1) {
			k = snprintf(accept, sizeof(accept),
			    "Sec-WebSocket-Accept: ");
			EVP_EncodeBlock((unsigned char *)accept + k, md,
			    (int)mdlen);
			strcat(accept, "\r\n");
		}
	}
	n = snprintf(head, sizeof(head),
	    "HTTP/1.1 101 Switching Protocols\r\n"
	    "Upgrade: %.64s\r\nConnection: Upgrade\r\n%s\r\n",
	    proto, accept);
	if (n < 0 || (size_t)n >= sizeof(head) ||
	    conn_write(c, head, (size_t)n) < 0)
		return -1;
	for (;;) {
		if (c->len > 0) {
			if (conn_write(c, c->buf, c->len) < 0)
				return -1;
			c->len = 0;
		}
		if (conn_fill(c) <= 0)
			return -1;
	}
}

/* 0 to go on with the connection after an answer, -1 to close it. */
static int
then(int sent, const struct request *r)
{
	return sent < 0 || r->close ? -1 : 0;
}

static bool
path_is(const char *path, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(path, want, len) == 0;
}

/* Whether r has a field name (any case) whose value is value. */
static bool
has_header(const struct request *r, const char *name, const char *value)
{
	size_t i;
	json_t *h;

	json_array_foreach(r->headers, i, h)
	{
		const char *n = json_string_value(json_array_get(h, 0));
		const char *v = json_string_value(json_array_get(h, 1));
		if (n != NULL && v != NULL && strcasecmp(n, name) == 0 &&
		    strcmp(v, value) == 0)
			return true;
	}
	return false;
}

/* Answers r: 0 to go on with the connection, -1 to close it. */
static int
answer(struct conn *c, struct request *r)
{
	struct upstream *u = c->u;
	const char *path = r->target;
	size_t len;

	if (strncasecmp(path, "http://", 7) == 0 ||
	    strncasecmp(path, "https://", 8) == 0) {
		path = strstr(path, "://") + 3;
		path += strcspn(path, "/?#");
	}
	len = strcspn(path, "?#");

	atomic_fetch_add(&u->requests, 1);
	if (u->need_name != NULL && !has_header(r, u->need_name, u->need_value))
		return then(send_answer(c, r, "401 Unauthorized",
				"Content-Type: text/plain\r\n", 8, "no key\r\n",
				8),
		    r);
	if (path_is(path, len, "/redirect"))
		return then(send_answer(c, r, "302 Found",
				"Location: http://elsewhere.test/\r\n", 0, NULL,
				0),
		    r);
	if (path_is(path, len, "/chunked")) {
		static const char body[] =
		    "1\r\na\r\n2\r\nbb\r\n3\r\nccc\r\n0\r\n\r\n";
		return then(send_answer(c, r, "200 OK",
				"Content-Type: text/plain\r\n"
				"Transfer-Encoding: chunked\r\n",
				-1, body, sizeof(body) - 1),
		    r);
	}
	if (path_is(path, len, "/close")) {
		r->close = true;
		send_answer(c, r, "200 OK", "Content-Type: text/plain\r\n", -1,
		    "bye", 3);
		return -1;
	}
	if (len > 7 && strncmp(path, "/bytes/", 7) == 0 &&
	    strspn(path + 7, "0123456789") == len - 7 && len - 7 <= 10) {
		unsigned long long n = strtoull(path + 7, NULL, 10);
		if (n <= BYTES_MAX)
			return then(answer_bytes(c, r, n), r);
	}
	if (path_is(path, len, "/upgrade") && r->upgrade != NULL &&
	    has_token(r->upgrade, "websocket"))
		return answer_upgrade_to(c, r, "websocket");
	/* A server that switches to whatever it is asked (an h2c one), and
	 * one that switches to h2c whatever it is asked. */
	if (path_is(path, len, "/upgrade-any") && r->upgrade != NULL)
		return answer_upgrade_to(c, r, r->upgrade);
	if (path_is(path, len, "/upgrade-h2c") && r->upgrade != NULL)
		return answer_upgrade_to(c, r, "h2c");
	if (path_is(path, len, "/records"))
		return then(answer_records(c, r), r);
	if (path_is(path, len, "/echo-chunked"))
		return then(answer_echo_as(c, r, 5), r);
	if (path_is(path, len, "/slow") && wait_stop(u, SLOW_MS))
		return -1;
	return then(answer_echo(c, r), r);
}

/* ---- connections ---- */

/*
 * Ends c: a TLS close_notify when TLS still works and, when we are the
 * ones closing, a half-close and a short drain first, so that the peer
 * gets all of the answer rather than a reset.
 */
static void
conn_end(struct conn *c)
{
	struct upstream *u = c->u;

	if (c->ssl != NULL) {
		if (!c->ssl_broken)
			SSL_shutdown(c->ssl);
		ERR_clear_error();
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (!c->peer_eof && !atomic_load(&u->stopping) &&
	    shutdown(c->fd, SHUT_WR) == 0) {
		double end = now_ms() + LINGER_MS;
		char scratch[4096];
		for (;;) {
			struct pollfd p[2] = { { c->fd, POLLIN, 0 },
				{ u->wake[0], POLLIN, 0 } };
			double left = end - now_ms();
			if (left <= 0 || poll(p, 2, (int)left + 1) <= 0 ||
			    p[1].revents != 0 ||
			    recv(c->fd, scratch, sizeof(scratch),
				MSG_DONTWAIT) <= 0)
				break;
		}
	}
	pthread_mutex_lock(&u->lock);
	close(c->fd);
	c->fd = -1;
	c->done = true;
	pthread_mutex_unlock(&u->lock);
	free(c->buf);
	c->buf = NULL;
}

static void *
conn_main(void *arg)
{
	struct conn *c = arg;
	struct upstream *u = c->u;
	int one = 1;

	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->cap = 16384;
	c->buf = malloc(c->cap);
	if (c->buf == NULL)
		goto out;
	if (u->ctx != NULL) {
		c->ssl = SSL_new(u->ctx);
		if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1 ||
		    SSL_accept(c->ssl) != 1) {
			c->ssl_broken = true;
			goto out;
		}
	}
	while (!atomic_load(&u->stopping)) {
		struct request r;
		int rc = read_request(c, &r);
		if (rc == 2) {
			atomic_fetch_add(&u->requests, 1);
			r.close = true;
			r.head_only = false;
			send_answer(c, &r, "400 Bad Request",
			    "Content-Type: text/plain\r\n", 12, "bad request\n",
			    12);
		}
		if (rc == 0)
			rc = answer(c, &r);
		request_free(&r);
		if (rc != 0)
			break;
	}
out:
	conn_end(c);
	ERR_clear_error();
	return NULL;
}

/* Joins the threads of connections that ended (all when all is true). */
static void
reap(struct upstream *u, bool all)
{
	struct conn **pp = &u->conns;

	pthread_mutex_lock(&u->lock);
	while (*pp != NULL) {
		struct conn *c = *pp;
		if (!all && !c->done) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		pthread_mutex_unlock(&u->lock);
		pthread_join(c->thread, NULL);
		free(c);
		pthread_mutex_lock(&u->lock);
	}
	pthread_mutex_unlock(&u->lock);
}

static void *
accept_main(void *arg)
{
	struct upstream *u = arg;

	for (;;) {
		struct pollfd p[2] = { { u->lfd, POLLIN, 0 },
			{ u->wake[0], POLLIN, 0 } };
		struct conn *c;
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents != 0 || atomic_load(&u->stopping))
			break;
		if ((p[0].revents & POLLIN) == 0)
			continue;
		fd = accept4(u->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		atomic_fetch_add(&u->connections, 1);
		reap(u, false);
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		c->u = u;
		c->fd = fd;
		pthread_mutex_lock(&u->lock);
		if (pthread_create(&c->thread, NULL, conn_main, c) != 0) {
			pthread_mutex_unlock(&u->lock);
			fprintf(stderr,
			    "upstream: no thread for a connection\n");
			close(fd);
			free(c);
			continue;
		}
		c->next = u->conns;
		u->conns = c;
		pthread_mutex_unlock(&u->lock);
	}
	return NULL;
}

static SSL_CTX *
tls_context(const char *cert_file, const char *key_file)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		fprintf(stderr, "upstream: TLS with %s and %s:\n", cert_file,
		    key_file);
		ERR_print_errors_fp(stderr);
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
	return ctx;
}

struct upstream *
upstream_start(const char *cert_file, const char *key_file)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t slen = sizeof(sin);
	struct upstream *u = calloc(1, sizeof(*u));
	sigset_t pipe_set, old;
	int one = 1, err;

	if (u == NULL)
		return NULL;
	u->lfd = -1;
	u->wake[0] = u->wake[1] = -1;
	pthread_mutex_init(&u->lock, NULL);
	if ((cert_file != NULL) != (key_file != NULL)) {
		fprintf(stderr, "upstream: a certificate needs a key\n");
		goto fail;
	}
	if (cert_file != NULL &&
	    (u->ctx = tls_context(cert_file, key_file)) == NULL)
		goto fail;
	if (pipe2(u->wake, O_CLOEXEC) < 0 ||
	    (u->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(u->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) <
		0 ||
	    bind(u->lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(u->lfd, 512) < 0 ||
	    getsockname(u->lfd, (struct sockaddr *)&sin, &slen) < 0) {
		perror("upstream: listen");
		goto fail;
	}
	u->port = ntohs(sin.sin_port);

	/* The threads (the acceptor's inherit it) get EPIPE, not SIGPIPE. */
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	err = pthread_create(&u->acceptor, NULL, accept_main, u);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		fprintf(stderr, "upstream: pthread_create: %s\n",
		    strerror(err));
		goto fail;
	}
	return u;
fail:
	if (u->lfd >= 0)
		close(u->lfd);
	if (u->wake[0] >= 0) {
		close(u->wake[0]);
		close(u->wake[1]);
	}
	SSL_CTX_free(u->ctx);
	pthread_mutex_destroy(&u->lock);
	free(u);
	return NULL;
}

uint16_t
upstream_port(const struct upstream *u)
{
	return u->port;
}

unsigned
upstream_connections(const struct upstream *u)
{
	return atomic_load(&u->connections);
}

unsigned
upstream_requests(const struct upstream *u)
{
	return atomic_load(&u->requests);
}

char *
upstream_last_head(struct upstream *u)
{
	char *s;

	pthread_mutex_lock(&u->lock);
	s = u->last_head != NULL ? strdup(u->last_head) : NULL;
	pthread_mutex_unlock(&u->lock);
	return s;
}

void
upstream_stop(struct upstream *u)
{
	struct conn *c;
	ssize_t n;

	if (u == NULL)
		return;
	atomic_store(&u->stopping, true);
	do
		n = write(u->wake[1], "x", 1);
	while (n < 0 && errno == EINTR);
	pthread_join(u->acceptor, NULL);
	/* No new connections now; wake every thread that is blocked. */
	pthread_mutex_lock(&u->lock);
	for (c = u->conns; c != NULL; c = c->next)
		if (c->fd >= 0)
			shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&u->lock);
	reap(u, true);
	close(u->lfd);
	close(u->wake[0]);
	close(u->wake[1]);
	SSL_CTX_free(u->ctx);
	free(u->last_head);
	free(u->need_name);
	free(u->need_value);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

int
upstream_require(struct upstream *u, const char *name, const char *value)
{
	free(u->need_name);
	free(u->need_value);
	u->need_name = strdup(name);
	u->need_value = strdup(value);
	return u->need_name != NULL && u->need_value != NULL ? 0 : -1;
}

/* ---- the test CA ---- */

/* Runs openssl with args, stderr to errfile: 0, or -1 (and it printed). */
static int
run_openssl(const char *const *args, const char *errfile)
{
	posix_spawn_file_actions_t fa;
	char *argv[48];
	size_t argc = 0;
	pid_t pid;
	int status, err;

	argv[argc++] = "openssl";
	for (; *args != NULL && argc < 47; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null",
	    O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null",
	    O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, errfile,
	    O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fflush(NULL);
	err = posix_spawnp(&pid, "openssl", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err != 0) {
		fprintf(stderr, "test_ca: cannot run openssl: %s\n",
		    strerror(err));
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char line[1024];
		FILE *f = fopen(errfile, "r");
		fprintf(stderr, "test_ca: openssl");
		for (size_t i = 1; i < argc; i++)
			fprintf(stderr, " %s", argv[i]);
		if (WIFEXITED(status))
			fprintf(stderr, " exited with %d:\n",
			    WEXITSTATUS(status));
		else
			fprintf(stderr, " died of signal %d:\n",
			    WTERMSIG(status));
		while (f != NULL && fgets(line, sizeof(line), f) != NULL)
			fputs(line, stderr);
		if (f != NULL)
			fclose(f);
		return -1;
	}
	return 0;
}

static int
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "test_ca: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static bool
host_ok(const char *host)
{
	static const char allowed[] = "abcdefghijklmnopqrstuvwxyz"
				      "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				      "0123456789.-_*:";
	size_t n = strlen(host);

	return n > 0 && n < 200 && host[0] != '.' && host[0] != '-' &&
	    strspn(host, allowed) == n;
}

static const char ca_cnf[] = "[req]\n"
			     "distinguished_name = dn\n"
			     "prompt = no\n"
			     "[dn]\n"
			     "CN = cordon test CA\n"
			     "[v3_ca]\n"
			     "basicConstraints = critical,CA:TRUE\n"
			     "keyUsage = critical,keyCertSign,cRLSign\n"
			     "subjectKeyIdentifier = hash\n";

int
test_ca_make(const char *dir, const char *const *hosts)
{
	char cnf[1200], err[1200], cert[1200], key[1200], cacert[1200],
	    cakey[1200], text[1024];
	int rc = -1;

	if (snprintf(cnf, sizeof(cnf), "%s/openssl.cnf", dir) >=
		(int)sizeof(cnf) ||
	    snprintf(err, sizeof(err), "%s/openssl.err", dir) >=
		(int)sizeof(err) ||
	    snprintf(cacert, sizeof(cacert), "%s/ca.pem", dir) >=
		(int)sizeof(cacert) ||
	    snprintf(cakey, sizeof(cakey), "%s/ca.key", dir) >=
		(int)sizeof(cakey)) {
		fprintf(stderr, "test_ca: %s: too long\n", dir);
		return -1;
	}
	if (write_file(cnf, ca_cnf) < 0)
		goto out;
	{
		const char *args[] = { "req", "-x509", "-new", "-config", cnf,
			"-extensions", "v3_ca", "-newkey", "ec", "-pkeyopt",
			"ec_paramgen_curve:P-256", "-nodes", "-sha256", "-days",
			"2", "-keyout", cakey, "-out", cacert, NULL };
		if (run_openssl(args, err) < 0)
			goto out;
	}
	for (; hosts != NULL && *hosts != NULL; hosts++) {
		const char *h = *hosts;
		unsigned char addr[16];
		bool ip = inet_pton(AF_INET, h, addr) == 1 ||
		    inet_pton(AF_INET6, h, addr) == 1;
		if (!host_ok(h)) {
			fprintf(stderr, "test_ca: a bad host name: %s\n", h);
			goto out;
		}
		if (snprintf(cert, sizeof(cert), "%s/%s.pem", dir, h) >=
			(int)sizeof(cert) ||
		    snprintf(key, sizeof(key), "%s/%s.key", dir, h) >=
			(int)sizeof(key)) {
			fprintf(stderr, "test_ca: %s/%s: too long\n", dir, h);
			goto out;
		}
		if (snprintf(text, sizeof(text),
			"[req]\n"
			"distinguished_name = dn\n"
			"prompt = no\n"
			"[dn]\n"
			"CN = %s\n"
			"[v3_leaf]\n"
			"basicConstraints = critical,CA:FALSE\n"
			"keyUsage = critical,digitalSignature\n"
			"extendedKeyUsage = serverAuth\n"
			"subjectKeyIdentifier = hash\n"
			"authorityKeyIdentifier = keyid:always\n"
			"subjectAltName = DNS:%s%s%s\n",
			h, h, ip ? ", IP:" : "",
			ip ? h : "") >= (int)sizeof(text) ||
		    write_file(cnf, text) < 0)
			goto out;
		const char *args[] = { "req", "-x509", "-new", "-config", cnf,
			"-extensions", "v3_leaf", "-newkey", "ec", "-pkeyopt",
			"ec_paramgen_curve:P-256", "-nodes", "-sha256", "-days",
			"2", "-CA", cacert, "-CAkey", cakey, "-keyout", key,
			"-out", cert, NULL };
		if (run_openssl(args, err) < 0)
			goto out;
	}
	rc = 0;
out:
	unlink(cnf);
	unlink(err);
	return rc;
}

/* ---- raw exchanges ---- */

int
unix_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Whether p (n bytes) holds a whole chunked body, trailers included. */
static bool
chunked_complete(const char *p, size_t n)
{
	for (;;) {
		const char *eol = memmem(p, n, "\r\n", 2);
		unsigned long long size;
		size_t skip;
		char *end;
		if (eol == NULL)
			return false;
		size = strtoull(p, &end, 16);
		if (end == p)
			return true; /* malformed: no use waiting for more */
		skip = (size_t)(eol - p) + 2;
		p += skip;
		n -= skip;
		if (size == 0)
			return (n >= 2 && memcmp(p, "\r\n", 2) == 0) ||
			    memmem(p, n, "\r\n\r\n", 4) != NULL;
		if (n < 2 || n - 2 < size)
			return false;
		p += size + 2;
		n -= size + 2;
	}
}

/* Whether buf (len bytes, NUL-terminated) is a whole answer to req. */
static bool
response_complete(const char *req, size_t reqlen, const char *buf, size_t len)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4), *line, *sp;
	unsigned long long clen = 0;
	bool has_clen = false, chunked = false;
	size_t head;
	int status;

	if (end == NULL)
		return false;
	head = (size_t)(end - buf) + 4;
	sp = memchr(buf, ' ', head);
	if (sp == NULL || strspn(sp + 1, "0123456789") < 3)
		return true; /* not HTTP: no use waiting for more */
	status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
	if (status / 100 == 1 || status == 204 || status == 304)
		return true;
	if (reqlen >= 5 && memcmp(req, "HEAD ", 5) == 0)
		return true;
	if (reqlen >= 8 && memcmp(req, "CONNECT ", 8) == 0 && status / 100 == 2)
		return true;
	for (line = memmem(buf, head, "\r\n", 2) + 2; line < end;) {
		const char *eol =
		    memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
		if (strncasecmp(line, "Content-Length:", 15) == 0) {
			clen = strtoull(line + 15, NULL, 10);
			has_clen = true;
		} else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0) {
			const char *c =
			    memmem(line, (size_t)(eol - line), "chunked", 7);
			chunked = c != NULL;
		}
		line = eol + 2;
	}
	if (chunked)
		return chunked_complete(buf + head, len - head);
	if (has_clen)
		return len - head >= clen;
	return false; /* delimited by the close */
}

char *
http_exchange(int fd, const char *data, size_t len, int timeout_ms)
{
	double end = now_ms() + timeout_ms;
	size_t sent = 0, got = 0, cap = 4096;
	char *buf = malloc(cap);

	if (buf == NULL)
		return NULL;
	buf[0] = '\0';
	while (sent < len) {
		struct pollfd p = { fd, POLLOUT, 0 };
		double left = end - now_ms();
		ssize_t n;
		if (left <= 0 || poll(&p, 1, (int)left + 1) <= 0)
			return buf;
		n = send(fd, data + sent, len - sent,
		    MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			break; /* there may be an answer all the same */
		sent += (size_t)n;
	}
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		double left = end - now_ms();
		ssize_t n;
		if (left <= 0)
			break;
		if (cap - got < 2048) {
			char *nb = realloc(buf, cap * 2);
			if (nb == NULL) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		if (poll(&p, 1, (int)left + 1) < 0 && errno != EINTR)
			break;
		n = recv(fd, buf + got, cap - got - 1, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
		if (response_complete(data, len, buf, got))
			break;
	}
	return buf;
}

int
http_status(const char *resp)
{
	int st = 0;

	return sscanf(resp, "HTTP/1.%*d %d", &st) == 1 ? st : 0;
}
