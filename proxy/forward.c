/*
 * The upstream head of forward.h: the extra fields chosen here, written
 * by http1_serialize; the verifier key's copy on the stack is wiped.
 */
#include "forward.h"

#include "token.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Fields an injected request never carries: a compressed or partial
 * answer hides a reflected credential from the scanner, which reads the
 * answer whole as it comes; a method override would carry the credential
 * to a method the rule does not allow, a path override (IIS's, which
 * Symfony, Zend and ASP.NET take) to a path it does not. */
static const char *const inject_drop[] = { "Authorization", "Accept-Encoding",
	"Range", "If-Range", "X-HTTP-Method-Override", "X-HTTP-Method",
	"X-Method-Override", "X-Original-URL", "X-Rewrite-URL" };

/* Whether field name n[0..nl) reads as name on a server that maps field
 * names to variables (CGI, WSGI, PHP: X_Api_Key and x-api-key are both
 * HTTP_X_API_KEY): equal once case is folded and '_' taken as '-'. */
static bool
folds_to(const char *n, size_t nl, const char *name)
{
	if (nl != strlen(name))
		return false;
	for (size_t i = 0; i < nl; i++) {
		unsigned char a = (unsigned char)n[i],
			      b = (unsigned char)name[i];
		a = a == '_' ? '-' : (unsigned char)tolower(a);
		b = b == '_' ? '-' : (unsigned char)tolower(b);
		if (a != b)
			return false;
	}
	return true;
}

/* Whether the job's field h goes when a credential is injected: one that
 * folds to the injected name, where a token travels, holding a token, or
 * one of inject_drop. */
static bool
dropped_for_inject(const struct http1_header *h, const char *head,
    const char *name)
{
	const char *n = head + h->name.off, *v = head + h->value.off;
	size_t nl = h->name.len, vl = h->value.len;

	if (folds_to(n, nl, name) ||
	    (nl >= 9 && strncasecmp(n, "X-Cordon-", 9) == 0))
		return true;
	for (size_t i = 0; i < sizeof(inject_drop) / sizeof(inject_drop[0]);
	     i++)
		if (nl == strlen(inject_drop[i]) &&
		    strncasecmp(n, inject_drop[i], nl) == 0)
			return true;
	return memmem(v, vl, TOKEN_PREFIX, TOKEN_PREFIX_LEN) != NULL;
}

/* Whether the job's field h goes from a request whose answer is scanned
 * (an answer compressed or in part hides a value from the scanner). */
static bool
dropped_for_scan(const struct http1_header *h, const char *head)
{
	static const char *const drop[] = { "Accept-Encoding", "Range",
		"If-Range" };
	const char *n = head + h->name.off;
	size_t nl = h->name.len;

	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (nl == strlen(drop[i]) && strncasecmp(n, drop[i], nl) == 0)
			return true;
	return false;
}

/* The end of the last span of r in its head. */
static size_t
head_extent(const struct http1_request *r)
{
	const struct http1_span *spans[] = { &r->method, &r->target, &r->path,
		&r->query };
	size_t end = 0;

	for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++)
		if (spans[i]->off + spans[i]->len > end)
			end = spans[i]->off + spans[i]->len;
	for (size_t i = 0; i < r->nheaders; i++) {
		const struct http1_header *h = &r->headers[i];
		if (h->name.off + h->name.len > end)
			end = h->name.off + h->name.len;
		if (h->value.off + h->value.len > end)
			end = h->value.off + h->value.len;
	}
	return end;
}

/*
 * With a credential swapped in, a token in the query goes too: kept's
 * query becomes the query's parameters that hold no crd_ shape, in
 * order, written after a copy of head in *ret_head (free it). 0, or
 * -ENOMEM. *ret_head stays NULL when the query holds no token.
 */
static int
drop_query_tokens(struct http1_request *kept, const char *head, char **ret_head)
{
	const char *q = head + kept->query.off;
	size_t qlen = kept->query.len, end, n = 0;
	char *copy;

	*ret_head = NULL;
	if (!kept->has_query ||
	    memmem(q, qlen, TOKEN_PREFIX, TOKEN_PREFIX_LEN) == NULL)
		return 0;
	end = head_extent(kept);
	if ((copy = malloc(end + qlen + 1)) == NULL)
		return -ENOMEM;
	memcpy(copy, head, end);
	for (size_t at = 0; at <= qlen;) {
		const char *amp = memchr(q + at, '&', qlen - at);
		size_t len = amp != NULL ? (size_t)(amp - (q + at)) : qlen - at;
		if (len > 0 &&
		    memmem(q + at, len, TOKEN_PREFIX, TOKEN_PREFIX_LEN) ==
			NULL) {
			if (n > 0)
				copy[end + n++] = '&';
			memcpy(copy + end + n, q + at, len);
			n += len;
		}
		at += len + 1;
	}
	kept->query.off = end;
	kept->query.len = n;
	kept->has_query = n > 0;
	*ret_head = copy;
	return 0;
}

