/*
 * The broker's JSON request bodies, checked before anything else is
 * looked at: pure functions of the document, so that every handler
 * refuses the same way and the fuzzers reach them without a server. The
 * HTTP glue has already made the body a JSON object (or NULL, for an
 * optional body left empty). Each returns 0, or -EINVAL with what is
 * wrong appended to problems as {field, problem} pairs: the handler
 * answers 422 invalid_request with them. Unknown fields are refused
 * first, alone. The strings handed back belong to body.
 */
#ifndef CORDON_BROKER_BODIES_H
#define CORDON_BROKER_BODIES_H

#include <jansson.h>

/*
 * POST /v1/jobs: {"manifest": name, "canaries": count}, canaries
 * optional (*ret_canaries is -1 without it). -ERANGE, with nothing added
 * to problems, for a canaries that is not an integer from 0 to
 * CANARIES_MAX (the handler answers 422 invalid_canaries).
 */
int body_create_job(const json_t *body, const char **ret_manifest,
    json_int_t *ret_canaries, json_t *problems);

/*
 * POST /v1/jobs/{job}/revoke: {"reason": text}, reason optional and body
 * too (NULL); *ret_reason is NULL without one. A reason is at most
 * BODY_REASON_MAX bytes.
 */
#define BODY_REASON_MAX 120
int body_revoke_job(const json_t *body, const char **ret_reason,
    json_t *problems);

/*
 * POST /v1/token: {"capability": name, "params": {...}, "ttl_seconds": n}.
 * Checks the fields and the name; params and ttl_seconds are for the
 * capability's ceiling to judge (capability_within).
 */
int body_mint(const json_t *body, const char **ret_capability,
    json_t *problems);

/* POST /v1/introspect: {"token": value}. */
int body_introspect(const json_t *body, const char **ret_token,
    json_t *problems);

/* POST /v1/revoke (RFC 7009): {"token": value, "token_type_hint": any}. */
int body_revoke_token(const json_t *body, const char **ret_token,
    json_t *problems);

#endif
