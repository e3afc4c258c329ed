/*
 * The guard's list, its matcher and the issuer credentials kept for the
 * scan (guard.h). A list is built apart and swapped in whole: a bad one
 * leaves the last one as it was. Keys are sorted once a load, so a
 * request's lookup is three binary searches and, while the broker has
 * not taken them yet, a walk of the few addresses seen here.
 */
#include "guard.h"

#include "cidr.h"
#include "egress.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The IP of addr ("a.b.c.d:port", "[v6]:port") into ip: 0 or -EINVAL. */
static int
addr_ip(const char *addr, char ip[INET6_ADDRSTRLEN + 1])
{
	const char *end;
	size_t n;

	if (addr[0] == '[') {
		end = strchr(addr, ']');
		if (end == NULL || end[1] != ':')
			return -EINVAL;
		addr++;
	} else {
		end = strrchr(addr, ':');
		if (end == NULL)
			return -EINVAL;
	}
	n = (size_t)(end - addr);
	if (n == 0 || n > INET6_ADDRSTRLEN)
		return -EINVAL;
	memcpy(ip, addr, n);
	ip[n] = '\0';
	return 0;
}

/* ip (a literal, no port) as inet_ntop writes it, an IPv6 address whose
 * packets reach an IPv4 one (mapped, compatible, NAT64, 6to4, Teredo:
 * cidr_embedded_v4) as that IPv4; *ret_v6 says which: 0 or -EINVAL. */
static int
ip_normalise(const char *ip, char out[INET6_ADDRSTRLEN], bool *ret_v6)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (inet_pton(AF_INET, ip, &a4) == 1) {
		*ret_v6 = false;
		return inet_ntop(AF_INET, &a4, out, INET6_ADDRSTRLEN) != NULL
		    ? 0
		    : -EINVAL;
	}
	if (inet_pton(AF_INET6, ip, &a6) != 1)
		return -EINVAL;
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_addr = a6 };
	struct sockaddr_in sa4;
	if (cidr_embedded_v4((const struct sockaddr *)&sa6, &sa4)) {
		a4 = sa4.sin_addr;
		*ret_v6 = false;
		return inet_ntop(AF_INET, &a4, out, INET6_ADDRSTRLEN) != NULL
		    ? 0
		    : -EINVAL;
	}
	*ret_v6 = true;
	return inet_ntop(AF_INET6, &a6, out, INET6_ADDRSTRLEN) != NULL
	    ? 0
	    : -EINVAL;
}

/* Reads n (1 to 3 digits for an octet, 1 to 5 for a port) at *p, no
 * leading zero: whether it is one, *p past it. */
static bool
decimal_at(const char **p, unsigned max_digits, unsigned long *ret_n)
{
	const char *s = *p;
	unsigned long n = 0;
	unsigned d = 0;

	while (d < max_digits && s[d] >= '0' && s[d] <= '9')
		n = n * 10 + (unsigned long)(s[d++] - '0');
	if (d == 0 || (d > 1 && s[0] == '0') || (s[d] >= '0' && s[d] <= '9'))
		return false;
	*p = s + d;
	*ret_n = n;
	return true;
}

/* Whether in is "a.b.c.d:port" as the proxy writes it (inet_ntop's
 * text, no leading zero, a port 1 to 65535): its own normal form, so an
 * upstream address is not parsed and printed again on every request. */
static bool
v4_normal(const char *in)
{
	const char *p = in;
	unsigned long n;

	for (int part = 0; part < 4; part++) {
		if (!decimal_at(&p, 3, &n) || n > 255 ||
		    *p != (part < 3 ? '.' : ':'))
			return false;
		p++;
	}
	return decimal_at(&p, 5, &n) && n >= 1 && n <= 65535 && *p == '\0';
}

int
guard_addr_normalise(const char *in, char out[GUARD_ADDR_MAX])
{
	char ip[INET6_ADDRSTRLEN + 1], norm[INET6_ADDRSTRLEN];
	const char *port;
	char *end;
	bool v6;

	if (v4_normal(in)) {
		/* At most "255.255.255.255:65535", 22 bytes. */
		memcpy(out, in, strlen(in) + 1);
		return 0;
	}
	if (addr_ip(in, ip) < 0)
		return -EINVAL;
	port = in[0] == '[' ? strchr(in, ']') + 2 : strrchr(in, ':') + 1;
	/* A bare v6 "a::b:443" reads as an address and no port: refused
	 * (the brackets say where the port is). */
	if (in[0] != '[' && strchr(ip, ':') != NULL)
		return -EINVAL;
	if (*port < '0' || *port > '9')
		return -EINVAL;
	errno = 0;
	unsigned long p = strtoul(port, &end, 10);
	if (errno != 0 || *end != '\0' || p == 0 || p > 65535)
		return -EINVAL;
	if (ip_normalise(ip, norm, &v6) < 0)
		return -EINVAL;
	int n =
	    snprintf(out, GUARD_ADDR_MAX, v6 ? "[%s]:%lu" : "%s:%lu", norm, p);
	return n > 0 && n < GUARD_ADDR_MAX ? 0 : -EINVAL;
}

