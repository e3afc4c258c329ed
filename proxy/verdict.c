/*
 * The verdict of verdict.h: every check the proxy makes on a request head
 * and on the broker's word about a token, with no I/O, in the order the
 * docs give. The first refusal wins; its reason and detail are what the
 * job's decision line and its 403 say.
 */
#include "verdict.h"

#include "denials.h"
#include "path_template.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool
refuse(struct verdict *v, const char *reason, const char *detail)
{
	v->reason = reason;
	v->detail = detail;
	return false;
}

/* A request for broker.cordon: POST /v1/token and nothing else. */
static bool
broker_request_ok(const struct verdict_request *rq)
{
	return rq->tunnel_host == NULL && rq->port == 80 &&
	    strcmp(rq->method, "POST") == 0 && rq->path != NULL &&
	    strcmp(rq->path, "/v1/token") == 0 && !rq->has_query;
}

static bool
judge(const struct verdict_request *rq, const struct egress_rules *rules,
    const struct verdict_state *st, struct verdict *v)
{
	const struct egress_rule *rule;
	const char *reason = NULL;

	if (!st->feed_ok)
		return refuse(v, "feed_unavailable",
		    "revocation feed not answering");
	if (st->job_closed)
		return refuse(v, "revoked", NULL);
	if (egress_is_ip_literal(rq->host))
		return refuse(v, "ip_literal", NULL);
	if (egress_host_normalise(rq->host, strlen(rq->host), v->host) < 0) {
		v->host[0] = '\0';
		return refuse(v, "malformed", "bad_host");
	}
	if (rq->tunnel_host != NULL &&
	    (strcmp(v->host, rq->tunnel_host) != 0 ||
		rq->port != rq->tunnel_port))
		return refuse(v, "host_mismatch", NULL);
	if (strcmp(v->host, VERDICT_BROKER_HOST) == 0) {
		if (!broker_request_ok(rq))
			return refuse(v, "broker_path", NULL);
		/* The broker is no place for a token either: its tokens are
		 * judged like any, towards no rule. */
		v->broker_route = true;
		return true;
	}
	v->rule = egress_match(rules, v->host, rq->port, rq->method,
	    rq->connect ? NULL : rq->path, &reason);
	if (v->rule < 0)
		/* A path with two readings says which spelling it was. */
		return refuse(v, reason,
		    strcmp(reason, "path") == 0 && rq->path != NULL
			? egress_path_problem(rq->path, strlen(rq->path))
			: NULL);
	rule = &rules->rule[v->rule];
	if (rq->connect && rule->tls == EGRESS_TLS_NONE)
		return refuse(v, "tls", "rule_is_plain_http");
	if (!rq->connect && rq->tunnel_host == NULL &&
	    rule->tls != EGRESS_TLS_NONE)
		return refuse(v, "tls", "rule_wants_tls");
	if (rq->upgrade && !rule->upgrade)
		return refuse(v, "upgrade", NULL);
	/* "upgrade" allows websockets: another protocol under the rule's
	 * name (h2c) would carry requests that nothing here judges. */
	if (rq->upgrade && !rq->upgrade_websocket)
		return refuse(v, "upgrade", "protocol");
	v->upgrade_ok = rq->upgrade;
	return true;
}

void
verdict_head(const struct verdict_request *rq, const struct egress_rules *rules,
    const struct verdict_state *st, struct verdict *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->rule = -1;
	(void)judge(rq, rules, st, ret);
}

const char *
verdict_token(int status, const json_t *body, const char *job,
    const struct egress_rule *rule)
{
	const json_t *active = json_object_get(body, "active");
	const char *owner = json_string_value(json_object_get(body, "job"));
	const char *aud = json_string_value(json_object_get(body, "aud"));

	if (status != 200 || !json_is_boolean(active))
		return "introspection_failed";
	if (!json_is_true(active))
		return "inactive"; /* a canary among them: the broker revoked */
	if (owner == NULL || strcmp(owner, job) != 0)
		return "other_job";
	if (rule == NULL || rule->audience[0] == '\0')
		return "no_audience";
	if (aud == NULL || strcmp(aud, rule->audience) != 0)
		return "audience";
	return NULL;
}

