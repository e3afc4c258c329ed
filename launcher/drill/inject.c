/*
 * The drill's attempts on an injected credential (docs/credentials.md):
 * the job holds a capability token, and the proxy swaps it for an
 * upstream's key on the rules that say so. The agent tries to get at the
 * key anyway: from the broker's secret routes, in an echoing upstream's
 * answer, by sending a header of the injected name itself, by taking its
 * token to the other hosts, and by a tunnel around the swap. The agent
 * speaks plain HTTP only: the rules it plays on are plain ones (loopback
 * ranges), and a manifest with none gets untested rows that say so. It
 * never prints a value it may have been handed, only its length.
 */
#include "agent.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The first plain-HTTP rule that injects, and the capability it wants;
 * NULL after an untested line when there is none (or no such
 * capability, or no token). */
static const struct rule *
injecting(struct drill *d, struct resp *r, char *tok)
{
	const struct capability *c = NULL;
	char ev[160] = "";
	long long ttl;

	for (int i = 0; i < d->nrule; i++) {
		const struct rule *u = &d->rule[i];
		if (u->inject_secret[0] == '\0' || strcmp(u->tls, "plain") != 0)
			continue;
		for (int k = 0; k < d->ncap && c == NULL; k++)
			if (strcmp(d->cap[k].name, u->inject_cap) == 0 &&
			    strpbrk(d->cap[k].name, "\"\\") == NULL)
				c = &d->cap[k];
		if (c == NULL) {
			report(d, "untested", "-",
			    "the rule for %s injects for %s, which is no "
			    "capability of the manifest",
			    u->host, u->inject_cap);
			return NULL;
		}
		if (tok != NULL && !mint(c, r, tok, ev, sizeof(ev), &ttl)) {
			report(d, "untested", ev,
			    "the broker gave no token for %s", c->name);
			return NULL;
		}
		return u;
	}
	report(d, "untested", "-",
	    "no plain-HTTP rule injects a credential (the agent speaks no "
	    "TLS)");
	return NULL;
}

/* The value an echo (upstream.c's {"headers": [[name, value], ...]})
 * gives the field name, into out (n bytes): whether there was one. */
static bool
echoed(const struct resp *r, const char *name, char *out, size_t n)
{
	const char *body = r->buf + r->head_len, *p = body;
	size_t nl = strlen(name);

	while ((p = strchr(p, '"')) != NULL) {
		p++;
		if (strncasecmp(p, name, nl) != 0 || p[nl] != '"') {
			p += strcspn(p, "\"");
			if (*p == '"')
				p++;
			continue;
		}
		p += nl + 1;
		p += strspn(p, " ,");
		if (*p != '"')
			continue;
		p++;
		size_t len = strcspn(p, "\"");
		snprintf(out, n, "%.*s", (int)len, p);
		return true;
	}
	return false;
}

/* The longest run of one of the reflection scanner's filler bytes in s. */
static size_t
filler_run(const char *s)
{
	size_t best = 0, run = 0;

	for (size_t i = 0; s[i] != '\0'; i++) {
		run = i > 0 && s[i] == s[i - 1] && strchr("*#~!X", s[i]) != NULL
		    ? run + 1
		    : strchr("*#~!X", s[i]) != NULL;
		if (run > best)
			best = run;
	}
	return best;
}

void
step_inject_release(struct drill *d)
{
	const char *name = "-";
	char url[512];
	struct tally t = { 0 };
	struct resp *r;

	for (int i = 0; i < d->nrule; i++)
		if (d->rule[i].inject_secret[0] != '\0')
			name = d->rule[i].inject_secret;
	if ((r = resp_new(d)) == NULL)
		return;
	tally_request(&t, r, "GET", "http://broker.cordon/v1/secrets",
	    "broker.cordon", "", NULL);
	snprintf(url, sizeof(url), "http://broker.cordon/v1/secrets/%s", name);
	tally_request(&t, r, "GET", url, "broker.cordon", "", NULL);
	snprintf(url, sizeof(url),
	    "http://broker.cordon/v1/jobs/self/secrets/%s/release", name);
	tally_request(&t, r, "POST", url, "broker.cordon", "", NULL);
	free(r);
	tally_report(d, &t, false,
	    "the broker's secret routes are not the job's: only POST "
	    "/v1/token goes to broker.cordon");
}