/* A host as the proxy compares it, into out: lowercased, one trailing
 * dot dropped; 0 or -EINVAL (empty, too long). No allocation. */
static int
host_fold(const char *in, char out[EGRESS_HOST_MAX + 1])
{
	size_t n = strlen(in);

	if (n > 0 && in[n - 1] == '.')
		n--;
	if (n == 0 || n > EGRESS_HOST_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)in[i]);
	out[n] = '\0';
	return 0;
}

static int
key_cmp(const void *a, const void *b)
{
	const struct guard_key *x = a, *y = b;
	int r = strcmp(x->key, y->key);

	return r != 0 ? r : (x->b > y->b) - (x->b < y->b);
}

static int
binding_cmp(const void *a, const void *b)
{
	return strcmp(((const struct guard_binding *)a)->secret,
	    ((const struct guard_binding *)b)->secret);
}

/* A list being built. */
struct build {
	struct guard_binding *b;
	size_t nb;
	struct guard_key *k[3]; /* hosts, ips, addrs */
	size_t nk[3], cap[3];
	size_t nkeys;
};

static void
keys_free(struct guard_key *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(k[i].key);
	free(k);
}

static void
build_free(struct build *w)
{
	free(w->b);
	for (int i = 0; i < 3; i++)
		keys_free(w->k[i], w->nk[i]);
}

static int
key_add(struct build *w, int which, const char *key, uint32_t b)
{
	if (w->nkeys >= GUARD_KEYS_MAX)
		return -E2BIG;
	if (w->nk[which] == w->cap[which]) {
		size_t cap = w->cap[which] == 0 ? 16 : 2 * w->cap[which];
		struct guard_key *k = realloc(w->k[which], cap * sizeof(*k));
		if (k == NULL)
			return -ENOMEM;
		w->k[which] = k;
		w->cap[which] = cap;
	}
	char *copy = strdup(key);
	if (copy == NULL)
		return -ENOMEM;
	w->k[which][w->nk[which]].key = copy;
	w->k[which][w->nk[which]].b = b;
	w->nk[which]++;
	w->nkeys++;
	return 0;
}