const char *
verdict_params(const struct egress_rule *rule, const char *path,
    const json_t *params)
{
	const char *worst = NULL;
	size_t len = strcspn(path, "?#");

	for (size_t k = 0; k < rule->npaths; k++) {
		const char *prefix = rule->paths[k], *why = NULL;
		size_t n = strlen(prefix);

		if (!path_template_is(prefix)) {
			if (len >= n && strncmp(path, prefix, n) == 0)
				return NULL;
			continue;
		}
		if (path_template_match(prefix, path, len, params, &why))
			return NULL;
		/* A bad or missing value says more than "elsewhere". */
		if (worst == NULL || strcmp(worst, "param_mismatch") == 0 ||
		    (strcmp(worst, "param_missing") == 0 &&
			strcmp(why, "param_value") == 0))
			worst = why;
	}
	return worst != NULL ? worst : "param_mismatch";
}

/* Whether sa is the proxy's control port or the broker's: on loopback, or
 * on the address either listens on. */
static bool
is_own_port(const struct sockaddr *sa, const struct sockaddr *self_sa,
    const struct sockaddr *broker_sa)
{
	const struct sockaddr_in *in = (const void *)sa;
	const struct sockaddr_in *self = (const void *)self_sa;
	const struct sockaddr_in *broker = (const void *)broker_sa;
	uint16_t port;

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		port = in6->sin6_port;
		if (!IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return false;
	} else {
		port = in->sin_port;
		if ((ntohl(in->sin_addr.s_addr) >> 24) != 127 &&
		    in->sin_addr.s_addr != self->sin_addr.s_addr &&
		    in->sin_addr.s_addr != broker->sin_addr.s_addr)
			return false;
	}
	return (self_sa->sa_family == AF_INET && port == self->sin_port) ||
	    port == broker->sin_port;
}

const struct addrinfo *
verdict_address(const struct addrinfo *ai, const struct egress_rule *rule,
    const struct sockaddr *self, const struct sockaddr *broker,
    const char **ret_reason, const char **ret_detail)
{
	const char *refused = NULL;

	for (const struct addrinfo *a = ai; a != NULL; a = a->ai_next) {
		const char *why;
		if (a->ai_family != AF_INET && a->ai_family != AF_INET6)
			continue;
		if (is_own_port(a->ai_addr, self, broker)) {
			refused = "own_port";
			continue;
		}
		why = egress_addr_refused(a->ai_addr, rule);
		if (why == NULL)
			return a;
		if (refused == NULL)
			refused = why;
	}
	if (refused != NULL && strcmp(refused, "own_port") == 0) {
		*ret_reason = "own_port";
		*ret_detail = NULL;
	} else {
		*ret_reason = "private_addr";
		*ret_detail = refused;
	}
	return NULL;
}

int
verdict_refusal(struct buf *out, unsigned status, const char *deny_reason,
    const char *error, const char *message)
{
	return verdict_refusal_retry(out, status, deny_reason, error, message,
	    0);
}

int
verdict_refusal_retry(struct buf *out, unsigned status, const char *deny_reason,
    const char *error, const char *message, unsigned retry_after_s)
{
	static const char *const phrases[] = { [400] = "Bad Request",
		[403] = "Forbidden",
		[408] = "Request Timeout",
		[502] = "Bad Gateway",
		[503] = "Service Unavailable",
		[504] = "Gateway Timeout" };
	json_t *body = json_pack("{s:s, s:s?, s:s}", "error", error, "reason",
	    deny_reason, "message", message);
	char *text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
	const char *phrase = status < sizeof(phrases) / sizeof(phrases[0]) &&
		phrases[status] != NULL
	    ? phrases[status]
	    : "Error";
	/* A denial's phrase names the reason and where to ask, for the
	 * clients that print only the status line (pip, urllib): a token of
	 * the reason alphabet, at most 48 bytes, else no reason in it. */
	char said[160] = "";
	if (deny_reason != NULL) {
		size_t rl = strlen(deny_reason);
		bool plain = rl > 0 && rl <= 48 &&
		    strspn(deny_reason,
			"abcdefghijklmnopqrstuvwxyz0123456789_") == rl;
		snprintf(said, sizeof(said),
		    " by cordon%s%s (GET http://" DENIALS_HOST DENIALS_PATH ")",
		    plain ? ": " : "", plain ? deny_reason : "");
	}
	char retry[40] = "";
	int r;

	if (retry_after_s > 0)
		snprintf(retry, sizeof(retry), "Retry-After: %u\r\n",
		    retry_after_s);
	json_decref(body);
	if (text == NULL)
		return -ENOMEM;
	r = buf_printf(out,
	    "HTTP/1.1 %u %s%s\r\n%s: %s\r\n%sContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
	    status, phrase, said,
	    deny_reason != NULL ? "X-Cordon-Deny" : "X-Cordon-Error",
	    deny_reason != NULL ? deny_reason : error, retry, strlen(text) + 1,
	    text);
	free(text);
	return r;
}
