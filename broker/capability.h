/*
 * Capabilities, not credentials: minting a token for one named capability
 * of a job's manifest, within the manifest's ceiling, and checking one.
 * The broker keeps only HMAC-SHA256(pepper, token); the pepper lives in a
 * file of its own beside the database, so a copy of the database alone
 * cannot even confirm a guessed token.
 */
#ifndef CORDON_BROKER_CAPABILITY_H
#define CORDON_BROKER_CAPABILITY_H

#include "store.h"

#include <jansson.h>

#define PEPPER_LEN 32

/* Loads path's pepper, writing a fresh one (mode 0600) when there is none:
 * 0 or -errno. *ret_created says which. */
int capability_pepper(const char *path, unsigned char pepper[PEPPER_LEN],
    bool *ret_created);

/* HMAC-SHA256(pepper, token): 0 or -EIO. */
int capability_hash(const unsigned char pepper[PEPPER_LEN], const char *token,
    size_t len, unsigned char out[STORE_HASH_LEN]);

/*
 * Checks a request for capability cap (the manifest's entry) against its
 * ceiling: every parameter of the ceiling named, each with an allowed
 * value, nothing else; a ttl_seconds no longer than the capability's.
 * Broader is refused, never narrowed. On refusal appends problems (the
 * parameters' first CAPABILITY_MAX_PROBLEMS, then one saying how many
 * more) and returns false. *ret_ttl gets the ttl to grant.
 */
#define CAPABILITY_MAX_PROBLEMS 16
bool capability_within(const json_t *cap, const json_t *params,
    const json_t *ttl, json_t *problems, int64_t *ret_ttl);

/*
 * Mints a token for job: writes its value (shown once, to the caller) into
 * value and fills row (free row->params). exp = min(now + ttl, deadline).
 * 0 or -errno.
 */
int capability_mint(const unsigned char pepper[PEPPER_LEN], const char *job,
    int64_t deadline, const json_t *cap, const json_t *params, int64_t ttl,
    char value[TOKEN_VALUE_MAX], struct token_row *row);

#endif
