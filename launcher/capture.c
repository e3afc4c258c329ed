/*
 * The job's network, the launcher's side (capture.h): the resolver's
 * zone, the sockets made inside the job's namespace (the resolver's, the
 * AnyIP routes, the capture's listeners, the observer of refusals), and
 * their servers on the loop.
 *
 * A captured connection: accepted on one of the rules' ports, its
 * original destination (getsockname: AnyIP makes every address local)
 * mapped back to its name by the zone, then, by its first byte, either
 * a TLS record (a "CORDON/1 capture" line and a CONNECT name:port on a
 * connection of its own to the job's channel; once the proxy answers
 * 200 the ClientHello follows) or plain HTTP (a "CORDON/1 capture-http
 * name port" line, then the requests as they come, each judged by the
 * proxy on its own Host). Either way the pair is then the relay's
 * (relay_join), under its cap and its descriptor headroom. The launcher
 * checks no SNI and no Host: the proxy does, and logs what it refused.
 * An address that is no name of the zone is closed at once and told to
 * the proxy; so is every connect and datagram the namespace refused
 * because nothing listens there, seen by raw sockets held in the
 * namespace (a RST answering a SYN, an ICMP port unreachable).
 */
#include "capture.h"

#include "http1.h"
#include "http_client.h"
#include "relay.h"
#include "sandbox.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FETCH_MS 5000
#define CAPTURE_PORTS_MAX 16 /* ports of one job captured */
#define CAPTURE_CONNS_MAX 256 /* captured connections at once */
#define PROXY_HEAD_MAX 4096 /* the proxy's answer to CONNECT */
#define ANNOUNCE_MAX 16 /* refusals being told to the proxy at once */
#define PACKETS_A_TURN 64 /* refusals read by an observer a wakeup */
#define PACKET_SNAP 128 /* what the observers keep of each */
#define ACCEPT_REST_MS 250 /* a listener's rest after accept failed */

/* The observers of the namespace's refusals: a raw socket each. */
enum obs_kind { OBS_TCP4, OBS_ICMP4, OBS_TCP6, OBS_ICMP6, OBS_N };

struct jobnet;

struct observer {
	struct jobnet *n;
	enum obs_kind kind;
	int fd;
	struct event *ev;
};

struct cconn;

struct jobnet {
	struct dns_zone *zone;
	int dns_fds[2]; /* made by jobnet_enter, until jobnet_start */
	struct dns_server *dns;
	uint16_t ports[CAPTURE_PORTS_MAX];
	int port_fds[CAPTURE_PORTS_MAX];
	size_t nports;
	/* ports[local]: 80 on cordon.local's address alone, for the proxy's
	 * own answer (docs/egress.md, Asking why); -1 when a rule's 80
	 * listens on every address already. */
	int local;
	struct evconnlistener *listeners[CAPTURE_PORTS_MAX];
	/* Re-enables the listeners that accept failed on (EMFILE, ...). */
	struct event *rest;
	struct observer obs[OBS_N]; /* what the namespace refused */
	struct event_base *base;
	struct relay *relay; /* the job's: the channel, the cap, the fds */
	struct cconn *conns;
	struct announce *announces;
	unsigned nannounces;
	/* Refusals past ANNOUNCE_MAX at once, not told yet: how many, and
	 * the last of them, told as one line once a slot is free. */
	uint64_t untold;
	char untold_host[DNS_NAME_MAX + 3];
	unsigned untold_port;
	const char *untold_origin;
	struct capture_counts counts;
};

/* A refusal told to the proxy, so that it is judged and logged there. */
struct announce {
	struct jobnet *n;
	struct announce *next, **prev;
	struct bufferevent *bev;
};

enum cstate { C_FIRST, C_PROXY };

/* A captured connection (b[0]) and its twin on the channel (b[1]), until
 * the relay takes them; a slot of the relay's held meanwhile. */
struct cconn {
	struct jobnet *n;
	struct cconn *next, **prev;
	struct bufferevent *b[2];
	enum cstate state;
	const char *name; /* the zone's, for the original address */
	uint16_t port;
};

