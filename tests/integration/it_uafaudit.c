/*
 * Connections used after they were freed, or carried on under a callback
 * of their own (uafaudit): inside a terminated TLS tunnel, libevent's TLS
 * filter runs the client's callbacks from inside the proxy's own calls
 * (enabling a read, draining the input below its high watermark) unless
 * they are deferred. A job's client that fills the proxy's input past
 * its high watermark while the upstream's handshake waits, then (1)
 * closes its TLS, or (2) pipelines a request the rules refuse behind an
 * exact body, made the proxy free the connection under its own body pump
 * (ASan: heap-use-after-free in pump_body) or carry the refused request
 * upstream as part of the body (the pump called again inside itself,
 * before it had counted what it sent).
 *
 * The real broker and proxy (injectkit), an upstream TLS server in a
 * thread of the test that drops the tunnel's first connection and holds
 * the handshake of the next, and raw TLS records written on the job's
 * channel in one write; no job runs.
 */
#include "harness.h"
#include "injectkit.h"
#include "upstream.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* conn.c's READ_HIGH: HTTP1_HEAD_MAX (8192 + 2 + 65536 + 2) + 64 KiB, the
 * client input the proxy holds before it stops reading. */
#define PROXY_READ_HIGH (8192 + 2 + 65536 + 2 + 65536)
/* The body's TLS records: small, so that the proxy's last read holds
 * whole ones past its high watermark. */
#define RECORD 4096
/* Records of body the client writes: the last one crosses the watermark,
 * so that what follows it (a close) is in the proxy's last read. */
#define RECORDS (PROXY_READ_HIGH / RECORD + 1)

static struct injectkit kit;

/* --- the upstream: drops the first connection, holds the next ---------- */

struct slow_up {
	int lfd;
	uint16_t port;
	SSL_CTX *ctx;
	pthread_t thread;
	atomic_bool stop;
	atomic_int accepted; /* connections accepted */
	atomic_bool first_closed;
	atomic_bool served; /* the held connection answered and closed */
	pthread_mutex_t lock;
	char *got; /* the held connection's bytes, decrypted */
	size_t got_len;
};

static struct slow_up up = { .lfd = -1 };

/* Reads the held connection until 2 s pass with nothing, keeping what
 * came, then answers 200 and closes. */
static void
slow_serve(SSL *ssl, int fd)
{
	char buf[16384];

	for (;;) {
		if (SSL_pending(ssl) == 0) {
			struct pollfd p = { fd, POLLIN, 0 };
			if (poll(&p, 1, 2000) <= 0)
				break;
		}
		int r = SSL_read(ssl, buf, sizeof(buf));
		if (r <= 0)
			break;
		pthread_mutex_lock(&up.lock);
		char *g = realloc(up.got, up.got_len + (size_t)r + 1);
		if (g != NULL) {
			memcpy(g + up.got_len, buf, (size_t)r);
			up.got = g;
			up.got_len += (size_t)r;
			up.got[up.got_len] = '\0';
		}
		pthread_mutex_unlock(&up.lock);
	}
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
				 "Connection: close\r\n\r\nok";
	(void)SSL_write(ssl, ok, (int)strlen(ok));
	(void)SSL_shutdown(ssl);
}

/* The tunnel's first connection: one request's head read, answered 200
 * with Connection: close (so the next request connects anew). */
static void
first_serve(SSL *ssl)
{
	char buf[4096];
	size_t n = 0;

	while (n < sizeof(buf) - 1) {
		int r = SSL_read(ssl, buf + n, (int)(sizeof(buf) - 1 - n));
		if (r <= 0)
			return;
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n") != NULL)
			break;
	}
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
				 "Connection: close\r\n\r\nfirst";
	(void)SSL_write(ssl, ok, (int)strlen(ok));
	(void)SSL_shutdown(ssl);
}