/* The name field f of o into out (1..GUARD_NAME_MAX bytes): 0 or -1. */
static int
name_field(const json_t *o, const char *f, char out[GUARD_NAME_MAX + 1])
{
	const char *s = json_string_value(json_object_get(o, f));

	if (s == NULL || s[0] == '\0' || strlen(s) > GUARD_NAME_MAX)
		return -1;
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

/* Binding i of the list, o, into w: 0 or -errno (err said). */
static int
binding_add(struct build *w, const json_t *o, size_t i, char *err,
    size_t errlen)
{
	struct guard_binding *b = &w->b[w->nb];
	const json_t *hosts = json_object_get(o, "hosts");
	const json_t *addrs = json_object_get(o, "addrs");
	const json_t *v;
	size_t k;
	int r;

	memset(b, 0, sizeof(*b));
	if (!json_is_object(o) || name_field(o, "secret", b->secret) < 0 ||
	    name_field(o, "kind", b->kind) < 0 ||
	    !json_is_integer(json_object_get(o, "version")) ||
	    (hosts != NULL && !json_is_array(hosts)) ||
	    (addrs != NULL && !json_is_array(addrs))) {
		snprintf(err, errlen,
		    "bindings[%zu]: want secret, kind, version, hosts, addrs",
		    i);
		return -EINVAL;
	}
	b->version = json_integer_value(json_object_get(o, "version"));
	const json_t *burned = json_object_get(o, "burned");
	const json_t *gen = json_object_get(o, "scan_gen");
	if ((burned != NULL && !json_is_array(burned)) ||
	    (gen != NULL && !json_is_integer(gen))) {
		snprintf(err, errlen, "bindings[%zu]: burned, scan_gen", i);
		return -EINVAL;
	}
	/* Ascending: the newest GUARD_BURNED_MAX kept. */
	size_t nb = json_array_size(burned);
	for (k = nb > GUARD_BURNED_MAX ? nb - GUARD_BURNED_MAX : 0; k < nb;
	     k++) {
		v = json_array_get(burned, k);
		if (!json_is_integer(v)) {
			snprintf(err, errlen, "bindings[%zu].burned[%zu]", i,
			    k);
			return -EINVAL;
		}
		b->burned[b->nburned++] = json_integer_value(v);
	}
	b->has_gen = gen != NULL;
	b->scan_gen = json_integer_value(gen);
	/* An issuer's credentials are per job (the broker gives no scan
	 * release of them); any other kind, "unsealable" or one this proxy
	 * does not know, is asked for as a static one: the broker's refusal
	 * then fails the request closed. */
	b->is_static = strcmp(b->kind, "oauth_client_credentials") != 0 &&
	    strcmp(b->kind, "github_app") != 0;
	json_array_foreach(hosts, k, v)
	{
		char host[EGRESS_HOST_MAX + 1], ip[INET6_ADDRSTRLEN];
		const char *s = json_string_value(v);
		bool v6;

		if (s == NULL || host_fold(s, host) < 0) {
			snprintf(err, errlen, "bindings[%zu].hosts[%zu]", i, k);
			return -EINVAL;
		}
		/* An address among the hosts: that IP, on every port. */
		if (ip_normalise(host, ip, &v6) == 0) {
			if ((r = key_add(w, 1, ip, (uint32_t)w->nb)) < 0)
				return r;
			continue;
		}
		char norm[EGRESS_HOST_MAX + 1];
		if (egress_host_normalise(host, strlen(host), norm) < 0) {
			snprintf(err, errlen, "bindings[%zu].hosts[%zu]", i, k);
			return -EINVAL;
		}
		if ((r = key_add(w, 0, norm, (uint32_t)w->nb)) < 0)
			return r;
	}
	json_array_foreach(addrs, k, v)
	{
		char addr[GUARD_ADDR_MAX];
		const char *s = json_string_value(v);

		if (s == NULL || guard_addr_normalise(s, addr) < 0) {
			snprintf(err, errlen, "bindings[%zu].addrs[%zu]", i, k);
			return -EINVAL;
		}
		if ((r = key_add(w, 2, addr, (uint32_t)w->nb)) < 0)
			return r;
	}
	w->nb++;
	return 0;
}

/* The keys of w point at bindings by their place before the sort: now
 * at their place after it. */
static int
renumber(struct build *w)
{
	uint32_t *at = malloc((w->nb > 0 ? w->nb : 1) * sizeof(*at));
	char(*names)[GUARD_NAME_MAX + 1] =
	    malloc((w->nb > 0 ? w->nb : 1) * sizeof(*names));

	if (at == NULL || names == NULL) {
		free(at);
		free(names);
		return -ENOMEM;
	}
	for (size_t i = 0; i < w->nb; i++)
		memcpy(names[i], w->b[i].secret, sizeof(names[i]));
	if (w->nb > 0)
		qsort(w->b, w->nb, sizeof(*w->b), binding_cmp);
	for (size_t i = 0; i < w->nb; i++) {
		struct guard_binding key;
		memcpy(key.secret, names[i], sizeof(key.secret));
		const struct guard_binding *f =
		    bsearch(&key, w->b, w->nb, sizeof(*w->b), binding_cmp);
		at[i] = (uint32_t)(f - w->b);
	}
	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < w->nk[k]; i++)
			w->k[k][i].b = at[w->k[k][i].b];
		if (w->nk[k] > 0)
			qsort(w->k[k], w->nk[k], sizeof(*w->k[k]), key_cmp);
	}
	free(at);
	free(names);
	return 0;
}

