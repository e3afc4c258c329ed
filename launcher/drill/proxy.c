/*
 * cordon-drill-agent's HTTP client: one request at a time through the
 * sandbox's relay (127.0.0.1:3128) to cordon-proxy, each on a fresh
 * connection with a deadline, and the tally of a step's answers (through,
 * refused by the proxy, or none).
 */
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- the proxy ------------------------------------------------------------ */

/* A header value as one evidence word. */
static void
header_value(char *dst, size_t n, const char *v, size_t len)
{
	size_t i;

	for (i = 0; i < len && i + 1 < n; i++)
		dst[i] = (unsigned char)v[i] > ' ' && v[i] != 0x7f ? v[i] : '_';
	dst[i] = '\0';
	if (i == 0)
		snprintf(dst, n, "?"); /* present, even if empty */
}

static void
header(struct head *h, const char *line, size_t n)
{
	const char *colon = memchr(line, ':', n), *v, *end = line + n;
	size_t name;

	if (colon == NULL)
		return;
	name = (size_t)(colon - line);
	for (v = colon + 1; v < end && (*v == ' ' || *v == '\t'); v++)
		;
	while (end > v && strchr("\r \t", end[-1]) != NULL)
		end--;
	if (name == 13 && strncasecmp(line, "X-Cordon-Deny", 13) == 0) {
		header_value(h->deny, sizeof(h->deny), v, (size_t)(end - v));
	} else if (name == 14 && strncasecmp(line, "X-Cordon-Error", 14) == 0) {
		header_value(h->error, sizeof(h->error), v, (size_t)(end - v));
	} else if (name == 14 && strncasecmp(line, "Content-Length", 14) == 0 &&
	    v < end && end - v <= 15) {
		h->clen = 0;
		for (; v < end && *v >= '0' && *v <= '9'; v++)
			h->clen = h->clen * 10 + (*v - '0');
		if (v != end)
			h->clen = -1;
	}
}

/* The head of the HTTP response at the start of buf[0..len): its length
 * (at most HEAD_MAX), 0 while it is not all there, -1 when this is not
 * HTTP. */
ssize_t
parse_head(const char *buf, size_t len, struct head *h)
{
	const char *end =
	    memmem(buf, len < HEAD_MAX ? len : HEAD_MAX, "\r\n\r\n", 4);
	const char *p;

	if (end == NULL)
		return len >= HEAD_MAX ? -1 : 0;
	if (end - buf < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
		return -1;
	for (int i = 9; i < 12; i++)
		if (buf[i] < '0' || buf[i] > '9')
			return -1;
	memset(h, 0, sizeof(*h));
	h->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + buf[11] - '0';
	h->clen = -1;
	/* Each line ends in "\n"; the last one's is end[1]. */
	p = (const char *)memchr(buf, '\n', (size_t)(end + 2 - buf)) + 1;
	while (p < end + 2) {
		const char *eol = memchr(p, '\n', (size_t)(end + 2 - p));
		header(h, p, (size_t)(eol - p));
		p = eol + 1;
	}
	return end + 4 - buf;
}

/* A response without a body to wait for (CONNECT's tunnel included). */
bool
bodiless(const struct head *h, bool tunnel)
{
	return (tunnel && h->status / 100 == 2) || h->status / 100 == 1 ||
	    h->status == 204 || h->status == 304;
}

static ssize_t
fd_read(void *ctx, char *buf, size_t n, int64_t deadline)
{
	return read_by(*(int *)ctx, buf, n, deadline);
}

/* Reads one response: the head, and at most BODY_MAX of the body (its
 * Content-Length, or until the end). */
void
read_response(int fd, struct resp *r, bool tunnel, int64_t deadline)
{
	read_response_from(fd_read, &fd, r, tunnel, deadline);
}

void
read_response_from(reader rd, void *ctx, struct resp *r, bool tunnel,
    int64_t deadline)
{
	size_t want = HEAD_MAX + BODY_MAX;

	while (r->len < want) {
		ssize_t k = rd(ctx, r->buf + r->len, want - r->len, deadline);

		if (k <= 0) {
			if (r->h.status == 0)
				r->err = k == 0 ? ECONNRESET : (int)-k;
			return;
		}
		r->len += (size_t)k;
		r->buf[r->len] = '\0';
		if (r->h.status != 0)
			continue;
		if ((k = parse_head(r->buf, r->len, &r->h)) < 0) {
			r->err = EPROTO;
			return;
		}
		if (k == 0)
			continue;
		r->head_len = (size_t)k;
		if (bodiless(&r->h, tunnel))
			return;
		want = r->head_len +
		    (r->h.clen >= 0 && r->h.clen < BODY_MAX ? (size_t)r->h.clen
							    : BODY_MAX);
	}
}

/* A fresh connection to the relay: the fd, or -errno. */
int
proxy_open(int64_t deadline)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_port = htons(PROXY_PORT),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int err = 0, r;
	socklen_t len = sizeof(err);

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0)
		return fd;
	if (errno != EINPROGRESS)
		err = errno;
	else if ((r = wait_fd(fd, POLLOUT, deadline)) < 0)
		err = -r;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == 0)
		return fd;
	close(fd);
	return -err;
}

/* One request through the proxy on a fresh connection, its answer in r.
 * headers are extra header lines ("Name: value\r\n"); a body gets its
 * Content-Length. keep, if not NULL, gets a CONNECT's open tunnel. */
