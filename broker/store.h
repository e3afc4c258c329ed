/*
 * The broker's store: manifests, jobs, tokens, the revocation sequence and
 * the audit chain. This header is the whole interface the API code sees;
 * store.c implements it on sqlite3 (one host), and store_pg.c on
 * PostgreSQL (a fleet: several brokers on one database), chosen by the
 * address store_open is given.
 *
 * Every function that grants or revokes commits durably before it
 * returns (sqlite: WAL, synchronous=FULL), together with its audit
 * record. Writes from many threads are grouped into one transaction each
 * (a group commit), so one fsync serves many callers. Every function
 * returns 0 or -errno; none logs.
 */
#ifndef CORDON_BROKER_STORE_H
#define CORDON_BROKER_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define STORE_HASH_LEN 32 /* HMAC-SHA256 of a token */
#define TOKEN_VALUE_MAX 48 /* a token's value and its NUL */
/* The schema this store writes; an older one is migrated at open. */
#define STORE_SCHEMA_VERSION 4
/* Canaries: tokens of this capability are never a job's to use; any
 * use revokes the job (a tripwire). They do not count toward a job's
 * mint ceiling: the broker plants them, the job does not ask. */
#define CANARY_CAPABILITY "cordon.canary"

struct store;

/*
 * Opens (creating if needed) the database at path: 0 or -errno. A path
 * that is a postgresql:// (or postgres://) URI opens PostgreSQL instead
 * (store_pg.c: its own schema version, same rules; -ENOTCONN when the
 * server cannot be reached). A
 * database of schema version 1 (before the mint ceiling), 2 (before
 * single-token revocations on the feed) or 3 (before the secrets'
 * bindings: they are backfilled from every stored manifest version) is
 * migrated in one transaction; one of a newer version than
 * STORE_SCHEMA_VERSION is refused with -EPROTONOSUPPORT and left as it
 * is.
 */
int store_open(const char *path, struct store **ret);
/* Whether addr is a PostgreSQL URI (postgresql:// or postgres://). */
bool store_is_postgresql(const char *addr);
/* Finishes the writes under way and closes. NULL is fine. */
void store_close(struct store *s);

/* --- manifests ---------------------------------------------------------- */

struct manifest_version {
	int64_t version;
	char sha256[65];
	json_t *body; /* owned */
	int64_t created;
};

/*
 * Stores body (canonical text with its sha256) as the next version of name,
 * unless it equals the current one. *ret_version gets the version now
 * current, *ret_prev the previous current body (NULL for a first version,
 * json_decref it), *ret_new whether a version was added.
 */
int store_manifest_put(struct store *s, const char *name, const char *text,
    const char *sha256, const char *actor, int64_t *ret_version,
    json_t **ret_prev, bool *ret_new);

/*
 * As store_manifest_put; its injecting rules' hosts bound in the same
 * write, and past the bindings' caps (below) -EDQUOT, nothing written,
 * with the cap passed into *ret_over (NULL: not said).
 */
struct store_bind_over;
int store_manifest_put_over(struct store *s, const char *name, const char *text,
    const char *sha256, const char *actor, int64_t *ret_version,
    json_t **ret_prev, bool *ret_new, struct store_bind_over *ret_over);

/* Version 0 means the current one. -ENOENT when there is none. */
int store_manifest_get(struct store *s, const char *name, int64_t version,
    struct manifest_version *ret);
void manifest_version_free(struct manifest_version *m);

/*
 * The manifests by name (bytewise ascending), those named after after
 * (NULL or "" for the first), at most max: a new array of {name, version,
 * sha256, created, updated} (version and sha256 the current one, created
 * the first version's time, updated the current one's).
 */
int store_manifest_list(struct store *s, const char *after, size_t max,
    json_t **ret);

/* --- jobs --------------------------------------------------------------- */

struct job {
	char id[40];
	char manifest[72];
	int64_t manifest_version;
	char state[16]; /* "running" or "revoked" */
	int64_t created, deadline, lease_expires;
	char stop_reason[128]; /* "" while running */
	int64_t tokens_revoked;
	int64_t
	    tokens_minted; /* ever, canaries left out: the ceiling's count */
	int64_t revoked_at; /* when it ended (unix seconds); 0 while running */
};

/* A token row, as stored: never its value, only its HMAC. */
struct token_row {
	unsigned char hash[STORE_HASH_LEN];
	char id[40];
	char job[40];
	char capability[72];
	char *params; /* JSON text; owned */
	char audience[136];
	int64_t iat, exp;
	char state[16]; /* "active", "revoked" */
};

