/*
 * The ring of a job's recent denials (denials.h) and the proxy's own
 * answer at http://cordon.local/v1/denials. Every string a job chose
 * (method, host, path) is copied cut, redacted as the decision log is,
 * and with any byte outside printable ASCII shown as '?', so that the
 * JSON is always valid and never holds a token or a query string. The
 * rule offered for a denial is the narrowest one docs/manifest.md accepts:
 * the exact host and port, the one method, the path itself as a prefix.
 */
#include "denials.h"

#include "egress.h"
#include "egress_path.h"
#include "log.h"
#include "manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Copies s into out[cap], cut at any byte of cut, redacted, printable. */
static void
copy_field(char *out, size_t cap, const char *s, const char *cut)
{
	size_t n;

	if (s == NULL) {
		out[0] = '\0';
		return;
	}
	n = cut != NULL ? strcspn(s, cut) : strlen(s);
	if (n > cap - 1)
		n = cap - 1;
	memcpy(out, s, n);
	out[n] = '\0';
	decision_redact(out, n);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 ||
		    (unsigned char)out[i] >= 0x7f)
			out[i] = '?';
}

int
denials_add(struct denials *ring, const struct decision *d)
{
	struct denial *e;

	if (d->allow || d->error)
		return 0;
	if (ring->ring == NULL) {
		ring->ring = calloc(DENIALS_MAX, sizeof(*ring->ring));
		if (ring->ring == NULL)
			return -ENOMEM;
	}
	e = &ring->ring[ring->next];
	memset(e, 0, sizeof(*e));
	log_timestamp(e->ts, sizeof(e->ts));
	copy_field(e->kind, sizeof(e->kind), d->kind, NULL);
	copy_field(e->method, sizeof(e->method), d->method, NULL);
	copy_field(e->host, sizeof(e->host), d->host, NULL);
	copy_field(e->path, sizeof(e->path), d->path, "?#");
	copy_field(e->reason, sizeof(e->reason), d->reason, NULL);
	copy_field(e->detail, sizeof(e->detail), d->detail, NULL);
	e->port = d->port;
	e->count = d->count;
	ring->next = (ring->next + 1) % DENIALS_MAX;
	if (ring->n < DENIALS_MAX)
		ring->n++;
	ring->total += d->count > 0 ? d->count : 1;
	return 0;
}

void
denials_clear(struct denials *ring)
{
	free(ring->ring);
	memset(ring, 0, sizeof(*ring));
}

bool
denials_is_local(const char *host, size_t len)
{
	size_t n = sizeof(DENIALS_HOST) - 1;

	if (len == n + 1 && host[n] == '.')
		len = n;
	return len == n && strncasecmp(host, DENIALS_HOST, n) == 0;
}

