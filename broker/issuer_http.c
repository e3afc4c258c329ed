/*
 * The issuers' client (issuer_http.h): a URL checked before any socket
 * (https anywhere, http to loopback only), a non-blocking connect, an
 * OpenSSL handshake that verifies the chain and the host (its DNS name,
 * or its IP address for a literal), one request with Connection: close,
 * and the answer read by common/http_answer.h (strict framing, capped)
 * under one deadline. The request's bytes (client secrets, tokens, JWTs)
 * are wiped once sent, the answer's read buffers when it is read.
 */
#include "issuer_http.h"

#include "http_answer.h"
#include "http_client.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define REQ_HEAD_MAX (16 * 1024)
/* The longest head of an issuer's answer (interim heads and trailers
 * counted in). */
#define ANSWER_HEAD_MAX (32 * 1024)

void
ihttp_answer_free(struct ihttp_answer *a)
{
	if (a->body.data != NULL)
		OPENSSL_cleanse(a->body.data, a->body.len);
	buf_free(&a->body);
}

SSL_CTX *
ihttp_ctx_new(const char *ca_file)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if ((ca_file != NULL &&
		SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) ||
	    (ca_file == NULL && SSL_CTX_set_default_verify_paths(ctx) != 1)) {
		SSL_CTX_free(ctx);
		ERR_clear_error();
		return NULL;
	}
	return ctx;
}

static bool
loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return false;
}

int
ihttp_parse_url(const char *url, struct ihttp_url *ret)
{
	const char *hp, *end, *colon = NULL;
	size_t n = strlen(url);

	memset(ret, 0, sizeof(*ret));
	if (n == 0 || n >= IHTTP_URL_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)url[i] <= 0x20 ||
		    (unsigned char)url[i] >= 0x7f || url[i] == '#')
			return -EINVAL;
	if (strncmp(url, "https://", 8) == 0) {
		ret->tls = true;
		hp = url + 8;
	} else if (strncmp(url, "http://", 7) == 0) {
		hp = url + 7;
	} else {
		return -EINVAL;
	}
	end = hp + strcspn(hp, "/?");
	if (memchr(hp, '@', (size_t)(end - hp)) != NULL || end == hp)
		return -EINVAL;
	if (*hp == '[') {
		const char *rb = memchr(hp, ']', (size_t)(end - hp));
		if (rb == NULL || rb - hp - 1 <= 0 ||
		    (size_t)(rb - hp - 1) >= sizeof(ret->host))
			return -EINVAL;
		memcpy(ret->host, hp + 1, (size_t)(rb - hp - 1));
		if (rb + 1 < end) {
			if (rb[1] != ':')
				return -EINVAL;
			colon = rb + 1;
		}
	} else {
		colon = memchr(hp, ':', (size_t)(end - hp));
		size_t hl = (size_t)((colon != NULL ? colon : end) - hp);
		if (hl == 0 || hl >= sizeof(ret->host))
			return -EINVAL;
		memcpy(ret->host, hp, hl);
		for (size_t i = 0; i < hl; i++)
			if (!(ret->host[i] == '.' || ret->host[i] == '-' ||
				(ret->host[i] >= '0' && ret->host[i] <= '9') ||
				(ret->host[i] >= 'a' && ret->host[i] <= 'z') ||
				(ret->host[i] >= 'A' && ret->host[i] <= 'Z')))
				return -EINVAL;
	}
	if (colon != NULL) {
		size_t pl = (size_t)(end - colon - 1);
		char *e;
		unsigned long p;
		if (pl == 0 || pl >= sizeof(ret->port))
			return -EINVAL;
		memcpy(ret->port, colon + 1, pl);
		p = strtoul(ret->port, &e, 10);
		if (*e != '\0' || p == 0 || p > 65535 || ret->port[0] == '+')
			return -EINVAL;
	} else {
		snprintf(ret->port, sizeof(ret->port), "%s",
		    ret->tls ? "443" : "80");
	}
	snprintf(ret->path, sizeof(ret->path), "%s%s", *end == '/' ? "" : "/",
	    end);
	{
		struct in_addr a4;
		struct in6_addr a6;
		ret->literal = inet_pton(AF_INET, ret->host, &a4) == 1 ||
		    inet_pton(AF_INET6, ret->host, &a6) == 1;
	}
	if (!ret->tls && !loopback(ret->host))
		return -EPERM;
	return 0;
}