/* The first of n keys (sorted) equal to key, or n. */
static size_t
key_first(const struct guard_key *k, size_t n, const char *key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(k[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && strcmp(k[lo].key, key) == 0 ? lo : n;
}

/* Whether the keys hold key for binding b. */
static bool
key_has(const struct guard_key *k, size_t n, const char *key, uint32_t b)
{
	for (size_t i = key_first(k, n, key);
	     i < n && strcmp(k[i].key, key) == 0; i++)
		if (k[i].b == b)
			return true;
	return false;
}

const struct guard_binding *
guard_binding_of(const struct guard *g, const char *secret)
{
	struct guard_binding key;
	size_t n = strlen(secret);

	if (n > GUARD_NAME_MAX || g->nb == 0)
		return NULL;
	memcpy(key.secret, secret, n + 1);
	return bsearch(&key, g->b, g->nb, sizeof(*g->b), binding_cmp);
}

bool
guard_burned(const struct guard *g, const char *secret, int64_t version)
{
	const struct guard_binding *b = guard_binding_of(g, secret);

	for (size_t i = 0; b != NULL && i < b->nburned; i++)
		if (b->burned[i] == version)
			return true;
	return false;
}

/* Drops the local addresses the list holds now. */
static void
local_prune(struct guard *g)
{
	size_t k = 0;

	for (size_t i = 0; i < g->nlocal; i++) {
		const struct guard_binding *b =
		    guard_binding_of(g, g->local[i].secret);
		if (b != NULL &&
		    key_has(g->addrs, g->naddrs, g->local[i].addr,
			(uint32_t)(b - g->b)))
			continue;
		if (k != i)
			g->local[k] = g->local[i];
		k++;
	}
	g->nlocal = k;
}

int
guard_load(struct guard *g, const json_t *bindings, int64_t now_ms, char *err,
    size_t errlen)
{
	struct build w = { 0 };
	const json_t *o;
	size_t i;
	int r = 0;

	if (!json_is_array(bindings)) {
		snprintf(err, errlen, "bindings: not an array");
		return -EINVAL;
	}
	if (json_array_size(bindings) > GUARD_BINDINGS_MAX) {
		snprintf(err, errlen, "bindings: more than %d",
		    GUARD_BINDINGS_MAX);
		return -E2BIG;
	}
	w.b = calloc(json_array_size(bindings) + 1, sizeof(*w.b));
	if (w.b == NULL)
		return -ENOMEM;
	json_array_foreach(bindings, i, o)
	{
		if ((r = binding_add(&w, o, i, err, errlen)) < 0)
			break;
	}
	if (r == -E2BIG)
		snprintf(err, errlen, "bindings: more than %d keys",
		    GUARD_KEYS_MAX);
	if (r == 0)
		r = renumber(&w);
	if (r < 0) {
		build_free(&w);
		return r;
	}
	free(g->b);
	keys_free(g->hosts, g->nhosts);
	keys_free(g->ips, g->nips);
	keys_free(g->addrs, g->naddrs);
	g->b = w.b;
	g->nb = w.nb;
	g->hosts = w.k[0];
	g->nhosts = w.nk[0];
	g->ips = w.k[1];
	g->nips = w.nk[1];
	g->addrs = w.k[2];
	g->naddrs = w.nk[2];
	g->read_ms = now_ms;
	local_prune(g);
	return 0;
}

bool
guard_fresh(const struct guard *g, int64_t now_ms, int64_t max_age_ms)
{
	return g->read_ms != 0 && now_ms - g->read_ms <= max_age_ms;
}

/* Adds binding b to ret (n so far), once. */
static void
match_put(const struct guard_binding *b,
    const struct guard_binding *ret[GUARD_MATCH_MAX], size_t *n)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (ret[i] == b)
			return;
	if (*n == GUARD_MATCH_MAX)
		return;
	/* In the list's order (by secret). */
	for (i = *n; i > 0 && ret[i - 1] > b; i--)
		ret[i] = ret[i - 1];
	ret[i] = b;
	(*n)++;
}

static void
match_keys(const struct guard *g, const struct guard_key *k, size_t nk,
    const char *key, const struct guard_binding *ret[GUARD_MATCH_MAX],
    size_t *n)
{
	for (size_t i = key_first(k, nk, key);
	     i < nk && strcmp(k[i].key, key) == 0; i++)
		match_put(&g->b[k[i].b], ret, n);
}

size_t
guard_match(const struct guard *g, const char *host, const char *addr,
    const struct guard_binding *ret[GUARD_MATCH_MAX])
{
	char folded[EGRESS_HOST_MAX + 1], ip[INET6_ADDRSTRLEN + 1];
	char v6[GUARD_ADDR_MAX];
	size_t n = 0;

	if (host != NULL && host[0] != '\0' && g->nhosts > 0 &&
	    host_fold(host, folded) == 0)
		match_keys(g, g->hosts, g->nhosts, folded, ret, &n);
	if (addr == NULL || addr[0] == '\0')
		return n;
	/* An IPv6 address that reaches an IPv4 one is matched as that. */
	if (addr[0] == '[') {
		if (guard_addr_normalise(addr, v6) < 0)
			return n;
		addr = v6;
	}
	if (g->naddrs > 0)
		match_keys(g, g->addrs, g->naddrs, addr, ret, &n);
	if (g->nips > 0 && addr_ip(addr, ip) == 0)
		match_keys(g, g->ips, g->nips, ip, ret, &n);
	for (size_t i = 0; i < g->nlocal; i++) {
		if (strcmp(g->local[i].addr, addr) != 0)
			continue;
		const struct guard_binding *b =
		    guard_binding_of(g, g->local[i].secret);
		if (b != NULL)
			match_put(b, ret, &n);
	}
	return n;
}

/* Whether the list or the local addresses hold norm (normalised) for
 * secret. */
static bool
known(const struct guard *g, const char *secret, const char *norm)
{
	const struct guard_binding *b = guard_binding_of(g, secret);

	if (b != NULL &&
	    key_has(g->addrs, g->naddrs, norm, (uint32_t)(b - g->b)))
		return true;
	for (size_t i = 0; i < g->nlocal; i++)
		if (strcmp(g->local[i].secret, secret) == 0 &&
		    strcmp(g->local[i].addr, norm) == 0)
			return true;
	return false;
}

int
guard_addr_known(const struct guard *g, const char *secret, const char *addr)
{
	char norm[GUARD_ADDR_MAX];

	if (strlen(secret) > GUARD_NAME_MAX || secret[0] == '\0' ||
	    guard_addr_normalise(addr, norm) < 0)
		return -EINVAL;
	return known(g, secret, norm) ? 1 : 0;
}

/* The refusal of norm for secret, or GUARD_REFUSED_MAX. */
static size_t
refused_at(const struct guard *g, const char *secret, const char *norm)
{
	for (size_t i = 0; i < g->nrefused; i++)
		if (strcmp(g->refused[i].secret, secret) == 0 &&
		    strcmp(g->refused[i].addr, norm) == 0)
			return i;
	return GUARD_REFUSED_MAX;
}

static void
refused_drop(struct guard *g, size_t i)
{
	memmove(&g->refused[i], &g->refused[i + 1],
	    (g->nrefused - i - 1) * sizeof(g->refused[0]));
	g->nrefused--;
}

int
guard_local_add(struct guard *g, const char *secret, const char *job,
    const char *addr, struct guard_local **ret_local)
{
	char norm[GUARD_ADDR_MAX];
	size_t i;

	*ret_local = NULL;
	if (strlen(secret) > GUARD_NAME_MAX || strlen(job) > GUARD_NAME_MAX ||
	    secret[0] == '\0' || guard_addr_normalise(addr, norm) < 0)
		return -EINVAL;
	if ((i = refused_at(g, secret, norm)) < GUARD_REFUSED_MAX)
		refused_drop(g, i);
	if (known(g, secret, norm))
		return 0;
	if (g->nlocal == GUARD_LOCAL_MAX) {
		/* The oldest gives its place: the broker has it, and its
		 * list will. */
		memmove(&g->local[0], &g->local[1],
		    (g->nlocal - 1) * sizeof(g->local[0]));
		g->nlocal--;
	}
	struct guard_local *l = &g->local[g->nlocal++];
	memset(l, 0, sizeof(*l));
	memcpy(l->secret, secret, strlen(secret) + 1);
	memcpy(l->job, job, strlen(job) + 1);
	memcpy(l->addr, norm, strlen(norm) + 1);
	*ret_local = l;
	return 1;
}

int
guard_refused_put(struct guard *g, const char *secret, const char *addr,
    int64_t now_ms)
{
	char norm[GUARD_ADDR_MAX];
	size_t i;

	if (strlen(secret) > GUARD_NAME_MAX || secret[0] == '\0' ||
	    guard_addr_normalise(addr, norm) < 0)
		return -EINVAL;
	if ((i = refused_at(g, secret, norm)) < GUARD_REFUSED_MAX)
		refused_drop(g, i);
	if (g->nrefused == GUARD_REFUSED_MAX)
		refused_drop(g, 0);
	struct guard_refused *r = &g->refused[g->nrefused++];
	memset(r, 0, sizeof(*r));
	memcpy(r->secret, secret, strlen(secret) + 1);
	memcpy(r->addr, norm, strlen(norm) + 1);
	r->until_ms = now_ms + GUARD_REFUSED_MS;
	return 0;
}

bool
guard_refused_has(struct guard *g, const char *secret, const char *addr,
    int64_t now_ms)
{
	char norm[GUARD_ADDR_MAX];
	size_t k = 0;

	for (size_t i = 0; i < g->nrefused; i++) {
		if (g->refused[i].until_ms <= now_ms)
			continue;
		if (k != i)
			g->refused[k] = g->refused[i];
		k++;
	}
	g->nrefused = k;
	if (strlen(secret) > GUARD_NAME_MAX ||
	    guard_addr_normalise(addr, norm) < 0)
		return false;
	return refused_at(g, secret, norm) < GUARD_REFUSED_MAX;
}

void
guard_epoch(struct guard *g, int64_t epoch)
{
	if (g->has_epoch && g->epoch != epoch)
		g->nrefused = 0;
	g->epoch = epoch;
	g->has_epoch = true;
}

static void
issued_wipe(struct guard_issued *v)
{
	if (v->value != NULL) {
		explicit_bzero(v->value, v->len);
		free(v->value);
	}
	memset(v, 0, sizeof(*v));
}

void
guard_issued_expire(struct guard *g, int64_t now_s)
{
	size_t k = 0;

	for (size_t i = 0; i < g->nissued; i++) {
		if (g->issued[i].expires < now_s) {
			issued_wipe(&g->issued[i]);
			continue;
		}
		if (k != i) {
			g->issued[k] = g->issued[i];
			memset(&g->issued[i], 0, sizeof(g->issued[i]));
		}
		k++;
	}
	g->nissued = k;
}

int
guard_issued_put(struct guard *g, const char *secret, const char *value,
    size_t len, int64_t expires, int64_t now_s)
{
	size_t sl = strlen(secret);

	if (sl == 0 || sl > GUARD_NAME_MAX || len == 0)
		return -EINVAL;
	guard_issued_expire(g, now_s);
	for (size_t i = 0; i < g->nissued; i++)
		if (g->issued[i].len == len &&
		    memcmp(g->issued[i].value, value, len) == 0)
			return 0;
	if (g->nissued == GUARD_ISSUED_MAX)
		return -ENOSPC;
	/* Until its own expiry: a stored token is good that long (an
	 * hour's cap let another job read a day's token in clear). */
	if (expires == 0)
		expires = now_s + GUARD_ISSUED_DEFAULT_S;
	struct guard_issued *v = &g->issued[g->nissued];
	v->value = malloc(len);
	if (v->value == NULL)
		return -ENOMEM;
	memcpy(v->value, value, len);
	v->len = len;
	memcpy(v->secret, secret, sl + 1);
	v->expires = expires;
	g->nissued++;
	return 1;
}

bool
guard_asked_due(const struct guard_asked *a, const char *secret,
    int64_t read_ms)
{
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i].secret, secret) == 0)
			return a->v[i].read_ms < read_ms;
	return true;
}

