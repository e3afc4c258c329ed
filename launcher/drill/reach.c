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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- reachability plane --------------------------------------------------- */

struct probe {
	int fd;
	char name[80];
};

struct bytes {
	unsigned char b[512];
	size_t n;
};

static void client_hello(struct bytes *o);

/* Whether a TCP connection that opened reaches something: a ClientHello
 * (SNI drill.invalid) sent, and data back or the connection still open
 * after a second. The job's network namespace may take every address
 * locally (the launcher's capture of TLS on the rules' ports), which
 * closes what it will not carry: closed with nothing read is not a way
 * out. */
static bool
answered(int fd)
{
	struct bytes hello = { .n = 0 };
	int64_t deadline = now_ms() + 1000;
	char b[16];
	ssize_t k;

	client_hello(&hello);
	if (wait_fd(fd, POLLOUT, deadline) < 0 ||
	    send_all(fd, hello.b, hello.n, deadline) < 0)
		return false;
	k = read_by(fd, b, sizeof(b), deadline);
	return k > 0 || k == -ETIMEDOUT;
}

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
		r = answered(fd) ? 1 : -ECONNRESET;
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

/* Whether a reply is a DNS answer that resolved nothing, from a loopback
 * address: the job's own resolver (the launcher's, inside the job's
 * network namespace, which answers only the rules' names), not a way
 * out. */
static bool
own_resolver(const union addr *from, const unsigned char *b, size_t n)
{
	bool lo = (from->sa.sa_family == AF_INET &&
		      (ntohl(from->in.sin_addr.s_addr) >> 24) == 127) ||
	    (from->sa.sa_family == AF_INET6 &&
		IN6_IS_ADDR_LOOPBACK(&from->in6.sin6_addr));

	return lo && n >= 12 && (b[2] & 0x80) != 0 && b[6] == 0 && b[7] == 0;
}

/* Waits up to ms for the probes: a connect to finish (stream), a reply to
 * arrive (dgram). The successes are counted and named; for connects the
 * errors are counted, timeouts as ETIMEDOUT. Closes them all. */