int
jobnet_new(const json_t *rules, struct jobnet **ret)
{
	struct jobnet *n = calloc(1, sizeof(*n));
	int r;

	if (n == NULL)
		return -ENOMEM;
	n->dns_fds[0] = n->dns_fds[1] = -1;
	for (int i = 0; i < OBS_N; i++)
		n->obs[i] = (struct observer){ n, (enum obs_kind)i, -1, NULL };
	for (size_t i = 0; i < CAPTURE_PORTS_MAX; i++)
		n->port_fds[i] = -1;
	if ((r = dns_zone_new(rules, &n->zone)) < 0) {
		free(n);
		return r;
	}
	/* The rules' ports: TLS by its SNI, plain HTTP by its Host. */
	size_t i;
	json_t *v;
	json_array_foreach(rules, i, v)
	{
		json_int_t p = json_integer_value(json_object_get(v, "port"));
		bool seen = false;
		/* The relay's and the resolver's ports are theirs. */
		if (p <= 0 || p > 65535 || p == SANDBOX_PROXY_PORT ||
		    p == DNS_PORT)
			continue;
		for (size_t k = 0; k < n->nports; k++)
			seen = seen || n->ports[k] == p;
		if (!seen && n->nports < CAPTURE_PORTS_MAX)
			n->ports[n->nports++] = (uint16_t)p;
	}
	bool has80 = false;
	for (size_t k = 0; k < n->nports; k++)
		has80 = has80 || n->ports[k] == 80;
	n->local =
	    !has80 && n->nports < CAPTURE_PORTS_MAX ? (int)n->nports : -1;
	if (n->local >= 0)
		n->ports[n->nports++] = 80;
	*ret = n;
	return 0;
}

int
jobnet_fetch(const char *base, const char *key, const json_t *job,
    struct jobnet **ret)
{
	const char *name = json_string_value(json_object_get(job, "manifest"));
	json_t *v = json_object_get(job, "manifest_version");
	struct httpc_answer a = { 0 };
	char path[300];
	int r, n;

	if (name == NULL || !json_is_integer(v))
		return -EIO;
	n = snprintf(path, sizeof(path), "/v1/manifests/%s?version=%lld", name,
	    (long long)json_integer_value(v));
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	if ((r = httpc_request(base, "GET", path, key, NULL, NULL, FETCH_MS,
		 &a)) < 0)
		return r;
	json_t *m = json_object_get(a.json, "manifest");
	json_t *rules = json_object_get(m, "egress");
	/* No egress at all: no name answered, nothing captured. */
	r = a.status == 200 && json_is_object(m) &&
		(rules == NULL || json_is_array(rules))
	    ? jobnet_new(rules, ret)
	    : -EIO;
	httpc_answer_free(&a);
	return r;
}

/* local 0.0.0.0/0 (or ::/0) dev lo, in the local table: every
 * destination of the family is this namespace's own (AnyIP). 0 or
 * -errno. */
static int
anyip_route(int family)
{
	struct {
		struct nlmsghdr h;
		struct rtmsg rt;
		char attrs[64];
	} req = { 0 };
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	char ack[512];
	unsigned lo = if_nametoindex("lo");
	struct rtattr *a;
	int fd, r = 0;

	if (lo == 0)
		return -errno;
	req.h.nlmsg_len = NLMSG_LENGTH(sizeof(req.rt));
	req.h.nlmsg_type = RTM_NEWROUTE;
	req.h.nlmsg_flags =
	    NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
	req.h.nlmsg_seq = 1;
	req.rt.rtm_family = (unsigned char)family;
	req.rt.rtm_table = RT_TABLE_LOCAL;
	req.rt.rtm_protocol = RTPROT_BOOT;
	req.rt.rtm_scope = RT_SCOPE_HOST;
	req.rt.rtm_type = RTN_LOCAL;
	a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.h.nlmsg_len));
	a->rta_type = RTA_OIF;
	a->rta_len = RTA_LENGTH(sizeof(int));
	memcpy(RTA_DATA(a), &lo, sizeof(int));
	req.h.nlmsg_len = NLMSG_ALIGN(req.h.nlmsg_len) + RTA_ALIGN(a->rta_len);
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&nl,
		sizeof(nl)) < 0) {
		r = -errno;
	} else {
		ssize_t got = recv(fd, ack, sizeof(ack), 0);
		struct nlmsghdr *h = (struct nlmsghdr *)ack;
		if (got < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
			r = got < 0 ? -errno : -EIO;
		else if (h->nlmsg_type == NLMSG_ERROR)
			r = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
	}
	close(fd);
	return r;
}

