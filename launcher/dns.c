/*
 * The job's resolver (dns.h): a zone of the names the egress rules allow,
 * each with a synthetic address, a strict one-question parser and
 * answerer, and the UDP and TCP server on the launcher's loop. The
 * sockets are made inside the job's network namespace by a setns of the
 * launcher's thread there and back, before the job's command runs, so
 * that its first query already finds them.
 */
#include "dns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TCP_CONNS_MAX 16 /* TCP connections at once */
#define TCP_IDLE_S 5 /* a TCP connection quiet this long is closed */
#define UDP_BATCH 32 /* datagrams read per wake-up */

/* cordon.local, the proxy's own answer inside the job, and its address
 * (past every one add_name gives). */
#define LOCAL_NAME "cordon.local"
#define LOCAL_ADDR (DNS_NET + 0xfffeu)

#define RC_FORMERR 1
#define RC_NXDOMAIN 3
#define RC_NOTIMP 4
#define RC_REFUSED 5

struct dns_entry {
	char name[DNS_NAME_MAX + 1];
};

struct dns_zone {
	char **exact; /* the rules' names */
	size_t nexact;
	char **wild; /* the rules' "*." suffixes, without the "*" */
	size_t nwild;
	struct dns_entry *names; /* names[i] has DNS_NET + i + 1 */
	size_t nnames;
};

/* A host of a rule: lowercase letters, digits, '-', '_', '.' only. */
static bool
host_ok(const char *h)
{
	size_t n = strlen(h);

	if (n == 0 || n > DNS_NAME_MAX)
		return false;
	for (const char *c = h; *c != '\0'; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
			*c == '-' || *c == '_' || *c == '.'))
			return false;
	return true;
}

static int
add_name(struct dns_zone *z, const char *name)
{
	for (size_t i = 0; i < z->nnames; i++)
		if (strcmp(z->names[i].name, name) == 0)
			return (int)i;
	if (z->nnames >= DNS_NAMES_MAX)
		return -ENOSPC;
	snprintf(z->names[z->nnames].name, sizeof(z->names[0].name), "%s",
	    name);
	return (int)z->nnames++;
}

int
dns_zone_new(const json_t *rules, struct dns_zone **ret)
{
	struct dns_zone *z = calloc(1, sizeof(*z));
	size_t n = json_array_size(rules), i;
	json_t *v;
	int r = 0;

	if (z == NULL)
		return -ENOMEM;
	z->exact = calloc(n + 1, sizeof(char *));
	z->wild = calloc(n + 1, sizeof(char *));
	z->names = calloc(DNS_NAMES_MAX, sizeof(*z->names));
	if (z->exact == NULL || z->wild == NULL || z->names == NULL) {
		dns_zone_free(z);
		return -ENOMEM;
	}
	json_array_foreach(rules, i, v)
	{
		const char *h = json_string_value(json_object_get(v, "host"));
		bool wild = h != NULL && strncmp(h, "*.", 2) == 0;
		char *c;

		if (h == NULL || !host_ok(wild ? h + 2 : h)) {
			r = -EINVAL;
			break;
		}
		if ((c = strdup(wild ? h + 1 : h)) == NULL) {
			r = -ENOMEM;
			break;
		}
		if (wild) {
			z->wild[z->nwild++] = c;
		} else {
			z->exact[z->nexact++] = c;
			if ((r = add_name(z, h)) < 0)
				break;
			r = 0;
		}
	}
	/* The proxy's own name (docs/egress.md, Asking why), at an address
	 * of its own so that the others keep theirs; exact has room. */
	if (r == 0 && (z->exact[z->nexact++] = strdup(LOCAL_NAME)) == NULL)
		r = -ENOMEM;
	if (r < 0) {
		dns_zone_free(z);
		return r;
	}
	*ret = z;
	return 0;
}

static bool
allowed(const struct dns_zone *z, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < z->nexact; i++)
		if (strcmp(z->exact[i], name) == 0)
			return true;
	for (size_t i = 0; i < z->nwild; i++) {
		size_t k = strlen(z->wild[i]); /* ".example.com" */
		if (n > k && strcmp(name + n - k, z->wild[i]) == 0)
			return true;
	}
	return false;
}

