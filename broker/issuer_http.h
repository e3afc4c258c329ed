/*
 * The broker's client for credential issuers (issuers.h): one blocking
 * HTTP/1.1 exchange per connection over TLS, verified against the
 * broker's issuer trust (a CA file, or the system's store) and the URL's
 * host name or address, or over plain HTTP to a loopback address only
 * (127.0.0.0/8, ::1), as the rest of cordon allows. A deadline covers the
 * whole exchange; the answer is read with a cap. Nothing is retried here.
 */
#ifndef CORDON_BROKER_ISSUER_HTTP_H
#define CORDON_BROKER_ISSUER_HTTP_H

#include "buf.h"

#include <openssl/ssl.h>

#include <stdbool.h>
#include <stddef.h>

/* The longest body of an issuer's answer, decoded (its head, read by
 * common/http_answer.h, at most 32 KiB apart). */
#define IHTTP_MAX_ANSWER (256 * 1024)
/* The longest URL an issuer may be given. */
#define IHTTP_URL_MAX 512

struct ihttp_url {
	bool tls;
	char host[256]; /* without brackets */
	char port[8];
	char path[IHTTP_URL_MAX]; /* from the first '/', "/" when none */
	bool literal; /* host is an IP address */
};

/*
 * Parses url: "https://host[:port][/path]" or "http://" to a loopback
 * address. 0, or -EINVAL (no such form, userinfo, a fragment, a space or
 * control byte, over IHTTP_URL_MAX) or -EPERM (plain http elsewhere
 * than loopback).
 */
int ihttp_parse_url(const char *url, struct ihttp_url *ret);

struct ihttp_answer {
	long status;
	struct buf body; /* the body alone, dechunked, NUL-terminated */
};

/*
 * Sends method url with head_fields (each "Name: value\r\n", or NULL) and
 * a body (blen bytes, may be 0) through ctx for TLS, waiting at most
 * timeout_ms: 0 when an answer came, whatever its status, else
 * -ECONNREFUSED, -ETIMEDOUT, -EPROTO (the TLS handshake or the
 * certificate failed), -EFBIG (answer over IHTTP_MAX_ANSWER), -EIO (a
 * malformed answer or a cut connection) or -EINVAL/-EPERM (the URL).
 * Free the answer with ihttp_answer_free. The request is wiped from
 * memory after it is sent (it holds credentials).
 */
int ihttp_request(SSL_CTX *ctx, const char *url, const char *method,
    const char *head_fields, const void *body, size_t blen, long timeout_ms,
    struct ihttp_answer *ret);

void ihttp_answer_free(struct ihttp_answer *a);

/* A client context: TLS 1.2 or later, peers verified against ca_file
 * (PEM) or, when NULL, the system's trust store. NULL on failure. */
SSL_CTX *ihttp_ctx_new(const char *ca_file);

#endif