/* Why no rule can allow a denial of this reason: one sentence each. */
static const struct {
	const char *reason, *fix;
} no_rule_fixes[] = {
	{ "ip_literal",
	    "an address where a name belongs: rules name hosts, so connect "
	    "by name (through HTTP(S)_PROXY or the job's resolver)" },
	{ "private_addr",
	    "the name resolved only into a refused range (detail): its rule "
	    "needs allow_cidrs for that range, if reaching it is on purpose" },
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

/* The rule for host (a name), port, method (NULL: not seen), path (NULL
 * or "": not seen), upgrade. */
static json_t *
rule_for(const char *host, uint16_t port, const char *method, const char *path,
    bool upgrade)
{
	json_t *r = json_pack("{s:s}", "host", host);

	if (r == NULL)
		return NULL;
	if (port != 443 && json_object_set_new(r, "port", json_integer(port)))
		goto fail;
	if (json_object_set_new(r, "methods",
		json_pack("[s]", method != NULL ? method : "GET")) < 0)
		goto fail;
	/* A rule's prefix holds no escape and no '*' (manifest.md): the
	 * path up to the first, a prefix of it still. */
	if (path != NULL && path[0] != '\0' &&
	    json_object_set_new(r, "paths",
		json_pack("[s#]", path, (int)strcspn(path, "%*"))) < 0)
		goto fail;
	if (upgrade && json_object_set_new(r, "upgrade", json_true()) < 0)
		goto fail;
	/* A registry is on a list on purpose only: say so, or the broker
	 * refuses the rule. */
	if (manifest_registry_host(host) &&
	    json_object_set_new(r, "registry", json_true()) < 0)
		goto fail;
	if (json_object_set_new(r, "reason",
		json_string("say why the job must reach this")) < 0)
		goto fail;
	return r;
fail:
	json_decref(r);
	return NULL;
}

json_t *
denials_rule(const struct denial *e, const char **ret_fix)
{
	char host[EGRESS_HOST_MAX + 1];
	const char *r = e->reason;
	/* A CONNECT, announced or not, shows neither method nor path. */
	bool tunnel = strcmp(e->kind, "connect") == 0 ||
	    strcmp(e->kind, "capture") == 0 || strcmp(e->kind, "dns") == 0;
	bool seen = !tunnel && e->method[0] != '\0';
	uint16_t port = e->port;

	for (size_t i = 0; i < sizeof(no_rule_fixes) / sizeof(no_rule_fixes[0]);
	     i++)
		if (strcmp(r, no_rule_fixes[i].reason) == 0) {
			*ret_fix = no_rule_fixes[i].fix;
			return NULL;
		}
	if (strcmp(r, "tls") == 0) {
		*ret_fix = strcmp(e->detail, "rule_wants_tls") == 0
		    ? "the rule for this host wants TLS: use https://"
		    : strcmp(e->detail, "rule_is_plain_http") == 0
		    ? "the rule for this host is plain HTTP: use http://"
		    : "the TLS handshake with the proxy failed: trust the "
		      "job's CA (/etc/ssl/certs/ca-certificates.crt)";
		return NULL;
	}
	if (strcmp(r, "no_rule") != 0 && strcmp(r, "method") != 0 &&
	    strcmp(r, "path") != 0 && strcmp(r, "upgrade") != 0) {
		*ret_fix = "no rule allows this (docs/egress.md, The reasons)";
		return NULL;
	}
	if (egress_is_ip_literal(e->host) ||
	    egress_host_normalise(e->host, strlen(e->host), host) < 0) {
		*ret_fix = "not a host name a rule can hold";
		return NULL;
	}
	if (seen && egress_method(e->method) == 0) {
		*ret_fix = "no rule allows this method (GET, HEAD, POST, PUT, "
			   "PATCH, DELETE, OPTIONS only)";
		return NULL;
	}
	if (seen && e->path[0] != '\0' &&
	    egress_path_problem(e->path, strlen(e->path)) != NULL) {
		*ret_fix = "a path with more than one reading (detail): no "
			   "rule allows it; send it spelled plainly";
		return NULL;
	}
	/* A refused name is told as name:53 (no rule may name the
	 * resolver's port): the rule is for the name, on 443. */
	if (strcmp(e->kind, "dns") == 0 || (tunnel && port == 53))
		port = 443;
	*ret_fix = tunnel
	    ? "add this rule to the manifest's egress if the job must reach "
	      "this host (TLS hid the method and path: GET assumed, no paths)"
	    : "add this rule to the manifest's egress (or its method, path "
	      "or upgrade to the host's rule) if the job must do this";
	return rule_for(host, port, seen ? e->method : NULL,
	    seen ? e->path : NULL, strcmp(r, "upgrade") == 0);
}

json_t *
denials_json(const struct denials *ring, const char *job)
{
	json_t *list = json_array(), *out;

	if (list == NULL)
		return NULL;
	for (size_t k = 0; k < ring->n; k++) {
		/* Newest first. */
		size_t i = (ring->next + DENIALS_MAX - 1 - k) % DENIALS_MAX;
		const struct denial *e = &ring->ring[i];
		const char *fix = NULL;
		json_t *rule = denials_rule(e, &fix);
		json_t *o = json_pack("{s:s, s:s, s:s?, s:s, s:i, s:s?, s:s, "
				      "s:s?, s:o, s:s}",
		    "ts", e->ts, "kind", e->kind, "method",
		    e->method[0] != '\0' ? e->method : NULL, "host", e->host,
		    "port", (int)e->port, "path",
		    e->path[0] != '\0' ? e->path : NULL, "reason", e->reason,
		    "detail", e->detail[0] != '\0' ? e->detail : NULL, "rule",
		    rule != NULL ? rule : json_null(), "fix", fix);
		if (o != NULL && e->count > 0)
			(void)json_object_set_new(o, "count",
			    json_integer((json_int_t)e->count));
		if (o == NULL || json_array_append_new(list, o) < 0) {
			json_decref(list);
			return NULL;
		}
	}
	out = json_pack("{s:s, s:o, s:I, s:I, s:i}", "job", job, "denials",
	    list, "kept", (json_int_t)ring->n, "total", (json_int_t)ring->total,
	    "max", DENIALS_MAX);
	return out;
}

int
denials_answer(const struct denials *ring, const char *job, const char *method,
    const char *path, bool connect, struct buf *out)
{
	unsigned status = 200;
	const char *phrase = "OK", *message = NULL;
	json_t *body;
	char *text;
	int r;

	if (connect) {
		status = 403;
		phrase = "Forbidden";
		message = "cordon.local is the proxy itself and answers plain "
			  "http only: GET http://cordon.local/v1/denials";
	} else if (strcmp(path, DENIALS_PATH) != 0) {
		status = 404;
		phrase = "Not Found";
		message = "cordon.local answers GET /v1/denials only";
	} else if (strcmp(method, "GET") != 0) {
		status = 405;
		phrase = "Method Not Allowed";
		message = "GET /v1/denials only";
	}
	body = message == NULL ? denials_json(ring, job)
			       : json_pack("{s:s, s:s}", "error",
				     status == 403 ? "local_only" : "not_found",
				     "message", message);
	text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (text == NULL)
		return -ENOMEM;
	r = buf_printf(out,
	    "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\n"
	    "Cache-Control: no-store\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n%s\n",
	    status, phrase, strlen(text) + 1, text);
	free(text);
	return r;
}
