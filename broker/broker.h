/*
 * cordon-broker: the identity plane. It issues capabilities, not
 * credentials: tokens scoped to one named capability, bound to one job,
 * at most 15 minutes, stored hashed and revoked at the issuer.
 */
#ifndef CORDON_BROKER_H
#define CORDON_BROKER_H

#include "capability.h"
#include "config.h"
#include "feed.h"
#include "http_server.h"
#include "keys.h"
#include "store.h"
#include "throttle.h"

#include <stdatomic.h>

/* Canaries (CANARY_CAPABILITY, store.h): a job gets CANARIES_DEFAULT
 * when its manifest says "canaries": true, or what POST /v1/jobs asks. */
#define CANARIES_DEFAULT 2
#define CANARIES_MAX 8
#define BROKER_PROG "cordon-broker"
#define BROKER_LISTEN "127.0.0.1:7701"
/* HTTP threads. Handlers that wait defer (long polls, acknowledgements,
 * commits), so these only ever run; a few more than the cores keep the
 * group commit fed while one thread reads the database. */
#define BROKER_THREADS 4

struct broker_config {
	struct config_common common;
	char *keys_dir; /* default <state_dir>/keys */
	char *db; /* default <state_dir>/broker.db */
	/* "sqlite" (the default: db) or a postgresql:// URI (a fleet) */
	char *store;
	char *pepper; /* default <state_dir>/pepper */
	long long lease_seconds; /* a job's lease between heartbeats */
	/* PEM CAs the credential issuers' TLS is checked against (issuers.h);
	 * default: the system's store */
	char *issuer_ca_file;
};

struct broker {
	struct broker_config cfg;
	struct keyring keys;
	struct store *store;
	struct feed *feed;
	struct throttle *throttle; /* each job's mint rate */
	unsigned char pepper[PEPPER_LEN];
	unsigned char secrets_key[32]; /* SECRETS_KEY_LEN: seals secrets */
	struct issuers *issuers; /* short-lived upstream credentials held */
	atomic_uint_fast64_t minted, introspected, active, revoked_jobs, lapsed,
	    refused_mints, store_errors, rate_limited_mints, ceiling_mints,
	    secrets_released, scan_releases;
	/* The fleet's reflection budget (reflections.h). */
	atomic_uint_fast64_t reflections_reported, reflections_unrecorded,
	    secrets_burned, releases_burned;
};

/* The broker's routes, for the HTTP glue; ctx is the struct broker. */
extern const struct http_route broker_routes[];
extern const size_t broker_nroutes;

/* The dead man's switch: revokes the jobs whose lease or deadline has
 * passed. Called from the main loop. */
void broker_sweep(void *ctx);

/* For the glue: figures, health, refused keys, shutdown. */
void broker_metrics(void *ctx, struct buf *out);
int broker_health(void *ctx, json_t *out);
void broker_auth_failed(void *ctx, const char *method, const char *path,
    const char *reason);
void broker_stopping(void *ctx);

extern const struct config_option broker_options[];
extern const size_t broker_noptions;

#endif
