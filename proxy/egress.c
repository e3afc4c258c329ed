/*
 * Egress rules: loading the broker's, matching a request to them before
 * any DNS lookup, and refusing the address ranges no job may reach. Every
 * doubt is a refusal: an unknown field, an odd host, an ambiguous path.
 */
#include "egress.h"

#include "path_template.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *const method_names[] = { "GET", "HEAD", "POST", "PUT",
	"PATCH", "DELETE", "OPTIONS" };

unsigned
egress_method(const char *name)
{
	for (size_t i = 0; i < sizeof(method_names) / sizeof(method_names[0]);
	     i++)
		if (strcmp(name, method_names[i]) == 0)
			return 1u << i;
	return 0;
}

int
egress_host_normalise(const char *in, size_t len, char out[EGRESS_HOST_MAX + 1])
{
	size_t label = 0;

	if (len > 0 && in[len - 1] == '.')
		len--;
	if (len == 0 || len > EGRESS_HOST_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c == '.') {
			if (label == 0 || out[i - 1] == '-')
				return -EINVAL;
			label = 0;
			out[i] = '.';
			continue;
		}
		if (!(isalnum(c) || c == '-') || c >= 0x80)
			return -EINVAL;
		if (c == '-' && label == 0)
			return -EINVAL;
		if (++label > 63)
			return -EINVAL;
		out[i] = (char)tolower(c);
	}
	/* An empty last label ("a.com..") or one ending in '-'. */
	if (label == 0 || out[len - 1] == '-')
		return -EINVAL;
	out[len] = '\0';
	return 0;
}

bool
egress_is_ip_literal(const char *host)
{
	char buf[64];
	struct in_addr a4;
	struct in6_addr a6;
	size_t n = strlen(host);

	/* inet_aton takes every legacy form: 2130706433, 0x7f.1, 0177.1. */
	if (inet_aton(host, &a4) != 0)
		return true;
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']' &&
	    n - 2 < sizeof(buf)) {
		memcpy(buf, host + 1, n - 2);
		buf[n - 2] = '\0';
		host = buf;
	}
	return inet_pton(AF_INET6, host, &a6) == 1;
}

struct range {
	const char *cidr;
	const char *why;
};

/* Most specific first: the first range that holds an address names it. */
static const struct range v4_ranges[] = {
	{ "255.255.255.255/32", "broadcast" },
	{ "0.0.0.0/8", "unspecified" },
	{ "10.0.0.0/8", "private" },
	{ "100.64.0.0/10", "cgnat" },
	{ "127.0.0.0/8", "loopback" },
	{ "169.254.0.0/16", "link_local" },
	{ "172.16.0.0/12", "private" },
	{ "192.0.0.0/24", "reserved" },
	{ "192.0.2.0/24", "documentation" },
	{ "192.88.99.0/24", "6to4" },
	{ "192.168.0.0/16", "private" },
	{ "198.18.0.0/15", "benchmark" },
	{ "198.51.100.0/24", "documentation" },
	{ "203.0.113.0/24", "documentation" },
	{ "224.0.0.0/4", "multicast" },
	{ "240.0.0.0/4", "reserved" },
};

static const struct range v6_ranges[] = {
	{ "::/128", "unspecified" },
	{ "::1/128", "loopback" },
	{ "::ffff:0:0/96", "ipv4_mapped" },
	{ "::/96", "ipv4_compatible" },
	{ "64:ff9b::/96", "translation" },
	{ "64:ff9b:1::/48", "translation" },
	{ "100::/64", "discard" },
	{ "2001::/32", "teredo" },
	{ "2001:db8::/32", "documentation" },
	{ "2001::/23", "reserved" },
	{ "2002::/16", "6to4" },
	{ "fc00::/7", "unique_local" },
	{ "fe80::/10", "link_local" },
	{ "fec0::/10", "site_local" },
	{ "ff00::/8", "multicast" },
};

const char *
egress_addr_refused(const struct sockaddr *addr, const struct egress_rule *rule)
{
	const struct range *ranges;
	size_t n;

	if (rule != NULL)
		for (size_t i = 0; i < rule->ncidrs; i++)
			if (cidr_contains(&rule->cidrs[i], addr)) {
				/* An IPv6 spelling of an IPv4 address (6to4,
				 * NAT64, mapped) goes only where that IPv4
				 * address may. */
				struct sockaddr_in v4;
				const struct sockaddr *a4 =
				    (const struct sockaddr *)&v4;
				if (!cidr_embedded_v4(addr, &v4))
					return NULL;
				return egress_addr_refused(a4, rule);
			}
	if (addr->sa_family == AF_INET) {
		ranges = v4_ranges;
		n = sizeof(v4_ranges) / sizeof(v4_ranges[0]);
	} else if (addr->sa_family == AF_INET6) {
		ranges = v6_ranges;
		n = sizeof(v6_ranges) / sizeof(v6_ranges[0]);
	} else
		return "reserved";
	for (size_t i = 0; i < n; i++) {
		struct cidr c;

		if (cidr_parse(ranges[i].cidr, &c) == 0 &&
		    cidr_contains(&c, addr))
			return ranges[i].why;
	}
	return NULL;
}

