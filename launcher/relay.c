/*
 * The relay: each connection the job opens to 127.0.0.1:3128 inside its
 * network namespace, joined to a connection of its own on the job's proxy
 * channel (a unix socket), bytes passed both ways by bufferevents on the
 * launcher's loop. Nothing here blocks: the channel is connected without
 * waiting (a full backlog is a refusal), and a write to a peer that has
 * gone is an error that ends the pair (SIGPIPE is handled by cordon run).
 * A side that ends its sending (EOF) is passed on as a half-close once
 * what it sent has gone out, and the other direction goes on: a client
 * that shuts down its writing and then reads the answer gets it.
 */
#include "relay.h"

#include "http1.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define RETRY_MS 100 /* how soon accept is tried again after EMFILE */

struct pair;

struct relay {
	struct event_base *base;
	struct evconnlistener *listener;
	struct event *retry; /* re-enables the listener after EMFILE */
	struct sockaddr_un channel;
	long long fd_limit; /* descriptors at or past this are refused */
	struct pair *pairs;
	struct relay_counts counts;
};

/* One connection from inside the job and its twin on the channel. */
struct pair {
	struct relay *rl;
	struct pair *next, **prev;
	struct bufferevent *b[2];
	bool eof[2]; /* b[i] said it sends no more */
	bool shut[2]; /* b[i]'s writing side was shut down */
};

static int
side(const struct pair *p, const struct bufferevent *bev)
{
	return p->b[0] == bev ? 0 : 1;
}

static bool
drained(struct bufferevent *bev)
{
	return evbuffer_get_length(bufferevent_get_output(bev)) == 0;
}

static void
pair_free(struct pair *p)
{
	*p->prev = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	bufferevent_free(p->b[0]);
	bufferevent_free(p->b[1]);
	p->rl->counts.open--;
	free(p);
}

/* Passes on a half-close once b[i] has nothing left to write; ends the
 * pair when both directions are done. */
static void
pair_progress(struct pair *p)
{
	for (int i = 0; i < 2; i++)
		if (p->eof[1 - i] && !p->shut[i] && drained(p->b[i])) {
			(void)shutdown(bufferevent_getfd(p->b[i]), SHUT_WR);
			p->shut[i] = true;
		}
	if (p->eof[0] && p->eof[1] && drained(p->b[0]) && drained(p->b[1]))
		pair_free(p);
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct pair *p = arg;
	int i = side(p, bev);

	evbuffer_add_buffer(bufferevent_get_output(p->b[1 - i]),
	    bufferevent_get_input(bev));
}

static void
on_write(struct bufferevent *bev, void *arg)
{
	(void)bev;
	pair_progress(arg);
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct pair *p = arg;
	int i = side(p, bev);

	if (!(what & BEV_EVENT_EOF)) {
		/* An error (EPIPE, ECONNRESET): gone both ways. */
		pair_free(p);
		return;
	}
	evbuffer_add_buffer(bufferevent_get_output(p->b[1 - i]),
	    bufferevent_get_input(bev));
	p->eof[i] = true;
	bufferevent_disable(bev, EV_READ);
	pair_progress(p);
}

int
relay_channel(struct relay *rl, const char *first, size_t len, bool announce)
{
	int ch = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	long long limit = rl->fd_limit + (announce ? RELAY_FD_HEADROOM / 2 : 0);
	int e = EMFILE;

	if (ch < 0)
		return -errno;
	if (ch < limit &&
	    connect(ch, (struct sockaddr *)&rl->channel, sizeof(rl->channel)) ==
		0) {
		/* A fresh unix socket takes a few hundred bytes at once. */
		ssize_t n = send(ch, first, len, MSG_NOSIGNAL);
		if (n == (ssize_t)len)
			return ch;
		e = n < 0 ? errno : EAGAIN;
	} else if (ch < limit) {
		e = errno;
	}
	close(ch);
	return -e;
}

int
relay_hold(struct relay *rl, int fd)
{
	int r = fd >= rl->fd_limit               ? -EMFILE
	    : rl->counts.open >= RELAY_MAX_CONNS ? -EBUSY
						 : 0;

	if (r == 0)
		rl->counts.open++;
	return r;
}

void
relay_unhold(struct relay *rl)
{
	rl->counts.open--;
}