int
dns_zone_lookup(struct dns_zone *z, const char *name, struct in_addr *ret)
{
	int i;

	if (!allowed(z, name))
		return -ENOENT;
	if (strcmp(name, LOCAL_NAME) == 0) {
		ret->s_addr = htonl(LOCAL_ADDR);
		return 0;
	}
	if ((i = add_name(z, name)) < 0)
		return i;
	ret->s_addr = htonl(DNS_NET + (uint32_t)i + 1);
	return 0;
}

const char *
dns_zone_name(const struct dns_zone *z, struct in_addr addr)
{
	uint32_t a = ntohl(addr.s_addr);

	if (a == LOCAL_ADDR)
		return LOCAL_NAME;
	if ((a & 0xffff0000u) != DNS_NET || (a & 0xffffu) == 0 ||
	    (a & 0xffffu) > z->nnames)
		return NULL;
	return z->names[(a & 0xffffu) - 1].name;
}

void
dns_zone_free(struct dns_zone *z)
{
	if (z == NULL)
		return;
	for (size_t i = 0; i < z->nexact; i++)
		free(z->exact[i]);
	for (size_t i = 0; i < z->nwild; i++)
		free(z->wild[i]);
	free(z->exact);
	free(z->wild);
	free(z->names);
	free(z);
}

/* The question's name at q[12..), dotted and lowercase into name, its
 * end (the offset of QTYPE) in *ret_end: 0, or -EBADMSG (a pointer, an
 * empty or long label, a byte outside letters, digits, '-' and '_', past
 * the end), -ENAMETOOLONG. */
static int
read_name(const uint8_t *q, size_t qlen, char *name, size_t *ret_end)
{
	size_t at = 12, len = 0;

	for (;;) {
		if (at >= qlen)
			return -EBADMSG;
		uint8_t l = q[at++];
		if (l == 0)
			break;
		if (l > 63 || at + l > qlen)
			return -EBADMSG; /* compression, or cut short */
		if (len + (len > 0) + l > DNS_NAME_MAX)
			return -ENAMETOOLONG;
		if (len > 0)
			name[len++] = '.';
		for (uint8_t i = 0; i < l; i++) {
			uint8_t c = q[at++];
			if (c >= 'A' && c <= 'Z')
				c = (uint8_t)(c - 'A' + 'a');
			if (!((c >= 'a' && c <= 'z') ||
				(c >= '0' && c <= '9') || c == '-' || c == '_'))
				return -EBADMSG;
			name[len++] = (char)c;
		}
	}
	name[len] = '\0';
	*ret_end = at;
	return 0;
}

static void
put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A header of an answer to q: its id, QR and AA set, RD copied, rcode;
 * one question echoed when qend > 0, no records. */
static size_t
reply(const uint8_t *q, size_t qend, unsigned rcode, uint8_t *out)
{
	out[0] = q[0];
	out[1] = q[1];
	out[2] = (uint8_t)(0x84 | (q[2] & 0x01)); /* QR, AA, RD */
	out[3] = (uint8_t)rcode;
	memset(out + 4, 0, 8);
	if (qend == 0)
		return 12;
	put16(out + 4, 1);
	memcpy(out + 12, q + 12, qend - 12);
	return qend;
}

