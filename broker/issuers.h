/*
 * Issuers of short-lived upstream credentials (issue 18), beside the
 * static secrets of secrets.h. A secret may instead hold how to obtain a
 * credential: OAuth 2.0 client credentials (RFC 6749 section 4.4, revoked
 * with RFC 7009 where the issuer has a revocation endpoint) or a GitHub
 * App (an RS256 JWT signed with the App's key buys an installation token,
 * narrowed to the secret's repositories and permissions; DELETE
 * /installation/token ends it). The first release for a job obtains one,
 * which is then kept sealed (in the database when the store is
 * PostgreSQL, so that every broker of a fleet sees it; else in a file of
 * the broker's state) for the job's life or until shortly before it
 * expires; the job's revoke, at any broker, revokes every credential held
 * for it at its issuer, exactly once, and says how each went; one that
 * fails is retried in the background until it succeeds or expires.
 * Nothing here logs or touches the store but through the callbacks it is
 * given.
 */
#ifndef CORDON_BROKER_ISSUERS_H
#define CORDON_BROKER_ISSUERS_H

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The kinds, as a secret's "kind" and a release's "source" say them. */
#define ISSUER_OAUTH "oauth_client_credentials"
#define ISSUER_GITHUB "github_app"
/* The longest credential an issuer may hand out (it goes in a header). */
#define ISSUED_VALUE_MAX 4096
/* How long one call to an issuer may take, and all of one job's
 * revocations together (the launcher's revoke waits 5 s for the
 * broker). */
#define ISSUER_CALL_MS 2000
#define ISSUER_REVOKE_BUDGET_MS 3000
/* A revoke's calls to issuers are made by threads of the issuers' own
 * (never the caller's: the broker's HTTP threads are 4), this many, the
 * oldest revoke first; at most ISSUER_REVOKES_MAX revokes wait for them,
 * and one past that tries none and hands its job's credentials to the
 * background thread, listed pending in its answer. */
#define ISSUER_REVOKE_WORKERS 4
#define ISSUER_REVOKES_MAX 256
/* Credentials held at once, all jobs, and per job and secret (refreshes
 * add one each). */
#define ISSUED_MAX 4096
#define ISSUED_PER_JOB_MAX 32
/* The default API of a GitHub App. */
#define ISSUER_GITHUB_API "https://api.github.com"

struct issuers;

/* The credentials held, sealed, under the broker's state directory (the
 * sqlite store: one broker), or in the database (issuers_store). */
#define ISSUERS_STATE_FILE "issued.sealed"
#define ISSUERS_KEY_LEN 32
/* How long a claimed revocation is the claimer's before another broker
 * may take it (a broker that died mid-call), and the retries' backoff:
 * 2 s doubling to at most 5 minutes, until the credential expires. */
#define ISSUER_CLAIM_S 60
#define ISSUER_RETRY_MIN_S 2
#define ISSUER_RETRY_MAX_S 300

/* One credential held, as a store keeps it: what it is for, and sealed
 * (AES-256-GCM with the secrets key, the job, secret and version as
 * associated data) what it is and how to revoke it. state "held" while
 * the job runs, "revoking" once its job was revoked, until it is revoked
 * at its issuer or expired (then the row goes). */
struct issued_row {
	int64_t id;
	char job[80], secret[80];
	int64_t version, expires, refresh_at;
	int attempts; /* revocations tried */
	bool revoking;
	unsigned char *sealed;
	size_t len;
};

/* Frees the rows' sealed parts and the array (n rows). */
void issued_rows_free(struct issued_row *rows, size_t n);

/*
 * Where the credentials held are kept, so that every broker of a fleet
 * sees them (the PostgreSQL store). Each returns 0 or -errno. put: a new
 * row (its id in *ret_id); -ESTALE when the job is no longer running
 * (the row is then kept as revoking, due now), -ENOSPC past
 * ISSUED_PER_JOB_MAX rows of the job. find: the newest held row of
 * (job, secret, version) whose refresh_at is 0 or after now, -ENOENT.
 * claim: job's held rows turned revoking (job NULL: none), then up to
 * max revoking rows due now (of job alone, when given) taken for
 * lease_s: no other claim returns them meanwhile, whichever broker asks
 * (a new array in *ret, *n rows). done: the row goes. retry: due again
 * in delay_s, attempts recorded. pending: how many rows are revoking.
 */
