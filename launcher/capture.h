/*
 * The launcher's side of a job's network, beside the relay: the job's
 * resolver (dns.h) on 127.0.0.53:53 inside the job's network namespace,
 * and the transparent capture: AnyIP routes (local 0.0.0.0/0 and ::/0
 * dev lo: every destination is the namespace's own), a listener on each
 * port the rules name, which takes a connection to a name's synthetic
 * address to the job's channel for the name dialled (TLS as a CONNECT,
 * plain HTTP as requests to that name) and then joins it to the relay's
 * pairs, and an observer of what the namespace refused (a connect or a
 * datagram where nothing listens), each told to the proxy as a decision.
 * All made there before the job's command runs (the sandbox's in_netns
 * hook) and served on the launcher's loop until the stop path cuts the
 * job's network. It holds no policy: the names and ports come from the
 * job's egress rules, and every connection still goes to the proxy to be
 * judged.
 */
#ifndef CORDON_LAUNCHER_CAPTURE_H
#define CORDON_LAUNCHER_CAPTURE_H

#include "dns.h"
#include "relay.h"

#include <event2/event.h>
#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

struct jobnet;

/* The job's network from its egress rules (borrowed): 0 and *ret, or
 * -errno. */
int jobnet_new(const json_t *rules, struct jobnet **ret);

/*
 * The job's network from the egress rules of the manifest version the
 * broker's job answer (borrowed) names, asked of the broker at base with
 * the launcher's key: 0 and *ret, or -errno (-EIO: no such answer). The
 * names are all the launcher needs; the proxy alone judges the rules.
 */
int jobnet_fetch(const char *base, const char *key, const json_t *job,
    struct jobnet **ret);

/* The sandbox's in_netns hook (arg: a struct jobnet, NULL refused with
 * -ENODATA): the sockets inside the namespace of pid. 0 or -errno. */
int jobnet_enter(pid_t pid, void *arg);

/* Serves them on base, the capture's connections to the job's channel
 * through relay (borrowed: jobnet_stop n before relay_free it), under its
 * cap and descriptor headroom. NULL is -EINVAL. 0 or -errno. */
int jobnet_start(struct jobnet *n, struct event_base *base,
    struct relay *relay);

struct capture_counts {
	uint64_t captured; /* joined to the relay: TLS the proxy accepted,
			      plain HTTP (judged request by request) */
	uint64_t refused; /* closed: no name, no room, the proxy's no */
	/* Connects and datagrams the namespace refused (nothing listens
	 * there), seen by the observer and told to the proxy. */
	uint64_t direct;
	/* Refusals not told to the proxy one by one (too many at once, or
	 * no descriptor): told later as one line with their count. */
	uint64_t unannounced;
	/* Connects and datagrams to the job's own loopback (127.0.0.0/8
	 * but the names' addresses, ::1) that nothing listens on: no
	 * egress, so not told to the proxy. */
	uint64_t local_closed;
	/* Times a listener rested because accept itself failed (the
	 * launcher out of descriptors: EMFILE, ENFILE). */
	uint64_t accept_paused;
};

/* What the capture did so far. NULL is fine. */
void jobnet_capture_counts(const struct jobnet *n, struct capture_counts *ret);

/* What the resolver did so far. NULL is fine. */
void jobnet_dns_counts(const struct jobnet *n, struct dns_counts *ret);

/* Closes the sockets (the job's resolver is gone). NULL is fine. */
void jobnet_stop(struct jobnet *n);

/* jobnet_stop, then frees it. NULL is fine. */
void jobnet_free(struct jobnet *n);

#endif
