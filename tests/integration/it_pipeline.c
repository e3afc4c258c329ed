/*
 * Pipelined requests (RFC 9112 section 9.3): a client that writes its
 * second request, or its third, in the same write as the first, before
 * any answer came, gets each answered in order, each judged and logged
 * on its own, through plain HTTP proxying and inside a terminated TLS
 * tunnel alike. A pipelined request the rules refuse gets its 403 after
 * the answers before it, and nothing after; one for another host inside
 * a tunnel is host_mismatch, as when it comes alone. On a rule that
 * injects a credential, every request gets its own swap and its own
 * scan of the answer. A request with a body (POST, chunked PUT, DELETE:
 * the last goes up with Connection: close) and a GET behind it in the
 * same write: both answered in order, the GET on another upstream
 * connection after the DELETE, the client's connection kept; on each
 * kind of rule and against python's http.server.
 *
 * The real broker and proxy, keep-alive upstreams in threads of the test
 * (upstream.c) and jobs/smuggle/upstream.py, and raw writes on the job's
 * channel; no job runs.
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct injectkit kit; /* the broker, the proxy, the job, its token */
static struct upstream *plain, *tls_up, *inj_up;
/* python's http.server (jobs/smuggle/upstream.py), as small services are. */
static pid_t py_pid = -1;
static unsigned py_port;

static const char value[] = "sk_live_pipeline_0123456789abcdef";

/* --- reading answers --------------------------------------------------- */

/* Bytes of the answers read so far on one connection. */
struct answers {
	char buf[8 << 20];
	size_t len;
};

/* How many whole answers (head and Content-Length body) buf starts
 * with; *ret_end is where the last of them ends. */
static int
whole_answers(const char *buf, size_t len, size_t *ret_end)
{
	size_t at = 0;
	int n = 0;

	for (;;) {
		const char *end = memmem(buf + at, len - at, "\r\n\r\n", 4);
		if (end == NULL)
			break;
		size_t head = (size_t)(end + 4 - (buf + at));
		char *h = strndup(buf + at, head);
		const char *cl = strcasestr(h, "\r\nContent-Length:");
		bool chunked =
		    strcasestr(h, "\r\nTransfer-Encoding: chunked") != NULL;
		size_t body = cl != NULL ? strtoul(cl + 17, NULL, 10) : 0;
		free(h);
		if (chunked) {
			/* Chunk sizes in hex, each chunk and CRLF, to 0. */
			size_t c = at + head;
			for (;;) {
				const char *nl =
				    memmem(buf + c, len - c, "\r\n", 2);
				if (nl == NULL)
					return n;
				size_t sz = strtoul(buf + c, NULL, 16);
				c = (size_t)(nl + 2 - buf) + sz + 2;
				if (c > len)
					return n;
				if (sz == 0)
					break;
			}
			body = c - (at + head);
		}
		if (len - at < head + body)
			break;
		at += head + body;
		n++;
	}
	*ret_end = at;
	return n;
}

/* Reads from fd (plain) or ssl until want answers came, the peer closed
 * or 10 s passed: how many came. */
static int
read_answers(int fd, SSL *ssl, struct answers *a, int want)
{
	struct timespec t0, now;
	size_t end;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	a->len = 0;
	a->buf[0] = '\0';
	while (whole_answers(a->buf, a->len, &end) < want) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - t0.tv_sec) * 1000 +
		    (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms > 10000)
			break;
		if (ssl == NULL || SSL_pending(ssl) == 0) {
			struct pollfd p = { fd, POLLIN, 0 };
			if (poll(&p, 1, 200) == 0)
				continue;
		}
		int r = ssl != NULL ? SSL_read(ssl, a->buf + a->len,
					  (int)(sizeof(a->buf) - 1 - a->len))
				    : (int)read(fd, a->buf + a->len,
					  sizeof(a->buf) - 1 - a->len);
		if (r <= 0 && ssl != NULL) {
			int e = SSL_get_error(ssl, r);
			if (e == SSL_ERROR_WANT_READ ||
			    e == SSL_ERROR_WANT_WRITE)
				continue;
			fprintf(stderr, "SSL_read: %d, error %d, errno %d\n", r,
			    e, errno);
		}
		if (r <= 0)
			break;
		a->len += (size_t)r;
		a->buf[a->len] = '\0';
	}
	return whole_answers(a->buf, a->len, &end);
}

/* The i-th answer's text (from its status line), in a's buffer. */
static const char *
answer_at(const struct answers *a, int i)
{
	const char *s = a->buf;

	for (int k = 0; k < i && s != NULL; k++) {
		s = strstr(s + 1, "HTTP/1.1 ");
	}
	return s != NULL ? s : "";
}

/* --- the job ------------------------------------------------------------ */

