/*
 * The narrowest rule for a denial (narrow.h). The checks are the
 * manifest's own (a rule's host is a lowercase name, its methods the
 * seven, its prefixes one plain reading with no '%' and no '*'), so that
 * whatever is offered passes the broker's check as it is; the reasons no
 * rule can lift (a token, a malformed request, an address literal, ...)
 * say why instead, one constant sentence each.
 */
#include "narrow.h"

#include "egress_path.h"
#include "manifest.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Why no rule can allow a denial of this reason: one sentence each. */
static const struct {
	const char *reason, *fix;
} no_rule_fixes[] = {
	{ "ip_literal",
	    "an address where a name belongs: rules name hosts, so connect "
	    "by name (through HTTP(S)_PROXY or the job's resolver)" },
	{ "own_port",
	    "the proxy's control port or the broker's: no rule reaches them" },
	{ "sni_mismatch",
	    "the TLS server name is missing or differs from the host asked "
	    "for: send the SNI of the host you connect to" },
	{ "host_mismatch",
	    "inside a tunnel the Host must be the host of the CONNECT" },
	{ "token",
	    "a cordon token was refused (detail): send only this job's "
	    "tokens, and only to a rule with their audience" },
	{ "inject", "the broker did not release the rule's secret" },
	{ "broker_path", "broker.cordon answers POST /v1/token only" },
	{ "malformed",
	    "the proxy's strict parser refused the request (detail): send "
	    "it in one plain reading" },
	{ "revoked", "the job was revoked: nothing passes any more" },
	{ "feed_unavailable",
	    "the proxy cannot hear the broker's revocations, so it refuses "
	    "everything until it can: try again later" },
	{ "timeout", "the request head or the TLS handshake came too late" },
	{ "too_many_connections",
	    "too many connections open at once (detail): close some" },
	{ "peer_uid", "something other than the launcher used the channel" },
};

static const char *const methods[] = { "GET", "HEAD", "POST", "PUT", "PATCH",
	"DELETE", "OPTIONS" };

static bool
empty(const char *s)
{
	return s == NULL || s[0] == '\0';
}

static bool
is(const char *s, const char *want)
{
	return s != NULL && strcmp(s, want) == 0;
}

const char *
narrow_address_class(const char *host)
{
	unsigned char a[16];
	char bare[64];
	size_t n = strlen(host);

	if (n >= 2 && host[0] == '[' && host[n - 1] == ']' &&
	    n - 2 < sizeof(bare)) {
		memcpy(bare, host + 1, n - 2);
		bare[n - 2] = '\0';
		host = bare;
	}
	if (inet_pton(AF_INET, host, a) == 1) {
		if (a[0] == 127)
			return "loopback";
		if (a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16) ||
		    (a[0] == 192 && a[1] == 168))
			return "private";
		if (a[0] == 169 && a[1] == 254)
			return "link_local";
		if (a[0] == 100 && (a[1] & 0xc0) == 64)
			return "cgnat";
		if (a[0] == 0 || a[0] >= 224)
			return "reserved";
		return "public";
	}
	if (inet_pton(AF_INET6, host, a) == 1) {
		static const unsigned char lo[16] = { [15] = 1 };
		if (memcmp(a, lo, 16) == 0)
			return "loopback";
		if ((a[0] & 0xfe) == 0xfc)
			return "private";
		if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
			return "link_local";
		return "public";
	}
	/* Digits and dots only (a short or octal form the resolver may
	 * read as an address) are no name either. */
	if (n > 0 && strspn(host, "0123456789.x") == n)
		return "numeric";
	return NULL;
}

/* host lowercased into out[254], one trailing dot dropped: whether it is
 * a name a rule can hold (letters, digits, '-' and '.'). */
static bool
rule_host(const char *host, char *out)
{
	size_t n = strlen(host);

	if (n > 0 && host[n - 1] == '.')
		n--;
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)host[i]);
	out[n] = '\0';
	return strspn(out,
		   "abcdefghijklmnopqrstuvwxyz"
		   "0123456789-.") == n &&
	    out[0] != '.' && out[0] != '-' && strstr(out, "..") == NULL;
}

/* The address in addr (a.b.c.d, a.b.c.d:port, [v6]:port, v6) as a range
 * of itself alone into out[64]: whether there was one. */
static bool
single_range(const char *addr, char *out)
{
	char ip[INET6_ADDRSTRLEN + 1];
	unsigned char a[16];
	const char *end;
	size_t n;

	if (addr[0] == '[') {
		addr++;
		end = strchr(addr, ']');
	} else {
		const char *colon = strchr(addr, ':');
		/* One colon: the port after it; more: a bare IPv6 address. */
		end = colon != NULL && strchr(colon + 1, ':') == NULL
		    ? colon
		    : addr + strlen(addr);
	}
	n = end != NULL ? (size_t)(end - addr) : 0;
	if (n == 0 || n >= sizeof(ip))
		return false;
	memcpy(ip, addr, n);
	ip[n] = '\0';
	if (inet_pton(AF_INET, ip, a) == 1)
		return snprintf(out, 64, "%s/32", ip) < 64;
	if (inet_pton(AF_INET6, ip, a) == 1 &&
	    inet_ntop(AF_INET6, a, ip, sizeof(ip)) != NULL)
		return snprintf(out, 64, "%s/128", ip) < 64;
	return false;
}

