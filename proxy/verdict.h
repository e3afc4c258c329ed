/*
 * The verdict on a request's head: what the proxy decides from the head,
 * the job's rules and the state of the revocation feed, before any DNS
 * lookup and before any token is introspected. A pure function, so that
 * each refusal can be tested without a socket; conn.c carries it out.
 * The tokens' verdicts (tokens.h, verdict_token) and the address
 * (verdict_address) come after it.
 */
#ifndef CORDON_PROXY_VERDICT_H
#define CORDON_PROXY_VERDICT_H

#include "buf.h"
#include "egress.h"

#include <jansson.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>

/* Inside the sandbox, this name is the broker (POST /v1/token only). */
#define VERDICT_BROKER_HOST "broker.cordon"

/* A request head as the verdict reads it (strings NUL-terminated). */
struct verdict_request {
	const char *method;
	const char *host; /* as sent, not yet normalised */
	uint16_t port;
	/* The path without the query ("/" for an empty one); NULL for a
	 * CONNECT. */
	const char *path;
	bool has_query;
	bool connect; /* CONNECT host:port */
	bool upgrade; /* asks for Upgrade */
	bool upgrade_websocket; /* ... to a websocket, and nothing else */
	/* Set when the request arrived inside a terminated tunnel: the
	 * CONNECT's target, which its Host must equal. */
	const char *tunnel_host;
	uint16_t tunnel_port;
};

/* What the proxy knows beyond the request. */
struct verdict_state {
	bool feed_ok; /* the revocation feed answers */
	bool job_closed; /* revoked or deleted */
};

struct verdict {
	/* NULL: the head passes, the tokens are next; else the refusal's
	 * reason and detail (constant strings, for the decision line). */
	const char *reason;
	const char *detail;
	/* The host normalised; "" when it was refused before that. */
	char host[EGRESS_HOST_MAX + 1];
	int rule; /* the matching rule, -1 for none */
	bool broker_route; /* a request for broker.cordon's /v1/token */
	bool upgrade_ok; /* asked for Upgrade, and the rule allows it */
};

/*
 * Judges the head rq of a request of a job with rules, in the order of
 * docs/egress.md: the feed (feed_unavailable), the job (revoked), an IP
 * literal (ip_literal), the host (malformed, bad_host), the tunnel's
 * target (host_mismatch), broker.cordon (broker_path), the rules (no_rule,
 * method, path with its spelling as detail), the scheme (tls) and Upgrade
 * (upgrade). Fills *ret whatever the outcome; reason NULL means allowed
 * so far: the tokens of the request are judged next (towards ret->rule's
 * audience), then the address. Never fails; reads nothing else.
 */
void verdict_head(const struct verdict_request *rq,
    const struct egress_rules *rules, const struct verdict_state *st,
    struct verdict *ret);

/*
 * What the broker's answer to an introspection (status, 0 when none
 * came, and its JSON body, may be NULL) means for a token of job in a
 * request going to rule (NULL: broker.cordon, or no rule): NULL when the
 * token is good here, else the detail of the refusal: "introspection_
 * failed", "inactive", "other_job", "no_audience" (the rule has none: no
 * token may go there) or "audience".
 */
const char *verdict_token(int status, const json_t *body, const char *job,
    const struct egress_rule *rule);

/*
 * Param binding (credentials.md): whether path (without its query) is
 * one the rule's prefixes allow with params, the params of the good
 * token the request presented for the rule's capability (a JSON object,
 * NULL when none): NULL when a plain prefix holds it or a templated one
 * ("/repos/acme/{repo}/") does with the token's values, else the detail
 * of the refusal: "param_value" (a value that cannot stand in a path),
 * "param_missing" (the token lacks a placeholder's param) or
 * "param_mismatch" (the path is elsewhere), the first two before the
 * last. A rule without templates allows what egress_match allowed.
 */
const char *verdict_params(const struct egress_rule *rule, const char *path,
    const json_t *params);

/*
 * The address to connect to for a request to rule, among the resolver's
 * answers ai, in their order: the first IPv4 or IPv6 one that is neither
 * the proxy's own control port (self, an IPv4 or IPv6 address) nor the
 * broker's (broker, IPv4), on loopback or on their addresses, and that
 * egress_addr_refused allows. The connection goes to it and to nothing
 * resolved again. NULL when none may be reached, with *ret_reason
 * "own_port" (one of the answers was one of those ports) or else
 * "private_addr" and *ret_detail the first range that refused (NULL when
 * ai held no address of either family).
 */
/*
 * The answer the job gets when the proxy ends a request itself, appended
 * to out: status with its phrase (a denial's says "by cordon: REASON
 * (GET http://cordon.local/v1/denials)"), then deny_reason set (a denial,
 * 403 or 408) as X-Cordon-Deny, or else error (an upstream failure, 502 or 504)
 * as X-Cordon-Error, and the one-line JSON body {"error", "reason",
 * "message"}; Connection: close. 0, or -ENOMEM / -E2BIG from out.
 */
int verdict_refusal(struct buf *out, unsigned status, const char *deny_reason,
    const char *error, const char *message);

/*
 * verdict_refusal with "Retry-After: retry_after_s" among the fields when
 * retry_after_s is not 0: a 503 the job's client may try again, and when
 * (docs/egress.md, Unavailable). Same returns.
 */
int verdict_refusal_retry(struct buf *out, unsigned status,
    const char *deny_reason, const char *error, const char *message,
    unsigned retry_after_s);

const struct addrinfo *verdict_address(const struct addrinfo *ai,
    const struct egress_rule *rule, const struct sockaddr *self,
    const struct sockaddr *broker, const char **ret_reason,
    const char **ret_detail);

#endif
