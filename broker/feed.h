/*
 * The revocation feed's followers. Proxies (verifiers) long-poll
 * GET /v1/revocations?after=SEQ; a poll with after >= seq acknowledges
 * everything up to seq. A revoke returns once every connected follower has
 * acknowledged its sequence number or has been declared gone, at most
 * FEED_ACK_WAIT_MS later: "no window" means the caller learns which.
 */
#ifndef CORDON_BROKER_FEED_H
#define CORDON_BROKER_FEED_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define FEED_ACK_WAIT_MS 2000
#define FEED_MAX_WAIT_S 30
#define FEED_FOLLOWERS_MAX 64

struct feed;

/* head: the latest sequence number already committed. */
struct feed *feed_new(int64_t head);
void feed_free(struct feed *f);

/*
 * A poll by follower name: acknowledges after, then waits up to wait_s
 * for a sequence number above it (or for feed_stop). Returns the head it
 * saw: a head above after means there is something to read. -1 when the
 * follower table is full.
 */
int64_t feed_poll(struct feed *f, const char *name, int64_t after, int wait_s);

/* A revocation committed with sequence number seq: wakes the pollers. */
void feed_publish(struct feed *f, int64_t seq);

/*
 * Waits until every connected follower has acknowledged seq, or until
 * FEED_ACK_WAIT_MS have passed; those that did not are declared gone
 * (they count as connected again when they next poll). Returns
 * {"followers": n, "acknowledged": [names], "gone": [names]}.
 */
json_t *feed_wait_acks(struct feed *f, int64_t seq);

/* The number of connected followers, for /metrics and /healthz. */
unsigned feed_followers(struct feed *f);

/* Wakes every waiting poll and refuses to wait any more (shutdown). */
void feed_stop(struct feed *f);

#endif