/*
 * What the observers keep: the kernel's own refusals, as delivered to the
 * job's socket (a raw socket gets a copy of each packet of its protocol
 * delivered in the namespace). A TCP RST|ACK with sequence 0 answers a
 * SYN where nothing listens; an ICMP port unreachable (type 3 code 3, for
 * IPv6 type 1 code 4) a datagram where nothing listens. An IPv4 raw
 * socket's data starts at the IP header, an IPv6 one's at the transport
 * header.
 */
static const struct sock_filter tcp4_filter[] = {
	BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),
	BPF_STMT(BPF_LD | BPF_B | BPF_IND, 13),
	BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x14),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x14, 0, 3),
	BPF_STMT(BPF_LD | BPF_W | BPF_IND, 4),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, PACKET_SNAP),
	BPF_STMT(BPF_RET | BPF_K, 0),
};
static const struct sock_filter icmp4_filter[] = {
	BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),
	BPF_STMT(BPF_LD | BPF_B | BPF_IND, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 3, 0, 3),
	BPF_STMT(BPF_LD | BPF_B | BPF_IND, 1),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 3, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, PACKET_SNAP),
	BPF_STMT(BPF_RET | BPF_K, 0),
};
static const struct sock_filter tcp6_filter[] = {
	BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 13),
	BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x14),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x14, 0, 3),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, PACKET_SNAP),
	BPF_STMT(BPF_RET | BPF_K, 0),
};
static const struct sock_filter icmp6_filter[] = {
	BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 3),
	BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 1),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 4, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, PACKET_SNAP),
	BPF_STMT(BPF_RET | BPF_K, 0),
};

/* One observer, made inside the namespace: a raw socket that takes
 * nothing but what its filter keeps. The socket or -errno; -EAFNOSUPPORT
 * for an IPv6 one where the namespace has no IPv6. */
static int
observer_socket(enum obs_kind k)
{
	static const struct {
		int family, proto;
		const struct sock_filter *f;
		unsigned short len;
	} o[OBS_N] = {
		{ AF_INET, IPPROTO_TCP, tcp4_filter,
		    sizeof(tcp4_filter) / sizeof(tcp4_filter[0]) },
		{ AF_INET, IPPROTO_ICMP, icmp4_filter,
		    sizeof(icmp4_filter) / sizeof(icmp4_filter[0]) },
		{ AF_INET6, IPPROTO_TCP, tcp6_filter,
		    sizeof(tcp6_filter) / sizeof(tcp6_filter[0]) },
		{ AF_INET6, IPPROTO_ICMPV6, icmp6_filter,
		    sizeof(icmp6_filter) / sizeof(icmp6_filter[0]) },
	};
	struct sock_fprog prog = { .len = o[k].len,
		.filter = (struct sock_filter *)o[k].f };
	char drain[64];
	int fd = socket(o[k].family, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    o[k].proto);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) <
	    0) {
		int e = errno;
		close(fd);
		return -e;
	}
	/* What came before the filter was attached is not ours. */
	while (recv(fd, drain, sizeof(drain), MSG_DONTWAIT) > 0)
		;
	return fd;
}

/* In the job's namespace: the routes, a listener on each port, the
 * observer. */
