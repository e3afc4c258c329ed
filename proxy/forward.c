/*
 * The upstream head of forward.h: the extra fields chosen here, written
 * by http1_serialize; the verifier key's copy on the stack is wiped.
 */
#include "forward.h"

#include "token.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Whether the job's field h goes when a credential is injected: one of
 * the injected name, where a token travels, or holding a token. */
static bool
dropped_for_inject(const struct http1_header *h, const char *head,
    const char *name)
{
	const char *n = head + h->name.off, *v = head + h->value.off;
	size_t nl = h->name.len, vl = h->value.len;

	if ((nl == strlen(name) && strncasecmp(n, name, nl) == 0) ||
	    (nl == 13 && strncasecmp(n, "Authorization", 13) == 0) ||
	    (nl >= 9 && strncasecmp(n, "X-Cordon-", 9) == 0))
		return true;
	return memmem(v, vl, TOKEN_PREFIX, TOKEN_PREFIX_LEN) != NULL;
}

int
forward_head(const struct http1_request *r, const char *head,
    const struct forward_target *t, struct buf *out)
{
	struct http1_field extra[3];
	struct http1_request *kept = NULL;
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
		bool dflt = t->port == (t->tunnel ? 443 : 80);
		snprintf(host, sizeof(host), dflt ? "%s" : "%s:%u", t->host,
		    t->port);
		extra[nextra++] = (struct http1_field){ "Host", host };
		if (t->inject_header != NULL && t->inject_value != NULL) {
			kept = malloc(sizeof(*kept));
			if (kept == NULL)
				return -ENOMEM;
			*kept = *r;
			kept->nheaders = 0;
			for (size_t i = 0; i < r->nheaders; i++)
				if (!dropped_for_inject(&r->headers[i], head,
					t->inject_header))
					kept->headers[kept->nheaders++] =
					    r->headers[i];
			extra[nextra++] =
			    (struct http1_field){ t->inject_header,
				    t->inject_value };
			r = kept;
		}
	}
	rc = http1_serialize(r, head, extra, nextra, flags, out);
	explicit_bzero(auth, sizeof(auth));
	free(kept);
	return rc;
}