struct issuers_store {
	void *arg;
	int (*put)(void *arg, const struct issued_row *row, int64_t *ret_id);
	int (*find)(void *arg, const char *job, const char *secret,
	    int64_t version, int64_t now, struct issued_row *ret);
	int (*claim)(void *arg, const char *job, int64_t lease_s, size_t max,
	    struct issued_row **ret, size_t *n);
	int (*done)(void *arg, int64_t id);
	int (*retry)(void *arg, int64_t id, int64_t delay_s, int attempts);
	int (*pending)(void *arg, int64_t *ret);
	/* live: every row of secret not revoked at its issuer (held, or
	 * revoking still) and not expired at now, oldest first, at most
	 * max (a new array in *ret, *n rows). NULL: none are listed. */
	int (*live)(void *arg, const char *secret, int64_t now, size_t max,
	    struct issued_row **ret, size_t *n);
};

/* Called by the background revocations with the outcome of each attempt
 * (event upstream_revoked, upstream_revoke_failed or upstream_expired;
 * detail {job, secret, version, kind, issuer, ok, attempt, status |
 * error[, retry_in]}, taken). */
typedef void (*issuers_audit_fn)(void *arg, const char *event, json_t *detail);

/*
 * Opens the issuers' state: TLS peers are verified against ca_file (PEM;
 * NULL for the system's trust store); key (ISSUERS_KEY_LEN bytes; NULL:
 * a random one, memory only) seals each credential held. With store, the credentials held are its rows;
 * otherwise they are kept in state_path (NULL: memory only), the whole
 * file sealed with key too, rewritten at each change and read back now:
 * a broker restarted while its jobs run still revokes what it obtained
 * for them. Starts the thread that revokes in the background (audit,
 * may be NULL, hears each attempt). 0, or -EINVAL when the CA file does
 * not load, -EBADMSG when the state file does not open with key or does
 * not parse (fail closed: remove it to start without; what it held then
 * lives until it expires), -ENOMEM, -errno.
 */
int issuers_open(const char *ca_file, const char *state_path,
    const unsigned char *key, const struct issuers_store *store,
    issuers_audit_fn audit, void *audit_arg, struct issuers **ret);

/* Wipes and frees every credential held. NULL is fine. */
void issuers_close(struct issuers *is);

/*
 * Checks a PUT body that names a "kind" (ISSUER_OAUTH or ISSUER_GITHUB)
 * and makes the configuration to seal, with the defaults filled in: 0
 * and a new object in *ret_cfg, or -EINVAL with the reason in why (what
 * field, never a value). A GitHub App's private key must be an RSA key
 * of at least 2048 bits.
 */
int issuers_config_check(const json_t *body, json_t **ret_cfg, char *why,
    size_t whylen);

/* What of cfg may be shown (kind, issuer URLs, client_id or app_id,
 * installation_id, scope, repositories, permissions; never a secret): a
 * new object. */
json_t *issuers_public(const json_t *cfg);

/* The issuer's base URL of cfg (its token URL, or its API), borrowed. */
const char *issuers_issuer(const json_t *cfg);

/* A credential released for a job. */
struct issued {
	char value[ISSUED_VALUE_MAX + 1];
	size_t len;
	int64_t expires; /* unix seconds; 0 when the issuer gave none */
	bool fresh; /* obtained now, not from what was held */
};

/*
 * Releases whose credential must come from an issuer wait without a
 * thread (the broker's HTTP threads are few): each is a waiter on the
 * call for its (job, secret, version), made by one of ISSUER_WORKERS
 * threads, at most ISSUER_JOB_CALLS of them for one job, oldest first;
 * a second release of the same (job, secret, version) waits for the same
 * call's answer. At most ISSUER_WAITERS_MAX releases wait at once, and
 * ISSUER_JOB_WAITERS_MAX of one job; each waits ISSUER_WAIT_MS in all
 * (the proxy's call to the broker gives up after 5 s), then is answered
 * -ETIMEDOUT while its call, if one started, goes on: what it obtains is
 * held for the next release.
 */