static void *
slow_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&up.stop)) {
		struct pollfd p = { up.lfd, POLLIN, 0 };
		if (poll(&p, 1, 100) <= 0)
			continue;
		int fd = accept(up.lfd, NULL, NULL);
		if (fd < 0)
			continue;
		int n = atomic_fetch_add(&up.accepted, 1) + 1;
		/* The second and later: the handshake waits 1.5 s, while the
		 * client's bytes pile up at the proxy. */
		if (n > 1)
			usleep(1500 * 1000);
		SSL *ssl = SSL_new(up.ctx);
		SSL_set_fd(ssl, fd);
		if (SSL_accept(ssl) == 1) {
			if (n == 1)
				first_serve(ssl);
			else
				slow_serve(ssl, fd);
			if (n > 1)
				atomic_store(&up.served, true);
		}
		SSL_free(ssl);
		close(fd);
		if (n == 1)
			atomic_store(&up.first_closed, true);
	}
	return NULL;
}

static void
slow_start(const char *cert, const char *key)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);

	up.ctx = SSL_CTX_new(TLS_server_method());
	ck_assert_ptr_nonnull(up.ctx);
	ck_assert_int_eq(SSL_CTX_use_certificate_file(up.ctx, cert,
			     SSL_FILETYPE_PEM),
	    1);
	ck_assert_int_eq(SSL_CTX_use_PrivateKey_file(up.ctx, key,
			     SSL_FILETYPE_PEM),
	    1);
	up.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(up.lfd, 0);
	ck_assert_int_eq(bind(up.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(up.lfd, 16), 0);
	ck_assert_int_eq(getsockname(up.lfd, (struct sockaddr *)&sa, &len), 0);
	up.port = ntohs(sa.sin_port);
	pthread_mutex_init(&up.lock, NULL);
	ck_assert_int_eq(pthread_create(&up.thread, NULL, slow_main, NULL), 0);
}

static void
slow_stop(void)
{
	if (up.lfd < 0)
		return;
	atomic_store(&up.stop, true);
	pthread_join(up.thread, NULL);
	close(up.lfd);
	up.lfd = -1;
	SSL_CTX_free(up.ctx);
	free(up.got);
	up.got = NULL;
}

/* --- the stack ------------------------------------------------------------ */

static void
setup(void)
{
	const char *hosts[] = { "slow.test", NULL };
	char cert[400], key[400], dir[300], extra[400];

	snprintf(dir, sizeof(dir), "%s", harness_tmpdir());
	ck_assert_int_eq(test_ca_make(dir, hosts), 0);
	snprintf(cert, sizeof(cert), "%s/slow.test.pem", dir);
	snprintf(key, sizeof(key), "%s/slow.test.key", dir);
	slow_start(cert, key);
	snprintf(extra, sizeof(extra), "\"upstream_ca_file\": \"%s/ca.pem\"",
	    dir);
	injectkit_stack_start(&kit, "127.0.0.1 slow.test\n", "uafaudit", extra);
	json_t *egress =
	    json_pack("[{s:s, s:i, s:s, s:[s], s:[s], s:s, s:[s]}]", "host",
		"slow.test", "port", up.port, "tls", "terminate", "methods",
		"POST", "paths", "/up/", "reason", "the held upstream",
		"allow_cidrs", "127.0.0.0/8");
	injectkit_job_start(&kit, "uaf", injectkit_manifest("uaf", egress));
}

static void
teardown(void)
{
	slow_stop();
	daemon_stop(&kit.proxy);
	daemon_stop(&kit.broker);
}

/* --- the client ------------------------------------------------------------ */

/* CONNECT slow.test on the job's channel, TLS with the job's CA over it,
 * and the tunnel's first upstream connection dropped by the upstream (so
 * that the next request connects anew): the SSL, on *ret_fd. */