/*
 * Creates job j (state "running") with the tokens minted at its start,
 * each audited and counted (canaries are not). j->id must be fresh.
 */
int store_job_create(struct store *s, const struct job *j,
    const struct token_row *tokens, size_t ntokens, const char *actor);

/* -ENOENT for an unknown job. *ret_tokens (may be NULL) gets an array of
 * {id, capability, params, aud, iat, exp, state}. */
int store_job_get(struct store *s, const char *id, struct job *ret,
    json_t **ret_tokens);

/* Extends a running job's lease to now + lease_seconds (never past its
 * deadline): 0, -ENOENT, or -ESTALE when the job is revoked. */
int store_job_heartbeat(struct store *s, const char *id, int64_t lease_seconds,
    struct job *ret);

struct revoke_result {
	int64_t tokens_revoked;
	int64_t seq; /* the revocation's sequence number */
	bool already; /* it had been revoked before this call */
	char reason[128];
};

/*
 * Revokes job id and every token of it in one transaction with the
 * sequence number and the audit record. Revoking a revoked job changes
 * nothing and answers as the first time did. -ENOENT for an unknown job.
 */
int store_job_revoke(struct store *s, const char *id, const char *reason,
    const char *actor, struct revoke_result *ret);

/* Ids of running jobs whose lease or deadline is before now, at most max:
 * a new array of strings. */
int store_jobs_lapsed(struct store *s, int64_t now, size_t max,
    json_t **ret_ids);

/* --- tokens ------------------------------------------------------------- */

/* Called in the writer thread once an asynchronous write committed (or
 * failed): result is 0 or -errno. */
typedef void (*store_done_fn)(void *arg, int result);

/*
 * Queues the insert of a minted token of a running job, audited, and
 * returns 0 (or -errno, and on_done is never called). on_done(done_arg,
 * result) runs after the commit; result is -ESTALE when the job was no
 * longer running (revoked meanwhile), -EDQUOT when the job has minted
 * max_tokens already: then nothing is stored. The count is checked and
 * raised in the transaction of the insert, so parallel mints never pass
 * it. t and actor must stay valid until then.
 */
int store_token_insert_async(struct store *s, const struct token_row *t,
    int64_t max_tokens, const char *actor, store_done_fn on_done,
    void *done_arg);

/*
 * Takes one mint from job's bucket (burst mints, given back at per_minute
 * a minute) held in the database, one for every broker of a fleet: 0
 * within the rate; -EAGAIN refused, with *ret_first true when a run of
 * refusals begins (audit it; the run ends once the bucket is full again)
 * and *ret_retry_after the whole seconds until a mint is back (at least
 * 1); -ENOTSUP on sqlite, whose one broker keeps the bucket itself
 * (throttle.h); -ENOENT for no such job; else -errno.
 */
int store_mint_take(struct store *s, const char *job, int64_t per_minute,
    int64_t burst, bool *ret_first, int64_t *ret_retry_after);

/* Looks a token up by HMAC, with its job's state: -ENOENT when unknown.
 * Free ret->params. */
int store_token_lookup(struct store *s,
    const unsigned char hash[STORE_HASH_LEN], struct token_row *ret,
    char ret_job_state[16]);

struct token_revoke_result {
	bool found; /* it was active and is revoked now */
	int64_t seq; /* its revocation's sequence number (found only) */
	char job[40], id[40]; /* its job and id (found only) */
};

/*
 * Revokes one token by HMAC (RFC 7009), with a revocation of its own on
 * the feed ({seq, job, token: its id}) and the audit record, in one
 * transaction; its job goes on. Unknown or already revoked is not an
 * error: ret->found is false and nothing is written.
 */
int store_token_revoke(struct store *s,
    const unsigned char hash[STORE_HASH_LEN], const char *actor,
    struct token_revoke_result *ret);

/* --- revocation feed ---------------------------------------------------- */

/* The revocations after seq, at most max: a new array of {seq, job} (the
 * job revoked) and {seq, job, token} (one token of it, by id). */
int store_revocations_after(struct store *s, int64_t seq, size_t max,
    json_t **ret);
/* The latest sequence number (0 when none). */
int store_revocation_head(struct store *s, int64_t *ret);