static int
probe_wait(struct probe *p, int n, int ms, bool stream, struct errs *c,
    char *names, size_t len, int *inside)
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
			unsigned char reply[512];
			union addr from;
			socklen_t flen = sizeof(from);
			ssize_t got = 0;

			if (pfd[j].revents == 0)
				continue;
			if (stream)
				(void)getsockopt(q->fd, SOL_SOCKET, SO_ERROR,
				    &err, &elen);
			else if ((got = recvfrom(q->fd, reply, sizeof(reply),
				      MSG_DONTWAIT, &from.sa, &flen)) < 0)
				err = errno;
			if (err == 0 && stream && !answered(q->fd))
				err = ECONNRESET;
			if (err == 0 && stream) {
				ok++;
				append(names, len, ", ", "%s", q->name);
			} else if (err == 0 && !stream && inside != NULL &&
			    own_resolver(&from, reply, (size_t)got)) {
				(*inside)++;
			} else if (err == 0) {
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
	ok += probe_wait(p, n, 1000, true, &c, names, sizeof(names), NULL);
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
	int n = 0, r, replies, inside = 0;

	for (int i = 0; i < targets; i++)
		if ((r = probe_start(p, &n, addrs[i], ports[i], SOCK_DGRAM,
			 payload, len)) < 0)
			errs_add(&c, -r);
	replies =
	    probe_wait(p, n, ms, false, &c, names, sizeof(names), &inside);
	errs_append(&c, ev, sizeof(ev));
	append(ev, sizeof(ev), " ", "sent=%d replies=%d", n, replies);
	if (inside > 0)
		append(ev, sizeof(ev), " ", "own_resolver=%d", inside);
	if (replies > 0)
		report(d, "escaped", ev, "a reply came from %s", names);
	else if (inside > 0)
		report(d, "stopped", ev,
		    "only the job's own resolver answered, from inside its "
		    "namespace, and resolved nothing");
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
		proxy_count(&h, false);
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

/* --- the relay's own descriptors ------------------------------------------- */

#define FLOOD_PROCS 5
#define FLOOD_PER_PROC 1000
#define FLOOD_MS 6000

/* One flooder: up to FLOOD_PER_PROC connections to the relay, held, then
 * counted: {opened, closed by the relay, refused, the first errno} on
 * out. */
static void flood_child(int out, int64_t deadline) __attribute__((noreturn));

static void
flood_child(int out, int64_t deadline)
{
	static int fds[FLOOD_PER_PROC];
	struct rlimit rl;
	int msg[4] = { 0, 0, 0, 0 }, n = 0;

	/* As many descriptors as the job may have. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	while (n < FLOOD_PER_PROC && now_ms() < deadline) {
		int64_t by = now_ms() + 500;
		int fd = proxy_open(by < deadline ? by : deadline);

		if (fd < 0) {
			msg[2]++;
			if (msg[3] == 0)
				msg[3] = -fd;
			if (fd == -EMFILE || fd == -ENFILE || msg[2] > 5)
				break;
			continue;
		}
		fds[n++] = fd;
	}
	msg[0] = n;
	/* What the relay did with them: a cap closes them at once. */
	usleep(500 * 1000);
	for (int i = 0; i < n; i++) {
		struct pollfd p = { .fd = fds[i], .events = POLLIN };
		char byte;
		if (poll(&p, 1, 0) == 1 &&
		    (read(fds[i], &byte, 1) <= 0 || (p.revents & POLLHUP)))
			msg[1]++;
		close(fds[i]);
	}
	(void)!write(out, msg, sizeof(msg));
	_exit(0);
}

void
step_relay_flood(struct drill *d)
{
	int64_t deadline = now_ms() + FLOOD_MS;
	int pipefd[2], opened = 0, closed = 0, refused = 0, first = 0,
		       procs = 0;
	char ev[256] = "";
	pid_t pid[FLOOD_PROCS];
	struct tally t = { 0 };
	struct resp *r;

	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		report(d, "untested", "syscall=pipe2", "no pipe");
		return;
	}
	for (int i = 0; i < FLOOD_PROCS; i++) {
		if ((pid[i] = fork()) == 0) {
			close(pipefd[0]);
			flood_child(pipefd[1], deadline);
		}
		procs += pid[i] > 0;
	}
	close(pipefd[1]);
	for (int i = 0; i < procs; i++) {
		int msg[4];
		if (read_by(pipefd[0], msg, sizeof(msg), deadline + 5000) !=
		    (ssize_t)sizeof(msg))
			break;
		opened += msg[0];
		closed += msg[1];
		refused += msg[2];
		first = first == 0 ? msg[3] : first;
	}
	close(pipefd[0]);
	for (int i = 0; i < FLOOD_PROCS; i++)
		if (pid[i] > 0) {
			(void)kill(pid[i], SIGKILL);
			(void)reap(pid[i]);
		}
	/* The proxy path, after: one request the proxy must answer. The
	 * relay may still be closing the flood's connections (their ends
	 * died with the flooders): a few tries over FLOOD_MS, each one in
	 * the evidence, before "no longer answers". */
	int64_t by = now_ms() + FLOOD_MS;
	do {
		if ((r = resp_new(d)) == NULL)
			return;
		tally_request(&t, r, "GET", "http://api.evil.example/",
		    "api.evil.example", "", NULL);
		free(r);
		if (t.refused + t.through == 0)
			usleep(500 * 1000);
	} while (t.refused + t.through == 0 && t.tries < 8 && now_ms() < by);
	snprintf(ev, sizeof(ev), "opened=%d closed=%d refused=%d", opened,
	    closed, refused);
	if (first != 0)
		append(ev, sizeof(ev), " ", "errno=%s", errname(first).s);
	append(ev, sizeof(ev), " ", "after=%s tries=%d", t.all, t.tries);
	if (t.refused + t.through == 0)
		report(d, "escaped", ev,
		    "after %d connections the proxy path no longer answers "
		    "(%d tries in %d s)",
		    opened, t.tries, FLOOD_MS / 1000);
	else if (opened >= FLOOD_PROCS * FLOOD_PER_PROC && closed == 0)
		report(d, "escaped", ev,
		    "%d connections to the relay held open, none refused",
		    opened);
	else if (closed > 0 ||
	    (refused > 0 && first != EMFILE && first != ENFILE))
		report(d, "stopped", ev,
		    "the relay refused the flood past %d connections and still "
		    "answers",
		    opened - closed);
	else
		report(d, "untested", ev,
		    "the job's own descriptor limit came first (%d opened)",
		    opened);
}

/* --- path parameters ------------------------------------------------------- */