#define ISSUER_WORKERS 4
#define ISSUER_JOB_CALLS 2
#define ISSUER_WAITERS_MAX 128
#define ISSUER_JOB_WAITERS_MAX 16
#define ISSUER_WAIT_MS (2 * ISSUER_CALL_MS)
#define ISSUER_WHY_MAX 240

/* One release waiting for an issuer: the caller's memory, which must
 * stay until done is called. */
struct issuers_wait {
	/* Set by the caller: called exactly once, from another thread (a
	 * worker, the deadlines' thread, or issuers_stop_releases), once
	 * the outcome below is filled in; the waiter is not touched after. */
	void (*done)(struct issuers_wait *w);
	void *arg;
	/* The outcome, as issuers_release returns it (-ETIMEDOUT also when
	 * ISSUER_WAIT_MS passed, -ESHUTDOWN when the broker stops). */
	int result;
	struct issued got;
	long status;
	char why[ISSUER_WHY_MAX];
	/* issuers.c's. */
	struct issuers_wait *next;
	int64_t deadline;
};

/*
 * The first half of a release, never calling an issuer: 0 with *ret the
 * credential held for (job, secret, version) when it is not within its
 * refresh margin; -EAGAIN when one must be obtained (issuers_release_queue
 * next); -ESTALE when the job was revoked, -EINVAL a broken
 * configuration (why says). ret is wiped unless 0.
 */
int issuers_release_held(struct issuers *is, const char *job,
    const char *secret, int64_t version, const json_t *cfg, struct issued *ret,
    char *why, size_t whylen);

/*
 * Queues w for the credential of (job, secret, version; configuration
 * cfg, copied): 0, and w->done will be called once with the outcome, or
 * at once -EBUSY (ISSUER_JOB_WAITERS_MAX of the job, or
 * ISSUER_WAITERS_MAX in all, wait already: why says which), -ESHUTDOWN
 * (stopping), -EINVAL, -ENOMEM; then done is never called. Whatever
 * makes w visible to whoever is resumed by done must be done before.
 */
int issuers_release_queue(struct issuers *is, const char *job,
    const char *secret, int64_t version, const json_t *cfg,
    struct issuers_wait *w);

/* Answers every waiting release -ESHUTDOWN now and every later one at
 * once (the broker's stopping hook): the calls in flight end by their
 * deadline, in issuers_close. */
void issuers_stop_releases(struct issuers *is);

/*
 * The credential of secret (version, configuration cfg) for job, the
 * calling thread waiting (for tools and tests; the broker's HTTP
 * threads use issuers_release_held and issuers_release_queue): the
 * one held when it is not within its refresh margin of expiring,
 * otherwise a new one from the issuer. 0 with *ret filled, or:
 * -EPROTO the issuer refused (its HTTP status in *ret_status, its error
 * in why), -ECONNREFUSED / -ETIMEDOUT / -EIO it could not be reached or
 * answered nonsense (why says which), -ESTALE the job was revoked while
 * the credential was obtained (it is revoked at once and not given),
 * -ENOSPC too many held, -EIO also when it could not be recorded in the
 * state file (it is revoked at once), -EINVAL a broken configuration,
 * -EBUSY and -ESHUTDOWN as issuers_release_queue. ret is wiped on
 * failure.
 */
int issuers_release(struct issuers *is, const char *job, const char *secret,
    int64_t version, const json_t *cfg, struct issued *ret, long *ret_status,
    char *why, size_t whylen);

/* A revoke waiting for its job's revocations at their issuers: the
 * caller's memory, which must stay until done is called. */
struct issuers_revoke {
	/* Set by the caller: called exactly once, from another thread (a
	 * revoke worker, or issuers_stop_revokes), once list is filled in;
	 * the waiter is not touched after. */
	void (*done)(struct issuers_revoke *w);
	void *arg;
	/* The outcome, as issuers_revoke_job's: the caller's to decref. */
	json_t *list;
	/* issuers.c's. */
	struct issuers_revoke *next;
	struct issued_row *rows;
	size_t n;
	int64_t deadline;
};

