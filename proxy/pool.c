/*
 * The idle pool of pool.h: a list, newest first, searched linearly
 * (POOL_MAX at most). An entry owns its bufferevent; its callbacks only
 * drop it, since an idle HTTP/1.1 upstream has nothing to say.
 */
#include "pool.h"

#include "util.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pooled {
	TAILQ_ENTRY(pooled) link;
	struct pool *pl;
	struct bufferevent *bev;
	struct timespec since;
	char key[POOL_KEY_MAX];
	char addr[64];
};

void
pool_init(struct pool *pl)
{
	TAILQ_INIT(&pl->idle);
	pl->n = 0;
}

static void
pooled_free(struct pooled *e)
{
	TAILQ_REMOVE(&e->pl->idle, e, link);
	e->pl->n--;
	bufferevent_free(e->bev);
	free(e);
}

/* An idle upstream that speaks, or closes, is no longer of use. */
static void
on_pooled_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	pooled_free(arg);
}

static void
on_pooled_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	pooled_free(arg);
}

void
pool_put(struct pool *pl, struct bufferevent *bev, const char *key,
    const char *addr)
{
	struct pooled *e;

	/* Unread bytes would be the next request's answer. */
	if (pl->n >= POOL_MAX ||
	    evbuffer_get_length(bufferevent_get_input(bev)) > 0 ||
	    (e = calloc(1, sizeof(*e))) == NULL) {
		bufferevent_free(bev);
		return;
	}
	e->pl = pl;
	e->bev = bev;
	clock_gettime(CLOCK_MONOTONIC, &e->since);
	snprintf(e->key, sizeof(e->key), "%s", key);
	snprintf(e->addr, sizeof(e->addr), "%s", addr);
	bufferevent_setcb(bev, on_pooled_read, NULL, on_pooled_event, e);
	bufferevent_enable(bev, EV_READ);
	TAILQ_INSERT_HEAD(&pl->idle, e, link);
	pl->n++;
}

struct bufferevent *
pool_take(struct pool *pl, const char *key, char *addr, size_t addrlen)
{
	struct pooled *e, *next;
	struct bufferevent *bev;

	for (e = TAILQ_FIRST(&pl->idle); e != NULL; e = next) {
		next = TAILQ_NEXT(e, link);
		if (elapsed_ms(&e->since) > POOL_IDLE_MS) {
			pooled_free(e);
			continue;
		}
		if (strcmp(e->key, key) != 0)
			continue;
		bev = e->bev;
		snprintf(addr, addrlen, "%s", e->addr);
		TAILQ_REMOVE(&pl->idle, e, link);
		pl->n--;
		free(e);
		return bev;
	}
	return NULL;
}

void
pool_expire(struct pool *pl)
{
	struct pooled *e, *next;

	for (e = TAILQ_FIRST(&pl->idle); e != NULL; e = next) {
		next = TAILQ_NEXT(e, link);
		if (elapsed_ms(&e->since) > POOL_IDLE_MS)
			pooled_free(e);
	}
}

void
pool_clear(struct pool *pl)
{
	while (!TAILQ_EMPTY(&pl->idle))
		pooled_free(TAILQ_FIRST(&pl->idle));
}
