/*
 * An issuer that accepts and never answers, for the broker's and the
 * proxy's slow-issuer tests (hungissuer.c), and what those tests share
 * around it: the broker started with its keys, the issuer's secrets and
 * the manifest injecting them, and requests sent at once and their
 * answers read in the order they come.
 */
#ifndef CORDON_TESTS_HUNGISSUER_H
#define CORDON_TESTS_HUNGISSUER_H

#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct hung_issuer {
	int lfd, wake[2];
	unsigned port;
	pthread_t thread;
	/* Calls accepted, held open now, and revocations asked. */
	atomic_uint accepted, open, revokes;
};

/* Listens on a free loopback port (h->port) and serves it on a thread of
 * its own; h->lfd is -1 until then. Asserts on failure. */
void hung_issuer_start(struct hung_issuer *h);
/* Stops the thread and closes every call; nothing when not started. */
void hung_issuer_stop(struct hung_issuer *h);
/* Waits (up to 20 s) until the issuer holds at least n calls at once;
 * asserts it does. */
void hung_issuer_wait_open(struct hung_issuer *h, unsigned n);
/* Waits (up to ms) until the issuer accepted more calls than before. */
void hung_issuer_wait_accepted(struct hung_issuer *h, unsigned before, int ms);

/* Starts broker (log_level info), its admin, launcher and verifier keys
 * into the buffers of len bytes each; asserts. */
void hung_broker_start(struct daemon *broker, char *admin, char *launcher,
    char *verifier, size_t len);
/* PUTs secret name at broker: oauth_client_credentials of h, its
 * token_url http://127.0.0.1:<h->port>/<token_path>, and with revocation
 * its revocation_url /oauth/revoke; asserts 200. */
void hung_issuer_secret(const struct hung_issuer *h,
    const struct daemon *broker, const char *admin, const char *name,
    const char *token_path, bool revocation);
/* PUTs manifest name: capability x.read (audience api, param t 1), one
 * rule GET api.test:port (127.0.0.0/8, audience api) injecting secret as
 * "Authorization: Bearer {secret}" with x.read (secret NULL: no
 * injection); asserts 200. */
void hung_manifest(const struct daemon *broker, const char *admin,
    const char *name, const char *secret, unsigned port);
/* POSTs a job of manifest m as the launcher, asserting 201: its id into
 * job. */
void hung_new_job(const struct daemon *broker, const char *launcher,
    const char *m, char *job, size_t len);
/* A token of job's x.read (param t 1), minted as its proxy would with
 * the verifier key: malloc'd; asserts 200. */
char *hung_mint(const struct daemon *broker, const char *verifier,
    const char *job);

/* Milliseconds of CLOCK_MONOTONIC. */
double hung_now_ms(void);
/* Sends one request to broker on a new connection, its answer not
 * waited for: the connected socket. key (a bearer), header (one line
 * without its CRLF) and body may be NULL. Asserts. */
int hung_send(const struct daemon *broker, const char *method, const char *path,
    const char *key, const char *header, const char *body);
/* Sends POST /v1/jobs/<job>/revoke (reason done) as the launcher with
 * hung_send: the socket. */
int hung_send_revoke(const struct daemon *broker, const char *launcher,
    const char *job);

/* One request sent and, once read, its answer and when it came. */
struct hung_pending {
	int fd;
	double sent, answered_ms; /* answered_ms: since sent */
	int order; /* the how-manieth answer; -1 until it came */
	int tag; /* the test's own mark */
	long long seen; /* what the test's on_answer noted */
	char *resp;
};

/* p for the request sent on fd (now), marked tag. */
void hung_pending_init(struct hung_pending *p, int fd, int tag);
/* Reads the answers of p[0..n) (n <= 512) in the order they come, for at
 * most limit_ms in all, calling on_answer (NULL: none) on each as it is
 * read: how many came. Asserts each answer was read. */
size_t hung_collect(struct hung_pending *p, size_t n, int limit_ms,
    void (*on_answer)(struct hung_pending *p));
/* Closes what is open of p[0..n) and frees the answers. */
void hung_pending_free(struct hung_pending *p, size_t n);
/* An answer's JSON body: a new reference, asserted to parse. */
json_t *hung_body_of(const char *resp);

#endif