/* The job's decision lines at the proxy, as JSON. */
static json_t *
decisions(void)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%s/log", kit.job);
	json_t *j = harness_expect(&kit.proxy, 200, "GET", path, kit.launcher,
	    NULL, NULL);
	json_t *d = json_incref(json_object_get(j, "decisions"));
	json_decref(j);
	return d;
}

/* Decision lines with this path and outcome ("allow"/"deny"). */
static int
count_decisions(const char *path, const char *outcome, const char *reason)
{
	json_t *d = decisions(), *l;
	size_t i;
	int n = 0;

	json_array_foreach(d, i, l)
	{
		const char *p = json_string_value(json_object_get(l, "path"));
		const char *o =
		    json_string_value(json_object_get(l, "decision"));
		const char *r = json_string_value(json_object_get(l, "reason"));
		if ((path == NULL || (p != NULL && strcmp(p, path) == 0)) &&
		    o != NULL && strcmp(o, outcome) == 0 &&
		    (reason == NULL || (r != NULL && strcmp(r, reason) == 0)))
			n++;
	}
	json_decref(d);
	return n;
}

static void
setup(void)
{
	const char *hosts[] = { "tls.test", NULL };
	char cert[400], key[400], dir[300], extra[400], req[1024];

	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	ck_assert_int_eq(test_ca_make(dir, hosts), 0);
	snprintf(extra, sizeof(extra),
	    "\"upstream_ca_file\": \"%s/ca.pem\", "
	    "\"reflect_limit\": 1000000",
	    dir);
	injectkit_stack_start(&kit,
	    "127.0.0.1 api.test api2.test tls.test inj.test py.test\n", "pipe",
	    extra);
	plain = upstream_start(NULL, NULL);
	snprintf(cert, sizeof(cert), "%s/tls.test.pem", dir);
	snprintf(key, sizeof(key), "%s/tls.test.key", dir);
	tls_up = upstream_start(cert, key);
	inj_up = upstream_start(NULL, NULL);
	ck_assert_ptr_nonnull(plain);
	ck_assert_ptr_nonnull(tls_up);
	ck_assert_ptr_nonnull(inj_up);
	py_pid = injectkit_jobs_upstream("smuggle/upstream.py", NULL, &py_port);
	snprintf(req, sizeof(req), "Key %s", value);
	ck_assert_int_eq(upstream_require(inj_up, "X-Api-Key", req), 0);
	injectkit_secret(&kit, "up-key", value);
	const char *lo = "127.0.0.0/8";
	json_t *egress =
	    json_pack("[{s:s, s:i, s:[s,s,s,s], s:[s,s,s,s], s:s, s:[s]},"
		      "  {s:s, s:i, s:[s,s], s:[s], s:s, s:[s]},"
		      "  {s:s, s:i, s:s, s:[s,s,s,s], s:[s,s], s:s, s:[s]},"
		      "  {s:s, s:i, s:[s,s,s,s], s:[s], s:s, s:[s], s:s,"
		      "   s:{s:s, s:s, s:s, s:s}},"
		      "  {s:s, s:i, s:[s,s,s], s:[s], s:s, s:[s]}]",
		/* plain HTTP */
		"host", "api.test", "port", upstream_port(plain), "methods",
		"GET", "POST", "PUT", "DELETE", "paths", "/ok/", "/chunked",
		"/bytes/", "/close", "reason", "the api", "allow_cidrs", lo,
		/* the same upstream by another name: another connection */
		"host", "api2.test", "port", upstream_port(plain), "methods",
		"GET", "POST", "paths", "/ok/", "reason", "the api again",
		"allow_cidrs", lo,
		/* terminated TLS */
		"host", "tls.test", "port", upstream_port(tls_up), "tls",
		"terminate", "methods", "GET", "POST", "PUT", "DELETE", "paths",
		"/ok/", "/bytes/", "reason", "tls", "allow_cidrs", lo,
		/* a credential injected for the job's token */
		"host", "inj.test", "port", upstream_port(inj_up), "methods",
		"GET", "POST", "PUT", "DELETE", "paths", "/ok/", "reason",
		"the keyed api", "allow_cidrs", lo, "audience", "api", "inject",
		"secret", "up-key", "header", "X-Api-Key", "format",
		"Key {secret}", "capability", "x.read",
		/* python's http.server */
		"host", "py.test", "port", py_port, "methods", "GET", "POST",
		"DELETE", "paths", "/ok/", "reason", "python", "allow_cidrs",
		lo);
	/* Its token as well; the job's CA kept (kit.ca_pem) for the tunnels. */
	injectkit_job_start(&kit, "pipe", injectkit_manifest("pipe", egress));
}

