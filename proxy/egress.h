/*
 * A job's egress rules and the checks the proxy makes with them, in the
 * order docs/egress.md gives: the name against the rules before any DNS lookup
 * (a denied name never reaches a resolver), then the address the name
 * resolved to against the ranges no job may reach unless its rule lists
 * them. Default deny: no rule, no way out.
 */
#ifndef CORDON_PROXY_EGRESS_H
#define CORDON_PROXY_EGRESS_H

#include "cidr.h"
#include "egress_path.h"
#include "path_template.h"

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define EGRESS_MAX_RULES 12
#define EGRESS_HOST_MAX 253

enum egress_tls {
	EGRESS_TLS_NONE, /* plain HTTP */
	EGRESS_TLS_TERMINATE, /* the proxy reads every request */
	EGRESS_TLS_PASSTHROUGH, /* host, port, address and SNI only */
};

struct egress_rule {
	char host[EGRESS_HOST_MAX + 1]; /* without the "*." of a wildcard */
	bool wildcard; /* "*.example.com": subdomains only */
	uint16_t port;
	unsigned methods; /* EGRESS_METHOD_* bits */
	char **paths; /* prefixes; NULL with passthrough */
	size_t npaths;
	/* "query" (credentials.md): parameters bound to the inject
	 * capability's token's params (path_template_query_match). */
	struct path_template_query query[PATH_TEMPLATE_MAX];
	size_t nquery;
	enum egress_tls tls;
	struct cidr *cidrs; /* allow_cidrs */
	size_t ncidrs;
	bool upgrade;
	/* The audience of the cordon tokens this host may be sent; "" for
	 * none: a token in a request to it is then refused. */
	char audience[129];
	/* "inject" (credentials.md): the secret the proxy adds as header,
	 * in format, for a good token of capability; secret "" for none.
	 * cookies: the answers' Set-Cookie reach the job (off: dropped). */
	struct {
		char secret[65], header[65], format[513], capability[72];
		bool cookies;
	} inject;
};

struct egress_rules {
	struct egress_rule rule[EGRESS_MAX_RULES];
	size_t n;
};

/* The method bits; egress_method() maps a name to its bit (0: none). */
#define EGRESS_METHOD_GET (1u << 0)
#define EGRESS_METHOD_HEAD (1u << 1)
#define EGRESS_METHOD_POST (1u << 2)
#define EGRESS_METHOD_PUT (1u << 3)
#define EGRESS_METHOD_PATCH (1u << 4)
#define EGRESS_METHOD_DELETE (1u << 5)
#define EGRESS_METHOD_OPTIONS (1u << 6)
unsigned egress_method(const char *name);

/*
 * Loads the rules from the broker's answer to GET /v1/jobs/{job}/egress
 * (its "egress" array, defaults filled in). Anything unexpected refuses
 * the whole set: 0, or -EINVAL with a reason in err. Free with
 * egress_rules_free.
 */
int egress_rules_load(const json_t *egress, struct egress_rules *ret, char *err,
    size_t errlen);
void egress_rules_free(struct egress_rules *r);

/*
 * Normalises a host as the proxy compares it: ASCII only (an IDNA name in
 * its xn-- form; a raw UTF-8 name is refused, since its normal form is not
 * ours to guess), lowercased, one trailing dot dropped, labels of 1..63
 * letters, digits and '-' not at either end. 0, or -EINVAL.
 */
int egress_host_normalise(const char *in, size_t len,
    char out[EGRESS_HOST_MAX + 1]);

/*
 * True when host is an IP address literal in any form a resolver or
 * inet_aton would take: dotted quads, but also "2130706433", "0x7f.1",
 * "0177.0.0.1", "127.1", and IPv6 in brackets or not. The proxy refuses
 * them: a rule names hosts, and an address is checked after resolution.
 */
bool egress_is_ip_literal(const char *host);

/*
 * Matches a request (host normalised, port, method, path without query;
 * path NULL for a CONNECT, whose path is checked later or never) against
 * the rules: the index of the matching rule, or -1 with *ret_reason set to
 * "no_rule" (no rule for host and port), "method" or "path" (a rule for
 * the host, but not this method or path).
 */
int egress_match(const struct egress_rules *r, const char *host, uint16_t port,
    const char *method, const char *path, const char **ret_reason);

/*
 * Why the proxy must not connect to addr for a rule with these
 * allow_cidrs: NULL when the address is public, or allowed; otherwise
 * the class: "loopback", "private", "link_local", "cgnat", "multicast",
 * "reserved", "unspecified", "broadcast", "documentation", "benchmark",
 * "ipv4_mapped", "ipv4_compatible", "translation", "6to4", "teredo",
 * "unique_local", "site_local", "discard".
 */
const char *egress_addr_refused(const struct sockaddr *addr,
    const struct egress_rule *rule);

#define EGRESS_PROTECTED_MAX 32

/* Endpoints no rule reaches, whatever its allow_cidrs: every broker of
 * the proxy's list and its "protected" setting (the hatch, cordon serve,
 * PostgreSQL). Each an IPv4 address and a port, network order. */
struct egress_protected {
	struct sockaddr_in a[EGRESS_PROTECTED_MAX];
	size_t n;
};

/*
 * Adds list's entries to p: a list joined by commas (config.h's
 * CONFIG_LIST), each "IPv4:port" or "http://IPv4:port" or "https://..."
 * with a path after it that is ignored. NULL adds nothing. 0, or -EINVAL
 * for an entry of another form (a name: the proxy does not resolve its
 * own settings), or -E2BIG past EGRESS_PROTECTED_MAX in all.
 */
int egress_protected_add(struct egress_protected *p, const char *list);

/*
 * Whether sa (IPv4 or IPv6) is one of p's endpoints: the same port, and
 * the same address, or both on loopback (127.0.0.0/8, ::1, or the
 * IPv4-mapped loopback), or an entry on 0.0.0.0 and sa on loopback or
 * on any IPv4 address of this host (one a socket binds to, asked at each
 * call: a service on 0.0.0.0 answers there too).
 */
bool egress_protected_has(const struct egress_protected *p,
    const struct sockaddr *sa);

#endif