void
egress_rules_free(struct egress_rules *r)
{
	for (size_t i = 0; i < r->n; i++) {
		for (size_t k = 0; k < r->rule[i].npaths; k++)
			free(r->rule[i].paths[k]);
		free(r->rule[i].paths);
		free(r->rule[i].cidrs);
	}
	r->n = 0;
}

/* Copies string field key of o into out (cap bytes): false when it is
 * not a string that fits (empty allowed only when dflt is given). */
static bool
inject_field(const json_t *o, const char *key, const char *dflt, char *out,
    size_t cap)
{
	const json_t *v = json_object_get(o, key);
	const char *s = v == NULL ? dflt : json_string_value(v);

	if (s == NULL || strlen(s) == 0 || strlen(s) >= cap ||
	    (v != NULL && json_string_length(v) != strlen(s)))
		return false;
	memcpy(out, s, strlen(s) + 1);
	return true;
}

/* A rule's "inject": only where the proxy reads requests, all four
 * fields sound (the broker validated them; the proxy checks again). */
static int
load_inject(const json_t *in, struct egress_rule *rule, char *err,
    size_t errlen)
{
	if (in == NULL)
		return 0;
	const json_t *ck =
	    json_is_object(in) ? json_object_get(in, "cookies") : NULL;

	if (!json_is_object(in) ||
	    json_object_size(in) > (ck != NULL ? 5u : 4u) ||
	    (ck != NULL && !json_is_boolean(ck)) ||
	    rule->tls == EGRESS_TLS_PASSTHROUGH ||
	    !inject_field(in, "secret", NULL, rule->inject.secret,
		sizeof(rule->inject.secret)) ||
	    !inject_field(in, "header", NULL, rule->inject.header,
		sizeof(rule->inject.header)) ||
	    !inject_field(in, "format", "{secret}", rule->inject.format,
		sizeof(rule->inject.format)) ||
	    !inject_field(in, "capability", NULL, rule->inject.capability,
		sizeof(rule->inject.capability)) ||
	    strstr(rule->inject.format, "{secret}") == NULL) {
		rule->inject.secret[0] = '\0';
		snprintf(err, errlen, "%s: a bad inject", rule->host);
		return -EINVAL;
	}
	rule->inject.cookies = ck != NULL && json_is_true(ck);
	return 0;
}