/*
 * Revokes at their issuers every credential held for job (obtained by
 * this broker or, on a shared store, any other), and keeps any obtained
 * later from being given (it is revoked at once), the calling thread
 * never waiting on an issuer: the job's rows are claimed here and w is
 * queued for a revoke worker, which tries each within
 * ISSUER_REVOKE_BUDGET_MS of now (what its time does not reach is listed
 * pending, due at once for the background thread). Returns 0, and
 * w->done will be called once with w->list: {secret, version, kind,
 * issuer, ok, attempt, status | error[, expired][, pending, retry_in]},
 * one per credential; or 1 with w->list filled in now (none was held;
 * ISSUER_REVOKES_MAX revokes wait already, or the broker is stopping:
 * each listed pending, not tried, the background thread's), and done is
 * never called. One that failed stays pending: the background thread
 * retries it with backoff until it is revoked or has expired. Whatever
 * makes w visible to whoever done resumes must be done before.
 */
int issuers_revoke_queue(struct issuers *is, const char *job,
    struct issuers_revoke *w);

/* Answers every queued revoke now, its credentials not tried (pending,
 * due at once), and every later one at once; a revoke worker's ends
 * after the call it is in (the broker's stopping hook). */
void issuers_stop_revokes(struct issuers *is);

/*
 * issuers_revoke_queue, the calling thread waiting for the list (a new
 * array; for tools and tests). later (true): none is called at all, the
 * job's credentials are handed to the background thread and NULL is
 * returned (the lease sweep, a tripwire).
 */
json_t *issuers_revoke_job(struct issuers *is, const char *job, bool later);

/* Revokes now whatever of the pending revocations is due, as the
 * background thread does once a second: how many were tried. For tests
 * and the thread itself. */
int issuers_retry_due(struct issuers *is);

/* A live credential of a secret, for a scan release: whose, of what
 * version of the secret, until when, and its value (wiped by
 * issued_live_free). */
struct issued_live {
	char job[80];
	int64_t version, expires; /* expires: unix seconds, 0 for none */
	char *value;
	size_t len;
};

/* Wipes and frees n credentials and the array. NULL is fine. */
void issued_live_free(struct issued_live *v, size_t n);

/*
 * Every credential of secret held for any job (on a shared store,
 * obtained by any broker of the fleet) not yet revoked at its issuer nor
 * expired at now (unix seconds), oldest first: 0 with a new array in
 * *ret of *n (none: *n 0), or -E2BIG when more than max are live (none
 * given: the set is whole or refused), -EBADMSG when one does not open
 * with the key (fail closed), -ENOMEM, -errno. ret_gen (NULL: not
 * wanted): the set's generation, as issuers_scan_gen has it.
 */
int issuers_scan_set(struct issuers *is, const char *secret, int64_t now,
    size_t max, struct issued_live **ret, size_t *n, int64_t *ret_gen);

/*
 * The generation of secret's scan set at now (the bindings list's
 * scan_gen): a number in 1..INT64_MAX that changes whenever the set
 * issuers_scan_set gives does (a credential obtained, revoked at its
 * issuer, expired; a hash of the live rows, at most max + 1 of them),
 * the same at every broker of a fleet on a shared store; *ret_gen of
 * issuers_scan_set is the same number for the set it gave. 0, or
 * -EOPNOTSUPP, -ENOMEM, -errno.
 */
int issuers_scan_gen(struct issuers *is, const char *secret, int64_t now,
    size_t max, int64_t *ret);

/* Revocations pending (failed, to be retried), or -errno. */
int64_t issuers_pending(struct issuers *is);

/* Counts since start, for /metrics. */
struct issuers_counts {
	uint64_t issued, issue_failed, revoked, revoke_failed;
	/* Releases refused -EBUSY, and answered -ETIMEDOUT at their
	 * deadline; releases waiting and calls in flight now. */
	uint64_t releases_refused, releases_timed_out;
	uint64_t releases_waiting, calls_in_flight;
	/* Revokes waiting for a revoke worker or in one's hands now. */
	uint64_t revokes_waiting;
};
void issuers_counts(struct issuers *is, struct issuers_counts *ret);

/* For tests: a JWT for app_id signed with pem (an RSA private key), iat
 * now - 60 and exp now + 540: 0 with a malloc'd string in *ret, or
 * -EINVAL, -EIO. */
int issuers_github_jwt(const char *pem, const char *app_id, int64_t now,
    char **ret);

#endif