/* Called with a sequence number some broker committed. */
typedef void (*store_seq_fn)(void *arg, int64_t seq);
/*
 * Has fn(arg, seq) called, from a thread of the store's, for every
 * revocation any broker sharing the database commits, and with the head
 * after each reconnection (what was missed while away). fn and arg stay
 * valid until store_close. 0, or -EOPNOTSUPP for sqlite, whose only
 * broker is this one.
 */
int store_watch_revocations(struct store *s, store_seq_fn fn, void *arg);

/* Called with what another broker said of one of its followers. */
typedef void (*store_ack_fn)(void *arg, const char *follower, int64_t acked,
    bool polling);
/*
 * A fleet's followers, shared: fn(arg, ...) is called, from a thread of
 * the store's, for what every other broker on the database publishes
 * with store_ack_publish (a broker never hears its own). Call before
 * store_watch_revocations (which starts the listening). 0, or
 * -EOPNOTSUPP for sqlite.
 */
int store_watch_acks(struct store *s, store_ack_fn fn, void *arg);
/*
 * Tells the other brokers that this broker's follower has acknowledged
 * acked and is (or no longer is) polling here. Queued, never blocks; the
 * order of one broker's messages is kept. 0, -ENOMEM, or -EOPNOTSUPP.
 */
int store_ack_publish(struct store *s, const char *follower, int64_t acked,
    bool polling);

/* --- upstream credentials held (issuers.h) ------------------------------ */

/*
 * The issuers_store operations on the database, so that every broker of
 * a fleet sees every credential held: PostgreSQL only (the sqlite store
 * is one broker's; its issuers keep a state file): -EOPNOTSUPP there.
 * Each as issuers.h says of struct issuers_store.
 */
struct issued_row;
int store_upstream_put(struct store *s, const struct issued_row *row,
    int64_t *ret_id);
int store_upstream_find(struct store *s, const char *job, const char *secret,
    int64_t version, int64_t now, struct issued_row *ret);
int store_upstream_claim(struct store *s, const char *job, int64_t lease_s,
    size_t max, struct issued_row **ret, size_t *n);
int store_upstream_done(struct store *s, int64_t id);
int store_upstream_retry(struct store *s, int64_t id, int64_t delay_s,
    int attempts);
int store_upstream_pending(struct store *s, int64_t *ret);
int store_upstream_live(struct store *s, const char *secret, int64_t now,
    size_t max, struct issued_row **ret, size_t *n);

/* --- secrets ------------------------------------------------------------ */

/* A secret's metadata (secrets.h): never its value. */
struct secret_meta {
	char name[72];
	int64_t version; /* the current one */
	int64_t created; /* of the current version */
	int64_t last_used; /* its last release to a proxy; 0: never */
};

/*
 * Stores sealed (len bytes, what secrets_seal made for name and version)
 * as version of name, audited (secret_put: name and version). version
 * must be the next one (1 for a new name): -EEXIST otherwise, when
 * another put came first (seal again for the next and retry).
 */
int store_secret_put(struct store *s, const char *name, int64_t version,
    const unsigned char *sealed, size_t len, const char *actor);

/*
 * The current version of name: its metadata in *ret, and when ret_sealed
 * is not NULL its sealed value (free() it) and length. -ENOENT when
 * there is none.
 */
int store_secret_get(struct store *s, const char *name, struct secret_meta *ret,
    unsigned char **ret_sealed, size_t *ret_len);

/* Every secret's current metadata, by name: a new array of {name,
 * version, created, last_used}. */
int store_secret_list(struct store *s, json_t **ret);

/* The current manifests that may inject name: a new array of {name,
 * body} (body the manifest, parsed; check its rules to be sure). */
int store_secret_manifests(struct store *s, const char *name, json_t **ret);

/* Removes every version of name, audited (secret_deleted). Unknown is not
 * an error: *ret_found says. */
int store_secret_delete(struct store *s, const char *name, const char *actor,
    bool *ret_found);

/* Records that version of name was released to a proxy for job: its
 * last_used and the audit record secret_released (name, version, job;
 * never the value), committed before it returns. -EKEYREVOKED, nothing
 * recorded, when that version is burned (store_secret_reflected). */
int store_secret_released(struct store *s, const char *name, int64_t version,
    const char *job, const char *actor);

/* Records that version of name was released to a proxy for job only to
 * scan the job's answers for it (purpose "scan", the host and addr, NULL
 * for none, in the audit record secret_released; never the value): its
 * last_used is left as it is (the last release for an injection).
 * -ENOENT when that version is gone. */
