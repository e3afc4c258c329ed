/*
 * The store's second engine, on PostgreSQL (libpq): the functions of
 * store.h on a struct store_pg, which store.c calls when the store's
 * address is a postgresql:// (or postgres://) URI. Nothing but store.c
 * includes this header; the API code knows only store.h.
 */
#ifndef CORDON_BROKER_STORE_PG_H
#define CORDON_BROKER_STORE_PG_H

#include "store.h"

/* The schema store_pg writes; an older one is migrated at open, a newer
 * one refused with -EPROTONOSUPPORT. */
#define STORE_PG_SCHEMA_VERSION 6

struct store_pg;

/* Shared by both engines, so that their chains are one format: the
 * record hash, sha256 over the fields each followed by a newline, in
 * lowercase hex (job and actor NULL count as ""). In store.c. */
void store_audit_hash(const char *prev, int64_t seq, const char *ts,
    const char *event, const char *job, const char *actor, const char *detail,
    char out[65]);

/* Whether addr names a PostgreSQL database (postgresql:// or
 * postgres://) rather than a sqlite file. */
bool store_pg_is_url(const char *addr);

int store_pg_open(const char *url, struct store_pg **ret);
void store_pg_close(struct store_pg *s);
struct store_bind_over;
int store_pg_manifest_put(struct store_pg *s, const char *name,
    const char *text, const char *sha256, const char *actor,
    int64_t *ret_version, json_t **ret_prev, bool *ret_new,
    struct store_bind_over *ret_over);
int store_pg_manifest_get(struct store_pg *s, const char *name, int64_t version,
    struct manifest_version *ret);
int store_pg_job_create(struct store_pg *s, const struct job *j,
    const struct token_row *tokens, size_t ntokens, const char *actor);
int store_pg_job_get(struct store_pg *s, const char *id, struct job *ret,
    json_t **ret_tokens);
int store_pg_job_heartbeat(struct store_pg *s, const char *id,
    int64_t lease_seconds, struct job *ret);
int store_pg_job_revoke(struct store_pg *s, const char *id, const char *reason,
    const char *actor, struct revoke_result *ret);
int store_pg_jobs_lapsed(struct store_pg *s, int64_t now, size_t max,
    json_t **ret_ids);
int store_pg_mint_take(struct store_pg *s, const char *job, int64_t per_minute,
    int64_t burst, bool *ret_first, int64_t *ret_retry_after);
int store_pg_token_insert_async(struct store_pg *s, const struct token_row *t,
    int64_t max_tokens, const char *actor, store_done_fn on_done,
    void *done_arg);
int store_pg_token_lookup(struct store_pg *s,
    const unsigned char hash[STORE_HASH_LEN], struct token_row *ret,
    char ret_job_state[16]);
int store_pg_token_revoke(struct store_pg *s,
    const unsigned char hash[STORE_HASH_LEN], const char *actor,
    struct token_revoke_result *ret);
int store_pg_revocations_after(struct store_pg *s, int64_t seq, size_t max,
    json_t **ret);
int store_pg_revocation_head(struct store_pg *s, int64_t *ret);
int store_pg_watch_revocations(struct store_pg *s, store_seq_fn fn, void *arg);
int store_pg_watch_acks(struct store_pg *s, store_ack_fn fn, void *arg);
int store_pg_ack_publish(struct store_pg *s, const char *follower,
    int64_t acked, bool polling);
int store_pg_audit_async(struct store_pg *s, const char *event, json_t *detail);
int store_pg_manifest_list(struct store_pg *s, const char *after, size_t max,
    json_t **ret);
int store_pg_audit_list(struct store_pg *s, const char *job, int64_t after,
    size_t max, json_t **ret);
int store_pg_audit_verify(struct store_pg *s, bool *ret_ok,
    int64_t *ret_first_bad, int64_t *ret_records);
int store_pg_secret_put(struct store_pg *s, const char *name, int64_t version,
    const unsigned char *sealed, size_t len, const json_t *guard_hosts,
    int64_t budget, const char *actor);
int store_pg_secret_reflections(struct store_pg *s, const char *name,
    int64_t version, struct secret_reflections *ret);
int store_pg_secret_reflected(struct store_pg *s, const char *name,
    int64_t version, const char *job, const char *event, int64_t count,
    bool trip, const char *actor, struct secret_reflections *ret,
    bool *ret_burned_now);
int store_pg_secret_get(struct store_pg *s, const char *name,
    struct secret_meta *ret, unsigned char **ret_sealed, size_t *ret_len);
int store_pg_secret_list(struct store_pg *s, json_t **ret);
int store_pg_secret_manifests(struct store_pg *s, const char *name,
    json_t **ret);
int store_pg_secret_delete(struct store_pg *s, const char *name,
    const char *actor, bool *ret_found);
int store_pg_secret_released(struct store_pg *s, const char *name,
    int64_t version, const char *job, const char *actor);
int store_pg_secret_scanned(struct store_pg *s, const char *name,
    int64_t version, const char *job, const char *host, const char *addr,
    const char *actor);
int store_pg_bindings_list(struct store_pg *s, json_t **ret,
    int64_t *ret_epoch);
int store_pg_secrets_burned(struct store_pg *s, json_t **ret);
int store_pg_burned_value_add(struct store_pg *s, const unsigned char *digest,
    const char *secret, int64_t version, int64_t burned_at);
int store_pg_burned_value_find(struct store_pg *s, const unsigned char *digest,
    char *ret_secret, size_t cap, int64_t *ret_version, int64_t *ret_burned_at);
struct store_bind_over;
int store_pg_binding_seen(struct store_pg *s, const char *secret,
    const char *addr, const char *job, const char *actor, bool *ret_added,
    struct store_bind_over *ret_over);
struct issued_row;
int store_pg_upstream_put(struct store_pg *s, const struct issued_row *row,
    int64_t *ret_id);
int store_pg_upstream_find(struct store_pg *s, const char *job,
    const char *secret, int64_t version, int64_t now, struct issued_row *ret);
int store_pg_upstream_claim(struct store_pg *s, const char *job,
    int64_t lease_s, size_t max, struct issued_row **ret, size_t *n);
int store_pg_upstream_done(struct store_pg *s, int64_t id);
int store_pg_upstream_retry(struct store_pg *s, int64_t id, int64_t delay_s,
    int attempts);
int store_pg_upstream_pending(struct store_pg *s, int64_t *ret);
int store_pg_upstream_live(struct store_pg *s, const char *secret, int64_t now,
    size_t max, struct issued_row **ret, size_t *n);
struct secret_sealed;
int store_pg_secret_versions(struct store_pg *s, const char *name, size_t max,
    struct secret_sealed **ret, size_t *n);
int store_pg_secret_scanned_set(struct store_pg *s, const char *name,
    int64_t version, const char *job, const char *host, const char *addr,
    const json_t *values, const char *actor);

#endif