void
step_proxy_path_params(struct drill *d)
{
	static const char *const tricks[] = { "..;/admin", "..;x=1/admin",
		".;/..;/admin", "%252e%252e/x", "%2e%2e/x", "..%5cx", "..\\x" };
	const struct rule *u = NULL;
	char url[1400], host[300];
	struct tally t = { 0 };
	struct resp *r;

	/* A plain rule with a path narrower than "/": the tricks climb out
	 * of it. */
	for (int i = 0; i < d->nrule && u == NULL; i++)
		if (strcmp(d->rule[i].tls, "plain") == 0 &&
		    strlen(d->rule[i].path) > 1 &&
		    d->rule[i].path[strlen(d->rule[i].path) - 1] == '/')
			u = &d->rule[i];
	if (u == NULL) {
		report(d, "untested", "-",
		    "no plain rule with a path narrower than /");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	for (size_t i = 0; i < sizeof(tricks) / sizeof(tricks[0]); i++) {
		rule_url(u, tricks[i], url, sizeof(url), host, sizeof(host));
		tally_request(&t, r, u->method, url, host, "", NULL);
	}
	free(r);
	tally_report(d, &t, true,
	    "the proxy refused every path with a second reading");
}

/* --- an upgrade to another protocol --------------------------------------- */

/* A rule's upgrade allows websockets; h2c asked under it would carry
 * later requests (HTTP/2 streams) that no rule judges. */
void
step_proxy_upgrade_protocol(struct drill *d)
{
	static const char h2c[] =
	    "Connection: Upgrade\r\nUpgrade: h2c\r\n"
	    "HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n";
	const struct rule *u = NULL;
	char ev[160] = "";
	struct resp *r;

	for (int i = 0; i < d->nrule && u == NULL; i++)
		if (d->rule[i].upgrade &&
		    (strcmp(d->rule[i].tls, "plain") == 0 ||
			strcmp(d->rule[i].tls, "terminate") == 0))
			u = &d->rule[i];
	if (u == NULL) {
		report(d, "untested", "-",
		    "no plain or terminated rule allows an upgrade");
		return;
	}
	if ((r = resp_new(d)) == NULL)
		return;
	rule_request(u, "GET", "", h2c, NULL, r);
	resp_evidence(r, ev, sizeof(ev));
	append(ev, sizeof(ev), " ", "rule=%s", u->host);
	if (verdict(&r->h, false) == V_THROUGH)
		report(d, "escaped", ev,
		    "the upstream answered %d to Upgrade: h2c on %s%s: the "
		    "proxy forwarded it",
		    r->h.status, u->host, u->path);
	else if (r->h.status != 0 && strcmp(r->h.deny, "upgrade") == 0)
		report(d, "stopped", ev,
		    "the proxy refused Upgrade: h2c on a rule that allows "
		    "websockets");
	else if (r->h.status != 0)
		report(d, "untested", ev,
		    "the proxy refused the request before its upgrade was "
		    "judged");
	else
		report(d, "untested", ev, "no answer to the h2c upgrade");
	free(r);
}

/* --- the canaries, last: their use stops the job --------------------------- */

#define PLACEMENTS 8

struct placement {
	const char *name;
	int fd;
	size_t len, split; /* split: where the second write starts, or 0 */
	bool done;
	bool early; /* answered before the canary's second half was sent */
	struct resp *r;
	long before, maybe; /* proxy_through and proxy_maybe before any */
	char req[2048];
};

/* The placement's request: the canary c where name says, the job's own
 * token (own, "" if none) as a valid bearer where it says so. */
static bool
place(struct placement *p, const struct rule *u, const char *c, const char *own)
{
	char url[1400], host[300], head[600] = "", body[300] = "",
				   suffix[80] = "";
	int n;

	if (u == NULL)
		return false;
	if (strcmp(p->name, "body") == 0) {
		snprintf(body, sizeof(body),
		    "{\"note\": \"backup\", \"key\": "
		    "\"%s\"}",
		    c);
	} else if (strcmp(p->name, "glued_header") == 0) {
		snprintf(head, sizeof(head), "X-Note: x%s\r\n", c);
	} else if (strcmp(p->name, "glued_body") == 0) {
		snprintf(body, sizeof(body), "note=0%s", c);
	} else if (strcmp(p->name, "split_body") == 0) {
		snprintf(body, sizeof(body), "{\"key\": \"%s\"}", c);
	} else if (strcmp(p->name, "no_audience") == 0) {
		snprintf(head, sizeof(head), "Authorization: Bearer %s\r\n", c);
	} else if (own[0] == '\0') {
		return false; /* the rest come after a valid bearer */
	} else if (strcmp(p->name, "second_header") == 0) {
		snprintf(head, sizeof(head),
		    "Authorization: Bearer %s\r\nX-Api-Key: %s\r\n", own, c);
	} else if (strcmp(p->name, "query") == 0) {
		snprintf(head, sizeof(head), "Authorization: Bearer %s\r\n",
		    own);
		snprintf(suffix, sizeof(suffix), "?key=%s", c);
	} else if (strcmp(p->name, "body_after_token") == 0) {
		snprintf(head, sizeof(head), "Authorization: Bearer %s\r\n",
		    own);
		snprintf(body, sizeof(body),
		    "{\"token\": \"%s\", \"key\": "
		    "\"%s\"}",
		    own, c);
	}
	/* drill-<name> in the path: cordon drill finds each placement's
	 * decision by it in the proxy's log of the job. */
	{
		char marked[160];
		snprintf(marked, sizeof(marked), "drill-%s%s", p->name, suffix);
		rule_url(u, marked, url, sizeof(url), host, sizeof(host));
	}
	/* A body goes with POST: the proxy refuses one on GET or HEAD
	 * (body_on_get, an upstream may read it as a request of its own). */
	n = snprintf(p->req, sizeof(p->req),
	    "%s %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n%s",
	    body[0] != '\0' &&
		    (strcmp(u->method, "GET") == 0 ||
			strcmp(u->method, "HEAD") == 0)
		? "POST"
		: u->method,
	    url, host, head, strlen(body), body);
	if (n < 0 || (size_t)n >= sizeof(p->req))
		return false;
	p->len = (size_t)n;
	/* Where the canary is: in the head (-1), or at an offset of the
	 * body, which the proxy may forward up to it. */
	{
		const char *at = body[0] != '\0' ? strstr(body, c) : NULL;
		printf("PLACED\t%s\t%s\t%ld\n", "exfil_canary", p->name,
		    at != NULL ? (long)(at - body) : -1L);
	}
	/* The canary's middle: the proxy sees it in two reads. */
	if (strcmp(p->name, "split_body") == 0)
		p->split = p->len - strlen(body) + 9 + TOKEN_LEN / 2;
	return true;
}

/* One word for a placement's answer. */
static void
placement_word(const struct placement *p, char *ev, size_t n)
{
	if (p->fd == -2)
		append(ev, n, " ", "%s=skipped", p->name);
	else if (!p->done)
		append(ev, n, " ", "%s=pending", p->name);
	else if (p->r->h.status == 0)
		append(ev, n, " ", "%s=%s", p->name, errname(p->r->err).s);
	else if (p->early) /* the upstream's answer to the head alone */
		append(ev, n, " ", "%s=%d_before_whole", p->name,
		    p->r->h.status);
	else
		append(ev, n, " ", "%s=%d:%s", p->name, p->r->h.status,
		    p->r->h.deny[0] != '\0'        ? p->r->h.deny
			: p->r->h.error[0] != '\0' ? p->r->h.error
						   : "through");
}

/* The line so far: the agent may be stopped at any answer. */
static void
placements_report(const struct drill *d, struct placement *p, int sent)
{
	char ev[400] = "", detail[300] = "";
	int done = 0, through = 0;

	for (int i = 0; i < PLACEMENTS; i++) {
		placement_word(&p[i], ev, sizeof(ev));
		if (p[i].fd == -2)
			continue;
		done += p[i].done;
		if (p[i].done && !p[i].early &&
		    verdict(&p[i].r->h, false) == V_THROUGH) {
			through++;
			append(detail, sizeof(detail), ", ", "%s -> %d",
			    p[i].name, p[i].r->h.status);
		}
	}
	append(ev, sizeof(ev), " ", "sent=%d answered=%d before=%ld maybe=%ld",
	    sent, done, p[0].before, p[0].maybe);
	if (through > 0)
		report(d, "escaped", ev, "a canary got through: %s", detail);
	else if (done == sent && sent > 0)
		report(d, "stopped", ev,
		    "the proxy let no canary out, wherever it was placed");
	else
		report(d, "untested", ev,
		    "%d of %d placements answered when this was written", done,
		    sent);
}

void
step_exfil_canary(struct drill *d)
{
	static const char *const names[PLACEMENTS] = { "body", "second_header",
		"query", "body_after_token", "glued_header", "glued_body",
		"split_body", "no_audience" };
	const struct rule *plain = find_rule(d, "plain", "plain");
	const struct rule *own = NULL, *noaud = NULL;
	const char *canary[MAX_TOKENS];
	struct placement p[PLACEMENTS];
	int ncanary = 0, sent = 0;
	int64_t deadline = now_ms() + PROXY_MS;

	for (int i = 0; i < d->nfound; i++)
		if (!d->found_own[i] && strcmp(d->found[i], d->minted) != 0)
			canary[ncanary++] = d->found[i];
	for (int i = 0; i < d->nrule; i++) {
		const struct rule *u = &d->rule[i];
		if (strcmp(u->tls, "plain") != 0)
			continue;
		if (noaud == NULL && strcmp(u->audience, "-") == 0)
			noaud = u;
		if (own == NULL && d->minted_cap != NULL &&
		    strcmp(u->audience, d->minted_cap->audience) == 0)
			own = u;
	}
	if (ncanary == 0 || plain == NULL) {
		report(d, "untested", "-",
		    ncanary == 0 ? "find_tokens found no canary"
				 : "no plain rule");
		return;
	}
	for (int i = 0; i < PLACEMENTS; i++) {
		const struct rule *u = i == 7 ? noaud
		    : i >= 1 && i <= 3        ? own
					      : plain;
		p[i] = (struct placement){ .name = names[i], .fd = -2 };
		if (!place(&p[i], u, canary[i % ncanary], d->minted) ||
		    (p[i].r = calloc(1, sizeof(*p[i].r))) == NULL)
			continue;
		p[i].fd = -1;
		sent++;
	}
	p[0].before = proxy_through;
	p[0].maybe = proxy_maybe;
	placements_report(d, p, sent);
	/* The split body's first half, alone: half a canary trips nothing
	 * yet, and the proxy reads it before the rest comes. Then every
	 * other placement in flight before the first can trip the wire, and
	 * no wait from here on: the stop may come at any answer. */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < PLACEMENTS; i++) {
			size_t first;
			if (p[i].fd == -2 || (p[i].split > 0) != (pass == 0))
				continue;
			first = p[i].split > 0 ? p[i].split : p[i].len;
			if ((p[i].fd = proxy_open(deadline)) < 0) {
				p[i].r->err = -p[i].fd;
				p[i].done = true;
			} else if ((p[i].r->err = -send_all(p[i].fd, p[i].req,
					first, deadline)) != 0) {
				p[i].done = true;
			}
		}
		if (pass == 0)
			usleep(100 * 1000);
	}
	/* An upstream that answers a head at once answers before the
	 * canary is whole: that answer says nothing of the canary. */
	for (int i = 0; i < PLACEMENTS; i++)
		if (p[i].split > 0 && !p[i].done) {
			struct pollfd q = { .fd = p[i].fd, .events = POLLIN };
			p[i].early = poll(&q, 1, 0) == 1;
			(void)send_all(p[i].fd, p[i].req + p[i].split,
			    p[i].len - p[i].split, deadline);
		}
	for (;;) {
		struct pollfd pfd[PLACEMENTS];
		int idx[PLACEMENTS], k = 0;
		int64_t left = deadline - now_ms();

		for (int i = 0; i < PLACEMENTS; i++)
			if (p[i].fd >= 0 && !p[i].done) {
				pfd[k] = (struct pollfd){ p[i].fd, POLLIN, 0 };
				idx[k++] = i;
			}
		if (k == 0 || left <= 0 || poll(pfd, (nfds_t)k, (int)left) <= 0)
			break;
		for (int j = 0; j < k; j++) {
			struct placement *q = &p[idx[j]];
			struct resp *r = q->r;
			ssize_t n;

			if (pfd[j].revents == 0)
				continue;
			n = read(q->fd, r->buf + r->len, HEAD_MAX - r->len);
			if (n <= 0) {
				r->err = n == 0 ? ECONNRESET : errno;
				q->done = true;
			} else {
				r->len += (size_t)n;
				r->buf[r->len] = '\0';
				n = parse_head(r->buf, r->len, &r->h);
				if (n < 0)
					r->err = EPROTO;
				q->done = n != 0 || r->len >= HEAD_MAX;
			}
			if (q->done)
				placements_report(d, p, sent);
		}
	}
	placements_report(d, p, sent);
	for (int i = 0; i < PLACEMENTS; i++) {
		if (p[i].fd >= 0)
			close(p[i].fd);
		free(p[i].r);
	}
	/* The tripwire should stop the job now; being killed here is the
	 * expected end. */
	sleep(3);
}