int store_secret_scanned(struct store *s, const char *name, int64_t version,
    const char *job, const char *host, const char *addr, const char *actor);

/* One stored version of a secret, sealed (secrets_seal's bytes). */
struct secret_sealed {
	int64_t version;
	unsigned char *sealed; /* free() it (secret_sealed_free) */
	size_t len;
};

/* Frees n versions' sealed bytes and the array. NULL is fine. */
void secret_sealed_free(struct secret_sealed *v, size_t n);

/*
 * The newest max versions of name, newest first (the current one
 * first): a new array in *ret of *n (free it with secret_sealed_free).
 * -ENOENT when there is none, -EINVAL for max 0.
 */
int store_secret_versions(struct store *s, const char *name, size_t max,
    struct secret_sealed **ret, size_t *n);

/* store_secret_scanned with values (borrowed: an array of {version[,
 * job][, expires]}, one a value released, never a value) in the audit
 * record's "values": a scan release of a secret's whole scan set, one
 * record. */
int store_secret_scanned_set(struct store *s, const char *name, int64_t version,
    const char *job, const char *host, const char *addr, const json_t *values,
    const char *actor);

/* --- secret bindings (bindings.h) --------------------------------------- */

/*
 * A binding is a place a secret has been or will be sent: (secret, host)
 * or (secret, addr), from an origin: "rule" (an injecting egress rule of
 * any manifest version ever stored: added in the manifest put's own
 * transaction, never removed by a later version), "declared" (a PUT's
 * guard_hosts: the service's other names) or "seen" (an ip:port a proxy
 * sent an injected request to). A secret's deletion removes its rule
 * bindings and keeps its declared and seen ones (places, not the value:
 * a service there may still hold the old key), which the list leaves
 * out while the secret does not exist; its creation again brings back
 * those of the stored manifests' rules. A counter, the epoch, changes with every change to
 * the list (and with every put or deletion of a secret).
 */
#define STORE_BINDINGS_DECLARED_MAX 16

/*
 * As store_secret_put, and in the same transaction, when guard_hosts is
 * not NULL (an array of at most STORE_BINDINGS_DECLARED_MAX strings,
 * checked by the caller) it replaces name's declared hosts; NULL keeps
 * them.
 */
int store_secret_put_bound(struct store *s, const char *name, int64_t version,
    const unsigned char *sealed, size_t len, const json_t *guard_hosts,
    const char *actor);

/*
 * The list's caps (bindings.h's BINDINGS_*, below the proxies'): the
 * addresses seen of one secret, the secrets listed, and their distinct
 * hosts and addresses in all. A write that would take the list past one
 * it does not pass already is refused whole, -EDQUOT, the count and the
 * write in one transaction (two reports at once cannot both take the
 * last place): store_binding_seen, a secret's put (its declared hosts,
 * and what a put of a deleted name lists again: its kept declared and
 * seen places, its rules' hosts), a manifest's put (its rules' hosts).
 */
#define STORE_BINDINGS_SEEN_MAX 64
#define STORE_BINDINGS_SECRETS_MAX 1000
#define STORE_BINDINGS_KEYS_MAX 16000

/* What the list holds, as the caps count it: the secrets listed and
 * their distinct (secret, kind, value) places; of one secret, its
 * places listed and its addresses. */
struct store_bind_counts {
	int64_t secrets, keys, of, addrs;
};

/* The cap a write would pass: "seen", "secrets" or "keys", and what the
 * list would then hold of it. */
struct store_bind_over {
	const char *cap;
	int64_t count;
};

/*
 * Whether after, the counts after a write, passes a cap that before did
 * not pass or that it grows past: -EDQUOT with which into *ret (NULL:
 * not said), else 0. For the store's back ends.
 */
int store_bindings_over(const struct store_bind_counts *before,
    const struct store_bind_counts *after, struct store_bind_over *ret);

/*
 * Every binding of every secret that exists: a new array of {secret,
 * kind ("host" or "addr"), value, origin}, by secret, kind, value and
 * origin (bytewise), and the epoch the list is at least as new as.
 */
int store_bindings_list(struct store *s, json_t **ret, int64_t *ret_epoch);

/*
 * Adds (secret, addr) of origin "seen", told by a proxy for job: audited
 * binding_seen (secret, addr, job) when it is new; *ret_added says.
 * -ENOENT when the secret does not exist; -EDQUOT, nothing added, past
 * the caps (which into *ret_over, NULL: not said).
 */