static int
capture_sockets(struct jobnet *n)
{
	int r = anyip_route(AF_INET), one = 1;

	if (r == 0) {
		/* IPv6 too, so that a v6 connect is refused where it is made
		 * (and seen), not unroutable; a namespace with IPv6 turned
		 * off has nothing to route. */
		int r6 = anyip_route(AF_INET6);
		if (r6 < 0 && r6 != -EAFNOSUPPORT && r6 != -EACCES)
			r = r6;
	}
	for (int i = 0; r == 0 && i < OBS_N; i++) {
		int fd = observer_socket((enum obs_kind)i);
		bool v6 = i == OBS_TCP6 || i == OBS_ICMP6;
		if (fd >= 0)
			n->obs[i].fd = fd;
		else if (!(v6 && fd == -EAFNOSUPPORT))
			r = fd;
	}
	for (size_t i = 0; r == 0 && i < n->nports; i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET,
			.sin_port = htons(n->ports[i]) };
		if ((int)i == n->local &&
		    (r = dns_zone_lookup(n->zone, "cordon.local",
			 &sin.sin_addr)) < 0)
			break;
		int fd = socket(AF_INET,
		    SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
			sizeof(one)) < 0 ||
		    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
		    listen(fd, 128) < 0) {
			r = -errno;
			if (fd >= 0)
				close(fd);
			break;
		}
		n->port_fds[i] = fd;
	}
	return r;
}

/* fn(n) with the calling thread in the network namespace of pid, and
 * back in its own after: its answer, or -errno. */
static int
in_netns(pid_t pid, struct jobnet *n, int (*fn)(struct jobnet *))
{
	char path[64];
	int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), job, r;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	job = open(path, O_RDONLY | O_CLOEXEC);
	if (own < 0 || job < 0 || setns(job, CLONE_NEWNET) < 0) {
		r = -errno;
	} else {
		r = fn(n);
		if (setns(own, CLONE_NEWNET) < 0)
			r = -errno; /* cannot happen: our own namespace */
	}
	if (own >= 0)
		close(own);
	if (job >= 0)
		close(job);
	return r;
}

/* --- refusals told to the proxy ------------------------------------------ */

static void
announce_free(struct announce *a)
{
	*a->prev = a->next;
	if (a->next != NULL)
		a->next->prev = a->prev;
	bufferevent_free(a->bev);
	a->n->nannounces--;
	free(a);
}

static void tell_untold(struct jobnet *n);

static void
on_announce_read(struct bufferevent *bev, void *arg)
{
	struct jobnet *n = ((struct announce *)arg)->n;

	(void)bev;
	announce_free(arg); /* the proxy answered: it judged and logged */
	tell_untold(n);
}

static void
on_announce_event(struct bufferevent *bev, short what, void *arg)
{
	struct jobnet *n = ((struct announce *)arg)->n;

	(void)bev;
	(void)what;
	announce_free(arg);
	tell_untold(n);
}

/*
 * What the launcher or the namespace refused (a name its resolver does
 * not know, an address no name leads to, a port nobody listens on),
 * asked of the proxy as the CONNECT a client would have sent, after the
 * launcher's line (origin, "dns", "capture", "direct tcp|udp"), so that
 * the proxy judges it by the same rules and logs it as a decision with a
 * reason; the answer is dropped. host is a name or an address (an IPv6
 * one is bracketed here). Past ANNOUNCE_MAX at once (or with no
 * descriptor), counted (unannounced) and kept for tell_untold; repeat > 1
 * is that one line for repeat refusals (Cordon-Repeat, the proxy's
 * count).
 */
