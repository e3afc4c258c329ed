/*
 * The drill's attempts on an injected credential (docs/credentials.md):
 * the job holds a capability token, and the proxy swaps it for an
 * upstream's key on the rules that say so. The agent tries to get at the
 * key anyway: from the broker's secret routes, in an echoing upstream's
 * answer, by sending a header of the injected name itself, by taking its
 * token to the other hosts, by a tunnel around the swap, and where the
 * service shows what another job's injected request left there (a status
 * page on a rule that injects nothing). It plays on
 * a terminated rule when the manifest has one (TLS inside the CONNECT, as
 * the job's clients speak it: tls.c), else on a plain one (loopback
 * ranges); a manifest with neither gets untested rows that say so. It
 * never prints a value it may have been handed, only its length; the
 * token it used is printed (TOKEN inject) for cordon drill to replay
 * after the stop, and the issuer-backed rules' names (issuer_direct)
 * are the drill's to give.
 */
#include "agent.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The rule the injection steps play on: the first terminated one that
 * injects (the proxy reads it over TLS, as an API's would be), else the
 * first plain one; its capability's token into tok, printed as a TOKEN
 * inject line (host:port) for the replay after the stop. NULL after an
 * untested line when there is none (or no such capability, or no
 * token). */
static const struct rule *
injecting(struct drill *d, struct resp *r, char *tok)
{
	const struct capability *c = NULL;
	const struct rule *u = NULL;
	char ev[160] = "", where[300];
	long long ttl;

	for (int pass = 0; pass < 2 && u == NULL; pass++)
		for (int i = 0; i < d->nrule && u == NULL; i++)
			if (d->rule[i].inject_secret[0] != '\0' &&
			    strcmp(d->rule[i].tls,
				pass == 0 ? "terminate" : "plain") == 0)
				u = &d->rule[i];
	if (u == NULL) {
		report(d, "untested", "-",
		    "no terminated or plain rule injects a credential");
		return NULL;
	}
	for (int k = 0; k < d->ncap && c == NULL; k++)
		if (strcmp(d->cap[k].name, u->inject_cap) == 0 &&
		    strpbrk(d->cap[k].name, "\"\\") == NULL)
			c = &d->cap[k];
	if (c == NULL) {
		report(d, "untested", "-",
		    "the rule for %s injects for %s, which is no capability "
		    "of the manifest",
		    u->host, u->inject_cap);
		return NULL;
	}
	if (!mint(c, r, tok, ev, sizeof(ev), &ttl)) {
		report(d, "untested", ev, "the broker gave no token for %s",
		    c->name);
		return NULL;
	}
	hostport(where, sizeof(where), u->host, u->port);
	token_line("inject", where, tok);
	return u;
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

/* The longest run of one of the reflection scanner's filler bytes in s
 * (proxy/inject.c's first choices; '#' and 'X', parts of units there,
 * are never one). */
static size_t
filler_run(const char *s)
{
	size_t best = 0, run = 0;

	for (size_t i = 0; s[i] != '\0'; i++) {
		run =
		    i > 0 && s[i] == s[i - 1] && strchr("*~!^|`", s[i]) != NULL
		    ? run + 1
		    : strchr("*~!^|`", s[i]) != NULL;
		if (run > best)
			best = run;
	}
	return best;
}

/* Where a stored key is shown: the value that follows the field name in
 * body, as a request log or a debug page prints a header ("X-Api-Key":
 * "v", ["X-Api-Key", "v"], X-Api-Key: v, X-Api-Key=v), the name in any
 * case, from *from on (moved past it). Its length into *len and its start
 * returned, or NULL when the name is followed by no value any more. */
static const char *
stored_value(const char *body, const char *name, const char **from, size_t *len)
{
	size_t nl = strlen(name);

	for (const char *p = *from; (p = strcasestr(p, name)) != NULL;) {
		const char *q = p + nl;
		bool quoted = false;
		p = q;
		if (q - nl > body && isalnum((unsigned char)q[-nl - 1]))
			continue; /* inside a longer name */
		q += *q == '"';
		q += strspn(q, " \t");
		if (*q != ':' && *q != ',' && *q != '=')
			continue;
		q++;
		q += strspn(q, " \t");
		if (*q == '"') {
			quoted = true;
			q++;
		}
		*len = quoted ? strcspn(q, "\"") : strcspn(q, "\r\n,}]");
		*from = q + *len;
		if (*len == 0 ||
		    (!quoted && *len == 4 && strncmp(q, "null", 4) == 0))
			continue;
		return q;
	}
	*from = NULL;
	return NULL;
}

/* Whether the n bytes at s hold a run of 8 or more of one of the
 * reflection scanner's filler bytes (filler_run's, in place). */
static bool
has_filler(const char *s, size_t n)
{
	size_t run = 0;

	for (size_t i = 0; i < n; i++) {
		bool f = s[i] != '\0' && strchr("*~!^|`", s[i]) != NULL;
		run = f && i > 0 && s[i] == s[i - 1] ? run + 1 : f;
		if (run >= 8)
			return true;
	}
	return false;
}

/* What a page of a rule that injects nothing showed of an injecting
 * rule's header, from the least to the most telling. */
enum stored {
	S_NO_PAGE = -1,
	S_NONE,
	S_GUARDED,
	S_CUT, /* the page ended short, or no answer after a page: the
		* proxy ends an answer at a key the job never had and closes
		* its channel (credentials.md, "What is scanned") */
	S_REDACTED,
	S_CLEAR
};

/* One page of a rule that injects nothing, on the port of the injecting
 * rule u: what it shows of u's header (S_CLEAR: a value in clear, its
 * length in *len; S_GUARDED: the proxy refused the page, guarded; S_NO_PAGE:
 * r says why). */
static enum stored
stored_page(const struct rule *o, const char *suffix, const char *head,
    const struct rule *u, bool read_before, struct resp *r, size_t *len)
{
	const char *body, *from, *v;
	bool found = false;
	size_t n;

	rule_request(o, o->method, suffix, head, NULL, r);
	if (strcmp(r->h.deny, "guarded") == 0 ||
	    strcmp(r->h.deny, "guard_unavailable") == 0)
		return S_GUARDED;
	if (r->h.status == 0 && read_before)
		return S_CUT; /* the channel closed at an earlier page */
	if (r->h.status >= 200 && r->h.status <= 299 && r->h.clen >= 0 &&
	    r->h.clen <= BODY_MAX &&
	    (long long)(r->len - r->head_len) < r->h.clen)
		return S_CUT;
	if (r->h.status < 200 || r->h.status > 299 || r->h.deny[0] != '\0')
		return S_NO_PAGE;
	body = r->buf + r->head_len;
	for (from = body; from != NULL &&
	     (v = stored_value(body, u->inject_header, &from, &n));) {
		if (!has_filler(v, n)) {
			*len = n;
			return S_CLEAR;
		}
		found = true;
	}
	return found ? S_REDACTED : S_NONE;
}

/* The token for a rule of audience aud ("-": none needed) into head (n
 * bytes, "" or an Authorization line): false when no capability of the
 * manifest has that audience, or the broker gave none. */
static bool
audience_head(const struct drill *d, const char *aud, struct resp *r,
    char *head, size_t n)
{
	char tok[TOKEN_LEN + 1], ev[160];
	long long ttl;

	head[0] = '\0';
	if (strcmp(aud, "-") == 0)
		return true;
	for (int k = 0; k < d->ncap; k++)
		if (strcmp(d->cap[k].audience, aud) == 0 &&
		    strpbrk(d->cap[k].name, "\"\\") == NULL &&
		    mint(&d->cap[k], r, tok, ev, sizeof(ev), &ttl)) {
			snprintf(head, n, "Authorization: Bearer %s\r\n", tok);
			explicit_bzero(tok, sizeof(tok));
			return true;
		}
	return false;
}

void
step_inject_stored(struct drill *d)
{
	static const char *const dir_suffixes[] = { "", "status", "debug",
		"requests" };
	char head[128], at[400] = "", ev[500] = "", none[300] = "";
	char header[72] = "", miss[300] = "";
	int pages = 0, tried = 0;
	enum stored best = S_NO_PAGE;
	size_t len = 0;
	struct resp *r;

	if ((r = resp_new(d)) == NULL)
		return;
	/* Run last of the steps that need the network: a page that shows
	 * a key this job was released for the scan only ends there and
	 * closes the job's channel (S_CUT, stopped); one it was released
	 * to inject is redacted (S_REDACTED). */
	for (int i = 0; i < d->nrule && best < S_CLEAR; i++) {
		const struct rule *o = &d->rule[i], *u = NULL;
		if (o->inject_secret[0] != '\0' || o->host[0] == '*' ||
		    (strcmp(o->tls, "terminate") != 0 &&
			strcmp(o->tls, "plain") != 0))
			continue;
		/* A service of an injecting rule could answer it: the same
		 * port (and TLS or not); cordon drill checks the address in
		 * the proxy's log. */
		for (int k = 0; k < d->nrule && u == NULL; k++)
			if (d->rule[k].inject_secret[0] != '\0' &&
			    d->rule[k].port == o->port &&
			    strcmp(d->rule[k].tls, o->tls) == 0)
				u = &d->rule[k];
		if (u == NULL)
			continue;
		if (!audience_head(d, o->audience, r, head, sizeof(head))) {
			append(none, sizeof(none), "; ", "%s: no token of %s",
			    o->host, o->audience);
			continue;
		}
		for (int p = 0;
		     p < (o->npaths > 0 ? o->npaths : 1) && best < S_CLEAR;
		     p++) {
			struct rule one = *o;
			const char *path =
			    o->npaths > 0 ? o->paths[p] : o->path;
			size_t plen = strlen(path);
			bool dir = plen > 0 && path[plen - 1] == '/';
			snprintf(one.path, sizeof(one.path), "%s", path);
			for (size_t s = 0;
			     s < (dir ? sizeof(dir_suffixes) /
					     sizeof(dir_suffixes[0])
				      : 1) &&
			     best < S_CLEAR;
			     s++) {
				size_t n = 0;
				enum stored got = stored_page(&one,
				    dir_suffixes[s], head, u, pages > 0, r, &n);
				tried++;
				pages += got != S_NO_PAGE;
				if (got == S_NO_PAGE && miss[0] == '\0') {
					resp_evidence(r, miss, sizeof(miss));
					append(miss, sizeof(miss), " ",
					    "at=%s:%d%s%s", o->host, o->port,
					    path, dir_suffixes[s]);
				}
				if (got <= best)
					continue;
				best = got;
				len = n;
				snprintf(header, sizeof(header), "%s",
				    u->inject_header);
				ev[0] = '\0';
				resp_evidence(r, ev, sizeof(ev));
				snprintf(at, sizeof(at), "%s:%d%s%s", o->host,
				    o->port, path, dir_suffixes[s]);
				append(ev, sizeof(ev), " ",
				    "tls=%s at=%s header=%s injected_at=%s:%d",
				    o->tls, at, u->inject_header, u->host,
				    u->port);
			}
		}
		explicit_bzero(head, sizeof(head));
	}
	free(r);
	if (best == S_CLEAR)
		report(d, "escaped", ev,
		    "%s showed an injected %s unredacted (%zu bytes; not "
		    "shown), left there by another job's request, read "
		    "before this job injected anything",
		    at, header, len);
	else if (best == S_CUT)
		report(d, "stopped", ev,
		    "the proxy ended %s's page before the %s another job's "
		    "request left there and closed this job's channel",
		    at, header);
	else if (best == S_REDACTED)
		report(d, "stopped", ev,
		    "the proxy redacted the %s another job's request left on "
		    "%s, a rule that injects nothing",
		    header, at);
	else if (best == S_GUARDED)
		report(d, "stopped", ev,
		    "proxy: refused %s (the evidence's deny): a secret is "
		    "injected at its address, and its answers are scanned "
		    "or not passed",
		    at);
	else if (best == S_NONE)
		report(d, "untested", ev,
		    "%s shows no injected header: nothing was injected there "
		    "before this job (%d page(s) read)",
		    at, pages);
	else if (tried > 0)
		report(d, "untested", miss,
		    "no page of a rule that injects nothing on an injecting "
		    "rule's port answered (%d tried)%s%s",
		    tried, none[0] != '\0' ? "; " : "", none);
	else if (none[0] != '\0')
		report(d, "untested", "-",
		    "no page of a rule that injects nothing could be read on "
		    "an injecting rule's port (%s)",
		    none);
	else
		report(d, "untested", "-",
		    "no rule that injects nothing shares an injecting rule's "
		    "port: no page where another job's stored key could be "
		    "read");
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

/* Where under the rule's path the upstream echoes a request's headers,
 * as a hostile job would look for it: the path itself, then the
 * debugging routes many APIs have (httpbin's /headers). The suffix is
 * kept for the next step. */
static const char *const echo_suffixes[] = { "", "headers", "echo",
	"debug/headers" };
static int echo_at = -1; /* an index of echo_suffixes, -1: none found */

/* The request of an injection step on u, with the job's header lines:
 * at the echo found so far, else at each place until one echoes the
 * injected header. r keeps the last answer; the suffix used into *at. */
static void
echo_request(const struct rule *u, const char *head, struct resp *r,
    char *value, size_t n, bool *echo)
{
	size_t plen = strlen(u->path);
	bool dir = plen > 0 && u->path[plen - 1] == '/';
	int first = echo_at >= 0 ? echo_at : 0;
	int last = echo_at >= 0
	    ? echo_at
	    : (dir ? (int)(sizeof(echo_suffixes) / sizeof(echo_suffixes[0])) - 1
		   : 0);

	*echo = false;
	for (int i = first; i <= last && !*echo; i++) {
		rule_request(u, u->method, echo_suffixes[i], head, NULL, r);
		if (r->h.status >= 200 && r->h.status <= 299 &&
		    echoed(r, u->inject_header, value, n)) {
			*echo = true;
			echo_at = i;
		}
	}
}

void
step_inject_echo(struct drill *d)
{
	char tok[TOKEN_LEN + 1], auth[128], ev[200], value[1024];
	const struct rule *u;
	struct resp *r;
	bool echo;

	if ((r = resp_new(d)) == NULL)
		return;
	if ((u = injecting(d, r, tok)) == NULL) {
		free(r);
		return;
	}
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", tok);
	echo_request(u, auth, r, value, sizeof(value), &echo);
	ev[0] = '\0';
	resp_evidence(r, ev, sizeof(ev));
	append(ev, sizeof(ev), " ", "tls=%s at=%s%s", u->tls, u->path,
	    echo ? echo_suffixes[echo_at] : "");
	if (!echo && (r->h.status < 200 || r->h.status > 299))
		report(d, "untested", ev,
		    "the injecting rule's upstream answered no 2xx");
	else if (!echo)
		report(d, "untested", ev,
		    "the upstream of %s does not echo the request's headers "
		    "(tried %s, and headers, echo, debug/headers under it)",
		    u->host, u->path);
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
	explicit_bzero(value, sizeof(value));
	free(r);
}

void
step_inject_client_header(struct drill *d)
{
	char tok[TOKEN_LEN + 1], head[400], ev[200];
	char mine[40], value[1024];
	unsigned char raw[8];
	const struct rule *u;
	struct resp *r;
	bool echo;

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
	/* Before the token and after it, in two cases. */
	snprintf(head, sizeof(head),
	    "%s: %s\r\nAuthorization: Bearer %s\r\n%c%s: %s\r\n",
	    u->inject_header, mine, tok,
	    islower((unsigned char)u->inject_header[0])
		? toupper((unsigned char)u->inject_header[0])
		: tolower((unsigned char)u->inject_header[0]),
	    u->inject_header + 1, mine);
	echo_request(u, head, r, value, sizeof(value), &echo);
	explicit_bzero(value, sizeof(value));
	ev[0] = '\0';
	resp_evidence(r, ev, sizeof(ev));
	append(ev, sizeof(ev), " ", "tls=%s", u->tls);
	if (strstr(r->buf + r->head_len, mine) != NULL)
		report(d, "escaped", ev,
		    "the job's own %s reached the upstream beside the "
		    "injected one",
		    u->inject_header);
	else if (!echo && (r->h.status < 200 || r->h.status > 299))
		report(d, "untested", ev,
		    "the injecting rule's upstream answered no 2xx");
	else if (!echo)
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
	char tok[TOKEN_LEN + 1], what[300], auth[128];
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
	/* Every other plain or terminated rule but those of the token's
	 * own audience that inject nothing: there the token may go, and
	 * nothing is swapped in. */
	for (int i = 0; i < d->nrule; i++) {
		const struct rule *o = &d->rule[i];
		if (o == u ||
		    (strcmp(o->tls, "plain") != 0 &&
			strcmp(o->tls, "terminate") != 0) ||
		    (c != NULL && strcmp(o->audience, c->audience) == 0 &&
			o->inject_secret[0] == '\0'))
			continue;
		rule_request(o, o->method, "", auth, NULL, r);
		hostport(what, sizeof(what), o->host, o->port);
		tally_add(&t, r, false, what);
	}
	free(r);
	if (t.tries == 0)
		report(d, "untested", "-",
		    "no other plain or terminated rule of another audience");
	else
		tally_report(d, &t, false,
		    "the proxy kept the token from every other host: no "
		    "credential is swapped in there");
}

/* Inside the CONNECT a terminated rule takes (fd, its tunnel), a request
 * in the clear with the token: the proxy must read TLS there or nothing,
 * never pass bytes on unread. */
static void
tunnel_clear(struct drill *d, const struct rule *u, const char *tok, int fd,
    struct resp *r)
{
	char req[1024], host[300], ev[200] = "";
	int64_t deadline = now_ms() + 5000;
	int n;

	hostport(host, sizeof(host), u->host, u->port);
	n = snprintf(req, sizeof(req),
	    "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
	    "Connection: close\r\n\r\n",
	    u->method, u->path, host, tok);
	memset(&r->h, 0, sizeof(r->h));
	r->err = 0;
	r->tls[0] = '\0';
	r->len = r->head_len = 0;
	r->buf[0] = '\0';
	if (n < 0 || (size_t)n >= sizeof(req) ||
	    (n = send_all(fd, req, (size_t)n, deadline)) < 0)
		r->err = n < 0 ? -n : EMSGSIZE;
	else
		read_response(fd, r, false, deadline);
	explicit_bzero(req, sizeof(req));
	snprintf(ev, sizeof(ev), "connect=200 ");
	resp_evidence(r, ev, sizeof(ev));
	if (r->h.status != 0 && verdict(&r->h, false) == V_THROUGH)
		report(d, "escaped", ev,
		    "a request in the clear inside the tunnel of %s was "
		    "answered %d: the proxy passed it on unread",
		    host, r->h.status);
	else
		report(d, "stopped", ev,
		    "proxy: the tunnel of a terminated rule takes TLS, which "
		    "the proxy ends and reads; a request in the clear inside "
		    "it got no upstream's answer");
}

void
step_inject_tunnel(struct drill *d)
{
	char target[300], tok[TOKEN_LEN + 1];
	const struct rule *u;
	struct tally t = { 0 };
	struct resp *r;
	int keep = -1;

	if ((r = resp_new(d)) == NULL)
		return;
	if ((u = injecting(d, r, tok)) == NULL) {
		free(r);
		return;
	}
	hostport(target, sizeof(target), u->host, u->port);
	proxy_request("CONNECT", target, target, "", NULL, r, &keep);
	if (keep >= 0 && strcmp(u->tls, "terminate") == 0) {
		tunnel_clear(d, u, tok, keep, r);
		close(keep);
		free(r);
		return;
	}
	tally_add(&t, r, true, target);
	if (keep >= 0)
		close(keep);
	free(r);
	tally_report(d, &t, true,
	    "no tunnel to a host whose requests get a credential: the proxy "
	    "must read each one");
}

/* An issuer's URL as a rule to send one request on: https is a
 * terminated one (a CONNECT, then TLS), http a plain one. false when it
 * is no URL of those. */
static bool
url_rule(const char *url, struct rule *e)
{
	bool tls = strncmp(url, "https://", 8) == 0;
	const char *h = tls ? url + 8 : url + 7, *end;
	size_t hn;

	if (!tls && strncmp(url, "http://", 7) != 0)
		return false;
	memset(e, 0, sizeof(*e));
	if (*h == '[') {
		if ((end = strchr(h, ']')) == NULL)
			return false;
		hn = (size_t)(end - h - 1);
		h++;
		end++;
	} else {
		hn = strcspn(h, ":/");
		end = h + hn;
	}
	if (hn == 0 || hn >= sizeof(e->host))
		return false;
	memcpy(e->host, h, hn);
	e->port = tls ? 443 : 80;
	if (*end == ':') {
		char port[8];
		size_t pn = strcspn(end + 1, "/");
		if (pn == 0 || pn >= sizeof(port))
			return false;
		memcpy(port, end + 1, pn);
		port[pn] = '\0';
		if ((e->port = parse_port(port)) <= 0)
			return false;
	}
	end += strcspn(end, "/");
	snprintf(e->path, sizeof(e->path), "%s", *end == '/' ? end : "/");
	snprintf(e->tls, sizeof(e->tls), "%s", tls ? "terminate" : "plain");
	snprintf(e->method, sizeof(e->method), "POST");
	return true;
}

void
step_issuer_direct(struct drill *d)
{
	char tok[TOKEN_LEN + 1], head[200], used[200] = "", ev[160], done[400];
	struct tally t = { 0 };
	struct resp *r;

	if (d->issuers_unknown) {
		report(d, "untested", "-",
		    "cordon drill could not ask the broker which secrets are "
		    "an issuer's (it needs the admin key, admin_key_file)");
		return;
	}
	if (d->nissuer == 0) {
		report(d, "untested", "-",
		    "no injecting rule's secret is an issuer's (OAuth client "
		    "credentials, GitHub App)");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	for (int i = 0; i < d->nissuer; i++) {
		const struct issuer *is = &d->issuer[i];
		const struct capability *c = NULL;
		const struct rule *u = NULL;
		struct rule e;
		long long ttl;

		for (int k = 0; k < d->nrule && u == NULL; k++)
			if (strcmp(d->rule[k].inject_secret, is->secret) == 0)
				u = &d->rule[k];
		for (int k = 0; u != NULL && k < d->ncap && c == NULL; k++)
			if (strcmp(d->cap[k].name, u->inject_cap) == 0 &&
			    strpbrk(d->cap[k].name, "\"\\") == NULL)
				c = &d->cap[k];
		if (c == NULL || !mint(c, r, tok, ev, sizeof(ev), &ttl)) {
			append(used, sizeof(used), " ", "%s=no_token",
			    is->secret);
			continue;
		}
		snprintf(head, sizeof(head), "Authorization: Bearer %s\r\n",
		    tok);
		/* Its rule once, as the job would: the broker obtains the
		 * issuer's credential for the job (revoked at the stop). */
		rule_request(u, u->method, "", head, NULL, r);
		append(used, sizeof(used), " ", "%s=%d", is->secret,
		    r->h.status);
		if (!url_rule(is->url, &e))
			continue;
		/* Then the token endpoint itself, with the job's token where
		 * a swap would put the credential. */
		snprintf(head, sizeof(head),
		    "Authorization: Bearer %s\r\nContent-Type: "
		    "application/x-www-form-urlencoded\r\n",
		    tok);
		rule_request(&e, "POST", "", head,
		    "grant_type=client_credentials", r);
		tally_add(&t, r, false, is->url);
	}
	free(r);
	snprintf(done, sizeof(done),
	    "no rule reaches the issuers' token endpoints (each rule used "
	    "once: %s)",
	    used);
	if (t.tries == 0)
		report(d, "untested", "-",
		    "no issuer's token endpoint to try (rules used: %s)", used);
	else
		tally_report(d, &t, false, done);
}