static SSL *
tunnel(int *ret_fd)
{
	char req[256];
	int fd = unix_connect(kit.channel);

	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req),
	    "CONNECT slow.test:%u HTTP/1.1\r\nHost: slow.test:%u\r\n\r\n",
	    up.port, up.port);
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
	SSL_set_tlsext_host_name(ssl, "slow.test");
	SSL_set1_host(ssl, "slow.test");
	SSL_set_fd(ssl, fd);
	ck_assert_msg(SSL_connect(ssl) == 1, "handshake with the job's CA");
	/* One request on the tunnel's first upstream connection, which the
	 * upstream closes after its answer. */
	snprintf(req, sizeof(req),
	    "POST /up/first HTTP/1.1\r\nHost: slow.test:%u\r\n"
	    "Content-Length: 0\r\n\r\n",
	    up.port);
	ck_assert_int_eq(SSL_write(ssl, req, (int)strlen(req)),
	    (int)strlen(req));
	char ans[1024];
	size_t got = 0;
	while (got < sizeof(ans) - 1) {
		int r = SSL_read(ssl, ans + got, (int)(sizeof(ans) - 1 - got));
		ck_assert_msg(r > 0, "no answer to the first request");
		got += (size_t)r;
		ans[got] = '\0';
		if (strstr(ans, "\r\n\r\nfirst") != NULL)
			break;
	}
	ck_assert_msg(http_status(ans) == 200, "first: %.300s", ans);
	for (int i = 0; i < 100 && !atomic_load(&up.first_closed); i++)
		usleep(50 * 1000);
	ck_assert_msg(atomic_load(&up.first_closed),
	    "the upstream never closed the tunnel's first connection");
	*ret_fd = fd;
	return ssl;
}

/* Writes head, then the stream body[0..len) in RECORD-byte records, then
 * (close) the close_notify: all as TLS records into memory, then on fd
 * in one write, so that the proxy's reads hold many records at once. */
static void
burst(SSL *ssl, int fd, const char *head, const char *body, size_t len,
    bool close)
{
	BIO *mem = BIO_new(BIO_s_mem());

	ck_assert_ptr_nonnull(mem);
	SSL_set0_wbio(ssl, mem);
	ck_assert_int_eq(SSL_write(ssl, head, (int)strlen(head)),
	    (int)strlen(head));
	for (size_t at = 0; at < len; at += RECORD) {
		int n = (int)(len - at < RECORD ? len - at : RECORD);
		ck_assert_int_eq(SSL_write(ssl, body + at, n), n);
	}
	if (close)
		(void)SSL_shutdown(ssl);
	char *data;
	long n = BIO_get_mem_data(mem, &data);
	ck_assert_int_gt(n, 0);
	for (long at = 0; at < n;) {
		ssize_t w = write(fd, data + at, (size_t)(n - at));
		ck_assert_int_gt(w, 0);
		at += w;
	}
	(void)BIO_reset(mem);
}

/* Whether the proxy still answers /healthz. */
static bool
proxy_alive(void)
{
	long status = 0;
	json_t *h = harness_get_json(&kit.proxy, "/healthz", &status);

	json_decref(h);
	return status == 200;
}

/* The held connection's bytes so far: a copy (free it). */
static char *
upstream_got(size_t *ret_len)
{
	pthread_mutex_lock(&up.lock);
	char *g = malloc(up.got_len + 1);
	ck_assert_ptr_nonnull(g);
	if (up.got_len > 0)
		memcpy(g, up.got, up.got_len);
	g[up.got_len] = '\0';
	*ret_len = up.got_len;
	pthread_mutex_unlock(&up.lock);
	return g;
}

/* The client's TLS closed while the proxy drained its body: before the
 * fix the filter told the close inside the drain, the pump went again
 * inside itself, finished the connection and freed it, and the outer
 * pump went on with it (ASan: heap-use-after-free in pump_body). */
