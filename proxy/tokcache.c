/*
 * The cache of tokcache.h: a small array per job searched linearly (16
 * at most), keyed by SHA-256 of the token, the oldest entry replaced
 * when it is full; beside it a ring of the ids the feed revoked alone.
 */
#include "tokcache.h"

#include "token.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

static int
hash_of(const char *tok, unsigned char out[TOKCACHE_HASH_LEN])
{
	unsigned int n = 0;

	if (EVP_Digest(tok, strlen(tok), out, &n, EVP_sha256(), NULL) != 1 ||
	    n != TOKCACHE_HASH_LEN)
		return -EIO;
	return 0;
}

static void
entry_drop(struct tokcache *c, size_t i)
{
	json_decref(c->e[i].params);
	explicit_bzero(&c->e[i], sizeof(c->e[i]));
	/* Keep the array dense: the last one takes its place. */
	if (i + 1 < c->n) {
		c->e[i] = c->e[c->n - 1];
		explicit_bzero(&c->e[c->n - 1], sizeof(c->e[0]));
	}
	c->n--;
}

void
tokcache_init(struct tokcache *c)
{
	memset(c, 0, sizeof(*c));
}

static ssize_t
find(const struct tokcache *c, const unsigned char hash[TOKCACHE_HASH_LEN],
    const char *aud)
{
	for (size_t i = 0; i < c->n; i++)
		if (memcmp(c->e[i].hash, hash, TOKCACHE_HASH_LEN) == 0 &&
		    strcmp(c->e[i].aud, aud) == 0)
			return (ssize_t)i;
	return -1;
}

/* Whether the feed revoked token_id alone, as far as the ring says. */
static bool
revoked(const struct tokcache *c, const char *token_id)
{
	unsigned n = c->nrevoked < TOKCACHE_REVOKED_MAX ? c->nrevoked
							: TOKCACHE_REVOKED_MAX;

	for (unsigned i = 0; i < n; i++)
		if (strcmp(c->revoked[i], token_id) == 0)
			return true;
	return false;
}

int
tokcache_put(struct tokcache *c, const char *tok, const char *token_id,
    const char *aud, const char *capability, json_t *params, int64_t exp,
    int64_t now, int64_t mono)
{
	unsigned char hash[TOKCACHE_HASH_LEN];
	struct tokcache_entry *e;
	ssize_t at;

	/* Without an id the feed could not drop it: not kept. */
	if (token_id == NULL || token_id[0] == '\0' ||
	    strlen(token_id) > TOKCACHE_ID_MAX || aud == NULL ||
	    capability == NULL || strlen(aud) > TOKCACHE_AUD_MAX ||
	    aud[0] == '\0' || strlen(capability) >= TOKCACHE_CAP_MAX ||
	    exp <= now)
		return -EINVAL;
	/* An answer older than the feed's word on the token. */
	if (revoked(c, token_id) ||
	    (c->forgot &&
		(mono - c->forgot_at < TOKCACHE_GUARD_S ||
		    mono < c->forgot_at)))
		return -ESTALE;
	if (hash_of(tok, hash) < 0)
		return -EIO;
	at = find(c, hash, aud);
	if (at >= 0)
		entry_drop(c, (size_t)at);
	if (c->n == TOKCACHE_MAX) {
		size_t oldest = 0;
		for (size_t i = 1; i < c->n; i++)
			if (c->e[i].put_at < c->e[oldest].put_at)
				oldest = i;
		entry_drop(c, oldest);
	}
	e = &c->e[c->n++];
	memcpy(e->hash, hash, sizeof(hash));
	explicit_bzero(hash, sizeof(hash));
	memcpy(e->token_id, token_id, strlen(token_id) + 1);
	memcpy(e->aud, aud, strlen(aud) + 1);
	memcpy(e->capability, capability, strlen(capability) + 1);
	e->params = json_incref(params);
	e->exp = exp;
	e->put_at = mono;
	c->puts++;
	return 0;
}

const struct tokcache_entry *
tokcache_get(struct tokcache *c, const char *tok, const char *aud, int64_t now,
    int64_t mono, int64_t max_age)
{
	unsigned char hash[TOKCACHE_HASH_LEN];
	ssize_t at;

	if (max_age <= 0 || c->n == 0 || hash_of(tok, hash) < 0) {
		c->misses++;
		return NULL;
	}
	at = find(c, hash, aud);
	explicit_bzero(hash, sizeof(hash));
	if (at < 0) {
		c->misses++;
		return NULL;
	}
	/* Past the token's exp, or older than max_age (a clock that went
	 * back counts as stale too): asked again. */
	const struct tokcache_entry *e = &c->e[at];
	if (e->exp <= now || mono - e->put_at >= max_age || mono < e->put_at) {
		entry_drop(c, (size_t)at);
		c->misses++;
		return NULL;
	}
	c->hits++;
	return e;
}

size_t
tokcache_revoke(struct tokcache *c, const char *token_id, int64_t mono)
{
	size_t dropped = 0;

	if (token_id == NULL || token_id[0] == '\0' ||
	    strlen(token_id) > TOKCACHE_ID_MAX) {
		/* No id to match: every entry goes (fail closed). */
		dropped = c->n;
		tokcache_clear(c);
		return dropped;
	}
	for (size_t i = c->n; i > 0; i--)
		if (strcmp(c->e[i - 1].token_id, token_id) == 0) {
			entry_drop(c, i - 1);
			dropped++;
		}
	if (!revoked(c, token_id)) {
		if (c->nrevoked >= TOKCACHE_REVOKED_MAX) {
			c->forgot = true;
			c->forgot_at = mono;
		}
		snprintf(c->revoked[c->nrevoked++ % TOKCACHE_REVOKED_MAX],
		    sizeof(c->revoked[0]), "%s", token_id);
	}
	return dropped;
}

size_t
tokcache_size(const struct tokcache *c)
{
	return c->n;
}

void
tokcache_clear(struct tokcache *c)
{
	while (c->n > 0)
		entry_drop(c, c->n - 1);
}
