/*
 * The head of a request as it goes upstream: origin-form, the Host the
 * verdict checked, hop-by-hop and Proxy-* fields dropped (http1.c). For
 * broker.cordon it goes with the proxy's own credentials instead of the
 * job's: the verifier key and the channel's job. A change to what a job's
 * request carries upstream (a credential swapped in for a token) lands
 * here, after every verdict and before a byte leaves.
 */
#ifndef CORDON_PROXY_FORWARD_H
#define CORDON_PROXY_FORWARD_H

#include "buf.h"
#include "egress.h"
#include "http1.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

/* Where a judged request goes. */
struct forward_target {
	const char *host; /* normalised */
	uint16_t port;
	bool tunnel; /* inside a terminated tunnel: 443 is the default */
	bool upgrade_ok; /* keep Upgrade (the rule allows it) */
	/* Set for broker.cordon: the broker's address, the verifier key
	 * and the job the channel belongs to. */
	const struct sockaddr_in *broker;
	const char *verifier_key;
	const char *job;
	/* Set for a rule that injects a credential (credentials.md): the
	 * header and its value (inject_format's), added in place of the
	 * job's token. */
	const char *inject_header;
	const char *inject_value;
	/* The answer is scanned (something was released to the job,
	 * reflect.h): asked for whole and plain, without the job's
	 * Accept-Encoding, Range or If-Range. */
	bool scanned;
};

/*
 * Writes the head of r (its bytes in head) for t to out: Host is t's
 * host, with ":port" unless the port is the scheme's default; for
 * broker.cordon, Host is the broker's address, Authorization the verifier
 * key and X-Cordon-Job the job, and the job's own Authorization, Cookie
 * and X-Cordon-* fields are dropped. With inject_header, the job's fields
 * of that name (case folded, '_' read as '-': CGI's and WSGI's reading),
 * its Authorization and X-Cordon-* fields and every field
 * whose value holds a crd_ token are dropped, so is every query
 * parameter holding one and its Accept-Encoding, and inject_header:
 * inject_value and Accept-Encoding: identity are added. 0, or http1_serialize's -errno. The
 * caller wipes out after use: it may hold a key.
 */
int forward_head(const struct http1_request *r, const char *head,
    const struct forward_target *t, struct buf *out);

#endif
