/*
 * The upstream servers of upstream.c, checked on their own before the
 * proxy's tests lean on them: keep-alive, request bodies (chunked too),
 * the special targets, a stop with connections open, and TLS with a leaf
 * of the test CA that OpenSSL verifies.
 */
#include "harness.h"
#include "upstream.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
tcp_connect(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { 5, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* http_exchange of a NUL-terminated request, 5 s at most. */
static char *
exchange(int fd, const char *req)
{
	char *resp = http_exchange(fd, req, strlen(req), 5000);

	ck_assert_ptr_nonnull(resp);
	return resp;
}

/* What follows the head of resp. */
static const char *
body_of(const char *resp)
{
	const char *end = strstr(resp, "\r\n\r\n");

	ck_assert_msg(end != NULL, "no head in: %s", resp);
	return end + 4;
}

/* Whether the head of resp has the header line hdr ("Name: value"). */
static bool
has_header(const char *resp, const char *hdr)
{
	const char *end = strstr(resp, "\r\n\r\n"), *p = resp;
	size_t n = strlen(hdr);

	while ((p = strstr(p, "\r\n")) != NULL && p < end) {
		p += 2;
		if (strncasecmp(p, hdr, n) == 0 && p[n] == '\r')
			return true;
	}
	return false;
}

/* Asserts resp is a 200 echo and returns its JSON (json_decref it). */
static json_t *
echo_of(const char *resp)
{
	json_error_t err;
	json_t *j;

	ck_assert_msg(strncmp(resp, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s",
	    resp);
	ck_assert_msg(has_header(resp, "Content-Type: application/json"), "%s",
	    resp);
	j = json_loads(body_of(resp), 0, &err);
	ck_assert_msg(j != NULL, "%s: %s", err.text, resp);
	return j;
}

static const char *
str(const json_t *j, const char *key)
{
	return json_string_value(json_object_get(j, key));
}

static json_int_t
num(const json_t *j, const char *key)
{
	ck_assert(json_is_integer(json_object_get(j, key)));
	return json_integer_value(json_object_get(j, key));
}

/* Whether the peer of fd has closed (and nothing more came). */
static bool
peer_closed(int fd)
{
	char c;

	return recv(fd, &c, 1, 0) == 0;
}

START_TEST(keep_alive)
{
	struct upstream *u = upstream_start(NULL, NULL);
	static const char req1[] = "GET /a?x=1 HTTP/1.1\r\n"
				   "Host: example.test\r\n"
				   "X-Test:  one \r\n"
				   "\r\n";
	static const char req2[] = "POST /b HTTP/1.1\r\n"
				   "Host: example.test\r\n"
				   "Content-Length: 5\r\n"
				   "\r\n";
	char *resp, *head, full2[256];
	json_t *j, *want;
	int fd;

	ck_assert_ptr_nonnull(u);
	ck_assert_int_gt(upstream_port(u), 0);
	ck_assert_ptr_null(upstream_last_head(u));
	fd = tcp_connect(upstream_port(u));

	resp = exchange(fd, req1);
	j = echo_of(resp);
	ck_assert_str_eq(str(j, "method"), "GET");
	ck_assert_str_eq(str(j, "target"), "/a?x=1");
	ck_assert_str_eq(str(j, "host"), "example.test");
	want = json_pack("[[s, s], [s, s]]", "Host", "example.test", "X-Test",
	    "one");
	ck_assert_msg(json_equal(json_object_get(j, "headers"), want), "%s",
	    resp);
	json_decref(want);
	ck_assert_int_eq(num(j, "body_len"), 0);
	ck_assert_str_eq(str(j, "body"), "");
	/* Exactly one answer: the length is right. */
	ck_assert_uint_eq(strlen(body_of(resp)),
	    strtoul(strstr(resp, "Content-Length: ") + 16, NULL, 10));
	json_decref(j);
	free(resp);
	head = upstream_last_head(u);
	ck_assert_str_eq(head, req1);
	free(head);

	/* The same connection, a body by Content-Length. */
	snprintf(full2, sizeof(full2), "%shello", req2);
	resp = exchange(fd, full2);
	j = echo_of(resp);
	ck_assert(!has_header(resp, "Connection: close"));
	ck_assert_str_eq(str(j, "method"), "POST");
	ck_assert_str_eq(str(j, "target"), "/b");
	ck_assert_int_eq(num(j, "body_len"), 5);
	ck_assert_str_eq(str(j, "body"), "hello");
	json_decref(j);
	free(resp);
	head = upstream_last_head(u);
	ck_assert_str_eq(head, req2);
	free(head);
	ck_assert_uint_eq(upstream_connections(u), 1);
	ck_assert_uint_eq(upstream_requests(u), 2);

	/* Connection: close is obeyed, and said. */
	resp = exchange(fd,
	    "GET /last HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
	j = echo_of(resp);
	ck_assert(has_header(resp, "Connection: close"));
	ck_assert_str_eq(str(j, "target"), "/last");
	ck_assert(peer_closed(fd));
	json_decref(j);
	free(resp);
	close(fd);

	/* HTTP/1.0 closes unless asked to keep alive. */
	fd = tcp_connect(upstream_port(u));
	resp = exchange(fd, "GET /old HTTP/1.0\r\n\r\n");
	j = echo_of(resp);
	ck_assert(json_is_null(json_object_get(j, "host")));
	ck_assert(peer_closed(fd));
	json_decref(j);
	free(resp);
	close(fd);
	ck_assert_uint_eq(upstream_connections(u), 2);
	ck_assert_uint_eq(upstream_requests(u), 4);
	upstream_stop(u);
}
END_TEST

START_TEST(request_bodies)
{
	struct upstream *u = upstream_start(NULL, NULL);
	char *resp, *big, *req;
	json_t *j;
	int fd;

	ck_assert_ptr_nonnull(u);
	fd = tcp_connect(upstream_port(u));
	resp = exchange(fd,
	    "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n");
	j = echo_of(resp);
	ck_assert_int_eq(num(j, "body_len"), 11);
	ck_assert_str_eq(str(j, "body"), "hello world");
	json_decref(j);
	free(resp);

	/* 4 KiB and more: counted, not echoed. */
	big = malloc(5000 + 1);
	memset(big, 'z', 5000);
	big[5000] = '\0';
	ck_assert_int_gt(asprintf(&req,
			     "PUT /big HTTP/1.1\r\nHost: h\r\n"
			     "Content-Length: 5000\r\n\r\n%s",
			     big),
	    0);
	resp = exchange(fd, req);
	j = echo_of(resp);
	ck_assert_int_eq(num(j, "body_len"), 5000);
	ck_assert(json_is_null(json_object_get(j, "body")));
	json_decref(j);
	free(resp);
	free(req);
	free(big);

	/* Expect: 100-continue, then the body. */
	resp = exchange(fd,
	    "POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
	    "Content-Length: 3\r\n\r\n");
	ck_assert_str_eq(resp, "HTTP/1.1 100 Continue\r\n\r\n");
	free(resp);
	resp = exchange(fd, "abc");
	j = echo_of(resp);
	ck_assert_str_eq(str(j, "body"), "abc");
	json_decref(j);
	free(resp);

	/* A malformed request: 400 and a close. */
	resp = exchange(fd, "NONSENSE\r\n\r\n");
	ck_assert_msg(strncmp(resp, "HTTP/1.1 400 ", 13) == 0, "%s", resp);
	ck_assert(peer_closed(fd));
	free(resp);
	close(fd);
	ck_assert_uint_eq(upstream_connections(u), 1);
	upstream_stop(u);
}
END_TEST

START_TEST(special_targets)
{
	struct upstream *u = upstream_start(NULL, NULL);
	char *resp, buf[64];
	const char *b;
	json_t *j;
	double t0;
	int fd;

	ck_assert_ptr_nonnull(u);
	fd = tcp_connect(upstream_port(u));

	resp = exchange(fd, "GET /chunked HTTP/1.1\r\nHost: h\r\n\r\n");
	ck_assert_msg(strncmp(resp, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s",
	    resp);
	ck_assert(has_header(resp, "Transfer-Encoding: chunked"));
	ck_assert_ptr_null(strcasestr(resp, "Content-Length"));
	ck_assert_str_eq(body_of(resp),
	    "1\r\na\r\n2\r\nbb\r\n3\r\nccc\r\n0\r\n\r\n");
	free(resp);

	resp = exchange(fd, "GET /redirect HTTP/1.1\r\nHost: h\r\n\r\n");
	ck_assert_msg(strncmp(resp, "HTTP/1.1 302 ", 13) == 0, "%s", resp);
	ck_assert(has_header(resp, "Location: http://elsewhere.test/"));
	ck_assert(has_header(resp, "Content-Length: 0"));
	ck_assert_str_eq(body_of(resp), "");
	free(resp);

	resp = exchange(fd, "GET /bytes/100000 HTTP/1.1\r\nHost: h\r\n\r\n");
	ck_assert(has_header(resp, "Content-Length: 100000"));
	b = body_of(resp);
	ck_assert_uint_eq(strlen(b), 100000);
	ck_assert_uint_eq(strspn(b, "x"), 100000);
	free(resp);

	/* HEAD: the head alone, or the next answer would be garbled. */
	resp = exchange(fd, "HEAD /bytes/10 HTTP/1.1\r\nHost: h\r\n\r\n");
	ck_assert(has_header(resp, "Content-Length: 10"));
	ck_assert_str_eq(body_of(resp), "");
	free(resp);
	resp = exchange(fd, "HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n");
	ck_assert(has_header(resp, "Content-Type: application/json"));
	ck_assert_str_eq(body_of(resp), "");
	free(resp);

	/* An absolute-form target counts by its path. */
	resp =
	    exchange(fd, "GET http://h/bytes/3?q HTTP/1.1\r\nHost: h\r\n\r\n");
	ck_assert_str_eq(body_of(resp), "xxx");
	free(resp);

	t0 = now_ms();
	resp = exchange(fd, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n");
	ck_assert_double_ge(now_ms() - t0, 2900);
	j = echo_of(resp);
	ck_assert_str_eq(str(j, "target"), "/slow");
	json_decref(j);
	free(resp);
	ck_assert_uint_eq(upstream_connections(u), 1);
	ck_assert_uint_eq(upstream_requests(u), 7);

	/* /close: the body is delimited by the close. */
	resp = exchange(fd, "GET /close HTTP/1.1\r\nHost: h\r\n\r\n");
	ck_assert_msg(strncmp(resp, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s",
	    resp);
	ck_assert_ptr_null(strcasestr(resp, "Content-Length"));
	ck_assert(has_header(resp, "Connection: close"));
	ck_assert_str_eq(body_of(resp), "bye");
	ck_assert(peer_closed(fd));
	free(resp);
	close(fd);

	/* A websocket upgrade, then an echo (RFC 6455's example key). */
	fd = tcp_connect(upstream_port(u));
	resp = exchange(fd,
	    "GET /upgrade HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
	ck_assert_msg(strncmp(resp, "HTTP/1.1 101 ", 13) == 0, "%s", resp);
	ck_assert(has_header(resp, "Upgrade: websocket"));
	ck_assert(has_header(resp,
	    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
	free(resp);
	ck_assert_int_eq(send(fd, "ping", 4, 0), 4);
	ck_assert_int_eq(recv(fd, buf, sizeof(buf), 0), 4);
	ck_assert_int_eq(memcmp(buf, "ping", 4), 0);
	close(fd);

	/* Without Upgrade: websocket, /upgrade is an echo. */
	fd = tcp_connect(upstream_port(u));
	resp = exchange(fd, "GET /upgrade HTTP/1.1\r\nHost: h\r\n\r\n");
	j = echo_of(resp);
	json_decref(j);
	free(resp);
	close(fd);
	upstream_stop(u);
}
END_TEST

#define NCONN 60

START_TEST(concurrent_and_stop)
{
	struct upstream *u = upstream_start(NULL, NULL);
	int fds[NCONN], slow, idle;
	char req[128], target[32];
	double t0;

	ck_assert_ptr_nonnull(u);
	for (int i = 0; i < NCONN; i++)
		fds[i] = tcp_connect(upstream_port(u));
	/* All open at once: each answered in turn, then used again. */
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < NCONN; i++) {
			char *resp;
			json_t *j;
			snprintf(target, sizeof(target), "/n/%d/%d", i, round);
			snprintf(req, sizeof(req),
			    "GET %s HTTP/1.1\r\nHost: h\r\n\r\n", target);
			resp = exchange(fds[i], req);
			j = echo_of(resp);
			ck_assert_str_eq(str(j, "target"), target);
			json_decref(j);
			free(resp);
		}
	ck_assert_uint_eq(upstream_connections(u), NCONN);
	ck_assert_uint_eq(upstream_requests(u), 2 * NCONN);

	/* A request in /slow's wait, an idle connection: stop is quick. */
	slow = tcp_connect(upstream_port(u));
	idle = tcp_connect(upstream_port(u));
	ck_assert_int_eq(send(slow, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n", 31,
			     0),
	    31);
	while (upstream_requests(u) < 2 * NCONN + 1)
		usleep(1000);
	t0 = now_ms();
	upstream_stop(u);
	ck_assert_double_lt(now_ms() - t0, 1000);
	ck_assert(peer_closed(slow));
	ck_assert(peer_closed(idle));
	for (int i = 0; i < NCONN; i++) {
		ck_assert(peer_closed(fds[i]));
		close(fds[i]);
	}
	close(slow);
	close(idle);
}
END_TEST

/*
 * Talks TLS to port, verifying the chain against ca and the name host (an
 * IP address when ip): the answer to req (read to the end), or NULL when
 * the handshake failed. *verify is the verification result; *clean whether
 * the server ended with a close_notify.
 */
static char *
tls_exchange(uint16_t port, const char *ca, const char *host, bool ip,
    const char *req, long *verify, bool *clean)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	int fd = tcp_connect(port);
	char *out = NULL;
	size_t len = 0;
	SSL *ssl;
	FILE *f;

	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(SSL_CTX_load_verify_locations(ctx, ca, NULL), 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	ssl = SSL_new(ctx);
	ck_assert_ptr_nonnull(ssl);
	ck_assert_int_eq(SSL_set_fd(ssl, fd), 1);
	if (ip)
		ck_assert_int_eq(X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(
								   ssl),
				     host),
		    1);
	else {
		ck_assert_int_eq(SSL_set1_host(ssl, host), 1);
		ck_assert_int_eq(SSL_set_tlsext_host_name(ssl, host), 1);
	}
	*clean = false;
	if (SSL_connect(ssl) == 1) {
		char buf[4096];
		int n;
		*verify = SSL_get_verify_result(ssl);
		ck_assert_int_eq(SSL_write(ssl, req, (int)strlen(req)),
		    (int)strlen(req));
		f = open_memstream(&out, &len);
		while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0)
			fwrite(buf, 1, (size_t)n, f);
		*clean = SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN;
		fclose(f);
	} else
		*verify = SSL_get_verify_result(ssl);
	ERR_clear_error();
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return out;
}

static void
path_in(char *buf, size_t len, const char *dir, const char *name)
{
	struct stat st;

	snprintf(buf, len, "%s/%s", dir, name);
	ck_assert_msg(stat(buf, &st) == 0 && st.st_size > 0, "%s", buf);
}

START_TEST(tls)
{
	const char *const hosts[] = { "localhost", "127.0.0.1", NULL };
	const char *const none[] = { NULL };
	char dir[400], other[400], ca[500], other_ca[500], cert[500], key[500],
	    ipcert[500], ipkey[500];
	static const char req[] = "GET /tls HTTP/1.1\r\nHost: localhost\r\n"
				  "Connection: close\r\n\r\n";
	struct upstream *u, *u_ip;
	long verify;
	bool clean;
	char *resp;
	json_t *j;
	int fd;

	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(other, sizeof(other), "%s", harness_tmpdir());
	ck_assert_int_eq(test_ca_make(dir, hosts), 0);
	ck_assert_int_eq(test_ca_make(other, none), 0);
	path_in(ca, sizeof(ca), dir, "ca.pem");
	path_in(cert, sizeof(cert), dir, "ca.key");
	path_in(cert, sizeof(cert), dir, "localhost.pem");
	path_in(key, sizeof(key), dir, "localhost.key");
	path_in(ipcert, sizeof(ipcert), dir, "127.0.0.1.pem");
	path_in(ipkey, sizeof(ipkey), dir, "127.0.0.1.key");
	path_in(other_ca, sizeof(other_ca), other, "ca.pem");
	/* Bad names are refused, not passed on. */
	ck_assert_int_eq(test_ca_make(other,
			     (const char *const[]){ "../evil", NULL }),
	    -1);

	u = upstream_start(cert, key);
	ck_assert_ptr_nonnull(u);
	resp = tls_exchange(upstream_port(u), ca, "localhost", false, req,
	    &verify, &clean);
	ck_assert_ptr_nonnull(resp);
	ck_assert_int_eq(verify, X509_V_OK);
	j = echo_of(resp);
	ck_assert_str_eq(str(j, "target"), "/tls");
	ck_assert_str_eq(str(j, "host"), "localhost");
	ck_assert(clean);
	json_decref(j);
	free(resp);

	/* The wrong name, the wrong CA: no handshake. */
	resp = tls_exchange(upstream_port(u), ca, "elsewhere.test", false, req,
	    &verify, &clean);
	ck_assert_ptr_null(resp);
	ck_assert_int_eq(verify, X509_V_ERR_HOSTNAME_MISMATCH);
	resp = tls_exchange(upstream_port(u), other_ca, "localhost", false, req,
	    &verify, &clean);
	ck_assert_ptr_null(resp);
	ck_assert_int_ne(verify, X509_V_OK);

	/* TLS only: plain HTTP gets no HTTP answer. */
	fd = tcp_connect(upstream_port(u));
	resp = exchange(fd, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
	ck_assert_msg(strstr(resp, "HTTP/1.1") == NULL, "%s", resp);
	free(resp);
	close(fd);
	ck_assert_uint_eq(upstream_connections(u), 4);
	ck_assert_uint_eq(upstream_requests(u), 1);

	/* The leaf for 127.0.0.1 holds the address. */
	u_ip = upstream_start(ipcert, ipkey);
	ck_assert_ptr_nonnull(u_ip);
	resp = tls_exchange(upstream_port(u_ip), ca, "127.0.0.1", true,
	    "GET /close HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", &verify, &clean);
	ck_assert_ptr_nonnull(resp);
	ck_assert_int_eq(verify, X509_V_OK);
	ck_assert_str_eq(body_of(resp), "bye");
	ck_assert(clean);
	free(resp);
	upstream_stop(u_ip);
	upstream_stop(u);
}
END_TEST

/* A unix socket server that has answered already: accepts, writes. */
static int
unix_pair(const char *path, int *srv)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), fd;

	ck_assert_int_ge(lfd, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	unlink(path);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(listen(lfd, 4), 0);
	fd = unix_connect(path);
	ck_assert_int_ge(fd, 0);
	*srv = accept(lfd, NULL, NULL);
	ck_assert_int_ge(*srv, 0);
	close(lfd);
	return fd;
}

/* http_exchange on a unix socket whose peer wrote answer: what it read,
 * in *ms how long it took. The peer stays open unless close_after. */
static char *
canned(const char *path, const char *req, const char *answer, bool close_after,
    double *ms)
{
	int srv, fd = unix_pair(path, &srv);
	char *resp, drained[256];
	double t0 = now_ms();

	ck_assert_int_eq(write(srv, answer, strlen(answer)),
	    (ssize_t)strlen(answer));
	if (close_after)
		shutdown(srv, SHUT_WR);
	resp = http_exchange(fd, req, strlen(req), 3000);
	*ms = now_ms() - t0;
	ck_assert_ptr_nonnull(resp);
	/* The request arrived whole. */
	ck_assert_int_eq(read(srv, drained, sizeof(drained)),
	    (ssize_t)strlen(req));
	close(srv);
	close(fd);
	return resp;
}

START_TEST(unix_socket)
{
	char dir[400], path[500], big[200];
	double ms;
	char *resp;

	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	snprintf(path, sizeof(path), "%s/none.sock", dir);
	errno = 0;
	ck_assert_int_eq(unix_connect(path), -1);
	ck_assert_int_eq(errno, ENOENT);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(unix_connect(big), -1);

	snprintf(path, sizeof(path), "%s/s.sock", dir);
	/* Content-Length: done at its end, what followed kept. */
	resp = canned(path, "GET / HTTP/1.1\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false, &ms);
	ck_assert_str_eq(resp,
	    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	ck_assert_double_lt(ms, 1000);
	free(resp);
	/* Chunked: done at the last chunk. */
	resp = canned(path, "GET / HTTP/1.1\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "2\r\nok\r\n0\r\n\r\n",
	    false, &ms);
	ck_assert_str_eq(body_of(resp), "2\r\nok\r\n0\r\n\r\n");
	ck_assert_double_lt(ms, 1000);
	free(resp);
	/* A 2xx to CONNECT and a 204: the head alone. */
	resp = canned(path, "CONNECT h:443 HTTP/1.1\r\n\r\n",
	    "HTTP/1.1 200 Connection Established\r\n\r\n", false, &ms);
	ck_assert_str_eq(resp, "HTTP/1.1 200 Connection Established\r\n\r\n");
	ck_assert_double_lt(ms, 1000);
	free(resp);
	resp = canned(path, "DELETE /x HTTP/1.1\r\n\r\n",
	    "HTTP/1.1 204 No Content\r\n\r\n", false, &ms);
	ck_assert_double_lt(ms, 1000);
	free(resp);
	/* Neither: until the close, or the timeout. */
	resp = canned(path, "GET / HTTP/1.1\r\n\r\n",
	    "HTTP/1.1 200 OK\r\n\r\nto the end", true, &ms);
	ck_assert_str_eq(body_of(resp), "to the end");
	ck_assert_double_lt(ms, 1000);
	free(resp);
	resp = canned(path, "GET / HTTP/1.1\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", false, &ms);
	ck_assert_str_eq(body_of(resp), "short");
	ck_assert_double_ge(ms, 2900);
	free(resp);
}
END_TEST

static Suite *
upstream_suite(void)
{
	Suite *s = suite_create("upstream");
	TCase *tc = tcase_create("upstream");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, keep_alive);
	tcase_add_test(tc, request_bodies);
	tcase_add_test(tc, special_targets);
	tcase_add_test(tc, concurrent_and_stop);
	tcase_add_test(tc, tls);
	tcase_add_test(tc, unix_socket);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(upstream_suite());
}