static int
load_rule(const json_t *j, struct egress_rule *rule, char *err, size_t errlen)
{
	static const char *const keys[] = { "host", "port", "methods", "paths",
		"query", "tls", "reason", "registry", "allow_cidrs", "upgrade",
		"audience", "inject" };
	const char *key, *host, *tls;
	json_t *v;
	size_t i;

	json_object_foreach((json_t *)j, key, v)
	{
		bool ok = false;
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			ok |= strcmp(key, keys[k]) == 0;
		if (!ok) {
			snprintf(err, errlen, "unknown field \"%.64s\"", key);
			return -EINVAL;
		}
	}
	host = json_string_value(json_object_get(j, "host"));
	if (host == NULL) {
		snprintf(err, errlen, "a rule without a host");
		return -EINVAL;
	}
	rule->wildcard = strncmp(host, "*.", 2) == 0;
	if (rule->wildcard)
		host += 2;
	if (egress_host_normalise(host, strlen(host), rule->host) < 0 ||
	    egress_is_ip_literal(rule->host)) {
		snprintf(err, errlen, "not a host name: \"%.64s\"", host);
		return -EINVAL;
	}
	v = json_object_get(j, "port");
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > 65535) {
		snprintf(err, errlen, "%s: no valid port", rule->host);
		return -EINVAL;
	}
	rule->port = (uint16_t)json_integer_value(v);
	json_array_foreach(json_object_get(j, "methods"), i, v)
	{
		unsigned bit =
		    json_is_string(v) ? egress_method(json_string_value(v)) : 0;
		if (bit == 0) {
			snprintf(err, errlen, "%s: an unknown method",
			    rule->host);
			return -EINVAL;
		}
		rule->methods |= bit;
	}
	tls = json_string_value(json_object_get(j, "tls"));
	if (tls == NULL || strcmp(tls, "terminate") == 0)
		rule->tls = EGRESS_TLS_TERMINATE;
	else if (strcmp(tls, "passthrough") == 0)
		rule->tls = EGRESS_TLS_PASSTHROUGH;
	else if (strcmp(tls, "none") == 0)
		rule->tls = EGRESS_TLS_NONE;
	else {
		snprintf(err, errlen, "%s: unknown tls \"%.32s\"", rule->host,
		    tls);
		return -EINVAL;
	}
	v = json_object_get(j, "paths");
	if (v != NULL) {
		rule->paths = calloc(json_array_size(v) + 1, sizeof(char *));
		if (rule->paths == NULL)
			return -ENOMEM;
		json_t *p;
		json_array_foreach(v, i, p)
		{
			const char *s = json_string_value(p);
			if (s == NULL || egress_path_ok(s, strlen(s)) < 0 ||
			    (rule->paths[rule->npaths] = strdup(s)) == NULL) {
				snprintf(err, errlen, "%s: a bad path prefix",
				    rule->host);
				return -EINVAL;
			}
			rule->npaths++;
		}
	}
	v = json_object_get(j, "allow_cidrs");
	if (v != NULL) {
		json_t *c;
		rule->cidrs =
		    calloc(json_array_size(v) + 1, sizeof(*rule->cidrs));
		if (rule->cidrs == NULL)
			return -ENOMEM;
		json_array_foreach(v, i, c)
		{
			if (!json_is_string(c) ||
			    cidr_parse(json_string_value(c),
				&rule->cidrs[rule->ncidrs]) < 0) {
				snprintf(err, errlen, "%s: a bad CIDR",
				    rule->host);
				return -EINVAL;
			}
			rule->ncidrs++;
		}
	}
	rule->upgrade = json_is_true(json_object_get(j, "upgrade"));
	v = json_object_get(j, "audience");
	if (v != NULL &&
	    (!json_is_string(v) ||
		json_string_length(v) >= sizeof(rule->audience) ||
		json_string_length(v) == 0)) {
		snprintf(err, errlen, "%s: a bad audience", rule->host);
		return -EINVAL;
	}
	if (v != NULL)
		memcpy(rule->audience, json_string_value(v),
		    json_string_length(v) + 1);
	if (load_inject(json_object_get(j, "inject"), rule, err, errlen) < 0)
		return -EINVAL;
	v = json_object_get(j, "query");
	if (v != NULL) {
		const char *why;
		if (rule->inject.secret[0] == '\0' ||
		    path_template_query_parse(v, rule->query, &rule->nquery,
			&why) < 0) {
			snprintf(err, errlen, "%s: a bad query binding",
			    rule->host);
			return -EINVAL;
		}
	}
	/* A templated path binds the token of the rule's inject capability:
	 * without one, nothing would bind it. */
	for (size_t k = 0; k < rule->npaths; k++) {
		const char *why;
		if (!path_template_is(rule->paths[k]))
			continue;
		if (rule->inject.secret[0] == '\0' ||
		    path_template_parse(rule->paths[k], NULL, NULL, &why) < 0) {
			snprintf(err, errlen, "%s: a bad templated path",
			    rule->host);
			return -EINVAL;
		}
	}
	return 0;
}

int
egress_rules_load(const json_t *egress, struct egress_rules *ret, char *err,
    size_t errlen)
{
	size_t i;
	json_t *j;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!json_is_array(egress) ||
	    json_array_size(egress) > EGRESS_MAX_RULES) {
		snprintf(err, errlen,
		    "egress must be a list of at most %d rules",
		    EGRESS_MAX_RULES);
		return -EINVAL;
	}
	json_array_foreach(egress, i, j)
	{
		if (!json_is_object(j)) {
			snprintf(err, errlen, "a rule must be an object");
			egress_rules_free(ret);
			return -EINVAL;
		}
		ret->n = i + 1;
		r = load_rule(j, &ret->rule[i], err, errlen);
		if (r < 0) {
			egress_rules_free(ret);
			return r;
		}
	}
	return 0;
}

static bool
host_matches(const struct egress_rule *rule, const char *host)
{
	size_t hn = strlen(host), rn = strlen(rule->host);

	if (!rule->wildcard)
		return strcmp(host, rule->host) == 0;
	/* "*.example.com" holds "a.example.com", not "example.com". */
	return hn > rn + 1 && host[hn - rn - 1] == '.' &&
	    strcmp(host + hn - rn, rule->host) == 0;
}