static int
dial(const struct ihttp_url *u, int64_t deadline)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
	int fd = -1, err = ECONNREFUSED;

	hints.ai_flags =
	    u->literal ? AI_NUMERICHOST | AI_NUMERICSERV : AI_NUMERICSERV;
	if (getaddrinfo(u->host, u->port, &hints, &ai) != 0)
		return -ECONNREFUSED;
	/* Plain HTTP goes to loopback only: the name was a literal. */
	for (p = ai; p != NULL && fd < 0; p = p->ai_next) {
		fd = socket(p->ai_family,
		    SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			err = errno;
			continue;
		}
		err = 0;
		if (connect(fd, p->ai_addr, p->ai_addrlen) < 0) {
			if (errno != EINPROGRESS && errno != EAGAIN) {
				err = errno;
			} else if (httpc_wait_fd(fd, POLLOUT, deadline) < 0) {
				err = ETIMEDOUT;
			} else {
				socklen_t el = sizeof(err);
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
			}
		}
		if (err != 0) {
			close(fd);
			fd = -1;
		}
		if (err == ETIMEDOUT)
			break;
	}
	freeaddrinfo(ai);
	if (fd >= 0)
		return fd;
	return err == ETIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
}

/* One SSL call until it is done, waiting on fd for what it wants. */
static int
ssl_step(SSL *ssl, int fd, int rc, int64_t deadline)
{
	int e = SSL_get_error(ssl, rc);

	if (e == SSL_ERROR_WANT_READ)
		return httpc_wait_fd(fd, POLLIN, deadline);
	if (e == SSL_ERROR_WANT_WRITE)
		return httpc_wait_fd(fd, POLLOUT, deadline);
	if (e == SSL_ERROR_ZERO_RETURN)
		return 1;
	return -EIO;
}

struct conn {
	int fd;
	SSL *ssl;
};

static int
conn_send(struct conn *c, const char *p, size_t n, int64_t deadline)
{
	while (n > 0) {
		if (c->ssl != NULL) {
			int k =
			    SSL_write(c->ssl, p, (int)(n > 16384 ? 16384 : n));
			if (k > 0) {
				p += k;
				n -= (size_t)k;
				continue;
			}
			int r = ssl_step(c->ssl, c->fd, k, deadline);
			if (r != 0)
				return r < 0 ? r : -EIO;
			continue;
		}
		ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
		if (k > 0) {
			p += k;
			n -= (size_t)k;
		} else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			int r = httpc_wait_fd(c->fd, POLLOUT, deadline);
			if (r < 0)
				return r;
		} else {
			return -EIO;
		}
	}
	return 0;
}

/* Some bytes into buf: their count, 0 at the end, or -errno. */
static ssize_t
conn_recv(struct conn *c, char *buf, size_t cap, int64_t deadline)
{
	for (;;) {
		if (c->ssl != NULL) {
			int k = SSL_read(c->ssl, buf, (int)cap);
			if (k > 0)
				return k;
			int e = SSL_get_error(c->ssl, k);
			/* A peer that closes without close_notify ends a
			 * close-framed answer as well. */
			if (e == SSL_ERROR_ZERO_RETURN ||
			    (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0))
				return 0;
			if (e == SSL_ERROR_SSL) {
				unsigned long le = ERR_peek_error();
				if (ERR_GET_REASON(le) ==
				    SSL_R_UNEXPECTED_EOF_WHILE_READING)
					return 0;
			}
			int r = ssl_step(c->ssl, c->fd, k, deadline);
			if (r != 0)
				return r < 0 ? r : 0;
			continue;
		}
		ssize_t k = recv(c->fd, buf, cap, 0);
		if (k >= 0)
			return k;
		if (errno == EAGAIN || errno == EINTR) {
			int r = httpc_wait_fd(c->fd, POLLIN, deadline);
			if (r < 0)
				return r;
			continue;
		}
		return -EIO;
	}
}