/* Host's value into out (cap bytes): host, ":port" unless dflt; copied,
 * not printed (snprintf's cost, every request), cut as snprintf cuts. */
static void
host_field(char *out, size_t cap, const char *host, uint16_t port, bool dflt)
{
	char digits[6];
	size_t hl = strlen(host), nd, at = sizeof(digits);

	for (unsigned v = port; at == sizeof(digits) || v > 0; v /= 10)
		digits[--at] = (char)('0' + v % 10);
	nd = dflt ? 0 : sizeof(digits) - at;
	if (hl + (nd > 0 ? 1 + nd : 0) >= cap) {
		/* Never, by EGRESS_HOST_MAX; cut as before. */
		snprintf(out, cap, dflt ? "%s" : "%s:%u", host, port);
		return;
	}
	memcpy(out, host, hl);
	if (nd > 0) {
		out[hl++] = ':';
		memcpy(out + hl, digits + at, nd);
		hl += nd;
	}
	out[hl] = '\0';
}

/* Starts *kept as r without its fields: only the head's spans and
 * framing are copied, not the HTTP1_FIELDS_MAX slots (3.2 KiB) that the
 * kept fields then fill. */
static void
kept_start(struct http1_request *kept, const struct http1_request *r)
{
	memcpy(kept, r, offsetof(struct http1_request, headers));
	kept->nheaders = 0;
}

int
forward_head(const struct http1_request *r, const char *head,
    const struct forward_target *t, struct buf *out)
{
	struct http1_field extra[4];
	/* On the stack, its fields' slots written only as far as kept. */
	struct http1_request kept;
	char *rewritten = NULL;
	size_t nextra = 0;
	char host[EGRESS_HOST_MAX + 8], auth[300];
	unsigned flags = t->upgrade_ok ? HTTP1_KEEP_UPGRADE : 0;
	int rc;

	auth[0] = '\0';
	if (t->broker != NULL) {
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &t->broker->sin_addr, ip, sizeof(ip));
		snprintf(host, sizeof(host), "%s:%u", ip,
		    ntohs(t->broker->sin_port));
		snprintf(auth, sizeof(auth), "Bearer %s",
		    t->verifier_key != NULL ? t->verifier_key : "");
		extra[nextra++] = (struct http1_field){ "Host", host };
		extra[nextra++] = (struct http1_field){ "Authorization", auth };
		extra[nextra++] =
		    (struct http1_field){ "X-Cordon-Job", t->job };
		flags |= HTTP1_DROP_CREDENTIALS;
	} else {
		host_field(host, sizeof(host), t->host, t->port,
		    t->port == (t->tunnel ? 443 : 80));
		extra[nextra++] = (struct http1_field){ "Host", host };
		if (t->inject_header != NULL && t->inject_value != NULL) {
			kept_start(&kept, r);
			for (size_t i = 0; i < r->nheaders; i++)
				if (!dropped_for_inject(&r->headers[i], head,
					t->inject_header))
					kept.headers[kept.nheaders++] =
					    r->headers[i];
			extra[nextra++] =
			    (struct http1_field){ t->inject_header,
				    t->inject_value };
			extra[nextra++] =
			    (struct http1_field){ "Accept-Encoding",
				    "identity" };
			if (drop_query_tokens(&kept, head, &rewritten) < 0)
				return -ENOMEM;
			if (rewritten != NULL)
				head = rewritten;
			r = &kept;
		} else if (t->scanned) {
			kept_start(&kept, r);
			for (size_t i = 0; i < r->nheaders; i++)
				if (!dropped_for_scan(&r->headers[i], head))
					kept.headers[kept.nheaders++] =
					    r->headers[i];
			extra[nextra++] =
			    (struct http1_field){ "Accept-Encoding",
				    "identity" };
			r = &kept;
		}
	}
	rc = http1_serialize(r, head, extra, nextra, flags, out);
	explicit_bzero(auth, sizeof(auth));
	free(rewritten);
	return rc;
}
