/*
 * "The narrowest egress rule that would allow this denial": one pure
 * function for both places that offer one, the proxy's answer at
 * http://cordon.local/v1/denials (proxy/denials.c) and the launcher's
 * cordon egress-report (launcher/report.c), so that the same denial gets
 * the same rule in both. The rule is one docs/manifest.md accepts as it
 * is: the exact host (lowercased) and port, the one method seen, the path
 * seen as a prefix (cut before its query and before any '%' or '*'), the
 * upgrade when one was refused, "registry": true for a package registry,
 * and for a name that resolved only into a refused range the refused
 * address alone as allow_cidrs (a /32 or /128). Or no rule, with why. No
 * I/O, no logging.
 */
#ifndef CORDON_COMMON_NARROW_H
#define CORDON_COMMON_NARROW_H

#include <jansson.h>
#include <stdbool.h>

/* A denial as the decision log has it; NULL or "" is "not seen". */
struct narrow_denial {
	const char *kind; /* "connect", "capture", "dns", "direct", ... */
	const char *method, *host, *path, *reason, *detail;
	const char *addr; /* the address refused (private_addr), with or
			     without its port; an IPv6 one may be bracketed */
	long long port;
};

/* The rule offered. */
struct narrow_rule {
	char host[254];
	long long port;
	char method[16]; /* the method seen, or GET when none was */
	char path[1025]; /* the prefix; "" when no path was seen */
	bool seen; /* method and path were seen (not a tunnel, not a name) */
	bool upgrade, registry;
	char cidr[64]; /* allow_cidrs' one range, or "" */
};

/*
 * The narrowest rule that would allow d: 0 with *rule filled, or -1 when
 * no rule can (an address where a name belongs, a token, a malformed
 * request, a method or path no rule may hold, ...). *ret_fix is set
 * either way: one sentence for the person reading it (a constant).
 */
int narrow_rule(const struct narrow_denial *d, struct narrow_rule *rule,
    const char **ret_fix);

/*
 * rule as a manifest's egress rule: {"host", "port" (when not 443),
 * "methods", "paths"?, "upgrade"?, "registry"?, "allow_cidrs"?, "reason"}.
 * A new reference, or NULL when out of memory.
 */
json_t *narrow_rule_json(const struct narrow_rule *rule);

/*
 * The class of an address literal ("loopback", "private", "link_local",
 * "cgnat", "reserved", "public"; "numeric" for digits and dots a resolver
 * may read as one), or NULL when host is a name. Brackets are allowed.
 */
const char *narrow_address_class(const char *host);

#endif
