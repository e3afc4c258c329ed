/*
 * cordon-drill-agent's TLS client, for the rules the proxy terminates: a
 * CONNECT through the sandbox's relay, then TLS inside the tunnel as any
 * client of the job speaks it, verified against the job's CA bundle (the
 * host's roots and the job's own CA, docs/launcher.md) and the rule's
 * host name, and one HTTP/1.1 request in origin form. OpenSSL, linked
 * statically with the rest of the agent; its configuration file is never
 * read.
 */
#include "agent.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The bundle the sandbox gives every job (SSL_CERT_FILE names it). */
#define JOB_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

static SSL_CTX *
tls_ctx(void)
{
	static SSL_CTX *ctx;
	static bool tried;

	if (tried)
		return ctx;
	tried = true;
	if (OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1 ||
	    (ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_load_verify_locations(ctx, JOB_BUNDLE, NULL) != 1) {
		SSL_CTX_free(ctx);
		ctx = NULL;
	}
	return ctx;
}

/* Waits as SSL_get_error says after ret from an SSL call on fd: 0 to try
 * again, or -errno (-EPROTO for TLS itself, -ECONNRESET at the end). */
static int
tls_wait(SSL *s, int ret, int fd, int64_t deadline)
{
	switch (SSL_get_error(s, ret)) {
	case SSL_ERROR_WANT_READ:
		return wait_fd(fd, POLLIN, deadline);
	case SSL_ERROR_WANT_WRITE:
		return wait_fd(fd, POLLOUT, deadline);
	case SSL_ERROR_ZERO_RETURN:
		return -ECONNRESET;
	case SSL_ERROR_SYSCALL:
		return errno != 0 && errno != EAGAIN ? -errno : -ECONNRESET;
	default:
		return -EPROTO;
	}
}

struct tls_conn {
	SSL *ssl;
	int fd;
};

static ssize_t
tls_read(void *ctx, char *buf, size_t n, int64_t deadline)
{
	struct tls_conn *c = ctx;

	for (;;) {
		int k, r;

		errno = 0;
		if ((k = SSL_read(c->ssl, buf,
			 n > INT32_MAX ? INT32_MAX : (int)n)) > 0)
			return k;
		r = tls_wait(c->ssl, k, c->fd, deadline);
		if (r == -ECONNRESET)
			return 0;
		if (r < 0)
			return r;
	}
}

static int
tls_send(struct tls_conn *c, const char *buf, size_t n, int64_t deadline)
{
	while (n > 0) {
		int k, r;

		errno = 0;
		if ((k = SSL_write(c->ssl, buf, (int)n)) > 0) {
			buf += k;
			n -= (size_t)k;
		} else if ((r = tls_wait(c->ssl, k, c->fd, deadline)) < 0) {
			return r;
		}
	}
	return 0;
}

/* The handshake on the tunnel fd for host: 0, or -errno with what TLS
 * said in note (n bytes, one word). */
static int
tls_handshake(struct tls_conn *c, const char *host, char *note, size_t n,
    int64_t deadline)
{
	SSL_CTX *ctx = tls_ctx();
	int k, r;

	if (ctx == NULL) {
		snprintf(note, n, "no_ca_bundle");
		return -EPROTO;
	}
	if ((c->ssl = SSL_new(ctx)) == NULL || SSL_set_fd(c->ssl, c->fd) != 1 ||
	    SSL_set_tlsext_host_name(c->ssl, host) != 1 ||
	    SSL_set1_host(c->ssl, host) != 1) {
		snprintf(note, n, "setup_failed");
		return -ENOMEM;
	}
	for (;;) {
		errno = 0;
		if ((k = SSL_connect(c->ssl)) == 1)
			return 0;
		if ((r = tls_wait(c->ssl, k, c->fd, deadline)) < 0)
			break;
	}
	long v = SSL_get_verify_result(c->ssl);
	if (v != X509_V_OK)
		snprintf(note, n, "verify_failed:%ld", v);
	else
		snprintf(note, n, "handshake_failed");
	return r;
}

void
tls_request(const struct rule *u, const char *method, const char *suffix,
    const char *headers, const char *body, struct resp *r)
{
	char target[300], req[8192], clen[48] = "";
	int64_t deadline = now_ms() + PROXY_MS;
	struct tls_conn c = { .ssl = NULL, .fd = -1 };
	int n;

	hostport(target, sizeof(target), u->host, u->port);
	proxy_request("CONNECT", target, target, "", NULL, r, &c.fd);
	if (c.fd < 0)
		return; /* the CONNECT's answer is the answer */
	memset(&r->h, 0, sizeof(r->h));
	r->err = 0;
	r->len = r->head_len = 0;
	r->buf[0] = '\0';
	if (body != NULL)
		snprintf(clen, sizeof(clen), "Content-Length: %zu\r\n",
		    strlen(body));
	n = snprintf(req, sizeof(req),
	    "%s %s%s HTTP/1.1\r\nHost: %s\r\n%s%sConnection: close\r\n\r\n%s",
	    method, u->path, suffix, u->port == 443 ? u->host : target, headers,
	    clen, body != NULL ? body : "");
	if (n < 0 || (size_t)n >= sizeof(req))
		r->err = EMSGSIZE;
	else if ((n = tls_handshake(&c, u->host, r->tls, sizeof(r->tls),
		      deadline)) < 0)
		r->err = -n;
	else if ((n = tls_send(&c, req, strlen(req), deadline)) < 0)
		r->err = -n;
	else
		read_response_from(tls_read, &c, r, false, deadline);
	explicit_bzero(req, sizeof(req));
	/* The tunnel's answer was counted by proxy_request; this one is the
	 * upstream's or the proxy's inside it. */
	proxy_count(&r->h, false);
	if (c.ssl != NULL) {
		SSL_shutdown(c.ssl);
		SSL_free(c.ssl);
	}
	close(c.fd);
}

void
rule_request(const struct rule *u, const char *method, const char *suffix,
    const char *headers, const char *body, struct resp *r)
{
	char url[1400], host[300];

	if (strcmp(u->tls, "terminate") == 0) {
		tls_request(u, method, suffix, headers, body, r);
		return;
	}
	rule_url(u, suffix, url, sizeof(url), host, sizeof(host));
	proxy_request(method, url, host, headers, body, r, NULL);
}
