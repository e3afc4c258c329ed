/*
 * The revocation feed's followers. Proxies (verifiers) long-poll
 * GET /v1/revocations?after=SEQ; a poll with after >= seq acknowledges
 * everything up to seq. A revoke answers once every connected follower has
 * acknowledged its sequence number or has been declared gone, at most
 * FEED_ACK_WAIT_MS later: "no window" means the caller learns which.
 *
 * Waiting holds no thread: a poll or a revoke that must wait defers its
 * HTTP request, and the feed resumes it when what it waits for happens or
 * its deadline passes (the feed's own timer thread keeps the deadlines).
 */
#ifndef CORDON_BROKER_FEED_H
#define CORDON_BROKER_FEED_H

#include "http_server.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define FEED_ACK_WAIT_MS 2000
#define FEED_MAX_WAIT_S 30
#define FEED_FOLLOWERS_MAX 64

struct feed;

/* head: the latest sequence number already committed. NULL on failure. */
struct feed *feed_new(int64_t head);
/* Stops the timer thread and frees; every waiter must be gone (feed_stop
 * resumed them and their requests ended). NULL is fine. */
void feed_free(struct feed *f);

/*
 * A poll by follower name, acknowledging after. Returns 1 when the answer
 * can be given now (a sequence number above after exists, wait_s is 0, or
 * the feed is stopping), 0 when req was deferred until there is one or
 * wait_s has passed, -1 when the follower table is full. Either way the
 * handler then (now, or when resumed) calls feed_poll_done.
 */
int feed_poll(struct feed *f, const char *name, int64_t after, int wait_s,
    struct http_request *req);
/*
 * A poll by a watcher: as feed_poll, but nobody's acknowledgement, so no
 * revoke waits for it, and no room taken in the follower table. Returns
 * 1 when the answer can be given now, 0 when req was deferred; the
 * handler then answers up to feed_head.
 */
int feed_watch(struct feed *f, int64_t after, int wait_s,
    struct http_request *req);
/* The latest sequence number published. */
int64_t feed_head(struct feed *f);
/* The watchers' polls waiting now, for /metrics and /healthz. */
unsigned feed_watchers(struct feed *f);

/* Ends name's poll and returns the head it can read up to. */
int64_t feed_poll_done(struct feed *f, const char *name);

/* A revocation committed with sequence number seq: wakes the pollers. */
void feed_publish(struct feed *f, int64_t seq);

/*
 * Waits for the acknowledgements of seq: 1 when every connected follower
 * already has it (answer now), 0 when req was deferred until they do or
 * FEED_ACK_WAIT_MS pass. Then feed_acks_result gives the answer.
 */
int feed_wait_acks(struct feed *f, int64_t seq, struct http_request *req);

/*
 * {"followers": n, "acknowledged": [names], "gone": [names]} for seq;
 * connected followers without it are declared gone (they count as
 * connected again when they next poll).
 */
json_t *feed_acks_result(struct feed *f, int64_t seq);

/* The number of connected followers, for /metrics and /healthz. */
unsigned feed_followers(struct feed *f);

/* Resumes every waiting request and defers no more (shutdown). */
void feed_stop(struct feed *f);

/*
 * A fleet: brokers sharing one database share their followers. fn(arg,
 * name, acked, polling) is called, outside the feed's lock, whenever a
 * follower of this broker acknowledges or starts or ends a poll, for the
 * other brokers to hear (it must not block). Set before serving.
 */
typedef void (
    *feed_share_fn)(void *arg, const char *name, int64_t ack, bool polling);
void feed_set_share(struct feed *f, feed_share_fn fn, void *arg);

/*
 * What another broker of the fleet said of its follower name: it has
 * acknowledged acked and is (or is no longer) polling there. A revoke
 * here waits for it as for one of this broker's own; a poll here from
 * that name supersedes it.
 */
void feed_remote(struct feed *f, const char *name, int64_t acked, bool polling);

#endif