/* The answer's bytes from the connection, for http_answer_read. */
struct reading {
	struct conn *c;
	int64_t deadline;
};

static ssize_t
read_some(void *ctx, char *buf, size_t n)
{
	struct reading *rd = ctx;

	return conn_recv(rd->c, buf, n, rd->deadline);
}

static int
handshake(struct conn *c, SSL_CTX *ctx, const struct ihttp_url *u,
    int64_t deadline)
{
	X509_VERIFY_PARAM *vp;
	int rc;

	if ((c->ssl = SSL_new(ctx)) == NULL)
		return -ENOMEM;
	vp = SSL_get0_param(c->ssl);
	if (u->literal) {
		if (X509_VERIFY_PARAM_set1_ip_asc(vp, u->host) != 1)
			return -EPROTO;
	} else if (SSL_set_tlsext_host_name(c->ssl, u->host) != 1 ||
	    SSL_set1_host(c->ssl, u->host) != 1) {
		return -EPROTO;
	}
	if (SSL_set_fd(c->ssl, c->fd) != 1)
		return -EPROTO;
	while ((rc = SSL_connect(c->ssl)) != 1) {
		int e = SSL_get_error(c->ssl, rc);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
			return -EPROTO;
		int r = httpc_wait_fd(c->fd,
		    e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
		if (r < 0)
			return r;
	}
	return SSL_get_verify_result(c->ssl) == X509_V_OK ? 0 : -EPROTO;
}

int
ihttp_request(SSL_CTX *ctx, const char *url, const char *method,
    const char *head_fields, const void *body, size_t blen, long timeout_ms,
    struct ihttp_answer *ret)
{
	struct ihttp_url u;
	struct conn c = { .fd = -1 };
	struct buf req = BUF_INIT(REQ_HEAD_MAX + IHTTP_MAX_ANSWER);
	struct http_answer a;
	int64_t deadline = monotonic_ms() + timeout_ms;
	struct reading rd = { .c = &c, .deadline = deadline };
	bool v6;
	int r;

	*ret = (struct ihttp_answer){ .body = BUF_INIT(0) };
	http_answer_init(&a, strcmp(method, "HEAD") == 0, ANSWER_HEAD_MAX,
	    IHTTP_MAX_ANSWER);
	if ((r = ihttp_parse_url(url, &u)) < 0)
		goto out;
	if (u.tls && ctx == NULL) {
		r = -EPROTO;
		goto out;
	}
	v6 = strchr(u.host, ':') != NULL;
	r = buf_printf(&req,
	    "%s %s HTTP/1.1\r\nHost: %s%s%s%s%s\r\nConnection: close\r\n"
	    "User-Agent: cordon-broker\r\n%sContent-Length: %zu\r\n\r\n",
	    method, u.path, v6 ? "[" : "", u.host, v6 ? "]" : "",
	    (strcmp(u.port, u.tls ? "443" : "80") == 0) ? "" : ":",
	    (strcmp(u.port, u.tls ? "443" : "80") == 0) ? "" : u.port,
	    head_fields != NULL ? head_fields : "", blen);
	if (r == 0 && blen > 0)
		r = buf_append(&req, body, blen);
	if (r < 0)
		goto out;
	if ((c.fd = dial(&u, deadline)) < 0) {
		r = c.fd;
		goto out;
	}
	if (u.tls && (r = handshake(&c, ctx, &u, deadline)) < 0)
		goto out;
	if ((r = conn_send(&c, req.data, req.len, deadline)) < 0)
		goto out;
	r = http_answer_read(&a, read_some, &rd);
out:
	if (req.data != NULL)
		OPENSSL_cleanse(req.data, req.len);
	buf_free(&req);
	if (c.ssl != NULL) {
		SSL_free(c.ssl);
		ERR_clear_error();
	}
	if (c.fd >= 0)
		close(c.fd);
	if (r == 0) {
		ret->status = a.status;
		ret->body = a.body;
		a.body = (struct buf)BUF_INIT(0);
	}
	http_answer_free(&a);
	return r;
}
