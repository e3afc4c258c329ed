/*
 * Idle upstream connections, kept per job so that a new connection of the
 * job to the same host, port and scheme skips the resolver, the connect
 * and the TLS handshake. Only a job's own connections ever go back into
 * its pool: the address was checked then, by the same job's rule.
 */
#ifndef CORDON_PROXY_POOL_H
#define CORDON_PROXY_POOL_H

#include "egress.h"

#include <event2/bufferevent.h>
#include <stddef.h>
#include <sys/queue.h>

#define POOL_MAX 64
#define POOL_IDLE_MS 30000
/* A key: "host:port:tls". */
#define POOL_KEY_MAX (EGRESS_HOST_MAX + 16)

struct pooled;
TAILQ_HEAD(pooled_list, pooled);

/* One job's idle upstreams. */
struct pool {
	struct pooled_list idle;
	unsigned n; /* each holds a descriptor */
};

void pool_init(struct pool *pl);

/*
 * Keeps bev (taken: freed here when the pool is full or memory short)
 * under key, the connection's "host:port:tls", with addr, the address it
 * was made to. An idle upstream that speaks or closes is dropped, and
 * one with unread input is never kept.
 */
void pool_put(struct pool *pl, struct bufferevent *bev, const char *key,
    const char *addr);

/* An idle upstream for key (its callbacks to be set; addr filled), or
 * NULL. Those idle past POOL_IDLE_MS on the way are dropped. */
struct bufferevent *pool_take(struct pool *pl, const char *key, char *addr,
    size_t addrlen);

/* Drops the upstreams idle past POOL_IDLE_MS. */
void pool_expire(struct pool *pl);

/* Drops every one (the job closed). */
void pool_clear(struct pool *pl);

#endif