static void
teardown(void)
{
	upstream_stop(plain);
	upstream_stop(tls_up);
	upstream_stop(inj_up);
	injectkit_upstream_stop(&py_pid);
	daemon_stop(&kit.proxy);
	daemon_stop(&kit.broker);
}

/* The job's token for x.read, minted through the proxy. */
static void
mint(void)
{
	injectkit_mint_on(kit.channel, kit.tok, sizeof(kit.tok));
}

/* Writes all of data on fd. */
static void
write_all(int fd, const char *data)
{
	size_t n = strlen(data), at = 0;

	while (at < n) {
		ssize_t w = write(fd, data + at, n - at);
		ck_assert_int_gt(w, 0);
		at += (size_t)w;
	}
}

/* CONNECT tls.test and TLS with the job's CA over it: the SSL. */
static SSL *
tunnel(int fd)
{
	char req[256];

	snprintf(req, sizeof(req),
	    "CONNECT tls.test:%u HTTP/1.1\r\nHost: tls.test:%u\r\n\r\n",
	    upstream_port(tls_up), upstream_port(tls_up));
	char *resp = http_exchange(fd, req, strlen(req), 5000);
	ck_assert_msg(http_status(resp) == 200, "CONNECT: %.300s", resp);
	free(resp);

	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	ck_assert_ptr_nonnull(ctx);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	BIO *bio = BIO_new_mem_buf(kit.ca_pem, -1);
	X509 *ca = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	ck_assert_ptr_nonnull(ca);
	X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
	X509_free(ca);
	BIO_free(bio);
	SSL *ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	SSL_set_tlsext_host_name(ssl, "tls.test");
	SSL_set1_host(ssl, "tls.test");
	SSL_set_fd(ssl, fd);
	ck_assert_msg(SSL_connect(ssl) == 1, "handshake with the job's CA");
	return ssl;
}

/* --- requests on each kind of rule -------------------------------------- */

enum where { PLAIN, TLS, INJECTED };

/* The upstream behind w's rule. */
static struct upstream *
upstream_of(enum where w)
{
	return w == PLAIN ? plain : w == TLS ? tls_up : inj_up;
}

/* One request's head up to its framing: to path on w's rule. */
static void
head_for(enum where w, const char *method, const char *path, char *out,
    size_t cap)
{
	unsigned p = w == PLAIN ? upstream_port(plain)
	    : w == TLS          ? upstream_port(tls_up)
				: upstream_port(inj_up);

	if (w == TLS)
		snprintf(out, cap, "%s %s HTTP/1.1\r\nHost: tls.test:%u\r\n",
		    method, path, p);
	else if (w == PLAIN)
		snprintf(out, cap,
		    "%s http://api.test:%u%s HTTP/1.1\r\nHost: api.test:%u\r\n",
		    method, p, path, p);
	else
		snprintf(out, cap,
		    "%s http://inj.test:%u%s HTTP/1.1\r\nHost: inj.test:%u\r\n"
		    "Authorization: Bearer %s\r\n",
		    method, p, path, p, kit.tok);
}

/* Writes all of req on fd, or inside the tunnel ssl when not NULL. */
static void
send_req(int fd, SSL *ssl, const char *req)
{
	if (ssl != NULL)
		ck_assert_int_eq(SSL_write(ssl, req, (int)strlen(req)),
		    (int)strlen(req));
	else
		write_all(fd, req);
}

/* One of a case's pipelined requests: method and path on the case's rule
 * (host: a Host header of that name instead, on the plain upstream's
 * port), then framing (NULL: none, the head's end); the decision lines
 * with outcome and reason it must leave, decided of them (outcome NULL:
 * not looked at). */
struct pipe_req {
	const char *method, *path, *host, *framing, *outcome, *reason;
	int decided;
};

static void post_body_then_a_fourth(int fd, struct answers *a);

/* Three requests in one write on w's rule: answers of them come back
 * (then the close, when fewer), with status[i]; the last one's
 * X-Cordon-Deny is deny (NULL: not looked at); in_order: the answers name
 * their paths in order; the upstream saw upstream requests; more (NULL:
 * none) checks more on the connection before it is closed. */
