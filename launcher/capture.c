/*
 * The job's network, the launcher's side (capture.h): the resolver's
 * zone, the sockets made inside the job's namespace (the resolver's, the
 * AnyIP route, the capture's listeners), and their servers on the loop.
 *
 * A captured connection: accepted on one of the rules' ports, its
 * original destination (getsockname: AnyIP makes every address local)
 * mapped back to its name by the zone, the TLS ClientHello read until
 * its SNI is known and checked against that name, then a CONNECT
 * name:port on a connection of its own to the job's channel; once the
 * proxy answers 200 the ClientHello follows and bytes pass both ways.
 * Anything else (an address that is no name of the zone, no SNI or
 * another one, not TLS, a refusal by the proxy) closes the connection.
 */
#include "capture.h"

#include "http_client.h"
#include "sandbox.h"
#include "sni.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
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
	struct event_base *base;
	struct sockaddr_un channel;
	struct cconn *conns;
	struct announce *announces;
	unsigned nannounces;
	struct capture_counts counts;
};

/* A refusal told to the proxy, so that it is judged and logged there. */
struct announce {
	struct jobnet *n;
	struct announce *next, **prev;
	struct bufferevent *bev;
};

enum cstate { C_HELLO, C_PROXY, C_RELAY };

/* A captured connection (b[0]) and its twin on the channel (b[1]). */
struct cconn {
	struct jobnet *n;
	struct cconn *next, **prev;
	struct bufferevent *b[2];
	enum cstate state;
	const char *name; /* the zone's, for the original address */
	uint16_t port;
	bool eof[2], shut[2];
};

int
jobnet_new(const json_t *rules, struct jobnet **ret)
{
	struct jobnet *n = calloc(1, sizeof(*n));
	int r;

	if (n == NULL)
		return -ENOMEM;
	n->dns_fds[0] = n->dns_fds[1] = -1;
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

/* local 0.0.0.0/0 dev lo, in the local table: every IPv4 destination is
 * this namespace's own (AnyIP). 0 or -errno. */
static int
anyip_route(void)
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
	req.rt.rtm_family = AF_INET;
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

/* In the job's namespace: the route, a listener on each port. */
static int
capture_sockets(struct jobnet *n)
{
	int r = anyip_route(), one = 1;

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

static void
on_announce_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	announce_free(arg); /* the proxy answered: it judged and logged */
}

static void
on_announce_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	announce_free(arg);
}

/*
 * What the launcher refused itself (a name its resolver does not know,
 * an address no name leads to), asked of the proxy as the CONNECT a
 * client would have sent, so that the proxy judges it by the same rules
 * and logs it as a decision with a reason; the answer is dropped. Past
 * ANNOUNCE_MAX at once, counted only (unlogged).
 */
