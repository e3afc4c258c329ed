/*
 * The proxy's TLS, both sides: the server context that terminates a job's
 * tunnel with a leaf from the job's own CA (the ClientHello's SNI must be
 * the CONNECT's target), and the client context towards upstreams, which
 * verifies the certificate and the name (the system's trust store, or
 * upstream_ca_file). conn.c asks for a bufferevent and reads what failed.
 */
#ifndef CORDON_PROXY_TLS_H
#define CORDON_PROXY_TLS_H

#include "ca.h"
#include "egress.h"

#include <event2/bufferevent.h>

struct proxy;

/* What a terminated tunnel's ClientHello said, filled during the
 * handshake: the connection reads it when the handshake ends or fails. */
struct tls_sni {
	const char *want; /* the CONNECT's target, normalised (borrowed) */
	char got[EGRESS_HOST_MAX + 1]; /* the SNI as sent; "" for none */
	const char *problem; /* NULL, "no_sni" or "sni_differs" */
};

/* Makes p's two contexts: 0, or -EIO with the reason logged. */
int tls_init(struct proxy *p);

/*
 * The job's side of a terminated tunnel to host: a TLS filter over under
 * (which it then owns), accepting with the job CA's leaf for host; sni
 * (sni->want set) is filled by the handshake and must outlive it. NULL
 * with *ret_why "no_leaf" or "ssl_failed", under left as it was.
 */
struct bufferevent *tls_mitm(struct proxy *p, struct bufferevent *under,
    struct job_ca *ca, const char *host, struct tls_sni *sni,
    const char **ret_why);

/* An unconnected TLS bufferevent towards host, verifying its certificate
 * and name: NULL when it could not be made. */
struct bufferevent *tls_upstream(struct proxy *p, const char *host);

/* Why the TLS upstream bev failed: "upstream_certificate" (verification)
 * or "upstream_tls" (anything else). */
const char *tls_upstream_problem(struct bufferevent *bev);

#endif