enum dns_outcome
dns_answer(struct dns_zone *z, const uint8_t *q, size_t qlen, uint8_t *out,
    size_t *ret_len, char *name)
{
	size_t end = 0;
	struct in_addr a;
	unsigned type, cls;
	int r;

	name[0] = '\0';
	*ret_len = 0;
	if (qlen < 12 || qlen > DNS_MSG_MAX || (q[2] & 0x80))
		return DNS_DROPPED; /* too short for an id, or a response */
	if (((q[2] >> 3) & 0x0f) != 0) {
		*ret_len = reply(q, 0, RC_NOTIMP, out); /* not a QUERY */
		return DNS_BAD;
	}
	/* One question; no answers or authorities; an OPT at most. */
	if (q[4] != 0 || q[5] != 1 || q[6] != 0 || q[7] != 0 || q[8] != 0 ||
	    q[9] != 0 || q[10] != 0 || q[11] > 1 ||
	    (r = read_name(q, qlen, name, &end)) < 0 || end + 4 > qlen) {
		name[0] = '\0';
		*ret_len = reply(q, 0, RC_FORMERR, out);
		return DNS_BAD;
	}
	type = (unsigned)q[end] << 8 | q[end + 1];
	cls = (unsigned)q[end + 2] << 8 | q[end + 3];
	end += 4;
	if (cls != 1 || type == 0 ||
	    (type >= 249 && type <= 255 && type != 255)) {
		/* Another class, or AXFR, IXFR, MAILA/B, TKEY, TSIG. */
		*ret_len = reply(q, end, RC_REFUSED, out);
		return DNS_BAD;
	}
	r = name[0] == '\0' ? -ENOENT : dns_zone_lookup(z, name, &a);
	if (r == -ENOENT) {
		*ret_len = reply(q, end, RC_NXDOMAIN, out);
		return DNS_NXDOMAIN;
	}
	if (r < 0 || (type != 1 && type != 255)) {
		/* AAAA and the rest: the capture is IPv4; ENOSPC alike. */
		*ret_len = reply(q, end, 0, out);
		return DNS_NODATA;
	}
	size_t n = reply(q, end, 0, out);
	uint8_t *p = out + n;
	put16(out + 6, 1);
	put16(p, 0xc00c); /* the name: the question's */
	put16(p + 2, 1);
	put16(p + 4, 1);
	put16(p + 6, 0);
	put16(p + 8, DNS_TTL);
	put16(p + 10, 4);
	memcpy(p + 12, &a.s_addr, 4);
	*ret_len = n + 16;
	return DNS_ANSWERED;
}