static void
announce_n(struct jobnet *n, const char *host, unsigned port,
    const char *origin, uint64_t repeat)
{
	char head[DNS_NAME_MAX + 240], rl[48] = "";
	bool v6 = strchr(host, ':') != NULL;
	struct announce *a = NULL;
	int ch = -1;

	if (repeat > 1)
		snprintf(rl, sizeof(rl), "Cordon-Repeat: %llu\r\n",
		    (unsigned long long)repeat);
	int k = snprintf(head, sizeof(head),
	    HTTP1_ORIGIN_PREFIX "%s\r\nCONNECT %s%s%s:%u HTTP/1.1\r\n"
				"Host: %s%s%s:%u\r\n%s\r\n",
	    origin, v6 ? "[" : "", host, v6 ? "]" : "", port, v6 ? "[" : "",
	    host, v6 ? "]" : "", port, rl);
	if (n->relay == NULL || n->nannounces >= ANNOUNCE_MAX || k < 0 ||
	    (size_t)k >= sizeof(head) || (a = calloc(1, sizeof(*a))) == NULL ||
	    (ch = relay_channel(n->relay, head, (size_t)k, true)) < 0 ||
	    (a->bev = bufferevent_socket_new(n->base, ch,
		 BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		if (repeat == 0)
			n->counts.unannounced++;
		n->untold += repeat > 0 ? repeat : 1;
		if (host != n->untold_host)
			snprintf(n->untold_host, sizeof(n->untold_host), "%s",
			    host);
		n->untold_port = port;
		n->untold_origin = origin;
		if (ch >= 0)
			close(ch);
		free(a);
		return;
	}
	a->n = n;
	a->next = n->announces;
	a->prev = &n->announces;
	if (n->announces != NULL)
		n->announces->prev = &a->next;
	n->announces = a;
	n->nannounces++;
	bufferevent_setcb(a->bev, on_announce_read, NULL, on_announce_event, a);
	bufferevent_enable(a->bev, EV_READ | EV_WRITE);
}

static void
announce(struct jobnet *n, const char *host, unsigned port, const char *origin)
{
	announce_n(n, host, port, origin, 0);
}

/* The refusals not told one by one, once a slot is free: one line, the
 * last of them with their count (a bounded, aggregated line). */
static void
tell_untold(struct jobnet *n)
{
	char host[sizeof(n->untold_host)];
	uint64_t k = n->untold;

	if (k == 0 || n->nannounces >= ANNOUNCE_MAX)
		return;
	memcpy(host, n->untold_host, sizeof(host));
	n->untold = 0;
	announce_n(n, host, n->untold_port, n->untold_origin, k);
}

static void
on_dns_refused(const char *name, void *arg)
{
	announce(arg, name, DNS_PORT, "dns");
}

/* An address the job reached, as the proxy should read it: the zone's
 * name for one of its synthetic addresses, else the address. */
static void
address_text(const struct jobnet *n, int family, const void *addr, char *out,
    size_t cap)
{
	const char *name = NULL;

	if (family == AF_INET) {
		struct in_addr in;
		memcpy(&in, addr, sizeof(in));
		name = dns_zone_name(n->zone, in);
	}
	if (name != NULL)
		snprintf(out, cap, "%s", name);
	else if (inet_ntop(family, addr, out, (socklen_t)cap) == NULL)
		snprintf(out, cap, "?");
}

/* What an IPv4 observer kept (from the IP header): the address and port
 * refused, and whether a datagram was. 0 or -1 (not one to tell). */
static int
refusal4(const uint8_t *p, size_t len, const uint8_t **addr, unsigned *port,
    bool *udp)
{
	size_t ihl = len >= 20 ? (size_t)(p[0] & 15) * 4 : 0;

	if (ihl < 20 || (p[0] >> 4) != 4 || len < ihl + 8)
		return -1;
	if (p[9] == IPPROTO_TCP) { /* the RST: from where it was sent */
		*addr = p + 12;
		*port = (unsigned)p[ihl] << 8 | p[ihl + 1];
		*udp = false;
		return 0;
	}
	/* Port unreachable: the datagram's IP and UDP heads follow. */
	const uint8_t *q = p + ihl + 8;
	size_t qlen = len - ihl - 8;
	size_t qihl = qlen >= 20 ? (size_t)(q[0] & 15) * 4 : 0;
	if (p[9] != IPPROTO_ICMP || qihl < 20 || qlen < qihl + 4 ||
	    (q[0] >> 4) != 4 || q[9] != IPPROTO_UDP)
		return -1;
	/* The resolver's answer to a client gone: not the job's refusal. */
	uint32_t src;
	memcpy(&src, q + 12, sizeof(src));
	if (src == htonl(0x7f000035u) /* DNS_ADDR */ &&
	    (q[qihl] << 8 | q[qihl + 1]) == DNS_PORT)
		return -1;
	*addr = q + 16;
	*port = (unsigned)q[qihl + 2] << 8 | q[qihl + 3];
	*udp = true;
	return 0;
}

/* What an IPv6 observer kept (from the transport header; from, its
 * sender). 0 or -1. */
static int
refusal6(enum obs_kind k, const uint8_t *p, size_t len,
    const struct sockaddr_in6 *from, const uint8_t **addr, unsigned *port,
    bool *udp)
{
	if (k == OBS_TCP6 && len >= 20) {
		*addr = from->sin6_addr.s6_addr;
		*port = (unsigned)p[0] << 8 | p[1];
		*udp = false;
		return 0;
	}
	/* ICMPv6 (8), the datagram's IPv6 head (40), its UDP head. */
	if (k != OBS_ICMP6 || len < 8 + 40 + 4 || (p[8] >> 4) != 6 ||
	    p[8 + 6] != IPPROTO_UDP)
		return -1;
	*addr = p + 8 + 24;
	*port = (unsigned)p[8 + 42] << 8 | p[8 + 43];
	*udp = true;
	return 0;
}

/* The refusals an observer saw, each announced to the proxy. */
static void
on_packets(evutil_socket_t fd, short what, void *arg)
{
	struct observer *o = arg;
	struct jobnet *n = o->n;
	bool v6 = o->kind == OBS_TCP6 || o->kind == OBS_ICMP6;
	uint8_t p[PACKET_SNAP];

	(void)what;
	for (int i = 0; i < PACKETS_A_TURN; i++) {
		struct sockaddr_in6 from = { 0 };
		socklen_t fl = sizeof(from);
		ssize_t got = recvfrom(fd, p, sizeof(p), MSG_DONTWAIT,
		    (struct sockaddr *)&from, &fl);
		const uint8_t *addr = NULL;
		char host[INET6_ADDRSTRLEN + 1];
		unsigned port = 0;
		bool udp = false;

		if (got <= 0)
			return;
		if ((v6 ? refusal6(o->kind, p, (size_t)got, &from, &addr, &port,
			      &udp)
			: refusal4(p, (size_t)got, &addr, &port, &udp)) < 0)
			continue;
		/* The job's own loopback (not a name's address): a closed
		 * port of its own, or the ::1 a "localhost" client tries
		 * before 127.0.0.1. No egress was tried: counted, not told. */
		struct in_addr in4 = { 0 };
		if (!v6)
			memcpy(&in4, addr, sizeof(in4));
		if (v6 ? memcmp(addr, &in6addr_loopback, 16) == 0
		       : addr[0] == 127 &&
			    dns_zone_name(n->zone, in4) == NULL) {
			n->counts.local_closed++;
			continue;
		}
		address_text(n, v6 ? AF_INET6 : AF_INET, addr, host,
		    sizeof(host));
		n->counts.direct++;
		announce(n, host, port, udp ? "direct udp" : "direct tcp");
	}
}

/* --- captured connections ------------------------------------------------- */

static void on_cread(struct bufferevent *bev, void *arg);
static void on_cevent(struct bufferevent *bev, short what, void *arg);

/* Off the list; its bufferevents freed unless given (to the relay). */
static void
cconn_free(struct cconn *c, bool given)
{
	*c->prev = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	if (!given) {
		for (int i = 0; i < 2; i++)
			if (c->b[i] != NULL)
				bufferevent_free(c->b[i]);
		relay_unhold(c->n->relay);
	}
	free(c);
}

static void
refuse(struct cconn *c)
{
	c->n->counts.refused++;
	cconn_free(c, false);
}

/* The pair is the relay's from now on. */
static void
join(struct cconn *c)
{
	struct jobnet *n = c->n;
	struct bufferevent *b0 = c->b[0], *b1 = c->b[1];

	cconn_free(c, true);
	bufferevent_enable(b0, EV_READ);
	if (relay_join(n->relay, b0, b1) == 0)
		n->counts.captured++;
	else
		n->counts.refused++;
}

/* b[1]: a connection of its own on the job's channel, first sent on it.
 * 0 or -1. */
static int
channel_open(struct cconn *c, const char *first, size_t len)
{
	int ch = relay_channel(c->n->relay, first, len, false);

	if (ch < 0)
		return -1;
	if ((c->b[1] = bufferevent_socket_new(c->n->base, ch,
		 BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		close(ch);
		return -1;
	}
	bufferevent_setcb(c->b[1], on_cread, NULL, on_cevent, c);
	bufferevent_enable(c->b[1], EV_READ | EV_WRITE);
	return 0;
}

/* The first byte: a TLS record is a CONNECT for the name dialled, its
 * ClientHello held until the proxy said yes; anything else is plain
 * HTTP, to the proxy at once as origin-form requests for that name. */
static void
on_first(struct cconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->b[0]);
	char head[DNS_NAME_MAX * 2 + 160];
	uint8_t first;
	int k;

	if (evbuffer_copyout(in, &first, 1) != 1)
		return;
	if (first != 0x16) {
		k = snprintf(head, sizeof(head),
		    HTTP1_ORIGIN_PREFIX "capture-http %s %u\r\n", c->name,
		    c->port);
		if (channel_open(c, head, (size_t)k) < 0) {
			refuse(c);
			return;
		}
		join(c);
		return;
	}
	k = snprintf(head, sizeof(head),
	    HTTP1_ORIGIN_PREFIX "capture\r\n"
				"CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n",
	    c->name, c->port, c->name, c->port);
	if (channel_open(c, head, (size_t)k) < 0) {
		refuse(c);
		return;
	}
	bufferevent_disable(c->b[0], EV_READ);
	c->state = C_PROXY;
}

/* The proxy's answer to the CONNECT: 200, then the tunnel. */
static void
on_proxy(struct cconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->b[1]);
	struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	char status[16] = "";

	if (end.pos < 0) {
		if (evbuffer_get_length(in) > PROXY_HEAD_MAX)
			refuse(c);
		return;
	}
	evbuffer_copyout(in, status, sizeof(status) - 1);
	if (strncmp(status, "HTTP/1.1 200", 12) != 0 &&
	    strncmp(status, "HTTP/1.0 200", 12) != 0) {
		refuse(c); /* the proxy's refusal, logged there */
		return;
	}
	evbuffer_drain(in, (size_t)end.pos + 4);
	join(c);
}

static void
on_cread(struct bufferevent *bev, void *arg)
{
	struct cconn *c = arg;

	if (c->state == C_FIRST && bev == c->b[0])
		on_first(c);
	else if (c->state == C_PROXY && bev == c->b[1])
		on_proxy(c);
}

static void
on_cevent(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	cconn_free(arg, false); /* gone before the join, or an error */
}

static void
on_caccept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct jobnet *n = arg;
	struct sockaddr_in dst;
	socklen_t dl = sizeof(dst);
	struct cconn *c = NULL;

	(void)l;
	(void)sa;
	(void)salen;
	const char *name = getsockname(fd, (struct sockaddr *)&dst, &dl) == 0 &&
		dst.sin_family == AF_INET
	    ? dns_zone_name(n->zone, dst.sin_addr)
	    : NULL;
	if (name == NULL && dl == sizeof(dst) && dst.sin_family == AF_INET) {
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &dst.sin_addr, ip, sizeof(ip));
		announce(n, ip, ntohs(dst.sin_port), "capture");
	}
	if (name == NULL || relay_hold(n->relay, fd) < 0) {
		/* An address no name of the job's leads to (1.1.1.1:443), or
		 * no room: the cap, or the stop path's descriptors. */
		n->counts.refused++;
		close(fd);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->b[0] = bufferevent_socket_new(n->base, fd,
		 BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		n->counts.refused++;
		relay_unhold(n->relay);
		free(c);
		close(fd);
		return;
	}
	c->n = n;
	c->name = name;
	c->port = ntohs(dst.sin_port);
	c->next = n->conns;
	c->prev = &n->conns;
	if (n->conns != NULL)
		n->conns->prev = &c->next;
	n->conns = c;
	bufferevent_setcb(c->b[0], on_cread, NULL, on_cevent, c);
	bufferevent_enable(c->b[0], EV_READ | EV_WRITE);
}

/* The rest is over: the listeners that failed listen again (and, when
 * descriptors are still short, fail and rest again: a wakeup a rest). */
static void
on_rest_over(evutil_socket_t fd, short what, void *arg)
{
	struct jobnet *n = arg;

	(void)fd;
	(void)what;
	for (size_t i = 0; i < n->nports; i++)
		if (n->listeners[i] != NULL)
			evconnlistener_enable(n->listeners[i]);
}

/* accept itself failed (EMFILE, ENFILE, ENOMEM): the connection stays in
 * the backlog and its socket readable, so the listener rests a moment
 * rather than make the loop spin (counted: capture.accept_paused). */
static void
on_caccept_error(struct evconnlistener *l, void *arg)
{
	struct jobnet *n = arg;
	struct timeval tv = { 0, ACCEPT_REST_MS * 1000 };

	evconnlistener_disable(l);
	n->counts.accept_paused++;
	if (!evtimer_pending(n->rest, NULL))
		evtimer_add(n->rest, &tv);
}

int
jobnet_enter(pid_t pid, void *arg)
{
	struct jobnet *n = arg;

	if (n == NULL)
		return -ENODATA;
	if (n->dns_fds[0] >= 0)
		return -EALREADY;
	int r = dns_sockets(pid, n->dns_fds);
	if (r < 0)
		return r;
	return in_netns(pid, n, capture_sockets);
}

int
jobnet_start(struct jobnet *n, struct event_base *base, struct relay *relay)
{
	int r;

	if (n == NULL || n->dns_fds[0] < 0 || relay == NULL)
		return -EINVAL;
	n->base = base;
	n->relay = relay;
	for (int i = 0; i < OBS_N; i++) {
		struct observer *o = &n->obs[i];
		if (o->fd < 0)
			continue;
		o->ev =
		    event_new(base, o->fd, EV_READ | EV_PERSIST, on_packets, o);
		if (o->ev == NULL || event_add(o->ev, NULL) < 0)
			return -ENOMEM;
	}
	if ((n->rest = evtimer_new(base, on_rest_over, n)) == NULL)
		return -ENOMEM;
	r = dns_server_new(base, n->dns_fds, n->zone, on_dns_refused, n,
	    &n->dns);
	n->dns_fds[0] = n->dns_fds[1] = -1; /* taken */
	for (size_t i = 0; r == 0 && i < n->nports; i++) {
		n->listeners[i] = evconnlistener_new(base, on_caccept, n,
		    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1,
		    n->port_fds[i]);
		if (n->listeners[i] == NULL) {
			r = -ENOMEM;
		} else {
			n->port_fds[i] = -1; /* taken */
			evconnlistener_set_error_cb(n->listeners[i],
			    on_caccept_error);
		}
	}
	return r;
}

void
jobnet_capture_counts(const struct jobnet *n, struct capture_counts *ret)
{
	*ret = n != NULL ? n->counts : (struct capture_counts){ 0 };
}

void
jobnet_dns_counts(const struct jobnet *n, struct dns_counts *ret)
{
	dns_server_counts(n != NULL ? n->dns : NULL, ret);
}

void
jobnet_stop(struct jobnet *n)
{
	if (n == NULL)
		return;
	dns_server_free(n->dns);
	n->dns = NULL;
	for (int i = 0; i < OBS_N; i++) {
		if (n->obs[i].ev != NULL)
			event_free(n->obs[i].ev);
		n->obs[i].ev = NULL;
		if (n->obs[i].fd >= 0)
			close(n->obs[i].fd);
		n->obs[i].fd = -1;
	}
	while (n->conns != NULL)
		cconn_free(n->conns, false);
	while (n->announces != NULL)
		announce_free(n->announces);
	if (n->rest != NULL)
		event_free(n->rest);
	n->rest = NULL;
	for (size_t i = 0; i < n->nports; i++) {
		if (n->listeners[i] != NULL)
			evconnlistener_free(n->listeners[i]);
		n->listeners[i] = NULL;
		if (n->port_fds[i] >= 0)
			close(n->port_fds[i]);
		n->port_fds[i] = -1;
	}
	for (int i = 0; i < 2; i++)
		if (n->dns_fds[i] >= 0)
			close(n->dns_fds[i]);
	n->dns_fds[0] = n->dns_fds[1] = -1;
}

void
jobnet_free(struct jobnet *n)
{
	if (n == NULL)
		return;
	jobnet_stop(n);
	dns_zone_free(n->zone);
	free(n);
}
