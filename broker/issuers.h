/*
 * Issuers of short-lived upstream credentials (issue 18), beside the
 * static secrets of secrets.h. A secret may instead hold how to obtain a
 * credential: OAuth 2.0 client credentials (RFC 6749 section 4.4, revoked
 * with RFC 7009 where the issuer has a revocation endpoint) or a GitHub
 * App (an RS256 JWT signed with the App's key buys an installation token,
 * narrowed to the secret's repositories and permissions; DELETE
 * /installation/token ends it). The first release for a job obtains one,
 * which is then kept (in memory, and sealed in a file of the broker's
 * state) for the job's life or until shortly before it expires; the job's revoke revokes every credential obtained for it
 * at its issuer and says how each went. Nothing here logs or touches the
 * store: the callers audit.
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
/* Credentials held at once, all jobs, and per job and secret (refreshes
 * add one each). */
#define ISSUED_MAX 4096
#define ISSUED_PER_JOB_MAX 32
/* The default API of a GitHub App. */
#define ISSUER_GITHUB_API "https://api.github.com"

struct issuers;

/* The credentials held, sealed, under the broker's state directory. */
#define ISSUERS_STATE_FILE "issued.sealed"
#define ISSUERS_KEY_LEN 32

/*
 * Opens the issuers' state: TLS peers are verified against ca_file (PEM;
 * NULL for the system's trust store). With state_path (NULL: memory
 * only), every credential held is also kept there, sealed with key
 * (AES-256-GCM, ISSUERS_KEY_LEN bytes), rewritten at each change, and
 * read back now: a broker restarted while its jobs run still revokes what
 * it obtained for them. 0, or -EINVAL when the CA file does not load,
 * -EBADMSG when the state file does not open with key or does not parse
 * (fail closed: remove it to start without; what it held then lives
 * until it expires), -ENOMEM, -errno.
 */
int issuers_open(const char *ca_file, const char *state_path,
    const unsigned char *key, struct issuers **ret);

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
 * The credential of secret (version, configuration cfg) for job: the
 * one held when it is not within its refresh margin of expiring,
 * otherwise a new one from the issuer. 0 with *ret filled, or:
 * -EPROTO the issuer refused (its HTTP status in *ret_status, its error
 * in why), -ECONNREFUSED / -ETIMEDOUT / -EIO it could not be reached or
 * answered nonsense (why says which), -ESTALE the job was revoked while
 * the credential was obtained (it is revoked at once and not given),
 * -ENOSPC too many held, -EIO also when it could not be recorded in the
 * state file (it is revoked at once), -EINVAL a broken configuration. ret is wiped on
 * failure.
 */
int issuers_release(struct issuers *is, const char *job, const char *secret,
    int64_t version, const json_t *cfg, struct issued *ret, long *ret_status,
    char *why, size_t whylen);

/*
 * Revokes at their issuers every credential obtained for job, and keeps
 * any obtained later from being given (it is revoked at once): a new
 * array of {secret, version, kind, issuer, ok, status | error[, expired]}
 * (empty when none was held), one per credential, in the order they
 * were obtained. Takes at most about ISSUER_REVOKE_BUDGET_MS.
 */
json_t *issuers_revoke_job(struct issuers *is, const char *job);

/* Counts since start, for /metrics. */
struct issuers_counts {
	uint64_t issued, issue_failed, revoked, revoke_failed;
};
void issuers_counts(struct issuers *is, struct issuers_counts *ret);

/* For tests: a JWT for app_id signed with pem (an RSA private key), iat
 * now - 60 and exp now + 540: 0 with a malloc'd string in *ret, or
 * -EINVAL, -EIO. */
int issuers_github_jwt(const char *pem, const char *app_id, int64_t now,
    char **ret);

#endif