bool
guard_asked_stale(const struct guard_asked *a, const struct guard *g,
    const struct guard_binding *b)
{
	for (size_t i = 0; i < a->n; i++) {
		if (strcmp(a->v[i].secret, b->secret) != 0)
			continue;
		if (g->read_ms <= a->v[i].read_ms)
			return false;
		return !b->has_gen || !a->v[i].has_gen ||
		    b->scan_gen != a->v[i].gen;
	}
	return true;
}

void
guard_asked_put(struct guard_asked *a, const char *secret, int64_t read_ms,
    bool has_gen, int64_t gen)
{
	guard_asked_set(a, secret, read_ms);
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i].secret, secret) == 0) {
			a->v[i].has_gen = has_gen;
			a->v[i].gen = gen;
		}
}

void
guard_asked_set(struct guard_asked *a, const char *secret, int64_t read_ms)
{
	size_t i, sl = strlen(secret);

	if (sl == 0 || sl > GUARD_NAME_MAX)
		return;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->v[i].secret, secret) == 0)
			break;
	if (i == a->n && a->n == GUARD_ASKED_MAX) {
		memmove(&a->v[0], &a->v[1], (a->n - 1) * sizeof(a->v[0]));
		i = --a->n;
	}
	if (i == a->n) {
		memcpy(a->v[i].secret, secret, sl + 1);
		a->n++;
	}
	a->v[i].read_ms = read_ms;
}

void
guard_free(struct guard *g)
{
	free(g->b);
	keys_free(g->hosts, g->nhosts);
	keys_free(g->ips, g->nips);
	keys_free(g->addrs, g->naddrs);
	for (size_t i = 0; i < g->nissued; i++)
		issued_wipe(&g->issued[i]);
	memset(g, 0, sizeof(*g));
}