int
egress_match(const struct egress_rules *r, const char *host, uint16_t port,
    const char *method, const char *path, const char **ret_reason)
{
	const char *reason = "no_rule";
	unsigned bit = method != NULL ? egress_method(method) : 0;

	for (size_t i = 0; i < r->n; i++) {
		const struct egress_rule *rule = &r->rule[i];

		if (rule->port != port || !host_matches(rule, host))
			continue;
		/* A CONNECT is judged by host and port; what it carries is
		 * judged request by request, where it can be seen. */
		if (method == NULL || strcmp(method, "CONNECT") == 0)
			return (int)i;
		if ((rule->methods & bit) == 0) {
			reason = "method";
			continue;
		}
		if (path == NULL || egress_path_ok(path, strlen(path)) < 0) {
			if (strcmp(reason, "no_rule") == 0)
				reason = "path";
			continue;
		}
		size_t plen = strcspn(path, "?#");
		for (size_t k = 0; k < rule->npaths; k++) {
			/* A templated prefix by its literal head: the rest is
			 * the token's to bind (verdict_params). */
			size_t n = strcspn(rule->paths[k], "{");
			if (plen >= n && strncmp(path, rule->paths[k], n) == 0)
				return (int)i;
		}
		if (strcmp(reason, "no_rule") == 0)
			reason = "path";
	}
	*ret_reason = reason;
	return -1;
}

/* One entry of a protected list, s[0..n): 0 and *out, or -EINVAL. */
static int
protected_entry(const char *s, size_t n, struct sockaddr_in *out)
{
	char ip[INET_ADDRSTRLEN];
	const char *colon, *end;
	unsigned long port = 0;

	if (n >= 7 && strncmp(s, "http://", 7) == 0) {
		s += 7;
		n -= 7;
	} else if (n >= 8 && strncmp(s, "https://", 8) == 0) {
		s += 8;
		n -= 8;
	}
	end = memchr(s, '/', n);
	if (end != NULL)
		n = (size_t)(end - s);
	colon = memchr(s, ':', n);
	if (colon == NULL || colon == s || (size_t)(colon - s) >= sizeof(ip) ||
	    s + n - colon - 1 < 1 || s + n - colon - 1 > 5)
		return -EINVAL;
	for (const char *c = colon + 1; c < s + n; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		port = port * 10 + (unsigned long)(*c - '0');
	}
	if (port == 0 || port > 65535)
		return -EINVAL;
	memcpy(ip, s, (size_t)(colon - s));
	ip[colon - s] = '\0';
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, ip, &out->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

int
egress_protected_add(struct egress_protected *p, const char *list)
{
	size_t len = list != NULL ? strlen(list) : 0;

	for (size_t at = 0; at < len;) {
		const char *comma = memchr(list + at, ',', len - at);
		size_t n =
		    comma != NULL ? (size_t)(comma - (list + at)) : len - at;
		struct sockaddr_in a;

		if (protected_entry(list + at, n, &a) < 0)
			return -EINVAL;
		if (p->n == EGRESS_PROTECTED_MAX)
			return -E2BIG;
		p->a[p->n++] = a;
		at += n + 1;
	}
	return 0;
}

/* Whether the IPv4 address v4 is one of this host's own: a socket binds
 * to it (what a service on 0.0.0.0 answers on). Fails closed: a socket
 * that cannot be made says it is. */
static bool
host_own_v4(uint32_t v4)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return true;
	a.sin_addr.s_addr = htonl(v4);
	bool own = bind(fd, (const struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return own;
}

bool
egress_protected_has(const struct egress_protected *p,
    const struct sockaddr *sa)
{
	uint16_t port;
	bool loop;
	uint32_t v4 = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		port = in->sin_port;
		v4 = ntohl(in->sin_addr.s_addr);
		loop = (v4 >> 24) == 127;
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		const uint8_t *b = in6->sin6_addr.s6_addr;
		port = in6->sin6_port;
		loop = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		    (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && b[12] == 127);
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			v4 = (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
			    (uint32_t)b[14] << 8 | b[15];
	} else {
		return false;
	}
	for (size_t i = 0; i < p->n; i++) {
		uint32_t e = ntohl(p->a[i].sin_addr.s_addr);
		if (p->a[i].sin_port != port)
			continue;
		if ((v4 != 0 && e == v4) ||
		    (loop && ((e >> 24) == 127 || e == 0)))
			return true;
		/* 0.0.0.0 is every address of the host, not loopback's
		 * alone (redteam2: a LAN allow_cidrs reached it). */
		if (e == 0 && v4 != 0 && host_own_v4(v4))
			return true;
	}
	return false;
}
