/*
 * "Why was I refused?", asked from inside a job: each job's ring of its
 * most recent denials (the last DENIALS_MAX decision lines that said
 * deny), and the answer to GET http://cordon.local/v1/denials, which the
 * proxy gives itself on the job's own channel and never forwards. Each
 * denial comes with the narrowest egress rule that would allow it (host,
 * port, method, path prefix), for a person to add to the manifest, or
 * with why no rule can. A pure library: no I/O, no logging.
 */
#ifndef CORDON_PROXY_DENIALS_H
#define CORDON_PROXY_DENIALS_H

#include "buf.h"
#include "decision.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DENIALS_MAX 64 /* denials a job's ring keeps */
#define DENIALS_HOST "cordon.local" /* the name the proxy answers itself */
#define DENIALS_PATH "/v1/denials"

/* One denial as the ring keeps it: copies, cut, redacted. */
struct denial {
	char ts[40]; /* wall clock, as the decision log's ts */
	char kind[16];
	char method[32];
	char host[254];
	uint16_t port;
	char path[512]; /* without its query; "" for a CONNECT */
	char reason[64];
	char detail[64];
	char addr[64]; /* the address refused (private_addr), else "" */
	uint64_t count; /* the line's count (a burst), else 0 */
};

/* A job's ring: empty (all zero) until its first denial. */
struct denials {
	struct denial *ring; /* DENIALS_MAX entries once one came */
	size_t next; /* where the next one goes */
	size_t n; /* how many are kept, at most DENIALS_MAX */
	uint64_t total; /* every denial added since the ring was cleared */
};

/*
 * Keeps d in the ring when it is a denial (an allow or an upstream error
 * is not one, and is ignored), overwriting the oldest past DENIALS_MAX.
 * The strings are copied, cut at their field's size (the path also at '?'
 * and '#') and redacted as the decision log is. 0, or -ENOMEM (nothing
 * kept).
 */
int denials_add(struct denials *ring, const struct decision *d);

/* Forgets every denial and frees the ring; it may be added to again. */
void denials_clear(struct denials *ring);

/*
 * Whether a request's host (len bytes, as sent: any case, one trailing
 * dot) is DENIALS_HOST, the proxy's own name inside the job.
 */
bool denials_is_local(const char *host, size_t len);

/*
 * The narrowest egress rule (manifest.md) that would allow e, as
 * narrow_rule gives it (common/narrow.h: the same rule cordon
 * egress-report offers): {"host", "port" (when not 443), "methods",
 * "paths" (the path as a prefix, when one was seen), "upgrade" (for an
 * upgrade), "registry"?, "allow_cidrs" (the one address a private_addr
 * refused), "reason"}; NULL when no rule can allow it (an address, a
 * token, a malformed request, ...). *ret_fix
 * is set either way: one sentence for the person reading it (a constant
 * string). A new reference; NULL too when out of memory.
 */
json_t *denials_rule(const struct denial *e, const char **ret_fix);

/*
 * The ring as the endpoint answers it: {"job", "denials": [newest first:
 * {"ts", "kind", "method", "host", "port", "path", "reason", "detail",
 * "count"?, "rule", "fix"}], "kept", "total", "max"}. A new reference, or
 * NULL when out of memory.
 */
json_t *denials_json(const struct denials *ring, const char *job);

/*
 * The proxy's whole HTTP answer to a request for DENIALS_HOST (method,
 * its path without query, whether it is a CONNECT), appended to out: 200
 * with denials_json for GET /v1/denials; 405 for another method there;
 * 404 for another path; 403 for a CONNECT (no TLS for this name: ask in
 * plain http). Always Connection: close and no-store. 0, -ENOMEM or
 * -E2BIG (out's cap).
 */
int denials_answer(const struct denials *ring, const char *job,
    const char *method, const char *path, bool connect, struct buf *out);

#endif
