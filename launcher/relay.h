/*
 * The relay of `cordon run`: the socket listening on 127.0.0.1:3128 inside
 * the job's network namespace, each connection from the job joined to a
 * connection of its own on the job's proxy channel. It never blocks the
 * loop it runs on and never takes the last descriptors: past
 * RELAY_MAX_CONNS connections at once, or when fewer than
 * RELAY_FD_HEADROOM descriptors remain under RLIMIT_NOFILE, or when the
 * channel's backlog is full, a connection is refused (closed at once) and
 * counted, so that the stop path always has the descriptors it needs.
 * Each connection on the channel starts with the launcher's line
 * (http1.h: "CORDON/1 relay"), so the proxy knows which way it came and
 * nothing the job sends can claim another way. The capture joins its
 * connections here once it has written its own line (relay_join).
 */
#ifndef CORDON_LAUNCHER_RELAY_H
#define CORDON_LAUNCHER_RELAY_H

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RELAY_MAX_CONNS 256 /* connections of one job at once */
#define RELAY_FD_HEADROOM 64 /* descriptors kept free for the rest */

struct relay;

struct relay_counts {
	uint64_t accepted; /* joined to the channel */
	uint64_t refused; /* closed at once: cap, descriptors, channel */
	unsigned open; /* open now: pairs, and slots held by the capture */
	uint64_t joined; /* pairs the capture joined (not in accepted) */
};

/*
 * Relays the connections of listen_fd (a listening socket, taken: it is
 * closed with the relay, and on failure) to the unix socket at channel,
 * on base. 0 and *ret, or -errno.
 */
int relay_new(struct event_base *base, int listen_fd, const char *channel,
    struct relay **ret);

/*
 * The relay's share with the capture (capture.h), so that one cap and one
 * descriptor headroom hold for every connection the launcher keeps for
 * the job. A connection another part of the launcher accepted (its fd)
 * first takes a slot: 0, or -EMFILE (fd at or past the headroom) or
 * -EBUSY (RELAY_MAX_CONNS open or held); the caller counts its refusals.
 */
int relay_hold(struct relay *rl, int fd);

/* Gives back a slot relay_hold took, for a connection that ended before
 * it was joined. */
void relay_unhold(struct relay *rl);

/*
 * A connection of its own on the channel, connected without waiting, with
 * first[0..len) (the launcher's line, http1.h, and anything after it)
 * sent: the socket (non-blocking, close-on-exec), or -errno (-EMFILE
 * within the headroom, -EAGAIN: the channel's backlog is full). A short
 * one (announce: a refusal told to the proxy, a few of them at once at
 * most) may take half the headroom: a job that holds every connection
 * it may still has its refusals logged.
 */
int relay_channel(struct relay *rl, const char *first, size_t len,
    bool announce);

/*
 * Joins job (a connection held by relay_hold) and ch (on the channel,
 * from relay_channel) as one of the relay's pairs: both taken, bytes
 * already read on either side passed on, half-closes as the relay's own,
 * closed with the relay. The held slot becomes the pair's. 0, or -ENOMEM
 * (both freed, the slot given back).
 */
int relay_join(struct relay *rl, struct bufferevent *job,
    struct bufferevent *ch);

/* What the relay did so far. */
void relay_counts(const struct relay *rl, struct relay_counts *ret);

/* Closes the listener and every connection at once. NULL is fine. */
void relay_free(struct relay *rl);

#endif
