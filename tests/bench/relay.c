/*
 * A benchmark helper standing in for the launcher's relay: listens on TCP
 * 127.0.0.1:PORT and joins each accepted connection to a new connection on
 * a UNIX socket (a cordon-proxy job channel, or nginx's socket to measure
 * the relay itself), copying bytes both ways. One thread, one epoll loop,
 * level-triggered; read(2) and write(2) through a 16 KiB buffer per
 * direction (for requests of a few hundred bytes a copy costs less than
 * splice's extra calls and pipes); a half-close is passed on once what
 * came before it is written.
 *
 *   relay PORT UNIX_PATH      PORT 0: any free port
 *
 * Prints "ready PORT" on stdout once listening; runs until killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define BUF_SIZE (16 * 1024)
#define MAX_EVENTS 256

struct pair;

/* One side of a pair: its socket, and the bytes read from it that wait to
 * be written to the other side. */
struct end {
	struct pair *pair;
	int fd;
	uint32_t mask; /* what epoll watches now */
	bool eof; /* read returned 0 */
	bool shut; /* its write side was shut */
	size_t off, len;
	char buf[BUF_SIZE];
};

struct pair {
	struct end e[2]; /* 0: the TCP client, 1: the UNIX socket */
	bool dead;
	struct pair *next_dead;
};

static int ep;
static struct sockaddr_un target;
static struct pair *dead;

static void
die(const char *what)
{
	fprintf(stderr, "relay: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void
pair_kill(struct pair *p)
{
	if (p->dead)
		return;
	p->dead = true;
	close(p->e[0].fd);
	close(p->e[1].fd);
	p->next_dead = dead;
	dead = p;
}

/* Watches end i for reading while its buffer is empty and it has not
 * ended, and for writing while the other side's bytes wait for it. */
static void
watch(struct pair *p, int i)
{
	struct end *e = &p->e[i], *o = &p->e[1 - i];
	uint32_t mask = 0;

	if (!e->eof && e->len == 0)
		mask |= EPOLLIN;
	if (o->len > 0)
		mask |= EPOLLOUT;
	if (mask == e->mask)
		return;
	struct epoll_event ev = { .events = mask, .data.ptr = e };
	if (epoll_ctl(ep, EPOLL_CTL_MOD, e->fd, &ev) < 0) {
		pair_kill(p);
		return;
	}
	e->mask = mask;
}

static bool
would_block(void)
{
	return errno == EAGAIN || errno == EINTR;
}

/* Moves what it can from side i to the other: -1 when the pair is done
 * for (an error, or both directions closed). */
static int
pump(struct pair *p, int i)
{
	struct end *from = &p->e[i], *to = &p->e[1 - i];
	bool drained = false;
	ssize_t n;

	for (;;) {
		while (from->len > 0) {
			n = write(to->fd, from->buf + from->off, from->len);
			if (n < 0)
				return would_block() ? 0 : -1;
			from->off += (size_t)n;
			from->len -= (size_t)n;
		}
		from->off = 0;
		/* A short read drained the socket: epoll tells when there is
		 * more, and the read that would say EAGAIN is saved. */
		if (from->eof || drained)
			break;
		n = read(from->fd, from->buf, sizeof(from->buf));
		if (n < 0)
			return would_block() ? 0 : -1;
		if (n == 0)
			from->eof = true;
		from->len = (size_t)n;
		drained = (size_t)n < sizeof(from->buf);
	}
	if (!from->eof)
		return 0;
	if (!to->shut) {
		to->shut = true;
		if (shutdown(to->fd, SHUT_WR) < 0 && errno != ENOTCONN)
			return -1;
	}
	return p->e[0].eof && p->e[1].eof && p->e[0].len == 0 &&
		p->e[1].len == 0
	    ? -1
	    : 0;
}

static void
on_pair(struct end *e, uint32_t events)
{
	struct pair *p = e->pair;
	int i = e == &p->e[0] ? 0 : 1;

	if (p->dead)
		return;
	/* Readable: bytes from this side. Writable: the other side's
	 * bytes can go on. Errors show up as failed calls. */
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && pump(p, i) < 0) {
		pair_kill(p);
		return;
	}
	if ((events & (EPOLLOUT | EPOLLERR)) && pump(p, 1 - i) < 0) {
		pair_kill(p);
		return;
	}
	/* A hang-up is reported whatever the mask: once this side has
	 * ended and its bytes are on, nothing more can pass. */
	if ((events & (EPOLLHUP | EPOLLERR)) && e->eof && e->len == 0) {
		pair_kill(p);
		return;
	}
	watch(p, 0);
	if (!p->dead)
		watch(p, 1);
}

static void
on_accept(int lfd)
{
	static const int one = 1;

	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			if (errno == EMFILE || errno == ENFILE)
				return; /* level-triggered: tried again */
			die("accept");
		}
		(void)setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		/* A blocking connect: when the channel's backlog is full it
		 * waits for the proxy to accept, rather than failing. */
		int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (u < 0 ||
		    connect(u, (struct sockaddr *)&target, sizeof(target)) <
			0 ||
		    fcntl(u, F_SETFL, O_NONBLOCK) < 0) {
			fprintf(stderr, "relay: connect %s: %s\n",
			    target.sun_path, strerror(errno));
			if (u >= 0)
				close(u);
			close(c);
			continue;
		}
		struct pair *p = calloc(1, sizeof(*p));
		if (p == NULL) {
			close(c);
			close(u);
			continue;
		}
		p->e[0].fd = c;
		p->e[1].fd = u;
		for (int i = 0; i < 2; i++) {
			struct epoll_event ev = { .events = EPOLLIN,
				.data.ptr = &p->e[i] };
			p->e[i].pair = p;
			p->e[i].mask = EPOLLIN;
			if (epoll_ctl(ep, EPOLL_CTL_ADD, p->e[i].fd, &ev) < 0)
				die("epoll_ctl");
		}
	}
}

int
main(int argc, char **argv)
{
	static const int one = 1;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	struct epoll_event evs[MAX_EVENTS];
	char *end;
	long port;
	int lfd;

	if (argc != 3) {
		fprintf(stderr, "usage: relay PORT UNIX_PATH\n");
		return 64;
	}
	port = strtol(argv[1], &end, 10);
	if (*end != '\0' || port < 0 || port > 65535 ||
	    strlen(argv[2]) >= sizeof(target.sun_path)) {
		fprintf(stderr, "relay: bad port or path\n");
		return 64;
	}
	signal(SIGPIPE, SIG_IGN);
	target.sun_family = AF_UNIX;
	memcpy(target.sun_path, argv[2], strlen(argv[2]) + 1);

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(lfd, 4096) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &len) < 0)
		die("listen");
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	struct epoll_event lev = { .events = EPOLLIN, .data.ptr = NULL };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0)
		die("epoll_ctl");
	printf("ready %u\n", ntohs(sin.sin_port));
	fflush(stdout);

	for (;;) {
		int n = epoll_wait(ep, evs, MAX_EVENTS, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == NULL)
				on_accept(lfd);
			else
				on_pair(evs[i].data.ptr, evs[i].events);
		}
		/* Freed after the batch: a later event of it may still be
		 * in evs. */
		while (dead != NULL) {
			struct pair *p = dead;
			dead = p->next_dead;
			free(p);
		}
	}
}
