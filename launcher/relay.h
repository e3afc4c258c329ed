/*
 * The relay of `cordon run`: the socket listening on 127.0.0.1:3128 inside
 * the job's network namespace, each connection from the job joined to a
 * connection of its own on the job's proxy channel. It never blocks the
 * loop it runs on and never takes the last descriptors: past
 * RELAY_MAX_CONNS connections at once, or when fewer than
 * RELAY_FD_HEADROOM descriptors remain under RLIMIT_NOFILE, or when the
 * channel's backlog is full, a connection is refused (closed at once) and
 * counted, so that the stop path always has the descriptors it needs.
 */
#ifndef CORDON_LAUNCHER_RELAY_H
#define CORDON_LAUNCHER_RELAY_H

#include <event2/event.h>
#include <stdint.h>

#define RELAY_MAX_CONNS 256 /* connections of one job at once */
#define RELAY_FD_HEADROOM 64 /* descriptors kept free for the rest */

struct relay;

struct relay_counts {
	uint64_t accepted; /* joined to the channel */
	uint64_t refused; /* closed at once: cap, descriptors, channel */
	unsigned open; /* open now */
};

/*
 * Relays the connections of listen_fd (a listening socket, taken: it is
 * closed with the relay, and on failure) to the unix socket at channel,
 * on base. 0 and *ret, or -errno.
 */
int relay_new(struct event_base *base, int listen_fd, const char *channel,
    struct relay **ret);

/* What the relay did so far. */
void relay_counts(const struct relay *rl, struct relay_counts *ret);

/* Closes the listener and every connection at once. NULL is fine. */
void relay_free(struct relay *rl);

#endif
