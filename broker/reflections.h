/*
 * A fleet-wide reflection budget per secret version (issue 18, the
 * oracle left after reflect_limit): a job's own key echoed by its
 * upstream is redacted in place, and the redaction of exactly the runs
 * that match teaches the job about a byte an answer; each job is closed
 * after reflect_limit such answers, but the same hostile code run again
 * and again adds up. So every proxy tells the broker each answer that
 * reflected a job's own static value and each trip of a scan-only one
 * (POST /v1/jobs/{job}/secrets/{name}/reflections), the store counts
 * them per (secret, version) for the whole fleet, and a version that
 * reaches its reflect_budget (a field of the secret's PUT; a trip at
 * once) is burned: its releases to inject are refused 403
 * secret_burned until a PUT makes the next version.
 */
#ifndef CORDON_BROKER_REFLECTIONS_H
#define CORDON_BROKER_REFLECTIONS_H

#include "http_server.h"

/* The most reflections one report may carry (a proxy's retries of one
 * job's are added up). */
#define REFLECTIONS_REPORT_MAX 1000

/* How long after a job's end its reports still count: the proxy tells
 * one again for a minute; the window POST /v1/bindings takes too. */
#define REFLECTIONS_ENDED_WINDOW_S 900

/*
 * POST /v1/jobs/{job}/secrets/{name}/reflections (a verifier: the
 * proxy): {"version": N, "event": "reflected" | "reflect_limit" |
 * "guard_tripped", "count": 1..REFLECTIONS_REPORT_MAX (default 1)}.
 * Counted and audited (secret_reflected; secret_burned at the burn,
 * with the log line of that name), answered 200 {secret, version,
 * counted, reflections, budget, burned}; an issuer's secret is not
 * counted (its credentials are per job: counted false). Only for a job
 * that held the secret: running or ended within
 * REFLECTIONS_ENDED_WINDOW_S (else 409 job_not_running), its manifest
 * version injecting it (else 409 not_injected) or, for a trip, reaching
 * a place it is bound to (else 409 not_guarded); nothing counted. 404
 * for an unknown job, secret or version, 422 for a bad body, 503 when
 * the store failed (nothing counted: the proxy tells it again).
 */
void reflections_post(void *ctx, struct http_request *req,
    struct http_response *res);

#endif