void
proxy_request(const char *method, const char *target, const char *host,
    const char *headers, const char *body, struct resp *r, int *keep)
{
	char req[8192], clen[48] = "";
	int64_t deadline = now_ms() + PROXY_MS;
	bool tunnel = strcmp(method, "CONNECT") == 0;
	int n, fd;

	memset(&r->h, 0, sizeof(r->h));
	r->err = 0;
	r->tls[0] = '\0';
	r->len = r->head_len = 0;
	r->buf[0] = '\0';
	if (keep != NULL)
		*keep = -1;
	if (body != NULL)
		snprintf(clen, sizeof(clen), "Content-Length: %zu\r\n",
		    strlen(body));
	n = snprintf(req, sizeof(req),
	    "%s %s HTTP/1.1\r\nHost: %s\r\n%s%s%s\r\n%s", method, target, host,
	    headers, clen, tunnel ? "" : "Connection: close\r\n",
	    body != NULL ? body : "");
	if (n < 0 || (size_t)n >= sizeof(req)) {
		r->err = EMSGSIZE;
		return;
	}
	if ((fd = proxy_open(deadline)) < 0) {
		r->err = -fd;
		return;
	}
	if ((n = send_all(fd, req, (size_t)n, deadline)) < 0)
		r->err = -n;
	else
		read_response(fd, r, tunnel, deadline);
	proxy_count(&r->h, tunnel);
	if (keep != NULL && tunnel && r->h.status / 100 == 2)
		*keep = fd;
	else
		close(fd);
}

long proxy_through, proxy_maybe;

void
proxy_count(const struct head *h, bool tunnel)
{
	if (verdict(h, tunnel) == V_THROUGH)
		proxy_through++;
	else if (h->status != 0 && h->deny[0] == '\0')
		proxy_maybe++;
}

enum verdict
verdict(const struct head *h, bool tunnel)
{
	if (h->status == 0)
		return V_NONE;
	if (tunnel)
		return h->status / 100 == 2 ? V_THROUGH : V_REFUSED;
	return h->deny[0] != '\0' || h->error[0] != '\0' ? V_REFUSED
							 : V_THROUGH;
}

void
head_evidence(const struct head *h, char *ev, size_t n)
{
	append(ev, n, " ", "http=%d", h->status);
	if (h->deny[0] != '\0')
		append(ev, n, " ", "deny=%s", h->deny);
	else if (h->error[0] != '\0')
		append(ev, n, " ", "error=%s", h->error);
}

void
resp_evidence(const struct resp *r, char *ev, size_t n)
{
	if (r->h.status == 0)
		append(ev, n, " ", "errno=%s", errname(r->err).s);
	if (r->h.status == 0 && r->tls[0] != '\0')
		append(ev, n, " ", "tls=%s", r->tls);
	else if (r->h.status != 0)
		head_evidence(&r->h, ev, n);
}

void
tally_add(struct tally *t, const struct resp *r, bool tunnel, const char *what)
{
	char ev[128] = "";
	enum verdict v = verdict(&r->h, tunnel);

	resp_evidence(r, ev, sizeof(ev));
	t->tries++;
	append(t->all, sizeof(t->all), "; ", "%s", ev);
	if (t->first[v][0] == '\0')
		snprintf(t->first[v], sizeof(t->first[v]), "%s", ev);
	if (v == V_THROUGH) {
		t->through++;
		append(t->reached, sizeof(t->reached), ", ", "%s%s -> %d",
		    tunnel ? "CONNECT " : "", what, r->h.status);
	} else if (v == V_REFUSED) {
		t->refused++;
	}
}

/* escaped when anything got through, stopped when the proxy refused, else
 * untested. The evidence is every answer's (all) or the first of the
 * verdict's with tries=<n>. */
void
tally_report(const struct drill *d, const struct tally *t, bool all,
    const char *stopped)
{
	enum verdict v = t->through > 0 ? V_THROUGH
	    : t->refused > 0            ? V_REFUSED
					: V_NONE;
	char ev[400];

	if (all)
		snprintf(ev, sizeof(ev), "%s", t->all);
	else
		snprintf(ev, sizeof(ev), "%s tries=%d", t->first[v], t->tries);
	if (v == V_THROUGH)
		report(d, "escaped", ev, "got through: %s", t->reached);
	else if (v == V_REFUSED && t->refused == t->tries)
		report(d, "stopped", ev, "%s", stopped);
	else if (v == V_REFUSED)
		report(d, "stopped", ev, "%s (%d of %d got no answer)", stopped,
		    t->tries - t->refused, t->tries);
	else
		report(d, "untested", ev,
		    "the proxy gave no answer (is the relay at 127.0.0.1:%d "
		    "up?)",
		    PROXY_PORT);
}

/* Sends one request and counts its answer. */
void
tally_request(struct tally *t, struct resp *r, const char *method,
    const char *url, const char *host, const char *headers, const char *body)
{
	proxy_request(method, url, host, headers, body, r, NULL);
	tally_add(t, r, strcmp(method, "CONNECT") == 0, url);
}

/* The first rule whose tls is one of the two given. */
const struct rule *
find_rule(const struct drill *d, const char *tls, const char *or_tls)
{
	for (int i = 0; i < d->nrule; i++)
		if (strcmp(d->rule[i].tls, tls) == 0 ||
		    strcmp(d->rule[i].tls, or_tls) == 0)
			return &d->rule[i];
	return NULL;
}

/* http://host:port<path><suffix>, and host:port for the Host header. */
void
rule_url(const struct rule *r, const char *suffix, char *url, size_t n,
    char *host, size_t hn)
{
	hostport(host, hn, r->host, r->port);
	snprintf(url, n, "http://%s%s%s", host, r->path, suffix);
}

struct resp *
resp_new(const struct drill *d)
{
	struct resp *r = malloc(sizeof(*r));

	if (r == NULL)
		report(d, "untested", "errno=ENOMEM",
		    "no memory for a response");
	return r;
}