/* b[0] and b[1] as a pair on the relay's list; the slot already counted. */
static struct pair *
pair_add(struct relay *rl, struct bufferevent *in, struct bufferevent *out)
{
	struct pair *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->rl = rl;
	p->b[0] = in;
	p->b[1] = out;
	p->next = rl->pairs;
	p->prev = &rl->pairs;
	if (rl->pairs != NULL)
		rl->pairs->prev = &p->next;
	rl->pairs = p;
	bufferevent_setcb(in, on_read, on_write, on_event, p);
	bufferevent_setcb(out, on_read, on_write, on_event, p);
	bufferevent_enable(in, EV_READ | EV_WRITE);
	bufferevent_enable(out, EV_READ | EV_WRITE);
	return p;
}

int
relay_join(struct relay *rl, struct bufferevent *job, struct bufferevent *ch)
{
	struct pair *p;

	bufferevent_setwatermark(job, EV_READ, 0, 0);
	bufferevent_setwatermark(ch, EV_READ, 0, 0);
	if ((p = pair_add(rl, job, ch)) == NULL) {
		bufferevent_free(job);
		bufferevent_free(ch);
		relay_unhold(rl);
		return -ENOMEM;
	}
	rl->counts.joined++;
	/* What either side sent before the join goes on now. */
	for (int i = 0; i < 2; i++)
		if (evbuffer_get_length(bufferevent_get_input(p->b[i])) > 0)
			on_read(p->b[i], p);
	return 0;
}

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct relay *rl = arg;
	static const char line[] = HTTP1_ORIGIN_PREFIX "relay\r\n";
	struct bufferevent *in = NULL, *out = NULL;
	int ch = -1;

	(void)l;
	(void)sa;
	(void)salen;
	if (rl->counts.open >= RELAY_MAX_CONNS || fd >= rl->fd_limit ||
	    (ch = relay_channel(rl, line, sizeof(line) - 1, false)) < 0)
		goto refuse;
	in = bufferevent_socket_new(rl->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (in != NULL)
		fd = -1;
	out = bufferevent_socket_new(rl->base, ch, BEV_OPT_CLOSE_ON_FREE);
	if (out != NULL)
		ch = -1;
	if (in == NULL || out == NULL || pair_add(rl, in, out) == NULL)
		goto refuse;
	rl->counts.open++;
	rl->counts.accepted++;
	return;
refuse:
	rl->counts.refused++;
	if (in != NULL)
		bufferevent_free(in);
	if (out != NULL)
		bufferevent_free(out);
	if (fd >= 0)
		close(fd);
	if (ch >= 0)
		close(ch);
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct relay *rl = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(rl->listener);
}

/* accept itself failed (EMFILE, ENFILE, ENOMEM): the listener rests a
 * moment rather than spin on a socket that stays readable. */
static void
on_accept_error(struct evconnlistener *l, void *arg)
{
	struct relay *rl = arg;
	struct timeval tv = { 0, RETRY_MS * 1000 };

	evconnlistener_disable(l);
	evtimer_add(rl->retry, &tv);
}

int
relay_new(struct event_base *base, int listen_fd, const char *channel,
    struct relay **ret)
{
	struct relay *rl = calloc(1, sizeof(*rl));
	struct rlimit lim;

	if (rl == NULL) {
		close(listen_fd);
		return -ENOMEM;
	}
	rl->base = base;
	rl->channel.sun_family = AF_UNIX;
	if (strlen(channel) >= sizeof(rl->channel.sun_path)) {
		close(listen_fd);
		free(rl);
		return -ENAMETOOLONG;
	}
	memcpy(rl->channel.sun_path, channel, strlen(channel) + 1);
	rl->fd_limit =
	    getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
	    ? (long long)lim.rlim_cur - RELAY_FD_HEADROOM
	    : 1024 - RELAY_FD_HEADROOM;
	evutil_make_socket_nonblocking(listen_fd);
	rl->retry = evtimer_new(base, on_retry, rl);
	rl->listener = rl->retry != NULL
	    ? evconnlistener_new(base, on_accept, rl,
		  LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, listen_fd)
	    : NULL;
	if (rl->listener == NULL) {
		close(listen_fd);
		relay_free(rl);
		return -ENOMEM;
	}
	evconnlistener_set_error_cb(rl->listener, on_accept_error);
	*ret = rl;
	return 0;
}

void
relay_counts(const struct relay *rl, struct relay_counts *ret)
{
	*ret = rl != NULL ? rl->counts : (struct relay_counts){ 0 };
}

void
relay_free(struct relay *rl)
{
	if (rl == NULL)
		return;
	while (rl->pairs != NULL)
		pair_free(rl->pairs);
	if (rl->listener != NULL)
		evconnlistener_free(rl->listener);
	if (rl->retry != NULL)
		event_free(rl->retry);
	free(rl);
}
