/*
 * Jobs for the hatch's tests, made as production makes them: a real
 * broker on loopback holds a manifest per return policy and creates each
 * job, and the hatch reads the job's return policy and disk cap from it
 * (GET /v1/jobs/{job}/return). A test names the policy; the broker
 * names the job.
 */
#ifndef CORDON_HATCHJOB_H
#define CORDON_HATCHJOB_H

#include "harness.h"

#include <jansson.h>
#include <stddef.h>

struct hatchjob {
	struct daemon broker;
	char admin[128], launcher[128];
	/* The hatch's configuration lines for this broker: "broker": ...,
	 * "broker_key_file": ... (no braces, no trailing comma). */
	char hatch_config[700];
	unsigned manifests; /* how many were put: each job's manifest name */
	struct {
		char tag[32];
		char id[128];
	} jobs[32]; /* the jobs made by tag (hatchjob_mint) */
};

/* Starts the broker and fills hj, asserting each step. */
void hatchjob_start(struct hatchjob *hj);

/* Stops the broker, asserting it exits 0. */
void hatchjob_stop(struct hatchjob *hj);

/*
 * A new running job whose manifest's return is ret (borrowed; NULL for
 * none) and whose limits.disk_mb is disk_mb (0 for the default): its id
 * in id (len bytes), which the returned pointer is.
 */
const char *hatchjob_new(struct hatchjob *hj, const json_t *ret, int disk_mb,
    char *id, size_t len);

/* hatchjob_new for a test's tag, remembered (at most 32): the id. Takes
 * ret. */
const char *hatchjob_mint(struct hatchjob *hj, const char *tag, json_t *ret,
    int disk_mb);

/* The id of tag's job, made by hatchjob_mint (asserted). */
const char *hatchjob_id(struct hatchjob *hj, const char *tag);

#endif