int
narrow_rule(const struct narrow_denial *d, struct narrow_rule *rule,
    const char **ret_fix)
{
	const char *r = d->reason != NULL ? d->reason : "";
	bool private_addr = strcmp(r, "private_addr") == 0;

	memset(rule, 0, sizeof(*rule));
	for (size_t i = 0; i < sizeof(no_rule_fixes) / sizeof(no_rule_fixes[0]);
	     i++)
		if (strcmp(r, no_rule_fixes[i].reason) == 0) {
			*ret_fix = no_rule_fixes[i].fix;
			return -1;
		}
	if (strcmp(r, "tls") == 0) {
		*ret_fix = is(d->detail, "rule_wants_tls")
		    ? "the rule for this host wants TLS: use https://"
		    : is(d->detail, "rule_is_plain_http")
		    ? "the rule for this host is plain HTTP: use http://"
		    : "the TLS handshake with the proxy failed: trust the "
		      "job's CA (/etc/ssl/certs/ca-certificates.crt)";
		return -1;
	}
	if (strcmp(r, "no_rule") != 0 && strcmp(r, "method") != 0 &&
	    strcmp(r, "path") != 0 && strcmp(r, "upgrade") != 0 &&
	    !private_addr) {
		*ret_fix = "no rule allows this (docs/egress.md, The reasons)";
		return -1;
	}
	if (empty(d->host) || is(d->detail, "held_past_budget")) {
		*ret_fix = "held past the job's budget of denial lines: "
			   "method, host and path were not kept";
		return -1;
	}
	if (narrow_address_class(d->host) != NULL) {
		*ret_fix = no_rule_fixes[0].fix; /* ip_literal's */
		return -1;
	}
	if (!rule_host(d->host, rule->host)) {
		*ret_fix = "not a host name a rule can hold";
		return -1;
	}
	if (private_addr &&
	    (empty(d->addr) || !single_range(d->addr, rule->cidr))) {
		*ret_fix = "the name resolved only into a refused range "
			   "(detail): its rule needs allow_cidrs for that "
			   "range, if reaching it is on purpose";
		return -1;
	}
	/* A tunnel (a CONNECT, announced or not) or a name shows neither
	 * method nor path. */
	bool tunnel = is(d->kind, "connect") || is(d->kind, "capture") ||
	    is(d->kind, "dns") || is(d->kind, "direct") || empty(d->method) ||
	    is(d->method, "CONNECT");
	rule->seen = !tunnel;
	snprintf(rule->method, sizeof(rule->method), "GET");
	if (rule->seen) {
		bool known = false;
		for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]);
		     i++)
			known = known || strcmp(d->method, methods[i]) == 0;
		if (!known) {
			*ret_fix = "no rule allows this method (GET, HEAD, "
				   "POST, PUT, PATCH, DELETE, OPTIONS only)";
			return -1;
		}
		snprintf(rule->method, sizeof(rule->method), "%s", d->method);
		const char *p = d->path != NULL ? d->path : "";
		size_t n = strcspn(p, "?#");
		if (n > 0 &&
		    (p[0] != '/' || n >= sizeof(rule->path) ||
			egress_path_problem(p, n) != NULL)) {
			*ret_fix = "a path with more than one reading "
				   "(detail): no rule allows it; send it "
				   "spelled plainly";
			return -1;
		}
		/* A rule's prefix holds no escape and no '*' (manifest.md):
		 * the path up to the first, a prefix of it still. */
		n = strcspn(p, "?#%*");
		memcpy(rule->path, p, n);
		rule->path[n] = '\0';
	}
	rule->port = d->port > 0 && d->port <= 65535 ? d->port : 443;
	/* A refused name is told as name:53 (no rule may name the
	 * resolver's port): the rule is for the name, on 443. */
	if (is(d->kind, "dns") || (tunnel && rule->port == 53))
		rule->port = 443;
	rule->upgrade = strcmp(r, "upgrade") == 0;
	rule->registry = manifest_registry_host(rule->host);
	*ret_fix = private_addr
	    ? "the name resolved only into a refused range (detail): this "
	      "rule's allow_cidrs lets it reach the one address refused, if "
	      "reaching it is on purpose"
	    : tunnel
	    ? "add this rule to the manifest's egress if the job must reach "
	      "this host (TLS hid the method and path: GET assumed, no paths)"
	    : "add this rule to the manifest's egress (or its method, path "
	      "or upgrade to the host's rule) if the job must do this";
	return 0;
}

json_t *
narrow_rule_json(const struct narrow_rule *rule)
{
	json_t *r = json_pack("{s:s}", "host", rule->host);

	if (r == NULL)
		return NULL;
	if ((rule->port != 443 &&
		json_object_set_new(r, "port", json_integer(rule->port)) < 0) ||
	    json_object_set_new(r, "methods", json_pack("[s]", rule->method)) <
		0 ||
	    (rule->path[0] != '\0' &&
		json_object_set_new(r, "paths", json_pack("[s]", rule->path)) <
		    0) ||
	    (rule->upgrade &&
		json_object_set_new(r, "upgrade", json_true()) < 0) ||
	    (rule->registry &&
		json_object_set_new(r, "registry", json_true()) < 0) ||
	    (rule->cidr[0] != '\0' &&
		json_object_set_new(r, "allow_cidrs",
		    json_pack("[s]", rule->cidr)) < 0) ||
	    json_object_set_new(r, "reason",
		json_string("say why the job must reach this")) < 0) {
		json_decref(r);
		return NULL;
	}
	return r;
}