static const struct pipe_case {
	const char *name;
	enum where w;
	struct pipe_req req[3];
	int answers, status[3];
	const char *deny;
	bool in_order;
	unsigned upstream;
	void (*more)(int fd, struct answers *a);
} pipe_cases[] = {
	{ "plain, in order", PLAIN,
	    { { "GET", "/ok/one", NULL, NULL, "allow", NULL, 1 },
		{ "POST", "/ok/two", NULL, "Content-Length: 5\r\n\r\nhello",
		    "allow", NULL, 1 },
		{ "GET", "/ok/three", NULL, NULL, "allow", NULL, 1 } },
	    3, { 200, 200, 200 }, NULL, true, 3, post_body_then_a_fourth },
	{ "plain, a refusal", PLAIN,
	    { { "GET", "/ok/first", NULL, NULL, "allow", NULL, 1 },
		{ "GET", "/nope", NULL, NULL, "deny", "path", 1 },
		{ "GET", "/ok/never", NULL, NULL, "allow", NULL, 0 } },
	    2, { 200, 403 }, "path", false, 1, NULL },
	{ "tls, in order", TLS,
	    { { "GET", "/ok/tls-one", NULL, NULL, "allow", NULL, 1 },
		{ "GET", "/ok/tls-two", NULL, NULL, "allow", NULL, 1 },
		{ "GET", "/ok/tls-three", NULL, NULL, "allow", NULL, 1 } },
	    3, { 200, 200, 200 }, NULL, true, 3, NULL },
	{ "tls, another host", TLS,
	    { { "GET", "/ok/mine", NULL, NULL, NULL, NULL, 0 },
		{ "GET", "/ok/theirs", "api.test", NULL, "deny",
		    "host_mismatch", 1 },
		{ "GET", "/ok/after", NULL, NULL, "allow", NULL, 0 } },
	    2, { 200, 403 }, "host_mismatch", false, 1, NULL },
};

/* Writes c's requests in one write (in a tunnel on TLS, *ret_ssl) and
 * reads its answers into a, checking them as c says: the connection,
 * left open for the caller. */
static int
pipelined(const struct pipe_case *c, struct answers *a, SSL **ret_ssl)
{
	struct upstream *u = upstream_of(c->w);
	unsigned before = upstream_requests(u);
	char req[4096], head[1024];
	size_t len = 0;
	int fd = unix_connect(kit.channel), n;
	SSL *ssl = NULL;

	ck_assert_int_ge(fd, 0);
	if (c->w == TLS)
		ssl = tunnel(fd);
	for (int i = 0; i < 3; i++) {
		const struct pipe_req *r = &c->req[i];
		if (r->host != NULL)
			snprintf(head, sizeof(head),
			    "%s %s HTTP/1.1\r\nHost: %s:%u\r\n", r->method,
			    r->path, r->host, upstream_port(plain));
		else
			head_for(c->w, r->method, r->path, head, sizeof(head));
		len += (size_t)snprintf(req + len, sizeof(req) - len, "%s%s",
		    head, r->framing != NULL ? r->framing : "\r\n");
	}
	send_req(fd, ssl, req);
	n = read_answers(fd, ssl, a, 3);
	ck_assert_msg(n == c->answers, "%s: %d answers of %d: %s", c->name, n,
	    c->answers, a->buf);
	for (int i = 0; i < n; i++)
		ck_assert_msg(http_status(answer_at(a, i)) == c->status[i],
		    "%s: answer %d: %.300s", c->name, i, answer_at(a, i));
	if (c->deny != NULL) {
		char want[128];
		snprintf(want, sizeof(want), "X-Cordon-Deny: %s", c->deny);
		ck_assert_ptr_nonnull(strstr(answer_at(a, n - 1), want));
	}
	for (int i = 0; c->in_order && i < 3; i++) {
		const char *at = strstr(a->buf, c->req[i].path),
			   *prev = i > 0 ? strstr(a->buf, c->req[i - 1].path)
					 : NULL;
		ck_assert_msg(at != NULL && at > prev,
		    "%s: the answers out of order: %s", c->name, a->buf);
	}
	ck_assert_uint_eq(upstream_requests(u) - before, c->upstream);
	*ret_ssl = ssl;
	return fd;
}

/* --- plain HTTP ---------------------------------------------------------- */

/* Each of pipe_cases: its connection closed before its decision lines
 * are counted. */
START_TEST(pipelined_requests_are_answered_as_their_case_says)
{
	static struct answers a;
	const struct pipe_case *c = &pipe_cases[_i];
	SSL *ssl;
	int fd = pipelined(c, &a, &ssl);

	if (c->more != NULL)
		c->more(fd, &a);
	SSL_free(ssl);
	close(fd);
	for (int i = 0; i < 3; i++)
		if (c->req[i].outcome != NULL)
			ck_assert_int_eq(count_decisions(c->req[i].path,
					     c->req[i].outcome,
					     c->req[i].reason),
			    c->req[i].decided);
}
END_TEST

/* The plain case's POST was echoed with its body; the connection stays
 * open: a fourth request, alone, is answered too. */