int
dns_sockets(pid_t pid, int fds[2])
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_port = htons(DNS_PORT) };
	char path[64];
	int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), job, r = 0;
	int one = 1;

	fds[0] = fds[1] = -1;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	job = open(path, O_RDONLY | O_CLOEXEC);
	if (own < 0 || job < 0 || setns(job, CLONE_NEWNET) < 0) {
		r = -errno;
		goto out;
	}
	inet_pton(AF_INET, DNS_ADDR, &sin.sin_addr);
	fds[0] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	fds[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fds[0] < 0 || fds[1] < 0 ||
	    setsockopt(fds[1], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) <
		0 ||
	    bind(fds[0], (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    bind(fds[1], (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(fds[1], 16) < 0)
		r = -errno;
	if (setns(own, CLONE_NEWNET) < 0)
		r = -errno; /* cannot happen: our own namespace */
out:
	if (own >= 0)
		close(own);
	if (job >= 0)
		close(job);
	if (r < 0) {
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		fds[0] = fds[1] = -1;
	}
	return r;
}

/* --- the server ----------------------------------------------------------- */

struct tcp_conn;

struct dns_server {
	struct dns_zone *zone;
	struct event *udp;
	int udp_fd;
	struct evconnlistener *tcp;
	struct event *rest; /* re-enables tcp after accept failed */
	struct tcp_conn *conns;
	unsigned nconns;
	dns_refused_fn refused;
	void *arg;
	struct dns_counts counts;
};

struct tcp_conn {
	struct dns_server *s;
	struct tcp_conn *next, **prev;
	struct bufferevent *bev;
};

/* Answers one query, counted; the answer's length (0: none). */
static size_t
serve_one(struct dns_server *s, const uint8_t *q, size_t n, uint8_t *out)
{
	char name[DNS_NAME_MAX + 1];
	size_t len;

	switch (dns_answer(s->zone, q, n, out, &len, name)) {
	case DNS_ANSWERED:
		s->counts.answered++;
		break;
	case DNS_NODATA:
		s->counts.nodata++;
		break;
	case DNS_NXDOMAIN:
		s->counts.refused++;
		if (s->refused != NULL)
			s->refused(name, s->arg);
		break;
	default:
		s->counts.bad++;
	}
	return len;
}

static void
on_udp(evutil_socket_t fd, short what, void *arg)
{
	struct dns_server *s = arg;
	uint8_t q[DNS_MSG_MAX + 1], out[DNS_MSG_MAX];
	struct sockaddr_storage from;

	(void)what;
	for (int i = 0; i < UDP_BATCH; i++) {
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, q, sizeof(q), MSG_TRUNC,
		    (struct sockaddr *)&from, &fl);
		if (n < 0)
			return;
		size_t len = serve_one(s, q, (size_t)n, out);
		if (len > 0)
			(void)sendto(fd, out, len, MSG_DONTWAIT | MSG_NOSIGNAL,
			    (struct sockaddr *)&from, fl);
	}
}

static void
conn_free(struct tcp_conn *c)
{
	*c->prev = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	bufferevent_free(c->bev);
	c->s->nconns--;
	free(c);
}

static void
on_tcp_read(struct bufferevent *bev, void *arg)
{
	struct tcp_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	uint8_t q[DNS_MSG_MAX + 2], out[DNS_MSG_MAX + 2];

	while (evbuffer_get_length(in) >= 2) {
		evbuffer_copyout(in, q, 2);
		size_t n = (size_t)q[0] << 8 | q[1];
		if (n > DNS_MSG_MAX) {
			conn_free(c); /* no query is this long */
			return;
		}
		if (evbuffer_get_length(in) < n + 2)
			return;
		evbuffer_remove(in, q, n + 2);
		size_t len = serve_one(c->s, q + 2, n, out + 2);
		if (len == 0) {
			conn_free(c);
			return;
		}
		put16(out, (unsigned)len);
		bufferevent_write(bev, out, len + 2);
	}
}

static void
on_tcp_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	conn_free(arg); /* EOF, an error or idle: nothing more to answer */
}

static void
on_tcp_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct dns_server *s = arg;
	struct timeval idle = { TCP_IDLE_S, 0 };
	struct tcp_conn *c = NULL;

	(void)sa;
	(void)salen;
	if (s->nconns >= TCP_CONNS_MAX || (c = calloc(1, sizeof(*c))) == NULL ||
	    (c->bev = bufferevent_socket_new(evconnlistener_get_base(l), fd,
		 BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		free(c);
		close(fd);
		return;
	}
	c->s = s;
	c->next = s->conns;
	c->prev = &s->conns;
	if (s->conns != NULL)
		s->conns->prev = &c->next;
	s->conns = c;
	s->nconns++;
	bufferevent_setwatermark(c->bev, EV_READ, 0, DNS_MSG_MAX + 2);
	bufferevent_set_timeouts(c->bev, &idle, &idle);
	bufferevent_setcb(c->bev, on_tcp_read, NULL, on_tcp_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* The rest is over: the TCP listener listens again. */
static void
on_rest_over(evutil_socket_t fd, short what, void *arg)
{
	struct dns_server *s = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(s->tcp);
}

/* accept itself failed (the launcher out of descriptors): the listener
 * rests 250 ms rather than make the loop spin on a readable socket. */
static void
on_tcp_accept_error(struct evconnlistener *l, void *arg)
{
	struct dns_server *s = arg;
	struct timeval tv = { 0, 250 * 1000 };

	evconnlistener_disable(l);
	if (!evtimer_pending(s->rest, NULL))
		evtimer_add(s->rest, &tv);
}

int
dns_server_new(struct event_base *base, int fds[2], struct dns_zone *z,
    dns_refused_fn refused, void *arg, struct dns_server **ret)
{
	struct dns_server *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		close(fds[0]);
		close(fds[1]);
		return -ENOMEM;
	}
	s->zone = z;
	s->refused = refused;
	s->arg = arg;
	s->udp_fd = fds[0];
	evutil_make_socket_nonblocking(fds[0]);
	evutil_make_socket_nonblocking(fds[1]);
	s->udp = event_new(base, fds[0], EV_READ | EV_PERSIST, on_udp, s);
	s->tcp = evconnlistener_new(base, on_tcp_accept, s,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fds[1]);
	if (s->tcp == NULL)
		close(fds[1]);
	else
		evconnlistener_set_error_cb(s->tcp, on_tcp_accept_error);
	s->rest = evtimer_new(base, on_rest_over, s);
	if (s->udp == NULL || s->tcp == NULL || s->rest == NULL ||
	    event_add(s->udp, NULL) < 0) {
		dns_server_free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

void
dns_server_counts(const struct dns_server *s, struct dns_counts *ret)
{
	*ret = s != NULL ? s->counts : (struct dns_counts){ 0 };
}

void
dns_server_free(struct dns_server *s)
{
	if (s == NULL)
		return;
	while (s->conns != NULL)
		conn_free(s->conns);
	if (s->tcp != NULL)
		evconnlistener_free(s->tcp);
	if (s->rest != NULL)
		event_free(s->rest);
	if (s->udp != NULL)
		event_free(s->udp);
	if (s->udp_fd >= 0)
		close(s->udp_fd);
	free(s);
}
