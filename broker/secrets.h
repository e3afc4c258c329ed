/*
 * Secrets at the broker (issue 18): upstream credentials that a proxy
 * injects into a job's requests, so that none is ever inside a sandbox.
 * A secret is stored sealed (AES-256-GCM with a key file beside the
 * database, never in it; a random 96-bit nonce per seal; the name and
 * version as associated data, so a sealed value cannot be moved to
 * another name or version). The API gives metadata only; the value
 * leaves the broker only when a verifier (a proxy) releases it for a
 * running job whose manifest names it, and every release is audited
 * (name, version, job: never the value). A secret may instead hold an
 * issuer's configuration (issuers.h): then what is released is a
 * short-lived credential that issuer gave for the job, revoked at the
 * job's revoke.
 */
#ifndef CORDON_BROKER_SECRETS_H
#define CORDON_BROKER_SECRETS_H

#include "http_server.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SECRETS_KEY_LEN 32
#define SECRETS_NONCE_LEN 12
#define SECRETS_TAG_LEN 16
/* The longest value a secret may have, in bytes. */
#define SECRETS_VALUE_MAX 4096
/* A scan release's set (api.md, "Scan releases"): a static secret's
 * newest versions kept, the current one among them; an issuer secret's
 * live credentials at most (a proxy keeps 256 for the scan, guard.h's
 * GUARD_ISSUED_MAX: past this the release is refused whole). */
#define SECRETS_SCAN_VERSIONS 8
#define SECRETS_SCAN_ISSUED_MAX 256
/* A sealed value: nonce, ciphertext, tag. */
#define SECRETS_SEALED_MAX                                                     \
	(SECRETS_NONCE_LEN + SECRETS_VALUE_MAX + SECRETS_TAG_LEN)
/* What an issuer's sealed configuration starts with: a byte no static
 * value may hold (they are printable ASCII), then its JSON. */
#define SECRETS_ISSUER_PREFIX "\001issuer\n"
/* The key file's name under the broker's keys_dir. */
#define SECRETS_KEY_FILE "secrets.aead"

/*
 * Reads the sealing key at path (exactly SECRETS_KEY_LEN bytes), or writes
 * a fresh one (mode 0600) when there is none: 0, -EINVAL when the file is
 * not a key, or -errno. *ret_created says whether it was written now.
 */
int secrets_key_load(const char *path, unsigned char key[SECRETS_KEY_LEN],
    bool *ret_created);

/*
 * Seals len bytes of plain as version of name into out (cap bytes, at
 * least len + SECRETS_NONCE_LEN + SECRETS_TAG_LEN): 0 with the sealed
 * length in *ret_len, -EMSGSIZE when len exceeds SECRETS_VALUE_MAX or cap
 * is short, -EIO when OpenSSL fails.
 */
int secrets_seal(const unsigned char key[SECRETS_KEY_LEN], const char *name,
    int64_t version, const void *plain, size_t len, unsigned char *out,
    size_t cap, size_t *ret_len);

/*
 * Opens what secrets_seal made for the same name and version into out
 * (cap bytes; the value and a NUL): 0 with the value's length in
 * *ret_len, -EBADMSG when it does not authenticate (another key, name or
 * version, or altered bytes), -EMSGSIZE when cap is short. out is wiped
 * on failure.
 */
int secrets_unseal(const unsigned char key[SECRETS_KEY_LEN], const char *name,
    int64_t version, const unsigned char *sealed, size_t len, char *out,
    size_t cap, size_t *ret_len);

#define SECRETS_DIGEST_LEN 32

/*
 * The keyed digest of a value, as the store keeps a burned one
 * (store_burned_value_add): HMAC-SHA256 of its len bytes under a key
 * derived from key (HMAC-SHA256 of "cordon-burned-value" under key), so
 * the database alone checks no guess. 0, or -EIO when OpenSSL fails.
 */
int secrets_value_digest(const unsigned char key[SECRETS_KEY_LEN],
    const void *value, size_t len, unsigned char out[SECRETS_DIGEST_LEN]);

struct broker;
struct secret_meta;

/*
 * The rule of manifest m's egress that injects secret name, borrowed, or
 * NULL when none does.
 */
json_t *secrets_rule_injecting(const json_t *m, const char *name);

/*
 * The current version of secret name: its metadata in *ret_meta and its
 * kind in *ret_kind ("static", the issuer's kind, or "unsealable" when
 * this broker's key does not open it; a static string). 0, -ENOENT, or
 * the store's -errno.
 */
int secrets_kind(struct broker *b, const char *name,
    struct secret_meta *ret_meta, const char **ret_kind);

/*
 * Adds a problem to problems for each egress rule of manifest m (valid
 * otherwise) whose "inject" names a secret the store does not hold, or
 * that the store could not be asked about: a manifest is refused until
 * its secrets exist.
 */
void secrets_check_manifest(struct broker *b, const json_t *m,
    json_t *problems);

/*
 * Revokes at their issuers the upstream credentials held for job
 * (issuers_revoke_job), each audited as upstream_revoked,
 * upstream_expired or upstream_revoke_failed (job, secret, version,
 * kind, issuer, attempt, status or error, pending; never a value) by
 * actor: the new array of results. later: handed to the background
 * revocations instead (the lease sweep, a tripwire: no issuer stalls
 * them), NULL returned.
 */
json_t *secrets_revoke_upstream(struct broker *b, const char *job,
    const char *actor, bool later);

/* Audits and logs each upstream revocation of list (an
 * issuers_revoke_queue's outcome, borrowed) as secrets_revoke_upstream
 * does, by actor. */
void secrets_revoke_told(struct broker *b, const char *job, const char *actor,
    const json_t *list);

/*
 * Opens b->issuers: on a PostgreSQL store the credentials held are rows
 * of the database (every broker of the fleet sees them), else they are
 * kept in state_path; the background revocations audit each attempt in
 * the store. As issuers_open.
 */
int secrets_issuers_open(struct broker *b, const char *ca_file,
    const char *state_path, bool on_database);

/* The handlers of /v1/secrets and of a job's release; ctx is the struct
 * broker. */
void secrets_put(void *ctx, struct http_request *req,
    struct http_response *res);
void secrets_get(void *ctx, struct http_request *req,
    struct http_response *res);
void secrets_list(void *ctx, struct http_request *req,
    struct http_response *res);
void secrets_delete(void *ctx, struct http_request *req,
    struct http_response *res);
/* A release with ?purpose=scan&host=H[&addr=A] is a scan release
 * (credentials.md, "Bindings"): a bound static secret's value for the
 * proxy to scan the job's answers with, never to inject. */
void secrets_release(void *ctx, struct http_request *req,
    struct http_response *res);

#endif
