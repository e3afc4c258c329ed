/*
 * cordon-hatch: the return path. It copies a job's inputs in, gives the
 * job an overlay whose upper directory lives on a size-capped tmpfs, and
 * turns that upper directory alone into a patch and a report once the job
 * has stopped. Nothing the job wrote is executed or trusted. A job's
 * return policy and disk cap come from the broker, never from the
 * launcher that asks for the workspace.
 */
#ifndef CORDON_HATCH_H
#define CORDON_HATCH_H

#include "config.h"
#include "http_server.h"
#include "keys.h"
#include "sealer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define HATCH_PROG "cordon-hatch"
#define HATCH_LISTEN "127.0.0.1:7703"

struct hatch_config {
	struct config_common common;
	/* Where inputs may be copied from; resolved at start. */
	struct config_strings input_roots;
	/* The launcher's key file: only its holder may call the API. */
	char *launcher_key_file;
	/* Or that key by its SHA-256 alone: the hatch then holds no key the
	 * broker would take as the launcher's. */
	char *launcher_key_sha256;
	/* The cap of a workspace's lower tmpfs; 0: the inputs on the disk. */
	long long lower_tmpfs_mb;
	/* The broker, which says each job's return policy and disk cap, and
	 * the key the hatch asks it with. */
	char *broker;
	char *broker_key_file;
	/* How long one seal may take before its worker is killed. */
	long long seal_deadline_s;
};

struct hatch {
	struct hatch_config cfg;
	char *workspaces; /* <state_dir>/workspaces */
	struct keyring keys;
	char *broker_key; /* read from broker_key_file */
	atomic_bool key_checked; /* the broker said what broker_key grants */
	atomic_bool key_warned; /* broker_key_broad logged */
	struct sealer sealer; /* forked at start; used under mu */
	pthread_mutex_t mu; /* one workspace change at a time */
};

/*
 * Asks the broker what broker_key grants (GET /v1/whoami) until it has
 * answered once: the hatch needs the hatch role alone, and a key that
 * grants any other (a launcher's, a verifier's, the admin's: what hatches
 * were given before the hatch key) is still used, with one warning,
 * broker_key_broad, naming its roles. Called at start and before a
 * policy read until then; waits at most timeout_ms.
 */
void hatch_broker_key_check(struct hatch *h, long timeout_ms);

/* The hatch's routes, for the HTTP glue; ctx is the struct hatch. */
extern const struct http_route hatch_routes[];
extern const size_t hatch_nroutes;

#endif
