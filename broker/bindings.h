/*
 * The secrets' bindings at the broker (issue 18): every host and address
 * a secret has been or will be sent to (store.h, "secret bindings"), so
 * that a proxy scans every job's answers from such a place for that
 * secret, not only the answers of the jobs it was released to: a service
 * that stores and shows what it is sent (a request log, an audit page)
 * would otherwise hand one job's key to another job in clear. This file
 * holds the list's answer (GET /v1/bindings, and the same array in a
 * job's egress answer), the proxy's report of an address (POST
 * /v1/bindings), the checks of a host and an address as given, and the
 * refusal of a manifest rule the proxy could not read at a bound host.
 */
#ifndef CORDON_BROKER_BINDINGS_H
#define CORDON_BROKER_BINDINGS_H

#include "http_server.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How long after an injection release a scan release at an address not
 * yet bound is taken for one its proxy is telling (bindings_scan_reach). */
#define BINDINGS_TELL_WINDOW_S 10

/* The list's caps, below the proxy's (proxy/guard.h: GUARD_BINDINGS_MAX
 * 1024 secrets, GUARD_KEYS_MAX 16384 hosts and addresses, a list past
 * them refused whole), with room for a few PUTs at once: the secrets
 * listed, their hosts and addresses in all, and the addresses seen of one
 * secret. */
#define BINDINGS_SECRETS_MAX 1000
#define BINDINGS_KEYS_MAX 16000
#define BINDINGS_SEEN_MAX 64

/* How long after a job's end a proxy's POST /v1/bindings for it is still
 * taken. */
#define BINDINGS_ENDED_WINDOW_S 900

/* The longest "[v6]:port", with its NUL. */
#define BINDINGS_ADDR_MAX 56

/* A static secret's burned versions the list gives: of its newest this
 * many (proxy/guard.h: GUARD_BURNED_MAX). */
#define BINDINGS_BURNED_VERSIONS 16

struct broker;

/*
 * Whether h is a host a secret may be declared at (guard_hosts): a
 * lowercase host name (labels of a-z, 0-9 and '-', 1 to 253 bytes), or an
 * IPv4 or IPv6 literal without brackets; no port, no wildcard. An IPv6
 * literal is written into out (cap bytes) in its canonical form (a
 * v4-mapped one as its IPv4), every other host as it is: true, or false
 * (out then undefined).
 */
bool bindings_host_ok(const char *h, char *out, size_t cap);

/*
 * Reads "a.b.c.d:port" or "[v6]:port" (port 1 to 65535) into out (cap
 * bytes, at least BINDINGS_ADDR_MAX) in canonical form (the IPv6 address
 * as inet_ntop writes it): 0, or -EINVAL.
 */
int bindings_addr_parse(const char *in, char *out, size_t cap);

/*
 * The list as GET /v1/bindings answers it: a new array of {secret, kind
 * ("static" or the issuer's kind), version, hosts, addrs, and a static
 * secret's "burned" versions (of its newest BINDINGS_BURNED_VERSIONS) or
 * an issuer secret's "scan_gen" (issuers_scan_gen)}, one entry a secret
 * with at least one binding, by name, and the epoch the list is at least
 * as new as. 0, or -errno (the store's).
 */
int bindings_answer(struct broker *b, json_t **ret, int64_t *ret_epoch);

/*
 * Of name's bindings: new arrays of its hosts (any origin), its declared
 * hosts and its addrs, each sorted. 0 or -errno.
 */
int bindings_of(struct broker *b, const char *name, json_t **ret_hosts,
    json_t **ret_declared, json_t **ret_addrs);

/*
 * Whether name has at least one binding: 1, 0, or -errno.
 */
int bindings_bound(struct broker *b, const char *name);

/*
 * Whether a scan release of name for a job of manifest m (its body) at
 * host (canonical, as bindings_host_ok writes it) and addr (canonical,
 * or NULL) is within reach: m has a rule whose host pattern covers host
 * (the same name, or a "*." covering it, as the proxy matches), and
 * either host is one of name's bindings, or a rule covering host is for
 * addr's port and addr is one of them, or not yet: injected_lately (an
 * injection release of name within BINDINGS_TELL_WINDOW_S, whose proxy
 * guards the address it went to before its POST /v1/bindings lands).
 * 1, 0 (why in why, cap bytes), or -errno (the store's).
 */
int bindings_scan_reach(struct broker *b, const char *name, const json_t *m,
    const char *host, const char *addr, bool injected_lately, char *why,
    size_t cap);

/*
 * Whether a job of manifest m (its body) may have been released name to
 * scan for (a trip's report: reflections.h): m has a rule whose host
 * pattern reaches one of name's bound hosts, or a rule at the port of
 * one of its bound addresses (bindings_scan_reach for some host). 1, 0,
 * or -errno (the store's).
 */
int bindings_guarded(struct broker *b, const char *name, const json_t *m);

/*
 * Adds a problem to problems at egress[i].tls or egress[i].upgrade for
 * each rule of manifest m (valid otherwise) that the proxy cannot read
 * (tls "passthrough", or "upgrade": true) whose host pattern reaches a
 * host a secret is bound to (exactly, or a "*." wildcard covering it),
 * counting m's own injecting rules, and that does not inject that
 * secret; or that the store could not be asked about.
 */
void bindings_check_manifest(struct broker *b, const json_t *m,
    json_t *problems);

/*
 * Answers 409 bindings_cap, what to do in the message, for a write the
 * store refused past the list's caps (-EDQUOT): over says which (NULL, or
 * its cap NULL: not said), secret is the one written (NULL: none).
 */
struct store_bind_over;
void bindings_reply_cap(struct http_response *res,
    const struct store_bind_over *over, const char *secret);

/* GET /v1/bindings and POST /v1/bindings; ctx is the struct broker. */
void bindings_get(void *ctx, struct http_request *req,
    struct http_response *res);
void bindings_post(void *ctx, struct http_request *req,
    struct http_response *res);

#endif