START_TEST(a_client_closing_inside_the_body_drain_is_not_used_after_free)
{
	int fd;
	SSL *ssl = tunnel(&fd);
	char head[256];
	size_t len = (size_t)RECORDS * RECORD;
	char *body = malloc(len);

	ck_assert_ptr_nonnull(body);
	memset(body, 'x', len);
	/* More body announced than sent: the close cuts it. */
	snprintf(head, sizeof(head),
	    "POST /up/cut HTTP/1.1\r\nHost: slow.test:%u\r\n"
	    "Content-Length: 1000000\r\n\r\n",
	    up.port);
	burst(ssl, fd, head, body, len, true);
	free(body);
	/* Its line, once the held handshake (1.5 s) let it go: the whole
	 * body sent taken, then the client's close. */
	char line[160];
	snprintf(line, sizeof(line),
	    "\"detail\":\"client_closed\",\"status\":0,\"bytes_up\":%zu,", len);
	bool logged = false;
	for (int i = 0; i < 300 && !logged && proxy_alive(); i++) {
		logged = injectkit_decisions_hold(&kit.proxy, line);
		if (!logged)
			usleep(100 * 1000);
	}
	ck_assert_msg(proxy_alive(),
	    "the proxy died after a TLS client closed inside its body's "
	    "drain (its log has ASan's report)");
	ck_assert_msg(logged, "no decision line with %s", line);
	ck_assert(injectkit_decisions_hold(&kit.proxy,
	    "\"path\":\"/up/cut\",\"sni\":\"slow.test\""));
	SSL_free(ssl);
	close(fd);
}
END_TEST

/* An exact body and, in the same write, a DELETE the rules refuse: the
 * upstream must read the body and nothing of the DELETE. Before the fix
 * the filter's read callback ran inside the pump's drain, the pump went
 * again before it had counted the bytes it sent, and sent that many of
 * the DELETE upstream as body, unjudged (then everything after). */
START_TEST(a_pipelined_request_is_never_sent_as_the_body_before_it)
{
	int fd;
	SSL *ssl = tunnel(&fd);
	char head[256], del[256];
	size_t blen = 100000, len = (size_t)RECORDS * RECORD;
	char *stream = malloc(len);

	ck_assert_ptr_nonnull(stream);
	snprintf(head, sizeof(head),
	    "POST /up/exact HTTP/1.1\r\nHost: slow.test:%u\r\n"
	    "Content-Length: %zu\r\n\r\n",
	    up.port, blen);
	memset(stream, 'x', blen);
	int dn = snprintf(del, sizeof(del),
	    "DELETE /up/smuggled HTTP/1.1\r\nHost: slow.test:%u\r\n"
	    "Content-Length: %zu\r\n\r\n",
	    up.port, (size_t)0);
	ck_assert_int_gt(dn, 0);
	/* The DELETE's head, then padding that is not a request: the first
	 * bytes after the body are what must not go up. */
	memcpy(stream + blen, del, (size_t)dn);
	memset(stream + blen + dn, 'y', len - blen - (size_t)dn);
	burst(ssl, fd, head, stream, len, false);
	free(stream);
	/* The held handshake, the body, the upstream's 2 s of quiet. */
	for (int i = 0; i < 300 && !atomic_load(&up.served); i++)
		usleep(100 * 1000);
	ck_assert_msg(atomic_load(&up.served),
	    "the held connection was never answered");
	size_t got_len;
	char *got = upstream_got(&got_len);
	ck_assert_msg(strstr(got, "POST /up/exact ") != NULL,
	    "the request never reached the upstream: %.200s", got);
	ck_assert_msg(memmem(got, got_len, "DELETE /up/smuggled", 19) == NULL,
	    "the upstream read the pipelined DELETE as the body before it "
	    "(%zu bytes came, the head and %zu of body were due)",
	    got_len, blen);
	free(got);
	ck_assert(proxy_alive());
	SSL_free(ssl);
	close(fd);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("uafaudit");
	TCase *tc = tcase_create("tls_filter");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc,
	    a_client_closing_inside_the_body_drain_is_not_used_after_free);
	tcase_add_test(tc,
	    a_pipelined_request_is_never_sent_as_the_body_before_it);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return harness_main(suite());
}