static void
post_body_then_a_fourth(int fd, struct answers *a)
{
	char req[512];
	unsigned p = upstream_port(plain);

	ck_assert_msg(strstr(answer_at(a, 1), "\"body\": \"hello\"") != NULL ||
		strstr(answer_at(a, 1), "\"body\":\"hello\"") != NULL,
	    "the POST's body: %s", answer_at(a, 1));
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/ok/four HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "\r\n",
	    p, p);
	write_all(fd, req);
	ck_assert_int_eq(read_answers(fd, NULL, a, 1), 1);
	ck_assert_int_eq(http_status(a->buf), 200);
	ck_assert_int_eq(count_decisions("/ok/four", "allow", NULL), 1);
}

/* Shapes around the first answer: another host (another upstream), a
 * chunked answer, a large one: each pair pipelined, each answered. */
START_TEST(plain_pipelined_around_every_kind_of_first_answer)
{
	static struct answers a;
	char req[2048];
	unsigned p = upstream_port(plain);
	static const char *const host[] = { "api2.test", "api.test",
		"api.test" };
	static const char *const path[] = { "/ok/x", "/chunked",
		"/bytes/3000000" };

	for (size_t i = 0; i < 3; i++) {
		char target[128];
		int fd = unix_connect(kit.channel);
		ck_assert_int_ge(fd, 0);
		snprintf(target, sizeof(target), "%s:%u%s", host[i], p,
		    path[i]);
		snprintf(req, sizeof(req),
		    "GET http://%s HTTP/1.1\r\nHost: %s:%u\r\n\r\n"
		    "GET http://api.test:%u/ok/second HTTP/1.1\r\nHost: "
		    "api.test:%u\r\n\r\n",
		    target, host[i], p, p, p);
		write_all(fd, req);
		int n = read_answers(fd, NULL, &a, 2);
		ck_assert_msg(n == 2, "after %s: %d answers of 2: %.600s",
		    target, n, a.buf);
		ck_assert_int_eq(http_status(answer_at(&a, 1)), 200);
		close(fd);
	}
}
END_TEST

/* A client that writes its requests and then shuts its side down (as
 * `printf ... | nc -N` does) still gets every answer, then the close. */
START_TEST(a_half_closed_client_gets_every_answer)
{
	static struct answers a;
	char req[2048];
	unsigned p = upstream_port(plain);
	int fd = unix_connect(kit.channel);

	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/ok/half-1 HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "\r\n"
	    "GET http://api.test:%u/ok/half-2 HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "\r\n",
	    p, p, p, p);
	write_all(fd, req);
	shutdown(fd, SHUT_WR);
	int n = read_answers(fd, NULL, &a, 3);
	ck_assert_msg(n == 2, "%d answers of 2 after the half-close: %s", n,
	    a.buf);
	ck_assert_int_eq(http_status(answer_at(&a, 1)), 200);
	ck_assert_ptr_nonnull(strstr(answer_at(&a, 1), "/ok/half-2"));
	ck_assert_ptr_nonnull(
	    strcasestr(answer_at(&a, 1), "Connection: close"));
	close(fd);
	ck_assert_int_eq(count_decisions("/ok/half-2", "allow", NULL), 1);
}
END_TEST

/* Waits (10 s at most) until the proxy logged path's decision: the
 * answer has gone into its buffers, the connection is between requests. */
static void
wait_logged(const char *path)
{
	for (int i = 0; i < 200 && count_decisions(path, "allow", NULL) == 0;
	     i++)
		usleep(50000);
	ck_assert_int_eq(count_decisions(path, "allow", NULL), 1);
}

/* A client that closes its side once its answer is on the way (here:
 * logged, more of it than the socket holds still in the proxy's
 * buffers, the connection between requests) gets all of it: the close
 * is not a reason to drop what was answered. Plain, and inside a
 * terminated tunnel (close_notify). */