int store_binding_seen(struct store *s, const char *secret, const char *addr,
    const char *job, const char *actor, bool *ret_added,
    struct store_bind_over *ret_over);

/* --- reflections: the fleet's budget per secret version ------------------ */

/*
 * A proxy tells each answer that reflected a job's own value of a secret
 * and each trip of a scan-only one (credentials.md); the store counts
 * them per (secret, version), one row each, for every broker of a fleet.
 * Past the version's budget the version is burned: its releases to
 * inject are refused until a PUT makes the next version (a fresh row).
 */
#define STORE_REFLECT_BUDGET_DEFAULT 8
#define STORE_REFLECT_BUDGET_MAX 1000000

struct secret_reflections {
	int64_t budget; /* reflected answers the version may have */
	int64_t reflections; /* counted so far, fleet-wide */
	int64_t tripped; /* of them, trips of a scan-only value */
	int64_t burned_at; /* 0: not burned */
	char burned_reason[32]; /* "reflect_budget" or "guard_tripped" */
	char burned_job[72]; /* the job whose report burned it */
};

/*
 * As store_secret_put_bound, and in the same transaction the version's
 * reflection row is made anew (none counted, not burned) with budget:
 * 0 for the version before's (STORE_REFLECT_BUDGET_DEFAULT when none).
 */
int store_secret_put_budget(struct store *s, const char *name, int64_t version,
    const unsigned char *sealed, size_t len, const json_t *guard_hosts,
    int64_t budget, const char *actor);

/*
 * The reflections of version of name into *ret: a version without a row
 * (put before the budget existed) has STORE_REFLECT_BUDGET_DEFAULT and
 * nothing counted. 0 or -errno.
 */
int store_secret_reflections(struct store *s, const char *name, int64_t version,
    struct secret_reflections *ret);

/*
 * Counts count reflections (1..1000) of version of name told for job
 * (event: "reflected", "reflect_limit" or "guard_tripped"), audited
 * secret_reflected, in one statement: every broker's count adds up. The
 * version burns (audited secret_burned, once) when the count reaches its
 * budget, or at once when trip. *ret: the row after; *ret_burned_now:
 * whether this call burned it. -ENOENT when that version is gone.
 */
int store_secret_reflected(struct store *s, const char *name, int64_t version,
    const char *job, const char *event, int64_t count, bool trip,
    const char *actor, struct secret_reflections *ret, bool *ret_burned_now);

/*
 * The burned versions of every secret that are still stored, for the
 * bindings list (credentials.md: a proxy forgets them for injection):
 * a new object in *ret, {name: [version, ..]} (ascending; a secret with
 * none is left out). 0 or -errno.
 */
int store_secrets_burned(struct store *s, json_t **ret);

/*
 * The values burned, fleet-wide by digest (secrets_value_digest: an
 * HMAC-SHA256 under the sealing key, never the value): a version burned
 * is recorded with the secret and version that burned, and a PUT of the
 * same value under any name is refused. Kept when the secret is deleted
 * (a leaked value stays leaked). A digest already recorded keeps its
 * first row. 0 or -errno.
 */
int store_burned_value_add(struct store *s,
    const unsigned char digest[STORE_HASH_LEN], const char *secret,
    int64_t version, int64_t burned_at);

/*
 * Whether digest is a burned value's: 0 with the secret and version that
 * burned it (secret capped at cap bytes) and when, -ENOENT when not, or
 * -errno.
 */
int store_burned_value_find(struct store *s,
    const unsigned char digest[STORE_HASH_LEN], char *ret_secret, size_t cap,
    int64_t *ret_version, int64_t *ret_burned_at);

/* --- audit -------------------------------------------------------------- */

/* Appends a record without waiting for the commit, for events that a
 * flood of requests could raise (refused keys): event must be a static
 * string; detail is stolen. 0, or -errno when it could not be queued. */
int store_audit_async(struct store *s, const char *event, json_t *detail);

/* Records with seq > after (for job, when not NULL), at most max: a new
 * array of {seq, ts, event, job, actor, detail, prev, hash}. */
int store_audit_list(struct store *s, const char *job, int64_t after,
    size_t max, json_t **ret);

/*
 * Walks the whole chain: *ret_ok true when every record's hash matches its
 * contents and its predecessor's hash, and sequence numbers have no gap.
 * Otherwise *ret_first_bad is the first record that does not hold.
 */
int store_audit_verify(struct store *s, bool *ret_ok, int64_t *ret_first_bad,
    int64_t *ret_records);

#endif
