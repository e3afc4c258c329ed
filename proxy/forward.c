/*
 * The upstream head of forward.h: the extra fields chosen here, written
 * by http1_serialize; the verifier key's copy on the stack is wiped.
 */
#include "forward.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

int
forward_head(const struct http1_request *r, const char *head,
    const struct forward_target *t, struct buf *out)
{
	struct http1_field extra[3];
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
	}
	rc = http1_serialize(r, head, extra, nextra, flags, out);
	explicit_bzero(auth, sizeof(auth));
	return rc;
}
