/*
 * The secrets' bindings at the broker (bindings.h): the store keeps the
 * rows (secret, kind, value, origin); this file groups them by secret
 * with each secret's kind and current version for the proxies, checks
 * what a proxy reports and what an operator declares, and refuses a
 * manifest rule the proxy could not read at a bound host.
 */
#include "bindings.h"

#include "broker.h"
#include "issuers.h"
#include "log.h"
#include "problems.h"
#include "secrets.h"
#include "store.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- hosts and addresses --------------------------------------------------- */

/* Lowercase letters, digits, '-' and '.'; labels 1..63; total <= 253. */
static bool
name_ok(const char *h)
{
	size_t n = strlen(h), label = 0;

	if (n == 0 || n > 253 || h[0] == '.' || h[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = h[i];

		if (c == '.') {
			if (label == 0 || h[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			c == '-'))
			return false;
		if ((c == '-' && label == 0) || ++label > 63)
			return false;
	}
	return h[n - 1] != '-';
}

/* An IPv6 address in canonical text, a v4-mapped one as its IPv4. */
static void
v6_text(const struct in6_addr *a, char *out, size_t cap)
{
	if (IN6_IS_ADDR_V4MAPPED(a))
		inet_ntop(AF_INET, &a->s6_addr[12], out, (socklen_t)cap);
	else
		inet_ntop(AF_INET6, a, out, (socklen_t)cap);
}

bool
bindings_host_ok(const char *h, char *out, size_t cap)
{
	char text[INET6_ADDRSTRLEN];
	struct in6_addr a6;
	const char *v = h;
	int n;

	if (strchr(h, ':') != NULL) {
		for (const char *c = h; *c != '\0'; c++)
			if (*c >= 'A' && *c <= 'Z')
				return false;
		if (inet_pton(AF_INET6, h, &a6) != 1)
			return false;
		v6_text(&a6, text, sizeof(text));
		v = text;
	} else if (!name_ok(h))
		return false;
	n = snprintf(out, cap, "%s", v);
	return n >= 0 && (size_t)n < cap;
}

int
bindings_addr_parse(const char *in, char *out, size_t cap)
{
	char host[INET6_ADDRSTRLEN + 1], text[INET6_ADDRSTRLEN];
	const char *port;
	struct in6_addr a6;
	struct in_addr a4;
	size_t hn;
	long p = 0;
	bool v6;

	if (in[0] == '[') {
		const char *end = strstr(in, "]:");
		if (end == NULL)
			return -EINVAL;
		hn = (size_t)(end - in - 1);
		port = end + 2;
		in++;
		v6 = true;
	} else {
		const char *colon = strrchr(in, ':');
		if (colon == NULL)
			return -EINVAL;
		hn = (size_t)(colon - in);
		port = colon + 1;
		v6 = false;
	}
	if (hn == 0 || hn >= sizeof(host))
		return -EINVAL;
	memcpy(host, in, hn);
	host[hn] = '\0';
	if (port[0] == '\0' || strlen(port) > 5)
		return -EINVAL;
	for (const char *c = port; *c != '\0'; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		p = p * 10 + (*c - '0');
	}
	if (p < 1 || p > 65535)
		return -EINVAL;
	if (v6) {
		for (const char *c = host; *c != '\0'; c++)
			if (*c == '%')
				return -EINVAL; /* no zone */
		if (inet_pton(AF_INET6, host, &a6) != 1)
			return -EINVAL;
		v6_text(&a6, text, sizeof(text));
		v6 = !IN6_IS_ADDR_V4MAPPED(&a6);
	} else {
		if (inet_pton(AF_INET, host, &a4) != 1)
			return -EINVAL;
		inet_ntop(AF_INET, &a4, text, sizeof(text));
	}
	int n = snprintf(out, cap, v6 ? "[%s]:%ld" : "%s:%ld", text, p);
	return n < 0 || (size_t)n >= cap ? -EINVAL : 0;
}

/* --- the list -------------------------------------------------------------- */

/* Appends s to array a unless a's last element is s (a is sorted). */
static void
append_new(json_t *a, const char *s)
{
	json_t *last = json_array_get(a, json_array_size(a) - 1);

	if (last == NULL || strcmp(json_string_value(last), s) != 0)
		json_array_append_new(a, json_string(s));
}

/*
 * What a proxy needs of secret's entry cur besides its places: a static
 * secret's burned versions still stored ("burned": the proxy forgets
 * them for injection, keeps them in the scan), an issuer secret's scan
 * set generation ("scan_gen": the proxy asks the set again only when it
 * moved; left out when it cannot be read, and then asked at each list
 * read as before).
 */
static void
binding_extras(struct broker *b, json_t *cur, const char *secret,
    const char *kind, int64_t version, const json_t *burned)
{
	int64_t gen;

	if (strcmp(kind, "static") == 0) {
		json_t *out = json_array(), *v;
		size_t i;
		/* Of the newest BINDINGS_BURNED_VERSIONS: a cache holds a
		 * recent one, and the list stays short. */
		json_array_foreach(json_object_get(burned, secret), i, v)
		{
			if (json_integer_value(v) >
			    version - BINDINGS_BURNED_VERSIONS)
				json_array_append(out, v);
		}
		json_object_set_new(cur, "burned", out);
	} else if (strcmp(kind, "unsealable") != 0 &&
	    issuers_scan_gen(b->issuers, secret, (int64_t)time(NULL),
		SECRETS_SCAN_ISSUED_MAX, &gen) == 0)
		json_object_set_new(cur, "scan_gen", json_integer(gen));
}

int
bindings_answer(struct broker *b, json_t **ret, int64_t *ret_epoch)
{
	json_t *rows, *row, *out = json_array(), *cur = NULL, *burned = NULL;
	int64_t epoch;
	size_t i;
	int r = store_bindings_list(b->store, &rows, &epoch);

	if (r < 0) {
		json_decref(out);
		return r;
	}
	/* After the epoch: a burn moves it, so a list that lacks a burn
	 * has an epoch from before it. */
	if ((r = store_secrets_burned(b->store, &burned)) < 0) {
		json_decref(rows);
		json_decref(out);
		return r;
	}
	/* The rows come by secret, then kind (addr before host), then
	 * value: one entry a secret, each value once. */
	json_array_foreach(rows, i, row)
	{
		const char *secret =
		    json_string_value(json_object_get(row, "secret"));
		const char *kind =
		    json_string_value(json_object_get(row, "kind"));
		const char *value =
		    json_string_value(json_object_get(row, "value"));

		if (cur == NULL ||
		    strcmp(json_string_value(json_object_get(cur, "secret")),
			secret) != 0) {
			struct secret_meta m;
			const char *k;

			r = secrets_kind(b, secret, &m, &k);
			if (r == -ENOENT) { /* deleted meanwhile */
				cur = NULL;
				r = 0;
				continue;
			}
			if (r < 0)
				break;
			cur = json_pack("{s:s, s:s, s:I, s:[], s:[]}", "secret",
			    secret, "kind", k, "version", (json_int_t)m.version,
			    "hosts", "addrs");
			json_array_append_new(out, cur);
			binding_extras(b, cur, secret, k, m.version, burned);
		}
		append_new(json_object_get(cur,
			       strcmp(kind, "host") == 0 ? "hosts" : "addrs"),
		    value);
	}
	json_decref(rows);
	json_decref(burned);
	if (r < 0) {
		json_decref(out);
		return r;
	}
	*ret = out;
	*ret_epoch = epoch;
	return 0;
}

int
bindings_of(struct broker *b, const char *name, json_t **ret_hosts,
    json_t **ret_declared, json_t **ret_addrs)
{
	json_t *rows, *row;
	json_t *hosts = json_array(), *declared = json_array(),
	       *addrs = json_array();
	int64_t epoch;
	size_t i;
	int r = store_bindings_list(b->store, &rows, &epoch);

	if (r < 0) {
		json_decref(hosts);
		json_decref(declared);
		json_decref(addrs);
		return r;
	}
	json_array_foreach(rows, i, row)
	{
		const char *value =
		    json_string_value(json_object_get(row, "value"));

		if (strcmp(json_string_value(json_object_get(row, "secret")),
			name) != 0)
			continue;
		if (strcmp(json_string_value(json_object_get(row, "kind")),
			"addr") == 0) {
			append_new(addrs, value);
			continue;
		}
		append_new(hosts, value);
		if (strcmp(json_string_value(json_object_get(row, "origin")),
			"declared") == 0)
			append_new(declared, value);
	}
	json_decref(rows);
	*ret_hosts = hosts;
	*ret_declared = declared;
	*ret_addrs = addrs;
	return 0;
}

int
bindings_bound(struct broker *b, const char *name)
{
	json_t *rows, *row;
	int64_t epoch;
	size_t i;
	int r = store_bindings_list(b->store, &rows, &epoch), found = 0;

	if (r < 0)
		return r;
	json_array_foreach(rows, i, row)
	{
		if (strcmp(json_string_value(json_object_get(row, "secret")),
			name) == 0)
			found = 1;
	}
	json_decref(rows);
	return found;
}

/* Whether a rule's host pattern reaches host: the same name, or "*.s"
 * and host a name under s (not s itself, as the proxy matches). */
static bool
pattern_reaches(const char *pattern, const char *host)
{
	size_t hn = strlen(host), sn;

	if (strncmp(pattern, "*.", 2) != 0)
		return strcmp(pattern, host) == 0;
	sn = strlen(pattern + 1); /* ".s" */
	return hn > sn && strcmp(host + hn - sn, pattern + 1) == 0;
}

/* Whether a, sorted strings, holds s. */
static bool
holds(const json_t *a, const char *s)
{
	const json_t *v;
	size_t i;

	json_array_foreach(a, i, v)
	{
		if (strcmp(json_string_value(v), s) == 0)
			return true;
	}
	return false;
}

/* The port of a canonical "a.b.c.d:port" or "[v6]:port". */
static long
addr_port(const char *addr)
{
	const char *colon = strrchr(addr, ':');

	return colon != NULL ? strtol(colon + 1, NULL, 10) : -1;
}

int
bindings_scan_reach(struct broker *b, const char *name, const json_t *m,
    const char *host, const char *addr, bool injected_lately, char *why,
    size_t cap)
{
	json_t *hosts, *declared, *addrs, *r;
	bool covered = false, at_port = false;
	long port = addr != NULL ? addr_port(addr) : -1;
	size_t i;
	int ret;

	json_array_foreach(json_object_get(m, "egress"), i, r)
	{
		const char *h = json_string_value(json_object_get(r, "host"));
		json_t *p = json_object_get(r, "port");
		long rp =
		    json_is_integer(p) ? (long)json_integer_value(p) : 443;

		if (h == NULL || !pattern_reaches(h, host))
			continue;
		covered = true;
		if (rp == port)
			at_port = true;
	}
	if (!covered) {
		snprintf(why, cap,
		    "no egress rule of the job's manifest reaches "
		    "host %s",
		    host);
		return 0;
	}
	ret = bindings_of(b, name, &hosts, &declared, &addrs);
	if (ret < 0)
		return ret;
	if (holds(hosts, host))
		ret = 1;
	else if (addr != NULL && at_port &&
	    (injected_lately || holds(addrs, addr)))
		ret = 1;
	else if (addr != NULL && (injected_lately || holds(addrs, addr)))
		snprintf(why, cap,
		    "no egress rule of the job's manifest for host %s is for "
		    "port %ld",
		    host, port);
	else
		snprintf(why, cap,
		    "secret %s is bound neither to host %s nor "
		    "to address %s",
		    name, host, addr != NULL ? addr : "(none asked)");
	json_decref(hosts);
	json_decref(declared);
	json_decref(addrs);
	return ret;
}

int
bindings_guarded(struct broker *b, const char *name, const json_t *m)
{
	json_t *hosts, *declared, *addrs, *r, *v;
	size_t i, k;
	int ret = bindings_of(b, name, &hosts, &declared, &addrs);

	if (ret < 0)
		return ret;
	/* As bindings_scan_reach allows, for any host: a rule reaching a
	 * bound host, or one at the port of a bound address. */
	json_array_foreach(json_object_get(m, "egress"), i, r)
	{
		const char *h = json_string_value(json_object_get(r, "host"));
		json_t *p = json_object_get(r, "port");
		long rp =
		    json_is_integer(p) ? (long)json_integer_value(p) : 443;

		if (h == NULL)
			continue;
		json_array_foreach(hosts, k, v)
		{
			if (pattern_reaches(h, json_string_value(v)))
				ret = 1;
		}
		json_array_foreach(addrs, k, v)
		{
			if (addr_port(json_string_value(v)) == rp)
				ret = 1;
		}
	}
	json_decref(hosts);
	json_decref(declared);
	json_decref(addrs);
	return ret;
}

_Static_assert(BINDINGS_SEEN_MAX == STORE_BINDINGS_SEEN_MAX &&
	BINDINGS_SECRETS_MAX == STORE_BINDINGS_SECRETS_MAX &&
	BINDINGS_KEYS_MAX == STORE_BINDINGS_KEYS_MAX,
    "the store enforces the caps bindings.h promises");

void
bindings_reply_cap(struct http_response *res,
    const struct store_bind_over *over, const char *secret)
{
	const char *cap = over != NULL ? over->cap : "";

	if (strcmp(cap, "seen") == 0)
		http_reply_error(res, 409, "bindings_cap",
		    "secret %s is bound to %d addresses already (the most one "
		    "secret keeps): name the service's hosts in its "
		    "guard_hosts, or split it into secrets a service each",
		    secret != NULL ? secret : "?", BINDINGS_SEEN_MAX);
	else if (strcmp(cap, "secrets") == 0)
		http_reply_error(res, 409, "bindings_cap",
		    "the bindings would list %lld secrets, past the %d every "
		    "proxy reads: delete the secrets no manifest injects, or "
		    "their guard_hosts",
		    (long long)over->count, BINDINGS_SECRETS_MAX);
	else if (strcmp(cap, "keys") == 0)
		http_reply_error(res, 409, "bindings_cap",
		    "the bindings would hold %lld hosts and addresses, past "
		    "the %d every proxy reads: shorten secrets' guard_hosts, "
		    "or delete the secrets no manifest injects",
		    (long long)over->count, BINDINGS_KEYS_MAX);
	else
		http_reply_error(res, 409, "bindings_cap",
		    "the bindings would pass what every proxy reads (%d "
		    "addresses a secret, %d secrets, %d hosts and addresses): "
		    "delete the secrets no manifest injects, shorten their "
		    "guard_hosts, or split a secret into one a service",
		    BINDINGS_SEEN_MAX, BINDINGS_SECRETS_MAX, BINDINGS_KEYS_MAX);
}

/* --- a manifest's rules the proxy cannot read ------------------------------ */

/* The (secret, host) pairs bound: the store's and m's own injecting
 * rules', a new array of [secret, host]; NULL with *ret_err on failure. */
static json_t *
bound_hosts(struct broker *b, const json_t *m, int *ret_err)
{
	json_t *rows, *row, *out = json_array();
	int64_t epoch;
	size_t i;
	int r = store_bindings_list(b->store, &rows, &epoch);

	if (r < 0) {
		json_decref(out);
		*ret_err = r;
		return NULL;
	}
	json_array_foreach(rows, i, row)
	{
		if (strcmp(json_string_value(json_object_get(row, "kind")),
			"host") == 0)
			json_array_append_new(out,
			    json_pack("[O, O]", json_object_get(row, "secret"),
				json_object_get(row, "value")));
	}
	json_decref(rows);
	json_array_foreach(json_object_get(m, "egress"), i, row)
	{
		json_t *s =
		    json_object_get(json_object_get(row, "inject"), "secret");
		json_t *h = json_object_get(row, "host");

		if (json_is_string(s) && json_is_string(h))
			json_array_append_new(out, json_pack("[O, O]", s, h));
	}
	return out;
}

void
bindings_check_manifest(struct broker *b, const json_t *m, json_t *problems)
{
	json_t *bound = NULL, *r;
	size_t i;
	int err = 0;

	json_array_foreach(json_object_get(m, "egress"), i, r)
	{
		const char *tls = json_string_value(json_object_get(r, "tls"));
		const char *host =
		    json_string_value(json_object_get(r, "host"));
		const char *injects = json_string_value(
		    json_object_get(json_object_get(r, "inject"), "secret"));
		bool pass = tls != NULL && strcmp(tls, "passthrough") == 0;
		bool upgrade = json_is_true(json_object_get(r, "upgrade"));
		char field[64];
		size_t j;
		json_t *pair;

		if ((!pass && !upgrade) || host == NULL)
			continue;
		snprintf(field, sizeof(field), "egress[%zu].%s", i,
		    pass ? "tls" : "upgrade");
		if (bound == NULL && err == 0)
			bound = bound_hosts(b, m, &err);
		if (bound == NULL) {
			problems_add(problems, field,
			    "the broker could not read the secrets' bindings "
			    "(%s)",
			    strerror(-err));
			continue;
		}
		json_array_foreach(bound, j, pair)
		{
			const char *s =
			    json_string_value(json_array_get(pair, 0));
			const char *h =
			    json_string_value(json_array_get(pair, 1));

			if (!pattern_reaches(host, h) ||
			    (injects != NULL && strcmp(injects, s) == 0))
				continue;
			problems_add(problems, field,
			    "host %s is where secret %s is injected: the proxy "
			    "must read what comes back; %s",
			    h, s,
			    pass ? "use tls: terminate"
				 : "an upgraded connection is not read: "
				   "remove upgrade");
			break;
		}
	}
	json_decref(bound);
}

/* --- the routes ------------------------------------------------------------ */

static void
reply_store_error(struct broker *b, struct http_response *res, int r)
{
	atomic_fetch_add(&b->store_errors, 1);
	log_error("store_failed", "{s:s}", "error", strerror(-r));
	http_reply_error(res, 503, "store_unavailable",
	    "the broker's database failed (%s)", strerror(-r));
}

void
bindings_get(void *ctx, struct http_request *req, struct http_response *res)
{
	struct broker *b = ctx;
	json_t *list;
	int64_t epoch;
	int r = bindings_answer(b, &list, &epoch);

	(void)req;
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	http_reply_json(res, 200,
	    json_pack("{s:I, s:o}", "epoch", (json_int_t)epoch, "bindings",
		list));
}

void
bindings_post(void *ctx, struct http_request *req, struct http_response *res)
{
	static const char *const keys[] = { "secret", "job", "addr" };
	struct broker *b = ctx;
	json_t *body = http_request_body(req), *problems = json_array();
	struct manifest_version mv = { .body = NULL };
	struct secret_meta meta;
	char addr[BINDINGS_ADDR_MAX];
	const char *secret, *job;
	struct job j;
	bool added = false;
	int r;

	problems_unknown_keys(body, "", keys, 3, problems);
	for (size_t i = 0; i < 3; i++)
		if (!json_is_string(json_object_get(body, keys[i])))
			problems_add(problems, keys[i], "required: a string");
	if (json_array_size(problems) == 0 &&
	    bindings_addr_parse(json_string_value(
				    json_object_get(body, "addr")),
		addr, sizeof(addr)) < 0)
		problems_add(problems, "addr",
		    "an upstream address: \"a.b.c.d:port\" or \"[v6]:port\"");
	if (json_array_size(problems) > 0) {
		http_reply_problems(res, "invalid_request", NULL, problems);
		return;
	}
	json_decref(problems);
	secret = json_string_value(json_object_get(body, "secret"));
	job = json_string_value(json_object_get(body, "job"));
	r = store_job_get(b->store, job, &j, NULL);
	if (r == 0)
		r = store_manifest_get(b->store, j.manifest, j.manifest_version,
		    &mv);
	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_job", "no such job");
		return;
	}
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	r = store_secret_get(b->store, secret, &meta, NULL, NULL);
	if (r < 0) {
		manifest_version_free(&mv);
		if (r == -ENOENT)
			http_reply_error(res, 404, "unknown_secret",
			    "no such secret");
		else
			reply_store_error(b, res, r);
		return;
	}
	/* Fail closed: a verifier's key plants bindings only for what a
	 * job's manifest injects, the job running or ended lately (a
	 * proxy's tell may land after a short job's end: the address is
	 * a fact either way). */
	if (strcmp(j.state, "running") != 0 &&
	    (j.revoked_at == 0 ||
		(int64_t)time(NULL) - j.revoked_at > BINDINGS_ENDED_WINDOW_S)) {
		manifest_version_free(&mv);
		http_reply_error(res, 409, "job_not_running",
		    "job %s is %s, and ended more than %d s ago: it sends no "
		    "secret",
		    j.id, j.state, BINDINGS_ENDED_WINDOW_S);
		return;
	}
	if (secrets_rule_injecting(mv.body, secret) == NULL) {
		manifest_version_free(&mv);
		http_reply_error(res, 409, "not_injected",
		    "no egress rule of manifest %s injects secret %s",
		    j.manifest, secret);
		return;
	}
	manifest_version_free(&mv);
	/* Capped: a job whose name resolves anew each time would grow the
	 * list past what every proxy reads (redteam3 #9); counted in the
	 * write's own transaction (two at once cannot both take the last
	 * place). */
	struct store_bind_over over = { NULL, 0 };
	r = store_binding_seen(b->store, secret, addr, j.id, "verifier", &added,
	    &over);
	if (r == -EDQUOT) {
		log_warn("bindings_cap", "{s:s, s:s, s:s, s:s, s:I}", "secret",
		    secret, "addr", addr, "job", j.id, "cap",
		    over.cap != NULL ? over.cap : "?", "count",
		    (json_int_t)over.count);
		bindings_reply_cap(res, &over, secret);
		return;
	}
	if (r == -ENOENT) {
		http_reply_error(res, 404, "unknown_secret", "no such secret");
		return;
	}
	if (r < 0) {
		reply_store_error(b, res, r);
		return;
	}
	if (added)
		log_info("binding_seen", "{s:s, s:s, s:s}", "secret", secret,
		    "addr", addr, "job", j.id);
	http_reply_json(res, 200, json_pack("{s:b}", "added", added));
}