static void
announce(struct jobnet *n, const char *host, unsigned port, const char *kind)
{
	char head[DNS_NAME_MAX + 160];
	struct announce *a = NULL;
	int ch = -1;

	if (n->base == NULL || n->nannounces >= ANNOUNCE_MAX ||
	    (a = calloc(1, sizeof(*a))) == NULL ||
	    (ch = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		 0)) < 0 ||
	    connect(ch, (struct sockaddr *)&n->channel, sizeof(n->channel)) <
		0 ||
	    (a->bev = bufferevent_socket_new(n->base, ch,
		 BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		n->counts.unannounced++;
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
	int k = snprintf(head, sizeof(head),
	    "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\nCordon-Kind: %s\r\n\r\n",
	    host, port, host, port, kind);
	/* Sent now, not on the next turn of the loop: a stop right after
	 * still leaves the proxy the whole request. */
	ssize_t sent = send(ch, head, (size_t)k, MSG_NOSIGNAL);
	if (sent >= 0 && sent < k)
		bufferevent_write(a->bev, head + sent, (size_t)(k - sent));
	bufferevent_setcb(a->bev, on_announce_read, NULL, on_announce_event, a);
	bufferevent_enable(a->bev, EV_READ | EV_WRITE);
}

static void
on_dns_refused(const char *name, void *arg)
{
	announce(arg, name, DNS_PORT, "dns");
}

/* --- captured connections ------------------------------------------------- */

static void on_cread(struct bufferevent *bev, void *arg);
static void on_cwrite(struct bufferevent *bev, void *arg);
static void on_cevent(struct bufferevent *bev, short what, void *arg);

static void
cconn_free(struct cconn *c)
{
	*c->prev = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	for (int i = 0; i < 2; i++)
		if (c->b[i] != NULL)
			bufferevent_free(c->b[i]);
	free(c);
}

static void
refuse(struct cconn *c)
{
	c->n->counts.refused++;
	cconn_free(c);
}

static bool
drained(struct bufferevent *bev)
{
	return evbuffer_get_length(bufferevent_get_output(bev)) == 0;
}

static void
cconn_progress(struct cconn *c)
{
	for (int i = 0; i < 2; i++)
		if (c->eof[1 - i] && !c->shut[i] && drained(c->b[i])) {
			(void)shutdown(bufferevent_getfd(c->b[i]), SHUT_WR);
			c->shut[i] = true;
		}
	if (c->eof[0] && c->eof[1] && drained(c->b[0]) && drained(c->b[1]))
		cconn_free(c);
}

/* b[1]: a connection of its own on the job's channel. 0 or -1. */
static int
channel_open(struct cconn *c)
{
	int ch = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (ch < 0 ||
	    connect(ch, (struct sockaddr *)&c->n->channel,
		sizeof(c->n->channel)) < 0 ||
	    (c->b[1] = bufferevent_socket_new(c->n->base, ch,
		 BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		if (ch >= 0)
			close(ch);
		return -1;
	}
	bufferevent_setcb(c->b[1], on_cread, on_cwrite, on_cevent, c);
	bufferevent_enable(c->b[1], EV_READ | EV_WRITE);
	return 0;
}

/* The Host header's value in head[0..len) (the request's head, its
 * request line first), without its port, into out: 0 or -1. */
static int
head_host(const char *head, size_t len, char *out, size_t cap)
{
	const char *p = memchr(head, '\n', len), *end = head + len;

	while (p != NULL && p + 1 < end) {
		const char *line = p + 1, *eol = memchr(line, '\n', end - line);
		if (eol == NULL)
			return -1;
		if (eol - line > 5 && strncasecmp(line, "host:", 5) == 0) {
			const char *v = line + 5;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			size_t n = 0;
			while (v + n < eol && v[n] != ':' && v[n] != '\r' &&
			    v[n] != ' ')
				n++;
			if (n == 0 || n >= cap)
				return -1;
			memcpy(out, v, n);
			out[n] = '\0';
			return 0;
		}
		p = eol;
	}
	return -1;
}

/* A plain HTTP request: once its head is whole, its Host must be the
 * name dialled; its request line goes to the channel in absolute form
 * (http://name:port/path), the rest as it came, then bytes both ways.
 * Later requests on the connection are not rewritten: the proxy refuses
 * them (docs/egress.md). */
static void
on_http(struct cconn *c, const char *data, size_t len)
{
	struct evbuffer *in = bufferevent_get_input(c->b[0]);
	const char *end = memmem(data, len, "\r\n\r\n", 4);
	const char *sp = memchr(data, ' ', len);
	char host[DNS_NAME_MAX + 1], line[DNS_NAME_MAX + 64];

	if (end == NULL) {
		if (len >= PROXY_HEAD_MAX * 4)
			refuse(c);
		return;
	}
	/* METHOD SP /target: an origin-form target only. */
	if (sp == NULL || sp > end || sp == data || sp[1] != '/' ||
	    head_host(data, (size_t)(end - data) + 2, host, sizeof(host)) < 0 ||
	    strcasecmp(host, c->name) != 0 || channel_open(c) < 0) {
		refuse(c);
		return;
	}
	int k = snprintf(line, sizeof(line), "%.*s http://%s:%u",
	    (int)(sp - data), data, c->name, c->port);
	if (k < 0 || (size_t)k >= sizeof(line)) {
		refuse(c);
		return;
	}
	evbuffer_drain(in, (size_t)(sp + 1 - data)); /* the method, SP */
	bufferevent_write(c->b[1], line, (size_t)k);
	c->state = C_RELAY;
	c->n->counts.captured++;
	evbuffer_add_buffer(bufferevent_get_output(c->b[1]), in);
}

/* The client's bytes until its SNI is known: then the CONNECT. */
static void
on_hello(struct cconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->b[0]);
	size_t len = evbuffer_get_length(in);
	char sni[SNI_MAX + 1], head[SNI_MAX + 128];
	uint8_t *data = evbuffer_pullup(in, -1);

	if (data != NULL && len > 0 && data[0] != 0x16) {
		on_http(c, (const char *)data, len); /* not a TLS record */
		return;
	}
	int r = data != NULL ? sni_parse(data, len, sni) : -ENOMEM;

	if (r == -EAGAIN && len < SNI_READ_MAX)
		return;
	size_t k = r == 0 ? strlen(sni) : 0;
	if (k > 0 && sni[k - 1] == '.')
		sni[--k] = '\0';
	if (r < 0 || strcasecmp(sni, c->name) != 0) {
		refuse(c); /* not TLS, no SNI, or not the name dialled */
		return;
	}
	if (channel_open(c) < 0) {
		refuse(c);
		return;
	}
	snprintf(head, sizeof(head),
	    "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n", c->name, c->port,
	    c->name, c->port);
	bufferevent_write(c->b[1], head, strlen(head));
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
	c->state = C_RELAY;
	c->n->counts.captured++;
	evbuffer_add_buffer(bufferevent_get_output(c->b[1]),
	    bufferevent_get_input(c->b[0]));
	evbuffer_add_buffer(bufferevent_get_output(c->b[0]), in);
	bufferevent_enable(c->b[0], EV_READ);
}

static void
on_cread(struct bufferevent *bev, void *arg)
{
	struct cconn *c = arg;
	int i = c->b[0] == bev ? 0 : 1;

	if (c->state == C_HELLO)
		on_hello(c);
	else if (c->state == C_PROXY && i == 1)
		on_proxy(c);
	else if (c->state == C_RELAY)
		evbuffer_add_buffer(bufferevent_get_output(c->b[1 - i]),
		    bufferevent_get_input(bev));
}

static void
on_cwrite(struct bufferevent *bev, void *arg)
{
	struct cconn *c = arg;

	(void)bev;
	if (c->state == C_RELAY)
		cconn_progress(c);
}

static void
on_cevent(struct bufferevent *bev, short what, void *arg)
{
	struct cconn *c = arg;
	int i = c->b[0] == bev ? 0 : 1;

	if (c->state != C_RELAY || !(what & BEV_EVENT_EOF)) {
		cconn_free(c); /* gone before the tunnel, or an error */
		return;
	}
	evbuffer_add_buffer(bufferevent_get_output(c->b[1 - i]),
	    bufferevent_get_input(bev));
	c->eof[i] = true;
	bufferevent_disable(bev, EV_READ);
	cconn_progress(c);
}

static void
on_caccept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct jobnet *n = arg;
	struct sockaddr_in dst;
	socklen_t dl = sizeof(dst);
	struct cconn *c = NULL;
	unsigned open_now = 0;

	(void)l;
	(void)sa;
	(void)salen;
	for (struct cconn *k = n->conns; k != NULL; k = k->next)
		open_now++;
	const char *name = getsockname(fd, (struct sockaddr *)&dst, &dl) == 0 &&
		dst.sin_family == AF_INET
	    ? dns_zone_name(n->zone, dst.sin_addr)
	    : NULL;
	if (name == NULL && dl == sizeof(dst) && dst.sin_family == AF_INET) {
		char ip[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &dst.sin_addr, ip, sizeof(ip));
		announce(n, ip, ntohs(dst.sin_port), "capture");
	}
	if (name == NULL || open_now >= CAPTURE_CONNS_MAX ||
	    (c = calloc(1, sizeof(*c))) == NULL ||
	    (c->b[0] = bufferevent_socket_new(n->base, fd,
		 BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		/* An address no name of the job's leads to: 1.1.1.1:443. */
		n->counts.refused++;
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
	bufferevent_setwatermark(c->b[0], EV_READ, 0, SNI_READ_MAX);
	bufferevent_setcb(c->b[0], on_cread, on_cwrite, on_cevent, c);
	bufferevent_enable(c->b[0], EV_READ | EV_WRITE);
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
jobnet_start(struct jobnet *n, struct event_base *base, const char *channel)
{
	int r;

	if (n == NULL || n->dns_fds[0] < 0 || channel == NULL)
		return -EINVAL;
	if (strlen(channel) >= sizeof(n->channel.sun_path))
		return -ENAMETOOLONG;
	n->base = base;
	n->channel.sun_family = AF_UNIX;
	memcpy(n->channel.sun_path, channel, strlen(channel) + 1);
	r = dns_server_new(base, n->dns_fds, n->zone, on_dns_refused, n,
	    &n->dns);
	n->dns_fds[0] = n->dns_fds[1] = -1; /* taken */
	for (size_t i = 0; r == 0 && i < n->nports; i++) {
		n->listeners[i] = evconnlistener_new(base, on_caccept, n,
		    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1,
		    n->port_fds[i]);
		if (n->listeners[i] == NULL)
			r = -ENOMEM;
		else
			n->port_fds[i] = -1; /* taken */
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
	while (n->conns != NULL)
		cconn_free(n->conns);
	while (n->announces != NULL)
		announce_free(n->announces);
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