START_TEST(a_close_after_the_answer_keeps_what_was_written)
{
	static struct answers a;
	char req[512];
	unsigned p = upstream_port(plain), t = upstream_port(tls_up);
	int fd = unix_connect(kit.channel);

	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "GET http://api.test:%u/bytes/600000 HTTP/1.1\r\nHost: "
	    "api.test:%u\r\n\r\n",
	    p, p);
	write_all(fd, req);
	wait_logged("/bytes/600000");
	shutdown(fd, SHUT_WR);
	int n = read_answers(fd, NULL, &a, 1);
	ck_assert_msg(n == 1, "%zu bytes of the answer after the close", a.len);
	close(fd);

	fd = unix_connect(kit.channel);
	ck_assert_int_ge(fd, 0);
	SSL *ssl = tunnel(fd);
	snprintf(req, sizeof(req),
	    "GET /bytes/600001 HTTP/1.1\r\nHost: tls.test:%u\r\n\r\n", t);
	ck_assert_int_eq(SSL_write(ssl, req, (int)strlen(req)),
	    (int)strlen(req));
	wait_logged("/bytes/600001");
	SSL_shutdown(ssl);
	n = read_answers(fd, ssl, &a, 1);
	ck_assert_msg(n == 1, "%zu bytes of the answer after close_notify",
	    a.len);
	SSL_free(ssl);
	close(fd);

	/* And pipelined, the close_notify right behind the requests. */
	for (int round = 0; round < 5; round++) {
		fd = unix_connect(kit.channel);
		ck_assert_int_ge(fd, 0);
		ssl = tunnel(fd);
		snprintf(req, sizeof(req),
		    "GET /ok/tls-half-1 HTTP/1.1\r\nHost: tls.test:%u\r\n\r\n"
		    "GET /ok/tls-half-2 HTTP/1.1\r\nHost: tls.test:%u\r\n\r\n",
		    t, t);
		ck_assert_int_eq(SSL_write(ssl, req, (int)strlen(req)),
		    (int)strlen(req));
		SSL_shutdown(ssl);
		n = read_answers(fd, ssl, &a, 3);
		ck_assert_msg(n == 2, "round %d: %d answers of 2: %s", round, n,
		    a.buf);
		SSL_free(ssl);
		close(fd);
	}
}
END_TEST

/* --- terminated TLS ------------------------------------------------------ */

/* --- an injected credential ---------------------------------------------- */

START_TEST(each_pipelined_request_gets_its_own_swap_and_scan)
{
	static struct answers a;
	char req[4096];
	unsigned p = upstream_port(inj_up);
	unsigned before = upstream_requests(inj_up);

	mint();
	int fd = unix_connect(kit.channel);
	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "GET http://inj.test:%u/ok/k1 HTTP/1.1\r\nHost: inj.test:%u\r\n"
	    "Authorization: Bearer %s\r\n\r\n"
	    "GET http://inj.test:%u/ok/k2 HTTP/1.1\r\nHost: inj.test:%u\r\n"
	    "Authorization: Bearer %s\r\n\r\n",
	    p, p, kit.tok, p, p, kit.tok);
	write_all(fd, req);
	int n = read_answers(fd, NULL, &a, 2);
	ck_assert_msg(n == 2, "%d answers of 2 on the injected rule: %s", n,
	    a.buf);
	/* The upstream answers 401 to a request without the key. */
	ck_assert_msg(http_status(answer_at(&a, 0)) == 200, "%s", a.buf);
	ck_assert_msg(http_status(answer_at(&a, 1)) == 200, "%s", a.buf);
	ck_assert_ptr_nonnull(strstr(answer_at(&a, 1), "/ok/k2"));
	/* Each echo held the key, and each was redacted. */
	ck_assert_msg(strstr(a.buf, value) == NULL, "the key came back: %s",
	    a.buf);
	ck_assert_msg(strstr(a.buf, kit.tok) == NULL, "the token went up: %s",
	    a.buf);
	ck_assert_uint_eq(upstream_requests(inj_up) - before, 2);
	close(fd);
	json_t *d = decisions(), *l;
	size_t i;
	int injected = 0, reflected = 0;
	json_array_foreach(d, i, l)
	{
		const char *path =
		    json_string_value(json_object_get(l, "path"));
		if (path == NULL || strncmp(path, "/ok/k", 5) != 0)
			continue;
		injected += json_object_get(l, "injected") != NULL;
		reflected +=
		    json_integer_value(json_object_get(l, "reflected")) > 0;
	}
	json_decref(d);
	ck_assert_int_eq(reflected, 2);
	(void)injected;
}
END_TEST

/* --- a request with a body, then one pipelined behind it ----------------- */

/* The three kinds of body: POST with a Content-Length, PUT chunked, and
 * DELETE with a Content-Length (the proxy sends that one upstream with
 * Connection: close, so the request behind it needs a new upstream). */
static const char *const body_method[] = { "POST", "PUT", "DELETE" };
/* On the injected rule a form's body (and an untyped one) is held whole
 * and judged before the release; a chunked one is sent as a file. */
static const char *const body_type[] = {
	"Content-Type: application/x-www-form-urlencoded\r\n",
	"Content-Type: application/octet-stream\r\n",
	"",
};
static const char *const body_framing[] = {
	"Content-Length: 5\r\n\r\nhello",
	"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"Content-Length: 5\r\n\r\nhello",
};

/* Each kind of body, then a GET, in one write on w: both answered 200, in
 * order, the body whole upstream, the GET on a new upstream connection
 * after the DELETE, the client's connection still open for a third. */