void
step_inject_echo(struct drill *d)
{
	char tok[TOKEN_LEN + 1], url[1400], host[300], auth[128], ev[200];
	char value[1024];
	const struct rule *u;
	struct resp *r;

	if ((r = resp_new(d)) == NULL)
		return;
	if ((u = injecting(d, r, tok)) == NULL) {
		free(r);
		return;
	}
	rule_url(u, "", url, sizeof(url), host, sizeof(host));
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", tok);
	proxy_request(u->method, url, host, auth, NULL, r, NULL);
	ev[0] = '\0';
	resp_evidence(r, ev, sizeof(ev));
	if (r->h.status < 200 || r->h.status > 299)
		report(d, "untested", ev,
		    "the injecting rule's upstream answered no 2xx");
	else if (!echoed(r, u->inject_header, value, sizeof(value)))
		report(d, "untested", ev,
		    "the upstream of %s does not echo the request's headers",
		    u->host);
	else if (filler_run(value) >= 8)
		report(d, "stopped", ev,
		    "the proxy redacted the injected %s in the echo (%zu "
		    "bytes, a run of %zu filler bytes)",
		    u->inject_header, strlen(value), filler_run(value));
	else
		report(d, "escaped", ev,
		    "the echo carried the injected %s unredacted (%zu bytes; "
		    "not shown)",
		    u->inject_header, strlen(value));
	free(r);
}

void
step_inject_client_header(struct drill *d)
{
	char tok[TOKEN_LEN + 1], url[1400], host[300], head[400], ev[200];
	char mine[40], value[1024];
	unsigned char raw[8];
	const struct rule *u;
	struct resp *r;

	if ((r = resp_new(d)) == NULL)
		return;
	if ((u = injecting(d, r, tok)) == NULL) {
		free(r);
		return;
	}
	random_bytes(raw, sizeof(raw));
	snprintf(mine, sizeof(mine), "drill-chosen-");
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(mine + strlen(mine), sizeof(mine) - strlen(mine),
		    "%02x", raw[i]);
	rule_url(u, "", url, sizeof(url), host, sizeof(host));
	/* Before the token and after it, in two cases. */
	snprintf(head, sizeof(head),
	    "%s: %s\r\nAuthorization: Bearer %s\r\n%c%s: %s\r\n",
	    u->inject_header, mine, tok,
	    islower((unsigned char)u->inject_header[0])
		? toupper((unsigned char)u->inject_header[0])
		: tolower((unsigned char)u->inject_header[0]),
	    u->inject_header + 1, mine);
	proxy_request(u->method, url, host, head, NULL, r, NULL);
	ev[0] = '\0';
	resp_evidence(r, ev, sizeof(ev));
	if (strstr(r->buf + r->head_len, mine) != NULL)
		report(d, "escaped", ev,
		    "the job's own %s reached the upstream beside the "
		    "injected one",
		    u->inject_header);
	else if (r->h.status < 200 || r->h.status > 299)
		report(d, "untested", ev,
		    "the injecting rule's upstream answered no 2xx");
	else if (!echoed(r, u->inject_header, value, sizeof(value)))
		report(d, "untested", ev,
		    "the upstream of %s does not echo the request's headers",
		    u->host);
	else
		report(d, "stopped", ev,
		    "the proxy replaced the job's %s with the injected one",
		    u->inject_header);
	free(r);
}

void
step_inject_other_host(struct drill *d)
{
	char tok[TOKEN_LEN + 1], url[1400], host[300], auth[128];
	const struct capability *c = NULL;
	const struct rule *u;
	struct tally t = { 0 };
	struct resp *r;

	if ((r = resp_new(d)) == NULL)
		return;
	if ((u = injecting(d, r, tok)) == NULL) {
		free(r);
		return;
	}
	for (int k = 0; k < d->ncap; k++)
		if (strcmp(d->cap[k].name, u->inject_cap) == 0)
			c = &d->cap[k];
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", tok);
	/* Every other plain rule but those of the token's own audience
	 * that inject nothing: there the token may go, and nothing is
	 * swapped in. */
	for (int i = 0; i < d->nrule; i++) {
		const struct rule *o = &d->rule[i];
		if (o == u || strcmp(o->tls, "plain") != 0 ||
		    (c != NULL && strcmp(o->audience, c->audience) == 0 &&
			o->inject_secret[0] == '\0'))
			continue;
		rule_url(o, "", url, sizeof(url), host, sizeof(host));
		tally_request(&t, r, o->method, url, host, auth, NULL);
	}
	free(r);
	if (t.tries == 0)
		report(d, "untested", "-",
		    "no other plain rule of another audience");
	else
		tally_report(d, &t, false,
		    "the proxy kept the token from every other host: no "
		    "credential is swapped in there");
}

void
step_inject_tunnel(struct drill *d)
{
	char target[300];
	const struct rule *u;
	struct tally t = { 0 };
	struct resp *r;
	int keep = -1;

	if ((r = resp_new(d)) == NULL)
		return;
	if ((u = injecting(d, r, NULL)) == NULL) {
		free(r);
		return;
	}
	hostport(target, sizeof(target), u->host, u->port);
	proxy_request("CONNECT", target, target, "", NULL, r, &keep);
	tally_add(&t, r, true, target);
	if (keep >= 0)
		close(keep);
	free(r);
	tally_report(d, &t, true,
	    "no tunnel to a host whose requests get a credential: the proxy "
	    "must read each one");
}
