/*
 * A job's positive introspection answers (egress.md, "Tokens"): a token
 * the broker said is active, this job's and for an audience is not asked
 * about again while the entry lives, so that a kept-alive tunnel does
 * not make one broker call per request. Bookkeeping only, no I/O, no
 * clock of its own (the caller passes both clocks).
 *
 * An entry is keyed by the token's SHA-256 (the token itself is not
 * kept) and the audience it was judged for; it holds the broker's
 * answer (capability, params, exp) and the token's id (tok_...). It is
 * good only while the token's exp (the broker's, wall-clock seconds) is
 * ahead, and for at most max_age seconds (monotonic) since the broker
 * said so. Refusals are never put: an inactive token, a canary, another
 * job's token reach the broker every time. The caller empties the cache
 * when the job's channel closes (its revoke from the feed among the
 * reasons) and when the feed is lost, drops a token the feed revoked
 * alone (tokcache_revoke, by id, before the feed is acknowledged), and
 * asks it nothing while the feed is not current.
 *
 * An answer the broker gave before a token's revoke may come after the
 * feed's word of it (another connection): so the cache remembers the
 * last TOKCACHE_REVOKED_MAX ids revoked alone and never puts one of
 * them; once one of those is forgotten, it puts nothing for
 * TOKCACHE_GUARD_S (longer than any call to the broker lasts).
 */
#ifndef CORDON_PROXY_TOKCACHE_H
#define CORDON_PROXY_TOKCACHE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A job's entries: past it, the oldest is replaced (a job uses a few). */
#define TOKCACHE_MAX 16
#define TOKCACHE_HASH_LEN 32
#define TOKCACHE_AUD_MAX 64
#define TOKCACHE_CAP_MAX 72
#define TOKCACHE_ID_MAX 63 /* a token's id, as the feed names it */
#define TOKCACHE_REVOKED_MAX 16
#define TOKCACHE_GUARD_S 60

struct tokcache_entry {
	unsigned char hash[TOKCACHE_HASH_LEN]; /* SHA-256 of the token */
	char token_id[TOKCACHE_ID_MAX + 1];
	char aud[TOKCACHE_AUD_MAX + 1];
	char capability[TOKCACHE_CAP_MAX];
	json_t *params; /* the broker's, a reference held */
	int64_t exp; /* the token's expiry, wall-clock seconds */
	int64_t put_at; /* monotonic seconds */
};

struct tokcache {
	struct tokcache_entry e[TOKCACHE_MAX];
	size_t n;
	/* Ids the feed revoked alone, a ring; kept by tokcache_clear. */
	char revoked[TOKCACHE_REVOKED_MAX][TOKCACHE_ID_MAX + 1];
	unsigned nrevoked;
	bool forgot; /* an id left the ring, at forgot_at (monotonic) */
	int64_t forgot_at;
	uint64_t hits, misses, puts; /* for /metrics */
};

/* An empty cache (a zeroed one is one too). */
void tokcache_init(struct tokcache *c);

/*
 * Keeps the broker's positive answer on tok (TOKEN_LEN bytes and a NUL),
 * whose id is token_id, for audience aud: capability, params (NULL: none;
 * a reference is taken) and exp (wall-clock seconds). now is wall-clock,
 * mono monotonic seconds. 0, or (nothing kept) -EINVAL when token_id, aud
 * or capability is missing or does not fit or exp is not ahead of now,
 * -ESTALE when the feed revoked token_id (or an id was forgotten less
 * than TOKCACHE_GUARD_S ago), -EIO when the hash fails.
 */
int tokcache_put(struct tokcache *c, const char *tok, const char *token_id,
    const char *aud, const char *capability, json_t *params, int64_t exp,
    int64_t now, int64_t mono);

/*
 * The feed revoked the token whose id is token_id alone: its entries (one
 * an audience) are dropped and the id is never put again. mono is
 * monotonic seconds. Returns how many entries were dropped.
 */
size_t tokcache_revoke(struct tokcache *c, const char *token_id, int64_t mono);

/*
 * The entry for tok and aud that is still good at now (wall-clock) and
 * mono (monotonic): put less than max_age seconds ago and before its
 * exp. NULL otherwise (max_age 0: always); an entry found stale is
 * dropped. Counts a hit or a miss.
 */
const struct tokcache_entry *tokcache_get(struct tokcache *c, const char *tok,
    const char *aud, int64_t now, int64_t mono, int64_t max_age);

/* How many entries are held (stale ones included until dropped). */
size_t tokcache_size(const struct tokcache *c);

/* Drops every entry (hashes wiped, params released); counters and the
 * revoked ids kept. */
void tokcache_clear(struct tokcache *c);

#endif