static void
body_then_get(enum where w)
{
	static struct answers a;
	struct upstream *u = upstream_of(w);
	const char *name[] = { "plain", "tls", "injected" };

	if (w == INJECTED)
		mint();
	for (size_t k = 0; k < 3; k++) {
		char first[1024], second[1024], third[1024], path1[64],
		    path2[64], path3[64], req[4096];
		int fd = unix_connect(kit.channel);
		SSL *ssl = NULL;

		ck_assert_int_ge(fd, 0);
		if (w == TLS)
			ssl = tunnel(fd);
		snprintf(path1, sizeof(path1), "/ok/%s-%s-body", name[w],
		    body_method[k]);
		snprintf(path2, sizeof(path2), "/ok/%s-%s-next", name[w],
		    body_method[k]);
		snprintf(path3, sizeof(path3), "/ok/%s-%s-third", name[w],
		    body_method[k]);
		head_for(w, body_method[k], path1, first, sizeof(first));
		head_for(w, "GET", path2, second, sizeof(second));
		snprintf(req, sizeof(req), "%s%s%s%s\r\n", first, body_type[k],
		    body_framing[k], second);
		unsigned conns = upstream_connections(u),
			 reqs = upstream_requests(u);
		send_req(fd, ssl, req);
		int n = read_answers(fd, ssl, &a, 2);
		ck_assert_msg(n == 2,
		    "%s %s with a body then a GET: %d answers of 2: %.800s",
		    name[w], body_method[k], n, a.buf);
		ck_assert_msg(http_status(answer_at(&a, 0)) == 200 &&
			http_status(answer_at(&a, 1)) == 200,
		    "%s %s: %.800s", name[w], body_method[k], a.buf);
		const char *one = strstr(a.buf, path1),
			   *two = strstr(a.buf, path2);
		ck_assert_msg(one != NULL && two != NULL && one < two,
		    "%s %s: the answers out of order: %.800s", name[w],
		    body_method[k], a.buf);
		ck_assert_msg(strstr(answer_at(&a, 0), "\"body_len\": 5") !=
			    NULL ||
			strstr(answer_at(&a, 0), "\"body_len\":5") != NULL,
		    "%s %s: the body upstream: %.800s", name[w], body_method[k],
		    answer_at(&a, 0));
		ck_assert_msg(strcasestr(answer_at(&a, 0),
				  "Connection: close") == NULL,
		    "%s %s: the client told to close: %.800s", name[w],
		    body_method[k], a.buf);
		if (w == INJECTED)
			ck_assert_msg(strstr(a.buf, value) == NULL,
			    "the key came back: %s", a.buf);
		ck_assert_uint_eq(upstream_requests(u) - reqs, 2);
		/* The DELETE went up with Connection: close (the upstream
		 * closes that connection after it): the GET took another, a
		 * new one at least once (the DELETE may have had the pool's). */
		if (k == 2) {
			ck_assert_msg(strcasestr(answer_at(&a, 0),
					  "[\"Connection\",\"close\"]") != NULL,
			    "%s: the DELETE's upstream not told to close: "
			    "%.800s",
			    name[w], answer_at(&a, 0));
			ck_assert_msg(upstream_connections(u) - conns >= 1,
			    "%s: no new upstream connection for the GET after "
			    "a DELETE with a body",
			    name[w]);
		}
		/* The client's connection is still open. */
		head_for(w, "GET", path3, third, sizeof(third));
		snprintf(req, sizeof(req), "%s\r\n", third);
		send_req(fd, ssl, req);
		n = read_answers(fd, ssl, &a, 1);
		ck_assert_msg(n == 1 && http_status(a.buf) == 200,
		    "%s %s: a third request alone: %.800s", name[w],
		    body_method[k], a.buf);
		SSL_free(ssl);
		close(fd);
		ck_assert_int_eq(count_decisions(path1, "allow", NULL), 1);
		ck_assert_int_eq(count_decisions(path2, "allow", NULL), 1);
		ck_assert_int_eq(count_decisions(path3, "allow", NULL), 1);
	}
}

/* A body larger than the proxy's buffers (it waits on the upstream's
 * reading while it comes), then a GET in the same write. */
START_TEST(plain_a_request_behind_a_large_body_is_answered)
{
	static struct answers a;
	static char req[(1 << 20) + 4096];
	size_t big = 1 << 20;
	unsigned p = upstream_port(plain);
	int fd = unix_connect(kit.channel);

	ck_assert_int_ge(fd, 0);
	int h = snprintf(req, sizeof(req),
	    "POST http://api.test:%u/ok/big HTTP/1.1\r\nHost: api.test:%u\r\n"
	    "Content-Length: %zu\r\n\r\n",
	    p, p, big);
	memset(req + h, 'b', big);
	snprintf(req + (size_t)h + big, sizeof(req) - (size_t)h - big,
	    "GET http://api.test:%u/ok/after-big HTTP/1.1\r\nHost: "
	    "api.test:%u\r\n\r\n",
	    p, p);
	write_all(fd, req);
	int n = read_answers(fd, NULL, &a, 2);
	ck_assert_msg(n == 2,
	    "a 1 MiB body then a GET: %d answers of 2: %.800s", n, a.buf);
	ck_assert_ptr_nonnull(strstr(answer_at(&a, 0), "1048576"));
	ck_assert_ptr_nonnull(strstr(answer_at(&a, 1), "/ok/after-big"));
	close(fd);
}
END_TEST

START_TEST(plain_a_request_behind_one_with_a_body_is_answered)
{
	body_then_get(PLAIN);
}
END_TEST

START_TEST(tls_a_request_behind_one_with_a_body_is_answered)
{
	body_then_get(TLS);
}
END_TEST

START_TEST(injected_a_request_behind_one_with_a_body_is_answered)
{
	body_then_get(INJECTED);
}
END_TEST

/* python's http.server: a POST's body, then a GET, in one write; a
 * DELETE's body (which it never reads), then a GET. Both answered, in
 * order; the DELETE's body never taken as a request (its upstream told
 * to close); the client's connection open after. */
START_TEST(python_a_request_behind_one_with_a_body_is_answered)
{
	static struct answers a;
	static const char *const method[] = { "POST", "DELETE" };
	static const char *const first[] = { "hello", "done\n" };
	char req[2048];
	unsigned p = py_port;

	for (size_t k = 0; k < 2; k++) {
		int fd = unix_connect(kit.channel);
		ck_assert_int_ge(fd, 0);
		snprintf(req, sizeof(req),
		    "%s http://py.test:%u/ok/py-%s HTTP/1.1\r\nHost: "
		    "py.test:%u\r\nContent-Length: 5\r\n\r\nhello"
		    "GET http://py.test:%u/ok/log HTTP/1.1\r\nHost: "
		    "py.test:%u\r\n\r\n",
		    method[k], p, method[k], p, p, p);
		write_all(fd, req);
		int n = read_answers(fd, NULL, &a, 2);
		ck_assert_msg(n == 2,
		    "python: %s with a body then a GET: %d answers of 2: "
		    "%.800s",
		    method[k], n, a.buf);
		ck_assert_int_eq(http_status(answer_at(&a, 0)), 200);
		ck_assert_int_eq(http_status(answer_at(&a, 1)), 200);
		const char *b0 = strstr(answer_at(&a, 0), "\r\n\r\n");
		ck_assert_msg(b0 != NULL &&
			strncmp(b0 + 4, first[k], strlen(first[k])) == 0,
		    "python %s: the first answer: %.800s", method[k], a.buf);
		/* The log's last line is the GET itself, the one before it the
		 * request with the body: nothing between them. */
		char want[256];
		snprintf(want, sizeof(want),
		    "%s /ok/py-%s HTTP/1.1\nGET /ok/log HTTP/1.1\n", method[k],
		    method[k]);
		ck_assert_msg(strstr(answer_at(&a, 1), want) != NULL,
		    "python %s: its log: %.800s", method[k], answer_at(&a, 1));
		ck_assert_msg(strstr(answer_at(&a, 1), "hello") == NULL,
		    "python %s: the body was taken as a request: %.800s",
		    method[k], answer_at(&a, 1));
		snprintf(req, sizeof(req),
		    "GET http://py.test:%u/ok/py-third HTTP/1.1\r\nHost: "
		    "py.test:%u\r\n\r\n",
		    p, p);
		write_all(fd, req);
		n = read_answers(fd, NULL, &a, 1);
		ck_assert_msg(n == 1 && http_status(a.buf) == 200,
		    "python %s: a third request alone: %.800s", method[k],
		    a.buf);
		close(fd);
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("pipeline");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc,
	    pipelined_requests_are_answered_as_their_case_says, 0,
	    sizeof(pipe_cases) / sizeof(pipe_cases[0]));
	tcase_add_test(tc, plain_pipelined_around_every_kind_of_first_answer);
	tcase_add_test(tc, a_half_closed_client_gets_every_answer);
	tcase_add_test(tc, a_close_after_the_answer_keeps_what_was_written);
	tcase_add_test(tc, each_pipelined_request_gets_its_own_swap_and_scan);
	tcase_add_test(tc, plain_a_request_behind_one_with_a_body_is_answered);
	tcase_add_test(tc, plain_a_request_behind_a_large_body_is_answered);
	tcase_add_test(tc, tls_a_request_behind_one_with_a_body_is_answered);
	tcase_add_test(tc,
	    injected_a_request_behind_one_with_a_body_is_answered);
	tcase_add_test(tc, python_a_request_behind_one_with_a_body_is_answered);
	suite_add_tcase(s, tc);
	return harness_main(s);
}
